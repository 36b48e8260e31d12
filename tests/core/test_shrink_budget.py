"""A search whose shrink budget is spent ends Hypothesis' shrinking there, and reports exactly the
failure it reported when Hypothesis went on shrinking (rlconform.core.shrink_budget).

Each verdict is computed twice: as searches run it, and with the failures kept in a plain dict
(what they were before), so that Hypothesis shrinks on until its own passes run out. Everything a
verdict says must be the same; only the number of examples Hypothesis ran may differ.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from rlconform.core import search, shrink_budget
from rlconform.core.profiles import Profile, get_profile
from rlconform.core.runner import RunCache
from rlconform.core.search import Verdict, check_spec
from rlconform.core.spec import get_spec
from rlconform.core.system import get_system

pytest.importorskip("gymnasium")

#: a ci profile whose shrink budget in-process systems spend (theirs is 400 examples; that of
#: systems with worker processes, 150, is what failures of Async and Subproc vectorizers spend)
SMALL_BUDGET = dataclasses.replace(get_profile("ci"), name="ci-small-shrink-budget", shrink_examples=10)

#: failures whose shrinks spend the budget: (system, spec, profile)
SPENDING = [
    ("gymnasium.SyncVectorEnv.NextStep", "aliasing.caller_arguments", SMALL_BUDGET),
    ("gymnasium.RecordEpisodeStatistics.SyncVectorEnv.Disabled", "statistics.episode", SMALL_BUDGET),
    ("gymnasium.SyncVectorEnv.NextStep", "aliasing.caller_arguments", get_profile("matrix")),
]


def described(verdict: Verdict) -> dict[str, Any]:
    """Everything a verdict says, but the seconds it took."""
    return {k: v for k, v in vars(verdict).items() if k != "seconds"}


def counted(monkeypatch: pytest.MonkeyPatch, system_id: str, spec_id: str, profile: Profile) -> tuple[Verdict, int]:
    """The verdict, and how many examples Hypothesis' engine ran to reach it."""
    from hypothesis.internal.conjecture.engine import ConjectureRunner

    calls = [0]
    real = ConjectureRunner.test_function

    def test_function(self: Any, data: Any) -> None:
        calls[0] += 1
        real(self, data)

    with monkeypatch.context() as patch:
        patch.setattr(ConjectureRunner, "test_function", test_function)
        # the budget ends Hypothesis' shrinking of drawn cases; a failing edge case (an explicit
        # example, rlconform.envs.boundary_cases) is never shrunk and would end the search before
        # any draw, so these searches run without them
        patch.setattr(search, "edge_cases_for", lambda system, spec: [])
        verdict = check_spec(get_system(system_id), get_spec(spec_id), profile, RunCache())
    return verdict, calls[0]


@pytest.mark.parametrize(("system_id", "spec_id", "profile"), SPENDING, ids=lambda v: getattr(v, "name", v))
def test_ending_the_shrink_at_the_budget_reports_the_same_failure(
    monkeypatch: pytest.MonkeyPatch, system_id: str, spec_id: str, profile: Profile
) -> None:
    ended, ended_calls = counted(monkeypatch, system_id, spec_id, profile)
    with monkeypatch.context() as patch:
        patch.setattr(search, "Failures", dict)
        shrunk_on, shrunk_on_calls = counted(monkeypatch, system_id, spec_id, profile)
    assert ended.status == "fail" and ended.case is not None and ended.reproducer
    assert described(ended) == described(shrunk_on)
    # the budget was spent (Hypothesis went on past it) and the shrink ended there: the examples
    # run after the budget are the one that ended it and Hypothesis' replay of the failure
    assert shrunk_on_calls > ended_calls + 20, (shrunk_on_calls, ended_calls)
    print(f"{system_id} {spec_id} ({profile.name}): {ended_calls} examples instead of {shrunk_on_calls}")


def test_asking_for_a_failure_outside_a_hypothesis_search_changes_nothing() -> None:
    failures = shrink_budget.Failures()
    failures["case"] = "failure"
    assert "case" in failures and "other" not in failures  # no engine on the stack: nothing to end


def _engine_on_stack() -> Any:
    """The Hypothesis engine running the current example (as end_shrinking finds it), or None
    (Hypothesis' final replay of a failure runs outside its engine)."""
    import sys

    from hypothesis.internal.conjecture.engine import ConjectureRunner

    frame = sys._getframe(1)
    while frame is not None:
        if isinstance(frame.f_locals.get("self"), ConjectureRunner):
            return frame.f_locals["self"]
        frame = frame.f_back  # type: ignore[assignment]
    return None


def test_a_hypothesis_test_running_searches_keeps_shrinking() -> None:
    """A user's ``@given`` test that runs a search: ending the search's shrink must not end the
    shrink of the user's own test (the search's final replay runs with only the user's engine on
    the stack)."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    system, spec = get_system(SPENDING[0][0]), get_spec(SPENDING[0][1])
    deadlines: list[float] = []

    @settings(max_examples=3, database=None, derandomize=True, suppress_health_check=[HealthCheck.nested_given])
    @given(st.integers(0, 3))
    def users_test(n: int) -> None:
        engine = _engine_on_stack()
        if engine is not None and engine.finish_shrinking_deadline is not None:  # the user's test is shrinking
            verdict = check_spec(system, spec, SMALL_BUDGET, RunCache())
            assert verdict.status == "fail"
            deadlines.append(engine.finish_shrinking_deadline)
        raise ValueError("the user's test fails, so Hypothesis shrinks it")

    with pytest.raises(ValueError, match="the user's test fails"):
        users_test()
    assert deadlines, "the search never ran while the user's test was shrinking"
    assert all(deadline > 0 for deadline in deadlines), deadlines


def test_a_failing_search_before_the_budget_is_not_cut_short(monkeypatch: pytest.MonkeyPatch) -> None:
    """A failure whose shrink ends by itself (before the budget) never asks: its shrink is whole."""
    asked: list[object] = []
    real = shrink_budget.Failures.__contains__

    def contains(self: Any, case: object) -> bool:
        asked.append(case)
        return real(self, case)

    monkeypatch.setattr(shrink_budget.Failures, "__contains__", contains)
    verdict = check_spec(get_system("planted.double_step"), get_spec("terminal.final_obs"), "ci", RunCache())
    assert verdict.status == "fail"
    assert asked == []
