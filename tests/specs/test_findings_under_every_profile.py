"""The FINDINGS defects that a search found under one profile and missed under another are found
under every profile now (issue 24): each search first tries the edge cases of
rlconform.envs.boundary_cases (an episode of one step from the first reset, a one-component
MultiDiscrete action, a masked reset while another sub-env runs on), so that no verdict on these
systems depends on how many examples a profile draws.

Each row names the FINDINGS entry, the system it affects (bundled, or a corpus stack declared as its
user declares it) and the spec that reports it. Before the edge cases (measured on main with this
file): G5 in NEXT_STEP mode was missed under two of the four profiles (FINDINGS had it by hand
only) and E2 under the bundled ParallelEnv under fast, ci and matrix; S3 on the declared
VecNormalize depended on the episode lengths a search drew (reported under ``ci`` and not under
``matrix``, issue 24).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rlconform.core.findings import finding_of
from rlconform.core.search import check_spec, edge_cases_for
from rlconform.core.spec import get_spec
from rlconform.core.system import UnknownSystemError, get_system
from rlconform.core.user import user_system, with_intents
from rlconform.envs.plan import BadStep, Reset

ROOT = Path(__file__).resolve().parents[2]
PROFILES = ("fast", "ci", "matrix", "thorough")

#: (FINDINGS row, system, spec, words of the failure)
DEFECTS = [
    ("S3", "sb3.VecNormalize.DummyVecEnv", "terminal.final_obs", "its values were changed"),
    ("G5", "gymnasium.RecordEpisodeStatistics.SyncVectorEnv.NextStep", "statistics.episode", "is reported with"),
    ("G5", "gymnasium.RecordEpisodeStatistics.SyncVectorEnv.SameStep", "statistics.episode", "is reported with"),
    ("E2", "torchrl.GymWrapper", "api.valid_calls_succeed", "only 0-dimensional arrays"),
    ("E2", "torchrl.SerialEnv.GymWrapper", "api.valid_calls_succeed", "env.step_and_maybe_reset(td) raised"),
    ("E2", "torchrl.ParallelEnv.GymWrapper", "api.valid_calls_succeed", "env.step_and_maybe_reset(td) raised"),
]
#: defects of the other bundled systems (issue 24: every FINDINGS defect under every profile),
#: checked in the slow tier. G3 (AsyncVectorEnv's queued replies) was missed by the matrix
#: profile's examples until the robustness edge cases went on past the wrong-size batch with a
#: partial reset
MORE_DEFECTS = [
    ("G1", "gymnasium.SyncVectorEnv.NextStep", "aliasing.caller_arguments", "reset_mask"),
    ("G2", "gymnasium.SyncVectorEnv.SameStep", "api.failed_call_no_side_effect", ""),
    ("G6", "gymnasium.NormalizeReward.SyncVectorEnv.SameStep", "statistics.normalizer", ""),
    ("G7", "gymnasium.SyncVectorEnv.Disabled.nocopy", "aliasing.returned_objects", ""),
    ("S1", "sb3.DummyVecEnv", "api.wrong_size_batch_rejected", ""),
    ("S4", "sb3.VecNormalize.DummyVecEnv", "dtype.observations", ""),
    ("S5", "sb3.VecMonitor.DummyVecEnv", "infos.aligned", ""),
    ("S6", "sb3.VecFrameStack.DummyVecEnv", "aliasing.returned_objects", ""),
    ("E1", "torchrl.GymWrapper", "api.wrong_size_batch_rejected", ""),
    ("E3", "torchrl.GymWrapper.SyncVectorEnv.SameStep", "continuity.no_discarded_episode", ""),
    ("E8", "torchrl.GymWrapper.SyncVectorEnv.NoCopy", "aliasing.torchrl_returned_data", ""),
    ("E9", "torchrl.GymWrapper.SyncVectorEnv.NoCopy", "terminal.final_obs", ""),
    ("T2", "torchrl.Collector.SerialEnv", "collector.frame_accounting", ""),
    # the collector and replay families' own edge cases (a total_frames a batch does not divide,
    # slices sampled over a batch edge): T1 was missed under matrix and T3 under fast before them
    ("T1", "torchrl.Collector.GymWrapper", "collector.frame_accounting", "total_frames"),
    ("T1", "torchrl.MultiSyncCollector.GymWrapper", "collector.frame_accounting", "total_frames"),
    ("T3", "torchrl.ReplayBuffer.SliceSampler", "replay.slices_within_episode", "crosses from"),
    ("T3", "torchrl.TensorDictReplayBuffer.SliceSamplerWithoutReplacement", "replay.slices_within_episode", "crosses"),
    (
        "T4",
        "torchrl.TensorDictReplayBuffer.MultiStepTransform.n3",
        "replay.bootstrap_targets",
        "bootstraps a termination",
    ),
    # systems with worker processes: each example starts workers; G4 needs the edge case of a
    # manual reset right after an episode ended (envs/boundary_cases.py)
    ("G4", "gymnasium.AsyncVectorEnv.NextStep.noshm", "continuity.no_discarded_episode", ""),
    ("G3", "gymnasium.AsyncVectorEnv.NextStep", "lifecycle.responsive", ""),
    ("G3", "gymnasium.AsyncVectorEnv.Disabled.noshm", "lifecycle.responsive", ""),
    ("S2", "sb3.SubprocVecEnv", "api.failed_call_no_side_effect", ""),
    ("E6", "torchrl.GymEnv.num_envs", "terminal.final_obs", ""),
]
#: user stacks (the corpus's, as a user builds and declares them): (row, factory, api, intents,
#: spec, words)
USER_DEFECTS = [
    # declared --intended observation,reward as its user would: the recipe's un-normalised terminal
    # observation is still wrong (episodes of one step: half the observations keep their stamp)
    (
        "S3",
        "corpus.stacks:sb3_vec_normalize",
        "sb3.VecEnv",
        ("observation", "reward"),
        "terminal.final_obs",
        ("its values were changed",),
    ),
    # spawned workers: the worker dies on E2, and the next step waits for it or close() reports the
    # dead worker (which comes first depends on the machine's timing); lifecycle.responsive sees
    # the same edge case (in its robustness form) and says so
    (
        "E2",
        "corpus.stacks:torchrl_parallel_env",
        "torchrl.EnvBase",
        (),
        "lifecycle.responsive",
        ("did not answer", "At least one process failed"),
    ),
]


def test_every_pinned_defect_is_a_findings_row() -> None:
    findings = (ROOT / "FINDINGS.md").read_text(encoding="utf-8")
    for row, *_ in (*DEFECTS, *MORE_DEFECTS):
        assert f"| {row} |" in findings, row


#: pinned defects whose system fails the spec for two rows: the family's table names the row all
#: the spec's systems share (every collector overshoots total_frames, T1; SerialEnv's also rounds
#: frames_per_batch up, T2)
OTHER_ROW = {("T2", "torchrl.Collector.SerialEnv", "collector.frame_accounting"): "T1"}


def test_every_pinned_defect_is_named_by_its_familys_findings_table() -> None:
    """What every report names a bundled system's failure with (rlconform.core.findings, issue 37),
    the family's findings table, says the row pinned here: a failure of these is never "new"."""
    for row, system_id, spec_id, _ in (*DEFECTS, *MORE_DEFECTS):
        try:
            system = get_system(system_id)
        except UnknownSystemError:
            continue  # its library is not installed
        expected = OTHER_ROW.get((row, system_id, spec_id), row)
        assert finding_of(system, spec_id) == expected, (row, system_id, spec_id)


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize(("row", "system_id", "spec_id", "words"), DEFECTS, ids=[f"{d[0]}-{d[1]}" for d in DEFECTS])
def test_the_defect_is_found_under_every_profile(
    row: str, system_id: str, spec_id: str, words: str, profile: str
) -> None:
    _found_under(row, system_id, spec_id, words, profile)


#: the profiles CI checks the other defects under (the thorough profile is the exhaustive tier's)
CI_PROFILES = [p if p != "thorough" else pytest.param(p, marks=pytest.mark.exhaustive) for p in PROFILES]


@pytest.mark.slow
@pytest.mark.parametrize("profile", CI_PROFILES)
@pytest.mark.parametrize(
    ("row", "system_id", "spec_id", "words"), MORE_DEFECTS, ids=[f"{d[0]}-{d[1]}" for d in MORE_DEFECTS]
)
def test_every_other_bundled_defect_is_found_under_every_profile(
    row: str, system_id: str, spec_id: str, words: str, profile: str
) -> None:
    _found_under(row, system_id, spec_id, words, profile)


def _found_under(row: str, system_id: str, spec_id: str, words: str, profile: str) -> None:
    system = get_system(system_id)
    skip = system.skip_reason()
    if skip:
        pytest.skip(skip)
    verdict = check_spec(system, get_spec(spec_id), profile)
    assert verdict.status == "fail", f"{row} missed under {profile}: {verdict.status} {verdict.message}"
    assert words in verdict.message, verdict.message


def test_edge_cases_fit_what_each_system_accepts() -> None:
    """The edge cases start with a full reset and stay within the system's capabilities: a system
    that refuses partial resets (TorchRL) or MultiDiscrete actions is not given one."""
    for system_id in ("gymnasium.SyncVectorEnv.NextStep", "torchrl.GymWrapper", "sb3.VecNormalize.DummyVecEnv"):
        system = get_system(system_id)
        caps = system.capabilities
        edges = edge_cases_for(system, get_spec("transitions.exact"))
        assert edges, system_id
        for case in edges:
            assert case.ops[0] == Reset(seed=None)
            assert caps.accepts(case.script) and caps.min_envs <= case.num_envs <= caps.max_envs
            masked = [op for op in case.ops if isinstance(op, Reset) and op.mask is not None]
            assert not masked or caps.partial_reset
    # the robustness cases end with a wrong-size batch and a step; the seeded scenario gets none
    robust = edge_cases_for(get_system("gymnasium.SyncVectorEnv.NextStep"), get_spec("lifecycle.responsive"))
    assert robust and all(isinstance(case.ops[-2], BadStep) for case in robust[:-1])
    # the last one goes on past the wrong-size batch with a partial reset (G3)
    assert isinstance(robust[-1].ops[2], BadStep) and robust[-1].ops[-2] == Reset(seed=None, mask=(True, False))
    assert edge_cases_for(get_system("gymnasium.SyncVectorEnv.NextStep"), get_spec("seeding.reset_determinism")) == []
    # a family whose cases are whole scenarios of their own kind gets edge cases of that kind (a
    # plain Case would be "not applicable" there, and would turn an all-examples build error into a
    # vacuous verdict)
    for system_id, spec_id, kind in (
        ("torchrl.Collector.GymWrapper", "collector.transitions", "CollectorCase"),
        ("torchrl.Collector.SerialEnv", "collector.frame_accounting", "CollectorCase"),
        ("torchrl.ReplayBuffer.SliceSampler", "replay.slices_within_episode", "ReplayCase"),
    ):
        driven = get_system(system_id)
        if driven.skip_reason():
            continue
        caps = driven.capabilities
        edges = edge_cases_for(driven, get_spec(spec_id))
        assert edges, system_id
        assert all(type(case).__name__ == kind and caps.min_envs <= case.num_envs <= caps.max_envs for case in edges)
    # a single env gets no wrong-size batch (the drawn cases of a single env have none either)
    single = edge_cases_for(get_system("gymnasium.Env.raw"), get_spec("lifecycle.responsive"))
    assert single and not any(isinstance(op, BadStep) for case in single for op in case.ops)
    responsive = check_spec(get_system("gymnasium.Env.raw"), get_spec("lifecycle.responsive"), "fast")
    assert responsive.status == "pass", responsive.message


@pytest.mark.slow
@pytest.mark.parametrize("profile", ["fast", "ci", "matrix"])
@pytest.mark.parametrize(
    ("row", "target", "api", "intents", "spec_id", "words"), USER_DEFECTS, ids=[d[0] for d in USER_DEFECTS]
)
def test_the_defect_is_found_in_a_user_stack_under_every_profile(
    row: str, target: str, api: str, intents: tuple[str, ...], spec_id: str, words: tuple[str, ...], profile: str
) -> None:
    pytest.importorskip({"sb3.VecEnv": "stable_baselines3", "torchrl.EnvBase": "torchrl"}[api])
    verdict = check_spec(with_intents(user_system(target, api), list(intents)), get_spec(spec_id), profile)
    assert verdict.status == "fail", f"{row} missed under {profile}: {verdict.status} {verdict.message}"
    assert any(w in verdict.message for w in words), verdict.message
