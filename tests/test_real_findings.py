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

from rlconform.replay import replay
from rlconform.search import check_spec
from rlconform.specs.registry import get_spec
from rlconform.systems import get_system

pytest.importorskip("gymnasium")
pytest.importorskip("stable_baselines3")

FINDINGS = [
    # Gymnasium 1.4.0
    ("gymnasium.SyncVectorEnv.NextStep", "aliasing.caller_arguments", "modified the caller's arguments"),
    ("gymnasium.SyncVectorEnv.SameStep", "api.failed_call_no_side_effect", "failed call|happened because of it"),
    ("gymnasium.AsyncVectorEnv.NextStep", "api.failed_call_no_side_effect", ""),
    ("gymnasium.AsyncVectorEnv.NextStep", "lifecycle.responsive", "close()"),
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


@pytest.mark.parametrize(("system_id", "spec_id"), CONTROLS, ids=[f"{a}-{b}" for a, b in CONTROLS])
def test_control_conforms(system_id, spec_id):
    verdict = check_spec(get_system(system_id), get_spec(spec_id), "ci")
    assert verdict.status == "pass", f"{verdict.status}: {verdict.message}"
