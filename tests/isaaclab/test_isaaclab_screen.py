"""The Isaac Lab run's screen carries rlconform's lines only (issue 37): Warp's C-level warning
about a missing CUDA driver (once per worker) and skrl's INFO line per wrapper (once per example)
used to land between them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from rlconform.libraries.isaaclab.warp_init import NO_DRIVER_LINE, stderr_without


def test_only_the_no_driver_line_is_kept_off_stderr(capfd: pytest.CaptureFixture[str]) -> None:
    """What C code writes to file descriptor 2 is collected; every other line is written back."""
    with stderr_without(NO_DRIVER_LINE):
        os.write(2, b"before\n" + NO_DRIVER_LINE + b"\nafter, from C or Python\n")
    assert capfd.readouterr().err == "before\nafter, from C or Python\n"


@pytest.mark.slow  # an rlconform run of two Isaac Lab systems in a subprocess
def test_an_isaaclab_run_prints_neither_warp_s_warning_nor_skrl_s_info_lines(tmp_path: Path) -> None:
    pytest.importorskip("isaaclab")
    pytest.importorskip("skrl")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    command = [sys.executable, "-m", "rlconform.cli", "run", "-j", "2", "--system", "isaaclab.torch.skrl"]
    command += ["--system", "isaaclab.torch.torchrl_lib", "--json", str(tmp_path / "r.json")]
    result = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    screen = result.stdout + result.stderr
    assert "[1/2]" in screen and "[2/2]" in screen, screen
    assert "skrl:INFO" not in screen, screen
    assert "Warp CUDA warning" not in screen, screen
    assert "Warp 1." not in screen, screen  # Warp's banner: Isaac Lab quiets it, and so does rlconform
