"""The code-quality gates run with the tests: ruff (lint and format) and the mypy type check."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize(
    "command",
    [
        [sys.executable, "-m", "ruff", "check", "rlconform", "tests", "benchmarks", "conftest.py"],
        [sys.executable, "-m", "ruff", "format", "--check", "rlconform", "tests", "benchmarks", "conftest.py"],
        [sys.executable, "-m", "mypy"],
    ],
    ids=["ruff-check", "ruff-format", "mypy"],
)
def test_quality_gate(command):
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
