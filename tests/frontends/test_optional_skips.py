"""Every test module skips cleanly where an optional library is missing.

A module that imports Gymnasium, torch, TorchRL or SB3 at its top (itself, or through an rlconform
module that needs them) must call ``pytest.importorskip`` first: otherwise a user or CI job without
that library gets a collection error, and pytest stops before running anything. Each case collects
the whole of ``tests/`` in a fresh interpreter in which some libraries cannot be imported, the way
an environment without them looks (``None`` in ``sys.modules``: ``import`` raises
ModuleNotFoundError, ``importlib.util.find_spec`` answers None), and asks for no collection error.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # each case collects the whole suite in a subprocess

ROOT = Path(__file__).resolve().parents[2]

#: the libraries rlconform can do without (tests/core/test_dependency_rule.py's OPTIONAL)
OPTIONAL = ("gymnasium", "gym", "torch", "tensordict", "torchrl", "stable_baselines3", "isaaclab", "rsl_rl")

#: run with the libraries to block (comma-separated) and pytest's arguments
COLLECT_WITHOUT = """
import sys

for name in sys.argv[1].split(","):
    sys.modules[name] = None  # what an uninstalled library looks like to import and find_spec
import pytest

sys.exit(pytest.main(["--collect-only", "-q", "-rs", "-p", "no:cacheprovider", *sys.argv[2:]]))
"""


def collect_without(blocked: tuple[str, ...]) -> subprocess.CompletedProcess[str]:
    environment = {key: value for key, value in os.environ.items() if not key.startswith("PYTEST_")}
    return subprocess.run(
        [sys.executable, "-c", COLLECT_WITHOUT, ",".join(blocked), "tests"],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=600,
    )


def skipped_files(output: str) -> set[str]:
    """The test files skipped whole ("SKIPPED [1] tests/x/test_y.py:12: reason")."""
    return {line.split()[2].partition(":")[0] for line in output.splitlines() if line.startswith("SKIPPED [")}


@pytest.mark.parametrize(
    ("blocked", "skipped_folder"),
    [
        (OPTIONAL, "torchrl"),
        (("torch", "tensordict", "torchrl", "stable_baselines3"), "torchrl"),
        (("torchrl", "tensordict"), "torchrl"),
        (("stable_baselines3",), "sb3"),
    ],
    ids=["no-optional-library", "gymnasium-only", "no-torchrl", "no-sb3"],
)
def test_collection_without_optional_libraries_skips_and_never_errors(
    blocked: tuple[str, ...], skipped_folder: str
) -> None:
    proc = collect_without(blocked)
    output = proc.stdout + proc.stderr
    errors = [line for line in output.splitlines() if line.startswith("ERROR ")]
    assert not errors and proc.returncode == 0, output[-6000:]
    # the folder named after the missing library is skipped whole, each file with its reason
    folder = ROOT / "tests" / skipped_folder
    expected = {str(path.relative_to(ROOT)) for path in folder.glob("test_*.py")}
    assert expected and expected <= skipped_files(output), output[-6000:]
