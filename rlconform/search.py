"""Search for a counterexample to one spec on one system, and turn the outcome into a verdict.

Hypothesis draws cases, the run cache executes them (shared across the specs of a system), the
spec checks each run, and the first violation is shrunk to a minimal case with a standalone
reproducer. A search that checked nothing is "not exercised", never "pass".
"""

from __future__ import annotations

import time
import traceback
from dataclasses import dataclass, field
from typing import Any, Literal

from hypothesis import given
from hypothesis import seed as hypothesis_seed
from hypothesis.strategies import SearchStrategy

from rlconform.fixtures.strategies import cases
from rlconform.profiles import Profile, get_profile, hypothesis_settings, session_seed, shrink_time_limit
from rlconform.reproducer import reproducer_source
from rlconform.runner import RUN_CACHE, RunCache
from rlconform.specs.registry import Spec, Violation
from rlconform.systems import System

Status = Literal["pass", "fail", "not_applicable", "not_exercised", "skipped", "error"]


class SpecFailure(AssertionError):
    """A spec's violation on a concrete case: title, message, reproducer."""

    def __init__(self, system: System, spec: Spec, case: Any, violations: list[Violation], run: Any) -> None:
        self.system, self.spec, self.case, self.violations, self.run = system, spec, case, violations, run
        self.title = f"{system.id} violates {spec.id}"
        more = f" (+{len(violations) - 1} more)" if len(violations) > 1 else ""
        self.message = violations[0].render() + more
        super().__init__(f"{self.title}: {self.message}")


@dataclass
class Verdict:
    system_id: str
    spec_id: str
    status: Status
    message: str = ""
    reproducer: str | None = None
    case: Any = None
    violations: list[str] = field(default_factory=list)
    examples: int = 0
    checked: int = 0
    seconds: float = 0.0
    profile: str = ""
    seed: int | None = None
    #: why this failure is known and documented (from the system's known_violations)
    known: str | None = None
    #: why the downstream project expects this check to fail (its expected-failures file)
    expected: str | None = None

    @property
    def internal_error(self) -> bool:
        """The error is rlconform's own, not the system's (see :func:`internal_error_message`)."""
        return self.status == "error" and self.message.startswith(INTERNAL_ERROR)

    @property
    def ok(self) -> bool:
        return (
            self.status in ("pass", "not_applicable")
            or (self.status == "fail" and self.known is not None)
            or self.expected is not None
        )


#: how the message of an error verdict raised by rlconform itself begins
INTERNAL_ERROR = "internal error in rlconform (please report)"
#: innermost frames of an internal error's traceback kept in its message
INTERNAL_ERROR_FRAMES = 12


def internal_error_message(exc: BaseException) -> str:
    """An exception inside rlconform (adapter, spec, model, strategy) while checking: never a
    verdict on the system, so the message says whose error it is and carries the traceback's
    innermost frames, where the bug is."""
    summary = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else '(no message)'}"
    frames = traceback.extract_tb(exc.__traceback__)[-INTERNAL_ERROR_FRAMES:]
    trace = "".join(traceback.format_list(frames)) + "".join(traceback.format_exception_only(type(exc), exc))
    return f"{INTERNAL_ERROR}: {summary}\nTraceback (innermost {len(frames)} frames):\n{trace.rstrip()}"


@dataclass
class _Tally:
    examples: int = 0
    checked: int = 0
    build_errors: int = 0
    build_error: str = ""
    not_applicable: int = 0
    not_applicable_reason: str = ""
    #: examples run when the first violation was found
    first_failure: int = 0
    #: the specs' notes on what they could not check, in order of first appearance
    notes: list[str] = field(default_factory=list)

    def note(self, notes: list[str]) -> None:
        self.notes.extend(n for n in notes if n not in self.notes)

    def with_notes(self, message: str) -> str:
        return message + "".join(f"; {n}" for n in self.notes)


def strategy_for(system: System, spec: Spec) -> SearchStrategy[Any]:
    from rlconform.scenarios import case_strategy
    from rlconform.user import USER_ENV_FAMILY

    own = case_strategy(system)
    if own is not None:
        return own
    if system.family == USER_ENV_FAMILY:
        from rlconform.envcheck import env_cases

        return env_cases(system)
    return cases(system, spec.scenario)


def check_spec(
    system: System, spec: Spec, profile: Profile | str | None = None, cache: RunCache = RUN_CACHE
) -> Verdict:
    """Search for a violation of ``spec`` by ``system``."""
    prof = profile if isinstance(profile, Profile) else get_profile(profile)
    start = time.perf_counter()
    seed = None if prof.derandomize else session_seed()
    base: dict[str, Any] = {"system_id": system.id, "spec_id": spec.id, "profile": prof.name, "seed": seed}
    reason = spec.not_applicable_reason(system)
    if reason is not None:
        return Verdict(status="not_applicable", message=reason, **base)
    skip = system.skip_reason()
    if skip:
        return Verdict(status="skipped", message=skip, **base)

    tally = _Tally()
    expensive = system.expensive or spec.expensive
    shrink_budget = prof.shrink_examples_for(expensive)
    failures: dict[Any, SpecFailure] = {}

    def prop(case: Any) -> None:
        if failures and tally.examples - tally.first_failure >= shrink_budget:
            # shrinking budget spent: the smallest failure found so far stands; known failures
            # still fail (Hypothesis replays the final one), every other candidate is passed over
            if case in failures:
                raise failures[case]
            return
        run = cache.get(system, case)
        tally.examples += 1
        if run.build_error is not None:
            tally.build_errors += 1
            tally.build_error = run.build_error.splitlines()[0]
            return
        outcome = spec.check(run)
        if outcome.not_applicable is not None:
            tally.not_applicable += 1
            tally.not_applicable_reason = outcome.not_applicable
            return
        tally.checked += outcome.checked
        tally.note(outcome.notes)
        if outcome.violations:
            failure = SpecFailure(system, spec, case, outcome.violations, run)
            if not failures:
                tally.first_failure = tally.examples
            failures[case] = failure
            raise failure

    test = given(strategy_for(system, spec))(prop)
    test = hypothesis_settings(prof, expensive)(test)
    if seed is not None:
        test = hypothesis_seed(seed)(test)
    try:
        with shrink_time_limit(prof.shrink_seconds):
            test()
    except SpecFailure as failure:
        return Verdict(
            status="fail",
            message=failure.message,
            reproducer=reproducer_source(system, spec, failure.case, failure.run),
            case=failure.case,
            violations=[v.render() for v in failure.violations],
            examples=tally.examples,
            checked=tally.checked,
            seconds=time.perf_counter() - start,
            known=system.known_violation(spec.id),
            **base,
        )
    except Exception as exc:
        # the system's own failures are recorded where they happen (a build error, a call that
        # raised, a close that failed): what reaches here was raised by rlconform's own code
        return Verdict(
            status="error",
            message=internal_error_message(exc),
            examples=tally.examples,
            seconds=time.perf_counter() - start,
            **base,
        )
    elapsed = time.perf_counter() - start
    common: dict[str, Any] = {"examples": tally.examples, "checked": tally.checked, "seconds": elapsed, **base}
    if tally.checked > 0:
        message = f"{tally.checked} facts checked over {tally.examples} examples"
        return Verdict(status="pass", message=tally.with_notes(message), **common)
    if tally.build_errors == tally.examples:
        return Verdict(
            status="error", message=f"the system could not be built for any example: {tally.build_error}", **common
        )
    if tally.not_applicable and tally.not_applicable + tally.build_errors == tally.examples:
        return Verdict(status="not_applicable", message=tally.not_applicable_reason, **common)
    return Verdict(
        status="not_exercised",
        message=tally.with_notes(f"no example exercised this spec ({tally.examples} examples drawn)"),
        **common,
    )
