"""A build that is merely slow is not bad input (issue 25).

A correct user factory whose probe outlasted the 240 s limit on a busy machine was refused as bad
input. Now the probe's limit is sized from the probes already measured in this run and the
machine's load (:func:`rlconform.core.user.probe_limit`), and a probe past it returns the system
unprobed, every check of it reported with the time taken, the limit and the load instead of a
verdict on the user's code.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import pytest

from rlconform.core import user
from rlconform.core.search import check_spec
from rlconform.core.spec import get_spec
from rlconform.core.user import factory_system, probe, probe_limit

gymnasium = pytest.importorskip("gymnasium")

SLEEP = 30.0
LIMIT = 0.5


def slow_vector(env_fns: Sequence[Any]) -> Any:
    """A correct vector env whose build takes longer than the test's limit."""
    time.sleep(SLEEP)
    return gymnasium.vector.SyncVectorEnv(list(env_fns))


def quick_vector(env_fns: Sequence[Any]) -> Any:
    return gymnasium.vector.SyncVectorEnv(list(env_fns))


@pytest.fixture
def idle(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """An idle machine with no probe measured yet; returns the measured list to fill."""
    measured: list[float] = []
    monkeypatch.setattr(user, "machine_load", lambda: (0.5, 2))
    monkeypatch.setattr(user, "_PROBES_MEASURED", measured)
    return measured


def test_a_slow_build_is_not_exercised_not_bad_input(idle: list[float]) -> None:
    started = time.perf_counter()
    system = probe(factory_system(slow_vector, "gymnasium.vector"), limit=LIMIT)
    assert time.perf_counter() - started < SLEEP  # stopped at the limit, not waited for
    reason = system.skip_reason()
    assert reason is not None and reason.startswith("not exercised:")
    assert "past the limit of 0.5 s (base 0.5 s; no other probe measured in this run)" in reason
    assert "load average 0.50 on 2 CPU(s)" in reason and "not a defect" in reason
    assert "slow_vector" in reason
    verdict = check_spec(system, get_spec("flags.terminated"), "fast")
    assert verdict.status == "not_exercised" and verdict.message == reason
    assert not idle  # an unfinished probe measures nothing


def test_the_limit_grows_with_the_probes_measured_in_this_run(idle: list[float]) -> None:
    assert probe_limit(240.0) == (240.0, "base 240 s")
    probe(factory_system(quick_vector, "gymnasium.vector"))
    assert len(idle) == 1 and idle[0] > 0
    idle[0] = 100.0
    limit, rule = probe_limit(240.0)
    assert limit == 400.0 and "4 x the longest probe measured in this run (100.0 s)" in rule


def test_the_limit_stretches_with_the_load(monkeypatch: pytest.MonkeyPatch, idle: list[float]) -> None:
    monkeypatch.setattr(user, "machine_load", lambda: (8.0, 2))
    limit, rule = probe_limit(240.0)
    assert limit == 960.0 and rule == "base 240 s, x 4.00 for the load"
