"""What the learner tests of the Isaac Lab environment share (test_rsl_rl_runner.py,
test_skrl_agent.py): the three learner specs' verdicts on a bundled system, and the every-front-end
run of one ``--api``."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LEARNER_SPECS = ("learner.storage", "learner.returns", "learner.exact_targets")


@pytest.fixture
def learner_statuses() -> Callable[[str], dict[str, tuple[str, bool, str]]]:
    """``statuses(system_id)``: per learner spec, (status, whether known, message) under the ci profile."""
    from rlconform.core.search import check_spec
    from rlconform.core.spec import get_spec
    from rlconform.core.system import get_system

    def statuses(system_id: str) -> dict[str, tuple[str, bool, str]]:
        system = get_system(system_id)
        found = {}
        for spec_id in LEARNER_SPECS:
            verdict = check_spec(system, get_spec(spec_id), "ci")
            found[spec_id] = (verdict.status, verdict.known is not None, verdict.message)
        return found

    return statuses


@pytest.fixture
def every_front_end() -> Callable[[str], None]:
    """``run(api)``: tests/frontends/test_every_api.py for that ``--api`` only (RLCONFORM_EVERY_API),
    in this interpreter: every test passes and none is skipped."""

    def run(api: str) -> None:
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "tests/frontends/test_every_api.py"],
            cwd=ROOT,
            env={**os.environ, "RLCONFORM_EVERY_API": api},
            capture_output=True,
            text=True,
            timeout=900,
            check=False,
        )
        assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
        assert "skipped" not in done.stdout.splitlines()[-1], done.stdout[-2000:]

    return run
