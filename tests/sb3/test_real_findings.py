"""The verdicts rlconform reaches on the real libraries, pinned at the versions in constraints.txt.

Each entry is a finding listed in FINDINGS.md (a violation found in a real library) or a control
(a real system that conforms where the question is most delicate). When a library release changes
one of these verdicts this test fails: update FINDINGS.md and the entry, with the release note or
change behind it.
"""

from __future__ import annotations

import io
import re

import pytest

from rlconform.core.search import check_spec
from rlconform.core.spec import get_spec
from rlconform.core.system import get_system
from rlconform.replay import replay

pytest.importorskip("gymnasium")
pytest.importorskip("stable_baselines3")

#: the verdicts on real libraries, like the corpus: AsyncVectorEnv stacks start worker processes
pytestmark = pytest.mark.slow

FINDINGS = [
    # Gymnasium 1.4.0
    ("gymnasium.SyncVectorEnv.NextStep", "aliasing.caller_arguments", "modified the caller's arguments"),
    ("gymnasium.SyncVectorEnv.SameStep", "api.failed_call_no_side_effect", "failed call|happened because of it"),
    ("gymnasium.AsyncVectorEnv.NextStep", "api.failed_call_no_side_effect", ""),
    ("gymnasium.AsyncVectorEnv.NextStep.noshm", "continuity.no_discarded_episode", "discarded"),
    ("gymnasium.AsyncVectorEnv.NextStep.noshm", "transitions.exact", ""),
    ("gymnasium.SyncVectorEnv.NextStep.nocopy", "aliasing.returned_objects", "modified after it was returned"),
    ("gymnasium.RecordEpisodeStatistics.SyncVectorEnv.Disabled", "statistics.episode", "is reported with"),
    ("gymnasium.NormalizeReward.SyncVectorEnv.SameStep", "statistics.normalizer", "return_rms"),
    # Stable-Baselines3 2.9.2
    ("sb3.DummyVecEnv", "api.wrong_size_batch_rejected", "was accepted"),
    ("sb3.DummyVecEnv", "api.failed_call_no_side_effect", "failed call|happened because of it"),
    ("sb3.SubprocVecEnv", "api.failed_call_no_side_effect", "failed call|happened because of it"),
    ("sb3.VecNormalize.DummyVecEnv", "terminal.final_obs", "terminal observation"),
    ("sb3.VecNormalize.DummyVecEnv", "dtype.observations", "outside"),
    ("sb3.VecMonitor.DummyVecEnv", "infos.aligned", "reset info is missing"),
    ("sb3.VecFrameStack.DummyVecEnv", "aliasing.returned_objects", "modified after it was returned"),
]

CONTROLS = [
    ("gymnasium.SyncVectorEnv.NextStep", "transitions.exact"),
    ("gymnasium.SyncVectorEnv.NextStep", "reset_step.neutral"),
    ("gymnasium.SyncVectorEnv.SameStep", "terminal.final_obs"),
    ("gymnasium.SyncVectorEnv.Disabled", "transitions.exact"),
    ("gymnasium.AsyncVectorEnv.SameStep", "transitions.exact"),
    ("gymnasium.Env.make", "transitions.exact"),
    ("gymnasium.Env.Autoreset", "reset_step.neutral"),
    ("gymnasium.Env.TimeLimit", "flags.truncated"),
    ("sb3.DummyVecEnv", "transitions.exact"),
    ("sb3.DummyVecEnv", "flags.truncated"),
    ("sb3.SubprocVecEnv", "terminal.final_obs"),
    ("sb3.VecFrameStack.DummyVecEnv", "transitions.exact"),
    ("sb3.VecMonitor.DummyVecEnv", "statistics.episode"),
]


@pytest.mark.parametrize(("system_id", "spec_id", "words"), FINDINGS, ids=[f"{a}-{b}" for a, b, _ in FINDINGS])
def test_finding_is_still_found(system_id, spec_id, words):
    verdict = check_spec(get_system(system_id), get_spec(spec_id), "ci")
    assert verdict.status == "fail", f"verdict changed to {verdict.status}: {verdict.message}"
    assert re.search(words, verdict.message), verdict.message
    out = io.StringIO()
    assert replay(system_id, verdict.case, spec_id, out=out), out.getvalue()


def test_async_close_hang_is_still_found_by_the_search():
    """G3. The search reaches the hang through worker replies queued by a failed call, so on a
    heavily loaded machine an example can take another path; one more search settles it (the
    direct reproduction below is deterministic)."""
    system, spec = get_system("gymnasium.AsyncVectorEnv.NextStep"), get_spec("lifecycle.responsive")
    verdicts = [check_spec(system, spec, "ci")]
    if verdicts[0].status != "fail":
        verdicts.append(check_spec(system, spec, "ci"))
    verdict = verdicts[-1]
    assert verdict.status == "fail", [f"{v.status}: {v.message}" for v in verdicts]
    assert "close()" in verdict.message


@pytest.mark.filterwarnings("ignore:.*Calling `close` while waiting")
def test_async_close_hang_direct_reproduction():
    """G3's one-line reproducer from FINDINGS.md, with the hang bounded by a deadline."""
    import numpy as np
    from gymnasium.vector import AsyncVectorEnv

    from rlconform.core.watchdog import CallTimeout, deadline
    from rlconform.envs.reference_env import make_reference_env
    from rlconform.envs.script import EnvScript

    env = AsyncVectorEnv([lambda i=i: make_reference_env(EnvScript(), i) for i in range(2)])
    env.reset()
    with pytest.raises(ValueError):
        env.step(np.array([0]))  # one action for two sub-envs
    env.step(np.array([0, 0]))
    with pytest.raises(ValueError):
        env.reset(options={"reset_mask": np.array([True, False])})
    hung = False
    try:
        with deadline(5.0):
            env.close()
    except CallTimeout:
        hung = True
    finally:
        for process in env.processes:
            process.kill()
    assert hung, "AsyncVectorEnv.close() returned: G3 no longer reproduces (update FINDINGS.md)"


@pytest.mark.parametrize(("system_id", "spec_id"), CONTROLS, ids=[f"{a}-{b}" for a, b in CONTROLS])
def test_control_conforms(system_id, spec_id):
    verdict = check_spec(get_system(system_id), get_spec(spec_id), "ci")
    assert verdict.status == "pass", f"{verdict.status}: {verdict.message}"
