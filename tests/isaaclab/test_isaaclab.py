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

from rlconform.core.runner import execute
from rlconform.core.search import check_spec
from rlconform.core.spec import all_specs, get_spec
from rlconform.core.system import System, all_systems, get_system
from rlconform.envs.driver import Run
from rlconform.envs.plan import Case, Reset, Step
from rlconform.envs.script import EnvScript, EpisodePlan
from rlconform.envs.spaces import BoxAction, BoxObs
from rlconform.envs.stamp import Stamp
from rlconform.libraries.isaaclab.device_specs import ACTIONS_SPEC, OUTPUTS_SPEC
from rlconform.libraries.isaaclab.direct_family import ACTIONS_KEY, NAME, make, reused_buffers

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
    from rlconform.libraries.isaaclab import reference_env as isaaclab_reference_env

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
    isaaclab_systems = [s for s in all_systems() if "isaaclab" in s.requires]
    assert {REFERENCE, NO_FINAL_OBS, RSL_RL, *WRAPPER_FAILURES} <= {s.id for s in isaaclab_systems}
    for system in isaaclab_systems:
        assert system.skip_reason() == "not installed: isaaclab", system.id


# ----------------------------------------------------------------------------------------------
# Isaac Lab's RL-library wrappers around the reference env, in the families whose API they follow

SB3 = "isaaclab.Sb3VecEnvWrapper"
SB3_NO_FINAL_OBS = "isaaclab.Sb3VecEnvWrapper.no_final_obs"
IL_TORCHRL = "isaaclab.IsaacLabTorchRLWrapper"
IL_TORCHRL_NO_FINAL_OBS = "isaaclab.IsaacLabTorchRLWrapper.no_final_obs"
TORCHRL_LIB = "isaaclab.torchrl.IsaacLabWrapper"
RSL_RL = "isaaclab.RslRlVecEnvWrapper"
#: system -> {spec id: words of the known-violation reason} for every spec it fails (fast profile);
#: every other applicable spec passes or finds nothing to check
WRAPPER_FAILURES: dict[str, dict[str, str]] = {
    # no reference model describes Sb3VecEnvWrapper (it is not a DummyVecEnv): model.outputs_match
    # is not applicable, where it used to compare the wrapper with the DummyVecEnv model
    SB3: {"infos.aligned": "sb3.py:399"},
    SB3_NO_FINAL_OBS: {
        "infos.aligned": "sb3.py:399",
        "terminal.final_obs": "sb3.py:412-417",
        "transitions.exact": "sb3.py:412-417",
    },
    IL_TORCHRL: {},
    IL_TORCHRL_NO_FINAL_OBS: {
        "terminal.final_obs": "vecenv_wrapper.py:186-192",
        "transitions.exact": "vecenv_wrapper.py:186-192",
        "dtype.observations": "vecenv_wrapper.py:186-192",
    },
    TORCHRL_LIB: {
        "terminal.final_obs": "isaac_lab.py:63-68",
        "transitions.exact": "isaac_lab.py:63-68",
        "dtype.observations": "isaac_lab.py:63-68",
    },
    RSL_RL: {"transitions.exact": "ppo.py:154-158"},
}
#: system -> {spec id: words of the message} for failures that are findings, not documented design
WRAPPER_FINDINGS: dict[str, dict[str, str]] = {
    # dones & ~time_outs: a step that terminated and timed out reads as a time-out only
    RSL_RL: {"flags.terminated": "terminated is False"},
}


@pytest.mark.parametrize("system_id", sorted(WRAPPER_FAILURES))
def test_wrapper_verdicts(system_id: str) -> None:
    """Every applicable spec passes (or has nothing to check), except the pinned failures, each a
    known violation whose reason cites the library source."""
    system = get_system(system_id)
    failures = WRAPPER_FAILURES[system_id]
    findings = WRAPPER_FINDINGS.get(system_id, {})
    assert {spec_id for spec_id, _ in system.known_violations} == set(failures)
    unexpected = []
    for spec in all_specs():
        if spec.not_applicable_reason(system) is not None:
            continue
        verdict = check_spec(system, spec, "fast")
        if spec.id in failures:
            assert verdict.status == "fail", f"{spec.id}: {verdict.status} {verdict.message}"
            assert verdict.known and failures[spec.id] in verdict.known, verdict.known
        elif spec.id in findings:
            assert verdict.status == "fail" and not verdict.known, f"{spec.id}: {verdict.status} {verdict.message}"
            assert findings[spec.id] in verdict.message, verdict.message
        elif verdict.status not in ("pass", "not_applicable"):
            unexpected.append(f"{spec.id}: {verdict.status}: {verdict.message}")
    assert not unexpected, "\n".join(unexpected)


def _fns() -> list[functools.partial[object]]:
    from rlconform.envs.reference_env import make_reference_env

    return [functools.partial(make_reference_env, SCRIPT, i) for i in range(2)]


@pytest.mark.parametrize(("compute_final_obs", "terminal"), [(True, "episode 1 step 2"), (False, "episode 2 step 0")])
def test_sb3_wrapper_terminal_observation(compute_final_obs: bool, terminal: str) -> None:
    """Sb3VecEnvWrapper._process_extras (sb3.py:399-417): each info starts empty; a done env gets
    'episode', 'TimeLimit.truncated' and 'terminal_observation', which without compute_final_obs is
    the returned row, the next episode's first."""
    import numpy as np

    from rlconform.libraries.isaaclab.wrapper_systems import sb3_wrapper

    venv = sb3_wrapper(_fns(), compute_final_obs=compute_final_obs)
    venv.reset()
    assert venv.reset_infos == [{}, {}]
    for _ in range(2):
        _obs, _rewards, dones, infos = venv.step(np.zeros((2, 2), np.float32))
    assert dones.tolist() == [True, False] and infos[1] == {}
    assert sorted(infos[0]) == ["TimeLimit.truncated", "episode", "terminal_observation"]
    assert _stamp(infos[0]["terminal_observation"]).short() == terminal
    venv.close()


@pytest.mark.parametrize(
    ("build", "compute_final_obs", "key", "terminal"),
    [
        ("isaaclab_torchrl_wrapper", True, "policy", "episode 1 step 2"),
        ("isaaclab_torchrl_wrapper", False, "policy", None),
        ("torchrl_isaaclab_wrapper", True, "observation", None),  # final_obs computed, yet NaN
    ],
)
def test_torchrl_wrappers_terminal_observation(
    build: str, compute_final_obs: bool, key: str, terminal: str | None
) -> None:
    """The ('next', obs) row of a done env: Isaac Lab's wrapper takes extras['final_obs'] or NaN-fills
    (vecenv_wrapper.py:177-192); TorchRL's IsaacLabWrapper with native_autoreset=True always NaN-fills
    (torchrl/envs/common.py:4149-4153), although the env wrote extras['final_obs']."""
    from rlconform.libraries.isaaclab import wrapper_systems as isaaclab_wrappers

    env = getattr(isaaclab_wrappers, build)(_fns(), compute_final_obs=compute_final_obs)
    td = env.reset()
    for _ in range(2):
        td["action"] = torch.zeros(2, 2)
        data, td = env.step_and_maybe_reset(td)
    assert data["next", "terminated"].flatten().tolist() == [True, False]
    row = data["next", key][0]
    if terminal is None:
        assert torch.isnan(row).all()
    else:
        assert _stamp(row.numpy()).short() == terminal
    assert ("final_obs" in env.unwrapped.extras) is compute_final_obs
    assert _stamp(td[key][0].numpy()).short() == "episode 2 step 0"  # the root is already the next episode
    env.close()


def test_rsl_rl_wrapper_boundary() -> None:
    """RslRlVecEnvWrapper (vecenv_wrapper.py:155-168): resets once when built; dones int64; time_outs
    is the env's own truncated buffer in the env's extras; the obs after an ending step is the next
    episode's first (no terminal observation in RSL-RL's data)."""
    from rlconform.libraries.isaaclab.rsl_rl_family import make as make_rsl_rl

    env = make_rsl_rl(_fns())
    first = env.get_observations()["policy"]
    assert [_stamp(row.numpy()).short() for row in first] == ["episode 1 step 0", "episode 1 step 0"]
    for _ in range(2):
        obs, _rewards, dones, extras = env.step(torch.zeros(2, 2))
    assert dones.dtype == torch.int64 and dones.tolist() == [1, 0]
    assert extras["time_outs"] is env.unwrapped.reset_time_outs and extras is env.unwrapped.extras
    assert _stamp(obs["policy"][0].numpy()).short() == "episode 2 step 0"
    env.close()


def test_rsl_rl_terminated_and_timed_out_reads_as_time_out() -> None:
    """The finding behind flags.terminated: DirectRLEnv returns both flags (direct_rl_env.py:423);
    dones = term | trunc and time_outs = trunc (vecenv_wrapper.py:162, 165-166) cannot express
    both, so RSL-RL's PPO bootstraps a terminated step (ppo.py:154-158)."""
    from rlconform.envs.reference_env import make_reference_env
    from rlconform.libraries.isaaclab.rsl_rl_family import make as make_rsl_rl

    script = EnvScript(obs=BoxObs(), action=BoxAction(dims=1), episodes=(EpisodePlan(1, "both"),))
    env = make_rsl_rl([functools.partial(make_reference_env, script, 0)])
    _obs, _rewards, dones, extras = env.step(torch.zeros(1, 1))
    assert env.unwrapped.reset_terminated.tolist() == [True] and extras["time_outs"].tolist() == [True]
    assert (dones.bool() & ~extras["time_outs"]).tolist() == [False]  # the recipe's terminated
    env.close()


def test_the_wrapper_findings_are_named_by_their_rows() -> None:
    """rlconform run names these failures of the bundled wrappers by their FINDINGS rows, not NEW."""
    from rlconform.core.findings import finding_of

    assert finding_of(get_system(RSL_RL), "flags.terminated") == "I3"
    assert finding_of(get_system("isaaclab.torch.rsl_rl"), "isaaclab.wrapper.flags") == "I3"
    assert finding_of(get_system("isaaclab.torch.skrl"), "isaaclab.wrapper.terminal_obs") == "I4"
