"""The verdicts rlconform reaches on TorchRL, pinned at the versions in constraints.txt.

As in ``tests/sb3/test_real_findings.py``: each finding is listed in FINDINGS.md (section "TorchRL
0.14.1 — envs and transitions") and each control is a TorchRL system that conforms where the question is delicate. The
findings are pinned on the small cases the search shrank them to (deterministic and fast; the
search itself runs in ``rlconform run --system 'torchrl.*'``). The controls are searched with a
few examples: no reference model exists for this family, so the Disabled-mode and SerialEnv
systems passing the specs is the control that the specs can pass on TorchRL at all.
"""

from __future__ import annotations

import pytest

pytest.importorskip("torchrl")

from rlconform.core.profiles import Profile
from rlconform.core.runner import RunCache, execute
from rlconform.core.search import check_spec
from rlconform.core.spec import get_spec
from rlconform.core.system import get_system
from rlconform.envs.plan import BadStep, Case, Op, Reset, Step
from rlconform.envs.script import EnvScript, EpisodePlan
from rlconform.envs.spaces import BoxObs, DictObs, DiscreteAction, MultiDiscreteAction

BOX = BoxObs(dtype="float32", shape=(5,))
DICT = DictObs(entries=(("state", BOX),))


def _steps(n: int, num_envs: int, action: int = 0) -> tuple[Op, ...]:
    return tuple(Step(tuple(action for _ in range(num_envs))) for _ in range(n))


#: E1: a batch-less GymWrapper takes two actions and hands the env an array outside its space
WRONG_SIZE = Case(
    EnvScript(obs=BOX, action=DiscreteAction(n=2), episodes=(EpisodePlan(4, "never"),)),
    1,
    (Reset(), Step((0,)), BadStep((1, 0)), Step((0,))),
)
#: E2: a one-component MultiDiscrete action: GymWrapper.read_action calls int() on a 1-d array
MULTI_DISCRETE_1 = Case(
    EnvScript(obs=BOX, action=MultiDiscreteAction(nvec=(4,)), episodes=(EpisodePlan(3, "terminated"),)),
    1,
    (Reset(), Step(((0,),)), Step(((1,),))),
)
#: E3: two sub-envs that end on the same step, SAME_STEP vector env under GymWrapper
SAME_STEP_END = Case(
    EnvScript(obs=BOX, action=DiscreteAction(n=2), episodes=(EpisodePlan(2, "terminated"),), env_stride=0),
    2,
    (Reset(), *_steps(5, 2)),
)
#: E4: a Dict observation, SAME_STEP vector env under GymWrapper: the terminal-obs reader raises
#: (the search's shrunk case; a script whose episode ends during GymWrapper's construction-time
#: random steps makes the construction itself raise the same error)
SAME_STEP_DICT = Case(
    EnvScript(obs=DICT, action=DiscreteAction(n=2), episodes=(EpisodePlan(1, "never"), EpisodePlan(1, "terminated"))),
    1,
    (Reset(), *_steps(2, 1)),
)
#: E10: GymWrapper renames a Dict observation's "state" key inside the vector env's own buffer
STATE_KEY_NO_COPY = Case(
    EnvScript(obs=DICT, action=DiscreteAction(n=2), episodes=(EpisodePlan(1, "terminated"),)),
    1,
    (Reset(), Step((0,))),
)

FINDINGS = [
    (
        "torchrl.GymWrapper",
        WRONG_SIZE,
        "api.wrong_size_batch_rejected",
        "a batch of 2 actions for 1 sub-envs was accepted",
    ),
    ("torchrl.GymWrapper", WRONG_SIZE, "dtype.actions_received", r"shape=\(2,\).*outside"),
    ("torchrl.ParallelEnv.GymWrapper", MULTI_DISCRETE_1, "lifecycle.responsive", "close\\(\\) failed.*process failed"),
    (
        "torchrl.GymWrapper.SyncVectorEnv.SameStep",
        SAME_STEP_END,
        "continuity.no_discarded_episode",
        "discarded after 0 step.*step_and_maybe_reset",
    ),
    (
        "torchrl.GymWrapper.SyncVectorEnv.SameStep",
        SAME_STEP_DICT,
        "api.failed_call_no_side_effect",
        "raised RuntimeError but",
    ),
    ("torchrl.GymWrapper.SyncVectorEnv.SameStep", SAME_STEP_DICT, "transitions.exact", "missing transition"),
    ("torchrl.GymWrapper.SyncVectorEnv.SameStep", SAME_STEP_DICT, "api.valid_calls_succeed", "StopIteration"),
    ("torchrl.SerialEnv.GymWrapper", MULTI_DISCRETE_1, "api.valid_calls_succeed", "TypeError.*0-dimensional"),
    ("torchrl.GymWrapper", MULTI_DISCRETE_1, "api.valid_calls_succeed", "TypeError.*0-dimensional"),
    ("torchrl.GymWrapper.SyncVectorEnv.NoCopy", STATE_KEY_NO_COPY, "api.valid_calls_succeed", "KeyError: 'state'"),
]


@pytest.mark.parametrize(
    ("system_id", "case", "spec_id", "words"), FINDINGS, ids=[f"{a}-{c}" for a, _, c, _ in FINDINGS]
)
def test_torchrl_finding_is_still_found(system_id: str, case: Case, spec_id: str, words: str) -> None:
    import re

    run = execute(get_system(system_id), case, with_model=False)
    assert run.build_error is None, run.build_error
    outcome = get_spec(spec_id).check(run)
    messages = [v.render() for v in outcome.violations]
    assert messages, f"{system_id} now passes {spec_id}: update FINDINGS.md"
    assert any(re.search(words, m) for m in messages), messages


def test_state_key_case_passes_with_copying_vector_env() -> None:
    """E10's control: the same case through GymWrapper over a copying SyncVectorEnv steps fine."""
    run = execute(get_system("torchrl.GymWrapper.SyncVectorEnv"), STATE_KEY_NO_COPY, with_model=False)
    assert get_spec("api.valid_calls_succeed").check(run).violations == []


def test_one_component_multidiscrete_step_raises_in_every_torchrl_stack() -> None:
    """E2 seen in-process: the step raises TypeError from ``int()`` of a 1-d array (NumPy 2)."""
    run = execute(get_system("torchrl.SerialEnv.GymWrapper"), MULTI_DISCRETE_1, with_model=False)
    steps = [c for c in run.calls if c.agent_step]
    assert steps and all(c.error_type == "TypeError" for c in steps), [c.describe() for c in steps]
    assert all("0-dimensional" in (c.error_message or "") for c in steps)


SMALL = Profile("torchrl-findings", 3, 3, True, "a few derandomized examples", shrink_examples=20)
CONTROLS = [
    ("torchrl.GymWrapper.SyncVectorEnv", "transitions.exact"),
    ("torchrl.GymWrapper.SyncVectorEnv", "continuity.no_discarded_episode"),
    ("torchrl.SerialEnv.GymWrapper", "transitions.exact"),
    ("torchrl.SerialEnv.GymWrapper", "terminal.final_obs"),
    ("torchrl.GymWrapper", "flags.truncated"),
]


@pytest.mark.parametrize(("system_id", "spec_id"), CONTROLS, ids=[f"{a}-{b}" for a, b in CONTROLS])
def test_torchrl_control_still_passes(system_id: str, spec_id: str) -> None:
    verdict = check_spec(get_system(system_id), get_spec(spec_id), SMALL, cache=RunCache())
    assert verdict.status == "pass", verdict.message
