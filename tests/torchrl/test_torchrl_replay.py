"""TorchRL replay buffers with slice samplers: the slice spec catches its planted bug and passes on
the model, the verdicts on TorchRL's own buffers (FINDINGS.md, "TorchRL 0.14.1 — collectors
and replay buffers") are pinned on concrete cases, and slices of varying length
(``strict_length=False``) are read by the sampler's own end marks.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest

pytest.importorskip("torchrl")

from rlconform.core.profiles import Profile
from rlconform.core.runner import execute
from rlconform.core.search import check_spec
from rlconform.core.spec import Violation, get_spec
from rlconform.core.system import get_system
from rlconform.core.user import user_system
from rlconform.envs.plan import Reset
from rlconform.envs.script import EnvScript, EpisodePlan
from rlconform.libraries.torchrl.replay_case import ReplayCase, replay_edge_cases
from rlconform.replay import replay

SMALL = Profile("torchrl-replay", 8, 4, True, "a few derandomized examples", 20, 5, 20.0)
SPEC = "replay.slices_within_episode"
BUFFERS = [
    f"torchrl.{buffer}.{sampler}"
    for buffer in ("ReplayBuffer", "TensorDictReplayBuffer")
    for sampler in ("SliceSampler", "SliceSamplerWithoutReplacement")
]


def case(num_envs: int, keys: str, *, end: str = "truncated", size: int = 64, layout: str = "env_major") -> ReplayCase:
    script = EnvScript(episodes=(EpisodePlan(3, end), EpisodePlan(4, end)))  # type: ignore[arg-type]
    return ReplayCase(
        script,
        num_envs,
        (Reset(),),
        steps_per_batch=6,
        batches=3,
        storage_size=size,
        slice_len=2,
        num_slices=4,
        samples=4,
        keys=keys,  # type: ignore[arg-type]
        layout=layout,  # type: ignore[arg-type]
        seed=1,
    )


def violations(system_id: str, concrete: ReplayCase) -> list[Violation]:
    return replay(system_id, concrete, SPEC, out=io.StringIO())


def test_spec_catches_its_planted_bug() -> None:
    system_id = "planted.torchrl.SliceBuffer.IgnoresEpisodeEnds"
    verdict = check_spec(get_system(system_id), get_spec(SPEC), SMALL)
    assert verdict.status == "fail", verdict.message
    out = io.StringIO()
    assert replay(system_id, verdict.case, SPEC, out=out), out.getvalue()


def test_model_passes() -> None:
    verdict = check_spec(get_system("reference.torchrl.SliceBuffer"), get_spec(SPEC), SMALL)
    assert verdict.status == "pass", verdict.message


# ------------------------------------------------------------------------------- TorchRL 0.14.1


@pytest.mark.parametrize("system_id", BUFFERS)
@pytest.mark.parametrize("layout", ["env_major", "time_major"])
def test_finding_end_key_slices_cross_sub_envs(system_id: str, layout: str) -> None:
    found = violations(system_id, case(2, "end_key", layout=layout))
    assert any("crosses from env" in v.message for v in found), found


@pytest.mark.parametrize("system_id", BUFFERS)
@pytest.mark.parametrize(("keys", "num_envs", "size"), [("traj_key", 2, 64), ("defaults", 2, 64), ("end_key", 1, 10)])
@pytest.mark.parametrize("end", ["truncated", "terminated"])
def test_control_slices_stay_within_episodes(system_id: str, keys: str, num_envs: int, size: int, end: str) -> None:
    # trajectory ids (given or found by default) separate the sub-envs; one env's episodes,
    # ending by truncation only or by termination, stay apart across the storage's wrap-around
    assert not violations(system_id, case(num_envs, keys, end=end, size=size))


@pytest.mark.slow  # runs the reproducer in a subprocess
def test_the_printed_reproducer_replays_a_scenario_case(tmp_path: Path) -> None:
    """A replay-buffer case carries its own parameters: the standalone script must keep them."""
    import subprocess
    import sys

    system = get_system("planted.torchrl.SliceBuffer.IgnoresEpisodeEnds")
    verdict = check_spec(system, get_spec(SPEC), SMALL)
    assert verdict.status == "fail" and verdict.reproducer is not None
    assert "ReplayCase(" in verdict.reproducer
    script = tmp_path / "repro.py"
    script.write_text(verdict.reproducer)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "VIOLATION replay.slices_within_episode" in done.stdout + done.stderr


# ------------------------------------------- slices of varying length (issue 35, cause 9)

#: a user's buffers whose SliceSampler keeps trajectories shorter than slice_len whole
#: (``strict_length=False``, documented): slices of any length, each within one trajectory, the
#: last row of each marked truncated by the sampler
NOT_STRICT = """
from torchrl.data import LazyTensorStorage, ReplayBuffer, SliceSampler, TensorDictReplayBuffer


def make():
    return TensorDictReplayBuffer(
        storage=LazyTensorStorage(100), sampler=SliceSampler(slice_len=4, strict_length=False), batch_size=16
    )


def make_rows():
    return ReplayBuffer(storage=LazyTensorStorage(100), sampler=SliceSampler(slice_len=3, strict_length=False), batch_size=12)


def make_padded():
    return TensorDictReplayBuffer(
        storage=LazyTensorStorage(100),
        sampler=SliceSampler(slice_len=4, strict_length=False, pad_output=True),
        batch_size=16,
    )


def make_end_key():
    return TensorDictReplayBuffer(
        storage=LazyTensorStorage(100),
        sampler=SliceSampler(slice_len=4, strict_length=False, end_key=("next", "done")),
        batch_size=16,
    )


def make_unmarked():
    return TensorDictReplayBuffer(
        storage=LazyTensorStorage(100),
        sampler=SliceSampler(slice_len=4, strict_length=False, truncated_key=None),
        batch_size=16,
    )
"""
#: the family's edge fills and this module's cases: short episodes (3 and 4 steps) under slices of
#: 4, two sub-envs, a termination, truncations and batch edges
VARYING = [*replay_edge_cases(get_system("reference.torchrl.SliceBuffer")), case(2, "defaults"), case(1, "defaults")]


def user_verdicts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str) -> dict[str, list[str]]:
    """spec -> the violations a user's factory ``not_strict_buffers:NAME`` gives on VARYING (a
    "not applicable: ..." entry where the spec does not apply)."""
    (tmp_path / "not_strict_buffers.py").write_text(NOT_STRICT)
    monkeypatch.syspath_prepend(str(tmp_path))
    system = user_system(f"not_strict_buffers:{name}", "torchrl.ReplayBuffer")
    found: dict[str, list[str]] = {}
    for concrete in VARYING:
        run = execute(system, concrete)
        assert run.build_error is None, run.build_error
        for spec_id in (SPEC, "replay.rows_are_transitions"):
            outcome = get_spec(spec_id).check(run)
            if outcome.not_applicable is not None:
                found.setdefault(spec_id, []).append(f"not applicable: {outcome.not_applicable}")
            found.setdefault(spec_id, []).extend(v.message for v in outcome.violations)
    return found


@pytest.mark.parametrize("name", ["make", "make_rows", "make_padded"])
def test_slices_of_varying_length_are_read_by_the_samplers_marks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    # innocent: before issue 35 the sample was cut into fixed slice_len chunks, so a short slice
    # and the next one read as one slice crossing episodes, and the sampler's truncated mark at a
    # short slice's end as a wrong flag
    found = user_verdicts(tmp_path, monkeypatch, name)
    assert found == {SPEC: [], "replay.rows_are_transitions": []}, found


def test_slices_of_varying_length_that_cross_sub_envs_still_fail(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # planted by TorchRL itself (FINDINGS T3): with end_key given, a slice runs from one sub-env's
    # last frame of a batch into the next sub-env's; read by its marks, it still crosses. The
    # message names the user's own sampler, not the case's parameters
    found = user_verdicts(tmp_path, monkeypatch, "make_end_key")[SPEC]
    assert any("crosses from env" in message for message in found), found
    assert all(
        'of SliceSampler(slice_len=4, end_key=("next", "done"), strict_length=False): ' in message for message in found
    ), found


def test_slices_without_marks_are_not_applicable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # truncated_key=None: the sampler writes no end marks, so slices of varying length cannot be
    # told apart; said, never guessed
    found = user_verdicts(tmp_path, monkeypatch, "make_unmarked")[SPEC]
    assert found and all(message.startswith("not applicable: its sampler (SliceSampler(") for message in found), found
    assert "writes no end marks" in found[0], found


def test_the_planted_slice_bug_still_fails_on_the_edge_fills() -> None:
    system = get_system("planted.torchrl.SliceBuffer.IgnoresEpisodeEnds")
    assert any(
        get_spec(SPEC).check(execute(system, concrete)).violations
        for concrete in replay_edge_cases(get_system("reference.torchrl.SliceBuffer"))
    )
