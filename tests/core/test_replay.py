"""A search replays the cases an earlier search of the same kind drew, and reaches the verdict it
would have reached by drawing them (rlconform.core.search._replayed).

Each verdict is computed twice: with one run cache shared by the system's specs, in spec order (the
second and later searches of a scenario replay the first one's cases), and with a fresh cache per
spec (every search draws its own cases with Hypothesis). Everything a verdict says must be the same.
"""

from __future__ import annotations

from typing import Any

import pytest

from rlconform.core.runner import RunCache
from rlconform.core.search import Verdict, check_spec
from rlconform.core.spec import Spec, get_spec
from rlconform.core.system import System, get_system

pytest.importorskip("gymnasium")

#: a planted bug with passing and failing specs of every scenario, and a correct system
CHECKED = {
    # fails specs of the standard and robustness scenarios, passes others of each
    "planted.double_step": (
        "lifecycle.responsive",
        "terminal.final_obs",
        "dtype.observations",
        "flags.terminated",
        "aliasing.returned_objects",
        "api.wrong_size_batch_rejected",
        "api.failed_call_no_side_effect",
    ),
    # fails a spec of the reseed scenario
    "planted.shifted_reward": ("seeding.reset_determinism", "seeding.seed_plus_i", "flags.truncated"),
    "gymnasium.SyncVectorEnv.NextStep": ("lifecycle.responsive", "transitions.exact", "seeding.reset_determinism"),
}


def described(verdict: Verdict) -> dict[str, Any]:
    """Everything a verdict says, but the seconds it took."""
    return {k: v for k, v in vars(verdict).items() if k != "seconds"}


def verdicts(system: System, specs: list[Spec], shared: bool) -> list[dict[str, Any]]:
    cache = RunCache()
    found = []
    for spec in specs:
        found.append(described(check_spec(system, spec, "ci", cache if shared else RunCache())))
    return found


@pytest.mark.parametrize("system_id", sorted(CHECKED))
def test_replayed_searches_reach_the_verdicts_of_drawn_ones(system_id: str) -> None:
    system = get_system(system_id)
    specs = [get_spec(spec_id) for spec_id in CHECKED[system_id]]
    replayed = verdicts(system, specs, shared=True)
    drawn = verdicts(system, specs, shared=False)
    for spec, a, b in zip(specs, replayed, drawn, strict=True):
        assert a == b, spec.id
    if system_id.startswith("planted."):
        assert {v["status"] for v in replayed} == {"pass", "fail"}


def test_a_passing_search_records_its_cases_and_a_failing_one_does_not() -> None:
    system = get_system("planted.double_step")
    cache = RunCache()
    failing = check_spec(system, get_spec("terminal.final_obs"), "ci", cache)
    assert failing.status == "fail"
    assert not cache._drawn
    passing = check_spec(system, get_spec("dtype.observations"), "ci", cache)
    assert passing.status == "pass"
    ((key, (recorded_system, cases)),) = cache._drawn.items()
    assert recorded_system == system and key[:2] == (system.id, "standard")
    assert len(cases) >= passing.examples
    # the failing search again, now from the replay: the same verdict
    again = check_spec(system, get_spec("terminal.final_obs"), "ci", cache)
    assert described(again) == described(failing)


def test_cleared_cache_forgets_the_cases() -> None:
    system = get_system("gymnasium.SyncVectorEnv.NextStep")
    cache = RunCache()
    check_spec(system, get_spec("flags.terminated"), "ci", cache)
    assert cache._drawn
    cache.clear()
    assert not cache._drawn


def test_a_later_passing_search_replays_without_drawing(monkeypatch: pytest.MonkeyPatch) -> None:
    """The replay happens (not only agrees): the second passing search of a scenario runs every
    recorded case outside Hypothesis and never starts a Hypothesis search."""
    import rlconform.core.search as search

    system = get_system("gymnasium.SyncVectorEnv.NextStep")
    cache = RunCache()
    first = check_spec(system, get_spec("flags.terminated"), "ci", cache)
    assert first.status == "pass"
    outcomes: list[bool] = []
    real = search._replayed

    def watched(*args: Any) -> bool:
        outcomes.append(real(*args))
        return outcomes[-1]

    real_given = search.given
    started: list[str] = []

    def given(*strategies: Any) -> Any:
        def decorate(prop: Any) -> Any:
            test = real_given(*strategies)(prop)

            def run() -> None:
                started.append("hypothesis")
                test()

            return run

        return decorate

    monkeypatch.setattr(search, "_replayed", watched)
    monkeypatch.setattr(search, "given", given)
    second = check_spec(system, get_spec("flags.truncated"), "ci", cache)
    assert outcomes == [True] and started == []
    assert second.status == "pass" and second.examples == first.examples
