"""TorchRL replay buffers with slice samplers: the slice spec catches its planted bug and passes on
the model, and the verdicts on TorchRL's own buffers (FINDINGS.md, "TorchRL 0.14.1 — collectors
and replay buffers") are pinned on concrete cases.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest

pytest.importorskip("torchrl")

from rlconform.core.profiles import Profile
from rlconform.core.search import check_spec
from rlconform.core.spec import Violation, get_spec
from rlconform.core.system import get_system
from rlconform.envs.plan import Reset
from rlconform.envs.script import EnvScript, EpisodePlan
from rlconform.libraries.torchrl.replay_case import ReplayCase
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
