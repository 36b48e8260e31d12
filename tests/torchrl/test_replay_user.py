"""Replay buffers checked row by row (family and ``--api`` ``torchrl.ReplayBuffer``):
every planted bug caught by exactly its specs, the correct and innocent buffers passing, TorchRL's
own row and n-step buffers pinned (FINDINGS.md T4), and a user's factory checked through the CLI
and ``parametrize_with_checks``.

The fast tests replay the family's first edge case (two sub-envs, a termination two steps in and
a truncation three steps in, over two batches), which every search tries first.
"""

from __future__ import annotations

import io
import subprocess
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

pytest.importorskip("torchrl")

from rlconform.core.family import get_family
from rlconform.core.profiles import Profile
from rlconform.core.runner import execute
from rlconform.core.search import check_spec
from rlconform.core.spec import get_spec
from rlconform.core.system import get_system
from rlconform.core.user import user_system
from rlconform.libraries.torchrl.replay_case import replay_edge_cases
from rlconform.libraries.torchrl.replay_family import MUST_FAIL
from rlconform.replay import replay

ROW_SPECS = ("replay.rows_are_transitions", "replay.multistep_returns", "replay.bootstrap_targets")
SMALL = Profile("replay-user", 6, 3, True, "a few derandomized examples", 20, 5, 20.0)
EDGE = replay_edge_cases(get_system("reference.torchrl.MultiStepBuffer"))[0]


def failing(system_id: str) -> dict[str, str]:
    """The row specs with a violation on the edge case, and their first violation."""
    run = execute(get_system(system_id), EDGE)
    assert run.build_error is None, run.build_error
    found = {}
    for spec_id in ROW_SPECS:
        hits = get_spec(spec_id).check(run).violations
        if hits:
            found[spec_id] = hits[0].render()
    return found


@pytest.mark.parametrize("system_id", sorted(MUST_FAIL))
def test_planted_bug_fails_exactly_its_specs(system_id: str) -> None:
    assert set(failing(system_id)) == MUST_FAIL[system_id]


@pytest.mark.parametrize(
    ("system_id", "spec_id", "words"),
    [
        ("planted.torchrl.MultiStep.CrossesEpisodeEnds", "replay.multistep_returns", "past the episode's end"),
        ("planted.torchrl.MultiStep.FirstStepFlags", "replay.bootstrap_targets", "bootstraps a termination"),
        ("planted.torchrl.MultiStep.GammaNotPowered", "replay.bootstrap_targets", "discounted by gamma where gamma^"),
        ("planted.torchrl.MultiStep.GammaNotPowered", "replay.multistep_returns", "steps_to_next_obs 1, expected"),
        ("planted.torchrl.ReplayBuffer.OtherEnvNextObs", "replay.rows_are_transitions", "not sub-env"),
    ],
)
def test_failures_name_the_row_and_the_cause(system_id: str, spec_id: str, words: str) -> None:
    message = failing(system_id)[spec_id]
    assert words in message and "row" in message and "sub-env" in message and "step" in message, message


@pytest.mark.parametrize(
    "system_id",
    [
        "reference.torchrl.MultiStepBuffer",
        "reference.torchrl.ReplayBuffer.ListStorage",
        "torchrl.ReplayBuffer.LazyTensorStorage",
        "torchrl.TensorDictReplayBuffer.SliceSampler",
    ],
)
def test_correct_and_innocent_buffers_pass(system_id: str) -> None:
    assert failing(system_id) == {}


@pytest.mark.parametrize("n", [2, 3])
def test_finding_t4_multistep_transform_bootstraps_terminations(n: int) -> None:
    """TorchRL's MultiStepTransform sums the window right (multistep_returns passes) but leaves
    the done flags of the row's first step, so TD0Estimator bootstraps a window that reaches a
    termination from the terminal observation (FINDINGS T4)."""
    found = failing(f"torchrl.TensorDictReplayBuffer.MultiStepTransform.n{n}")
    assert set(found) == {"replay.bootstrap_targets"}
    assert "bootstraps a termination" in found["replay.bootstrap_targets"]
    assert "terminated flag is False" in found["replay.bootstrap_targets"]


def test_a_users_multistep_buffer_inherits_t4(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A user's buffer built from TorchRL's MultiStepTransform (its own gamma) fails as TorchRL's
    does: the failure is labelled inherited from the bundled buffer, with FINDINGS T4."""
    (tmp_path / "users_buffers.py").write_text(
        "from torchrl.data import LazyTensorStorage, TensorDictReplayBuffer\n"
        "from torchrl.envs.transforms import MultiStepTransform\n\n\n"
        "def make():\n"
        "    return TensorDictReplayBuffer(\n"
        "        storage=LazyTensorStorage(500, ndim=2), transform=MultiStepTransform(n_steps=3, gamma=0.99)\n"
        "    )\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    system = user_system("users_buffers:make", "torchrl.ReplayBuffer")
    verdict = check_spec(system, get_spec("replay.bootstrap_targets"), SMALL)
    assert verdict.status == "fail", verdict.message
    assert verdict.inherited == (
        "torchrl.TensorDictReplayBuffer.MultiStepTransform.n3 fails it the same way on its own (FINDINGS T4)"
    )
    # an n-step transform of the user's own is not TorchRL's: nothing to inherit T4 from
    own = execute(get_system("reference.torchrl.MultiStepBuffer"), EDGE)
    assert get_family("torchrl.ReplayBuffer").library_systems(own) == ["torchrl.ReplayBuffer.LazyTensorStorage"]


def test_replay_prints_the_violation() -> None:
    out = io.StringIO()
    hits = replay("planted.torchrl.MultiStep.FirstStepFlags", EDGE, "replay.bootstrap_targets", out=out)
    assert hits and "VIOLATION replay.bootstrap_targets" in out.getvalue()


# ------------------------------------------------------------------- a user's factory

GOOD = """
from torchrl.data import ListStorage, ReplayBuffer


def make():
    return ReplayBuffer(storage=ListStorage(500), batch_size=6)
"""
BUGGY = """
from torchrl.data import LazyTensorStorage, TensorDictReplayBuffer

from rlconform.libraries.torchrl.replay_torch import PlainMultiStep


def make_buggy():
    return TensorDictReplayBuffer(
        storage=LazyTensorStorage(500, ndim=2), transform=PlainMultiStep(3, 0.9, defect="first_step_flags")
    )
"""

#: the conftest's user_module and rlconform_cli/user_python fixtures
UserModule = Callable[[str, str], Path]
Process = Callable[..., subprocess.CompletedProcess[str]]


@pytest.mark.slow  # rlconform check in a subprocess
def test_user_factory_from_the_cli(
    tmp_path: Path, user_module: UserModule, rlconform_cli: Process, user_python: Process
) -> None:
    user_module("buffers", GOOD + BUGGY)
    good = rlconform_cli("check", "buffers:make", "--api", "torchrl.ReplayBuffer")
    assert good.returncode == 0, good.stdout + good.stderr
    buggy = rlconform_cli("check", "buffers:make_buggy", "--api", "torchrl.ReplayBuffer", "--reproducers", "repro")
    assert buggy.returncode == 1, buggy.stdout + buggy.stderr
    assert "FAIL" in buggy.stdout and "bootstraps a termination" in buggy.stdout
    (script,) = (tmp_path / "repro").glob("*.py")
    again = user_python(str(script.relative_to(tmp_path)), timeout=300)
    assert again.returncode == 1, again.stdout + again.stderr
    assert "VIOLATION replay.bootstrap_targets" in again.stdout
    wrong = rlconform_cli("check", "buffers:make", "--api", "torchrl.ValueEstimator")
    assert wrong.returncode != 0


@pytest.mark.slow  # pytest in a subprocess
def test_user_factory_with_parametrize_with_checks(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(buffers=GOOD + BUGGY)
    pytester.makepyfile(
        test_buffers=textwrap.dedent(
            """
            from rlconform.testing import parametrize_with_checks


            @parametrize_with_checks(["buffers:make", "buffers:make_buggy"], api="torchrl.ReplayBuffer",
                                     specs=["replay.bootstrap_targets"])
            def test_buffer(rlconform_check):
                verdict = rlconform_check()
                assert verdict.status == "pass", verdict.message
            """
        )
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*bootstraps a termination*"])
