"""The examples of README.md's "What the agent trains on", run as a user runs them: the CLI on the
factories in examples/training_data, from that folder. The README shows these lines."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("stable_baselines3")
pytest.importorskip("torchrl")

FOLDER = Path(__file__).resolve().parents[2] / "examples" / "training_data"


def _check(reference: str, api: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rlconform.cli", "check", reference, "--api", api],
        cwd=FOLDER,
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.mark.slow  # three checks in subprocesses
def test_the_readme_examples_show_what_it_says() -> None:
    sb3 = _check("mypkg.agents:make", "sb3.Algorithm")
    assert sb3.returncode == 1, sb3.stdout + sb3.stderr
    assert "FAIL [corrupts training data] user:mypkg.agents:make :: algorithm.buffer_dones" in sb3.stdout
    assert "(the buffer declares handle_timeout_termination=True)" in sb3.stdout
    assert "its target lacks gamma^1*Q'" in sb3.stdout and "max_a q_net_target(s')[a]" in sb3.stdout

    returns = _check("mypkg.returns:make", "torchrl.ValueEstimator")
    assert returns.returncode == 1, returns.stdout + returns.stderr  # an inherited failure is still a failure
    assert "inherited: torchrl.GAE.shifted fails it the same way on its own (FINDINGS V1)" in returns.stdout
    assert "KNOWN           estimator.exact_targets" in returns.stdout
    assert "summary: 2 passed, 2 inherited failures, 1 known (documented) failure" in returns.stdout

    buffers = _check("mypkg.buffers:make", "torchrl.ReplayBuffer")
    assert "it bootstraps a termination" in buffers.stdout, buffers.stdout + buffers.stderr
    assert (
        "inherited: torchrl.TensorDictReplayBuffer.MultiStepTransform.n3 fails it the same way on its own (FINDINGS T4)"
        in buffers.stdout
    )
