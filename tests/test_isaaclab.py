"""Isaac Lab's DirectRLEnv (family ``isaaclab``): the reference env through the real step/reset.

Pins what isaaclab 3.0.0 does at episode boundaries and shows that the device specs catch their
planted bugs. Runs only where isaaclab is installed (its own venv: see README's Isaac Lab notes).
"""

from __future__ import annotations

import functools
import importlib.metadata

import pytest

pytest.importorskip("isaaclab", reason="isaaclab not installed: the isaaclab family's tests need isaaclab==3.0.0")

import torch

from rlconform.adapters.isaaclab_env import ACTIONS_KEY, NAME, make, reused_buffers
from rlconform.fixtures.script import EnvScript, EpisodePlan
from rlconform.fixtures.spaces import BoxAction, BoxObs
from rlconform.plan import Case, Reset, Step
from rlconform.runner import Run, execute
from rlconform.search import check_spec
from rlconform.specs.isaaclab_device import ACTIONS_SPEC, OUTPUTS_SPEC
from rlconform.specs.registry import get_spec
from rlconform.stamp import Stamp
from rlconform.systems import System, get_system

REFERENCE = "isaaclab.DirectRLEnv"
NO_FINAL_OBS = "isaaclab.DirectRLEnv.no_final_obs"
#: the specs that read transitions, logs, outputs and devices and apply to the isaaclab family
APPLICABLE = (
    "transitions.exact",
    "counts.env_steps",
    "continuity.no_discarded_episode",
    "continuity.fresh_first_obs",
    "terminal.final_obs",
    "flags.terminated",
    "flags.truncated",
    "lifecycle.no_step_after_end",
    "lifecycle.responsive",
    "api.shape",
    "api.valid_calls_succeed",
    "dtype.observations",
    "seeding.reset_determinism",
    ACTIONS_SPEC,
    OUTPUTS_SPEC,
)
#: env 0 terminates after 2 steps, env 1 is truncated after 3 (env_stride picks the other plan)
SCRIPT = EnvScript(
    obs=BoxObs(),
    action=BoxAction(dims=2),
    episodes=(EpisodePlan(2, "terminated"), EpisodePlan(3, "truncated")),
    env_stride=1,
)
ACTIONS = ((0.5, -0.25), (-0.5, 0.75))


def _case(steps: int = 4) -> Case:
    return Case(SCRIPT, 2, (Reset(seed=None), *(Step(ACTIONS) for _ in range(steps))))


def _run(system: System, steps: int = 4) -> Run:
    run = execute(system, _case(steps), with_model=False)
    assert run.usable, run.build_error
    return run


def _stamp(row: object) -> Stamp:
    decoded = SCRIPT.obs.decode(row)
    assert isinstance(decoded, Stamp), decoded
    return decoded


@pytest.mark.parametrize("spec_id", APPLICABLE)
def test_reference_env_passes_on_cpu(spec_id: str) -> None:
    verdict = check_spec(get_system(REFERENCE), get_spec(spec_id), "fast")
    assert verdict.status == "pass", verdict.message


def test_no_final_obs_fails_terminal_spec_as_documented() -> None:
    """compute_final_obs=False (Isaac Lab's default): the ending step only has the reset obs."""
    system = get_system(NO_FINAL_OBS)
    verdict = check_spec(system, get_spec("terminal.final_obs"), "fast")
    assert verdict.status == "fail" and verdict.known, verdict.message
    assert "compute_final_obs defaults to False" in verdict.known
    assert "(a reset observation)" in verdict.message and "(the terminal observation)" in verdict.message
    assert verdict.ok


@pytest.mark.parametrize(
    ("system_id", "spec_id", "words"),
    [
        ("planted.isaaclab.NumpyActionRoundTrip", ACTIONS_SPEC, "a copy"),
        ("planted.isaaclab.Float64Rewards", OUTPUTS_SPEC, "reward has dtype torch.float64"),
    ],
)
def test_planted_bugs_are_caught(system_id: str, spec_id: str, words: str) -> None:
    system = get_system(system_id)
    assert system.plants == (spec_id,)
    verdict = check_spec(system, get_spec(spec_id), "fast")
    assert verdict.status == "fail" and not verdict.known, verdict.message
    assert words in verdict.message


def test_boundary_behaviour_of_the_real_direct_rl_env() -> None:
    """Same-step autoreset; final_obs for every row, left stale in extras; buffers reused."""
    run = _run(get_system(REFERENCE))
    steps = [c for c in run.calls if c.view is not None and c.view.kind == "step"]
    view2, view3 = steps[1].view, steps[2].view
    assert view2 is not None and view3 is not None
    assert (view2.terminated, view2.truncated) == ([True, False], [False, False])
    assert _stamp(view2.obs[0]).short() == "episode 2 step 0"  # already reset, same step
    assert view2.final_obs is not None and _stamp(view2.final_obs[0]).short() == "episode 1 step 2"
    # step 3: env 1 times out; extras["final_obs"] was rewritten for every row
    assert view3.truncated == [False, True] and view3.final_obs is not None
    assert _stamp(view3.final_obs[1]).short() == "episode 1 step 3"
    # step 4: nobody ends, yet extras still holds step 3's final_obs (stale)
    view4 = steps[3].view
    assert view4 is not None and not any(view4.terminated + view4.truncated)
    assert view4.final_obs is not None and _stamp(view4.final_obs[1]).short() == "episode 1 step 3"
    # terminated/time_outs are the env's persistent buffers; extras is one dict throughout
    reused = reused_buffers(run.calls)
    assert reused.get("terminated") == 3 and reused.get("time_outs") == 3 and reused.get("extras_id") == 3
    # the caller's tensor reaches _pre_physics_step as is (action.to(device) is a no-op)
    for call in steps:
        entry = call.extra[ACTIONS_KEY]
        (received,) = entry["received"]
        assert received.data_ptr == entry["caller"]["data_ptr"]
        assert (received.type_name, received.dtype, received.shape) == ("torch.Tensor", "torch.float32", (2, 2))


def test_no_final_obs_returns_post_reset_rows() -> None:
    run = _run(get_system(NO_FINAL_OBS))
    view2 = [c.view for c in run.calls if c.view is not None and c.view.kind == "step"][1]
    assert view2 is not None and view2.terminated == [True, False] and view2.final_obs is None
    ending = [s for s in run.slots if s.agent_step == 2 and s.env == 0]
    assert _stamp(ending[0].next_obs).short() == "episode 2 step 0"


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
@pytest.mark.parametrize("spec_id", [ACTIONS_SPEC, OUTPUTS_SPEC, "transitions.exact", "terminal.final_obs"])
def test_reference_env_on_cuda(spec_id: str) -> None:
    system = System(
        id="isaaclab.DirectRLEnv.cuda",
        family=NAME,
        title="DirectRLEnv on cuda",
        build=functools.partial(make, device="cuda"),
        source="make_isaaclab_reference_env(env_fns, device='cuda')",
        capabilities=get_system(REFERENCE).capabilities,
    )
    run = _run(system)
    assert run.semantics["device"].startswith("cuda")
    outcome = get_spec(spec_id).check(run)
    assert outcome.checked and not outcome.violations, [v.render() for v in outcome.violations]


def test_other_isaaclab_releases_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    from rlconform.fixtures import isaaclab_reference_env

    real = importlib.metadata.version
    monkeypatch.setattr(importlib.metadata, "version", lambda d: "3.1.0" if d == "isaaclab" else real(d))
    with pytest.raises(RuntimeError, match=r"isaaclab==3\.0\.0.*isaaclab 3\.1\.0 is installed"):
        isaaclab_reference_env.check_isaaclab()


def test_systems_report_not_installed_without_isaaclab(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.metadata.version

    def version(dist: str) -> str:
        if dist == "isaaclab":
            raise importlib.metadata.PackageNotFoundError(dist)
        return real(dist)

    monkeypatch.setattr(importlib.metadata, "version", version)
    for system_id in (REFERENCE, NO_FINAL_OBS):
        assert get_system(system_id).skip_reason() == "not installed: isaaclab"
