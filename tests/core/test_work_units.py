"""A spec that runs in a worker of its own (``Spec.own_worker``: env-author mode's
``env.stack_equivalence``) is split off its system's other specs where two jobs are free and the
probe found the system's episodes long (``System.apart``), and the verdicts are the same either way
(rlconform.core.suite.work_units; issue 39)."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rlconform.core.catalog import current
from rlconform.core.suite import work_units
from rlconform.core.user import probe, user_system

COUNTER = "rlconform.libraries.envauthor.sample_envs:counter"
#: Gymnasium's Pendulum (corpus/stacks.py): 200-step episodes
PENDULUM = "corpus.stacks:pendulum"


def test_the_stack_spec_is_split_off_only_with_two_jobs() -> None:
    system = dataclasses.replace(user_system(COUNTER, "gymnasium.Env"), apart=True)
    specs = current().specs()
    [whole] = work_units([system], specs, 1)
    assert whole[2] == tuple(specs) and whole[1] == tuple(range(1, len(specs) + 1))
    alone, rest = work_units([system], specs, 2)
    assert [spec.id for spec in alone[2]] == ["env.stack_equivalence"]
    assert alone[1] == (1 + [spec.id for spec in specs].index("env.stack_equivalence"),)
    assert sorted(alone[1] + rest[1]) == list(range(1, len(specs) + 1))


def test_the_probe_splits_an_env_with_long_episodes_only() -> None:
    """The counter's episodes end within 8 steps: split, its check took longer (a second worker's
    start for seconds of stacks); Pendulum's run 200."""
    assert not probe(user_system(COUNTER, "gymnasium.Env")).apart
    pendulum = probe(user_system(PENDULUM, "gymnasium.Env"))
    assert pendulum.apart
    assert len(work_units([pendulum], current().specs(), 2)) == 2
    assert len(work_units([probe(user_system(COUNTER, "gymnasium.Env"))], current().specs(), 2)) == 1


def test_a_system_the_spec_does_not_apply_to_is_not_split() -> None:
    """A vectorizer: env.stack_equivalence is not applicable, nothing to run apart."""
    vectorizer = dataclasses.replace(current().system("gymnasium.SyncVectorEnv.NextStep"), apart=True)
    [unit] = work_units([vectorizer], current().specs(), 2)
    assert len(unit[2]) == len(current().specs())


@pytest.mark.slow  # two CLI checks of Pendulum (about 20 s each)
def test_the_verdicts_are_the_same_with_one_job_and_two(tmp_path: Path) -> None:
    statuses = {}
    for jobs in ("1", "2"):
        out = tmp_path / f"j{jobs}.json"
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "rlconform.cli",
                "check",
                PENDULUM,
                "--api",
                "gymnasium.Env",
                "-j",
                jobs,
                "--json",
                str(out),
            ],
            capture_output=True,
            text=True,
            timeout=600,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
            check=False,
        )
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
        results = json.loads(out.read_text())["results"]
        statuses[jobs] = [(r["spec"], r["status"], r.get("examples")) for r in results]
    assert statuses["1"] == statuses["2"]
    assert ("env.stack_equivalence", "pass", 5) in statuses["2"]
