"""The code-quality gates run with the tests: ruff (lint and format) and the mypy type check
(of the package and of the matrix script)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # ruff and mypy over the whole repository

ROOT = Path(__file__).resolve().parents[2]
PATHS = ["rlconform", "tests", "benchmarks", "scripts", "conftest.py"]


@pytest.mark.parametrize(
    "command",
    [
        [sys.executable, "-m", "ruff", "check", *PATHS],
        [sys.executable, "-m", "ruff", "format", "--check", *PATHS],
        [sys.executable, "-m", "mypy"],
        [sys.executable, "-m", "mypy", "scripts/matrix.py"],
    ],
    ids=["ruff-check", "ruff-format", "mypy", "mypy-scripts"],
)
def test_quality_gate(command):
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
