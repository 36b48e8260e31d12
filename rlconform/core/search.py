"""Search for a counterexample to one spec on one system, and turn the outcome into a verdict.

Hypothesis draws cases, the run cache executes them (shared across the specs of a system), the
spec checks each run, and the first violation is shrunk to a minimal case with a standalone
reproducer. A search that checked nothing is "not exercised", never "pass". Hung runs are
handled as :mod:`rlconform.core.hangs` says: ``lifecycle.responsive`` fails on the first one, other
specs skip them, and a system that spent its hang budget is "not run" for the specs left, a
status of its own that is neither a pass nor a failure of a spec that never checked anything.
"""

from __future__ import annotations

import contextlib
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from hypothesis import example, given, reject
from hypothesis import seed as hypothesis_seed
from hypothesis.errors import HypothesisWarning
from hypothesis.reporting import with_reporter
from hypothesis.strategies import SearchStrategy

from rlconform.core.config import validate as validate_config
from rlconform.core.family import REFUSED, get_family, is_refusal
from rlconform.core.hangs import RESPONSIVE, Hang, SystemHung, budget_spent, hang_in
from rlconform.core.hypothesis_isolation import without_local_constants
from rlconform.core.inherited import inherited_from
from rlconform.core.library_messages import captured
from rlconform.core.profiles import Profile, get_profile, hypothesis_settings, session_seed, shrink_time_limit
from rlconform.core.reproducer import reproducer_source
from rlconform.core.runner import RUN_CACHE, RunCache
from rlconform.core.shrink_budget import Failures
from rlconform.core.signature import signature
from rlconform.core.spec import COUNTED, NO_OCCASION, REQUIRED, Spec, Violation, documented_approximation
from rlconform.core.system import System
from rlconform.core.verdict import Verdict, internal_error_message, skip_status


class SpecFailure(AssertionError):
    """A spec's violation on a concrete case: title, message, reproducer."""

    def __init__(self, system: System, spec: Spec, case: Any, violations: list[Violation], run: Any) -> None:
        self.system, self.spec, self.case, self.violations, self.run = system, spec, case, violations, run
        self.title = f"{system.id} violates {spec.id}"
        more = f" (+{len(violations) - 1} more)" if len(violations) > 1 else ""
        self.message = violations[0].render() + more
        super().__init__(f"{self.title}: {self.message}")


#: the most characters of a build error a verdict's message quotes (a TensorDict's repr is one line)
NOT_BUILT_REASON_CHARS = 200


@dataclass
class _Tally:
    examples: int = 0
    checked: int = 0
    build_errors: int = 0
    build_error: str = ""
    #: the first example's build error (``build_error`` is the last one's): what a verdict quotes
    first_build_error: str = ""
    #: examples whose input the library refused (rlconform.core.family.refused): left out like the
    #: examples not built, but counted and told apart from them; the first one's reason
    refusals: int = 0
    first_refusal: str = ""
    not_applicable: int = 0
    not_applicable_reason: str = ""
    #: examples run when the first violation was found
    first_failure: int = 0
    #: the specs' notes on what they could not check, in order of first appearance
    notes: list[str] = field(default_factory=list)
    #: the specs' tallies (Checker.count), summed over the examples
    counts: dict[str, int] = field(default_factory=dict)
    #: the specs' requirements (Checker.requires): None once an example met one, else why the
    #: first example that was told of it did not
    required: dict[str, str | None] = field(default_factory=dict)

    def __setattr__(self, name: str, value: Any) -> None:
        # the property of check_spec sets build_error on every example that was not built; the
        # first one is kept here, without editing the property (derandomization reads its source).
        # A refusal reaches here the same way (the property counted it as not built): it is moved
        # to the refusals' count, and build_error keeps the last real build error
        if name == "build_error" and is_refusal(value):
            object.__setattr__(self, "build_errors", self.build_errors - 1)
            object.__setattr__(self, "refusals", self.refusals + 1)
            if not self.first_refusal:
                object.__setattr__(self, "first_refusal", value[len(REFUSED) :])
            return
        if name == "build_error" and value and not getattr(self, "first_build_error", ""):
            object.__setattr__(self, "first_build_error", value)
        object.__setattr__(self, name, value)

    def note(self, notes: list[str]) -> None:
        for note in notes:
            if note.startswith(COUNTED):
                # a tally (Checker.count): summed over the examples, reported once
                label, _, value = note[len(COUNTED) :].partition(COUNTED)
                self.counts[label] = self.counts.get(label, 0) + int(value)
            elif note.startswith(REQUIRED):
                what, _, why_not = note[len(REQUIRED) :].partition(REQUIRED)
                known = self.required.get(what, NO_OCCASION)
                if not why_not:
                    self.required[what] = None
                elif known is not None and known.startswith(NO_OCCASION) and not why_not.startswith(NO_OCCASION):
                    self.required[what] = why_not  # a reason from an example that had the occasion says more
                elif what not in self.required:
                    self.required[what] = why_not
            elif note not in self.notes:
                self.notes.append(note)

    def not_built(self) -> list[str]:
        """The notes saying how many examples were not built and why, and how many the library
        refused and why (each the first one's reason): a search that checked the others must not
        read as if every example was checked."""
        notes = []
        if self.build_errors:
            notes.append(
                f"{self.build_errors} of the {self.examples} examples were not built: building the system raised "
                f"(first: {_quoted(self.first_build_error)})"
            )
        if self.refusals:
            notes.append(self.refused())
        return notes

    def refused(self) -> str:
        """How many examples the library refused, and the first one's reason."""
        return (
            f"{self.refusals} of the {self.examples} examples were refused by the library, so left out "
            f"(first: {_quoted(self.first_refusal)})"
        )

    def unmet(self) -> str | None:
        """The first requirement no example met, with why (None: every one was met)."""
        for what, why_not in self.required.items():
            if why_not is not None:
                return f"{what} in none of them: {why_not.removeprefix(NO_OCCASION)}"
        return None

    def with_notes(self, message: str) -> str:
        tallies = [f"{label}: {total}" for label, total in self.counts.items()]
        return message + "".join(f"; {n}" for n in [*self.notes, *tallies])


def _quoted(reason: str) -> str:
    """A build error or refusal as a verdict quotes it: one line, cut to NOT_BUILT_REASON_CHARS."""
    # a KeyError's message is its repr: a TensorDict in it has its newlines escaped
    reason = " ".join(reason.replace("\\n", " ").split())
    if len(reason) > NOT_BUILT_REASON_CHARS:
        reason = reason[: NOT_BUILT_REASON_CHARS - 3].rstrip() + "..."
    return reason


def strategy_for(system: System, spec: Spec) -> SearchStrategy[Any]:
    """The cases a search for ``spec`` draws on ``system``: its family's."""
    return get_family(system.family).cases(system, spec.scenario)


def edge_cases_for(system: System, spec: Spec) -> list[Any]:
    """The cases every search for ``spec`` on ``system`` tries before it draws any, under every
    profile: the family's edge cases (a family may have none; rlconform.envs.boundary_cases)."""
    return list(get_family(system.family).boundary_cases(system, spec.scenario))


def _explained(
    system: System, spec: Spec, case: Any, run: Any, violations: list[Violation]
) -> tuple[str | None, str | None]:
    """Why a failure may not be the system's own: a known (documented) violation, else the
    library under a user's stack failing the same way (rlconform.core.inherited)."""
    known = system.known_violation(spec.id) or documented_approximation(violations)
    return known, None if known else inherited_from(system, spec, case, run, violations)


def _fail_verdict(
    failure: SpecFailure, tally: _Tally, start: float, base: dict[str, Any], *, stopped: str | None = None
) -> Verdict:
    """The verdict of a search that found ``failure`` (``stopped``: why it could not shrink it further)."""
    kinds = sorted({v.kind for v in failure.violations})
    message = failure.message if stopped is None else f"{failure.message} (search stopped early: {stopped})"
    known, inherited = _explained(failure.system, failure.spec, failure.case, failure.run, failure.violations)
    return Verdict(
        status="fail",
        message=message,
        reproducer=reproducer_source(failure.system, failure.spec, failure.case, failure.run),
        case=failure.case,
        violations=[v.render() for v in failure.violations],
        examples=tally.examples,
        checked=tally.checked,
        seconds=time.perf_counter() - start,
        known=known,
        signature=signature(failure.spec.id, kinds),
        violation_kinds=kinds,
        inherited=inherited,
        **base,
    )


def check_spec(
    system: System,
    spec: Spec,
    profile: Profile | str | None = None,
    cache: RunCache = RUN_CACHE,
    *,
    on_example: Callable[[int], None] | None = None,
) -> Verdict:
    """Search for a violation of ``spec`` by ``system``; ``on_example`` is told how many examples
    the search has run so far, after each (progress reports). What the system's libraries say
    meanwhile (warnings of the family's loggers, warnings raised in library code) is kept off the
    screen and counted on the verdict (:mod:`rlconform.core.library_messages`).

    A bad RLCONFORM_* variable raises :class:`~rlconform.core.config.ConfigError` here, before the
    search: it is the caller's input, never a verdict on the system."""
    validate_config()
    try:
        family = get_family(system.family)
        loggers, libraries = tuple(family.quiet_loggers), tuple(family.libraries)
    except Exception:  # a family whose library is missing: the search gives its skip, nothing runs
        loggers, libraries = (), ()
    with captured(loggers, libraries) as said:
        try:
            verdict = _search(system, spec, profile, cache, on_example)
        finally:
            _end_search(system)
    verdict.library_messages = dict(sorted(said.items()))
    return verdict


def _end_search(system: System) -> None:
    """Tell the system's family that a search of it ended (``Family.end_search``): a family that
    keeps what it built across the examples of a search (env-author mode's stacks) closes it then."""
    try:
        family = get_family(system.family)
    except Exception:  # a family whose library is missing built nothing
        return
    family.end_search(system)


def _search(
    system: System,
    spec: Spec,
    profile: Profile | str | None,
    cache: RunCache,
    on_example: Callable[[int], None] | None,
) -> Verdict:
    """:func:`check_spec`'s search."""
    prof = profile if isinstance(profile, Profile) else get_profile(profile)
    start = time.perf_counter()
    seed = None if prof.derandomize else session_seed()
    base: dict[str, Any] = {
        "system_id": system.id,
        "spec_id": spec.id,
        "profile": prof.name,
        "seed": seed,
        "impact": spec.impact,
    }
    reason = spec.not_applicable_reason(system)
    if reason is not None:
        return Verdict(status="not_applicable", message=reason, **base)
    skip = system.skip_reason()
    if skip:
        return Verdict(status=skip_status(skip), message=skip, **base)

    spent = budget_spent(system.id)
    if spent is not None:
        return _hung_verdict(system, spec, spent, base, time.perf_counter() - start)

    tally = _Tally()
    expensive = system.expensive or spec.expensive
    shrink_budget = prof.shrink_examples_for(expensive)
    # a Failures: asking it for a case once the shrink budget is spent ends Hypothesis' shrinking
    failures: dict[Any, SpecFailure] = Failures()

    # the cases an earlier search drew with the same strategy and settings (see _replayed)
    drawn_key = (system.id, spec.scenario, prof, expensive, spec.max_examples, seed)
    drawn = cache.drawn_cases(drawn_key, system)
    runs = cache
    # the cache as this search reads it: hung runs handled as rlconform.core.hangs says (the property
    # below is kept as it was: derandomized profiles seed Hypothesis from its source text, so any
    # edit of it would change every derandomized example and verdict)
    cache = guarded = _HangGuard(cache, spec, on_example)

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

    # the edge cases, as explicit examples: they run before the search and leave what it draws
    # (seeded from the property's source under derandomized profiles) unchanged
    explicit = prop
    for edge in reversed(edge_cases_for(system, spec)):
        explicit = example(edge)(explicit)
    test = given(strategy_for(system, spec))(explicit)
    test = hypothesis_settings(prof, expensive, spec.max_examples)(test)
    if seed is not None:
        test = hypothesis_seed(seed)(test)
    try:
        with shrink_time_limit(prof.shrink_seconds), without_local_constants(), _hypothesis_silenced():
            if drawn is None or not _replayed(prop, drawn, guarded):
                if drawn is not None:  # a case failed: search as if the replay had not happened
                    failures.clear()
                    tally.__init__()  # type: ignore[misc]
                    guarded.restart()
                guarded.recording = drawn is None
                test()
                if guarded.recording:  # every case passed: the next search of this kind replays them
                    runs.record_drawn(drawn_key, system, guarded.cases)
    except SystemHung as hung:
        if failures and spec.id != RESPONSIVE:
            # a violation found before the hang stands (the search could not shrink it further)
            failure = list(failures.values())[-1]
            return _fail_verdict(failure, tally, start, base, stopped=hung.hang.description)
        return _hung_verdict(system, spec, hung.hang, base, time.perf_counter() - start, tally.examples)
    except SpecFailure as failure:
        return _fail_verdict(failure, tally, start, base)
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
    if guarded.hang is not None:
        tally.note([f"{guarded.hung} example(s) set aside: the system hung in them (see {RESPONSIVE})"])
    if tally.build_errors < tally.examples:
        tally.notes[:0] = tally.not_built()
    if tally.checked > 0 and 2 * (tally.examples - tally.build_errors) < tally.examples:
        # a pass over fewer than half of the examples drawn says little of the others: no verdict
        built = tally.examples - tally.build_errors
        message = (
            f"{tally.checked} facts checked over only {built} of the {tally.examples} examples, too few for a "
            "verdict (fewer than half were built)"
        )
        return Verdict(status="not_exercised", message=tally.with_notes(message), **common)
    unmet = tally.unmet()
    if tally.checked > 0 and unmet is not None:
        # what the spec exists for was never seen: the facts around it are no verdict on it
        message = f"not exercised: {tally.checked} facts checked over {tally.examples} examples, but {unmet}"
        return Verdict(status="not_exercised", message=tally.with_notes(message), **common)
    if tally.checked > 0:
        message = f"{tally.checked} facts checked over {tally.examples} examples"
        return Verdict(status="pass", message=tally.with_notes(message), **common)
    left_out = tally.build_errors + tally.refusals + tally.not_applicable
    if guarded.hang is not None and left_out == tally.examples:
        return Verdict(status="not_run", message=guarded.hang.not_run_message(), **common)
    if tally.build_errors == tally.examples:
        return Verdict(
            status="error", message=f"the system could not be built for any example: {tally.build_error}", **common
        )
    if tally.not_applicable and left_out == tally.examples:
        return Verdict(status="not_applicable", message=tally.not_applicable_reason, **common)
    if tally.refusals and left_out == tally.examples:
        # nothing checked because the library refused rlconform's inputs: no verdict on the system
        refused = tally.refused()
        tally.notes = [note for note in tally.notes if note != refused]
        return Verdict(status="not_exercised", message=tally.with_notes(f"nothing checked: {refused}"), **common)
    return Verdict(
        status="not_exercised",
        message=tally.with_notes(
            f"no example exercised this spec ({tally.examples} examples drawn"
            + (f"; {unmet})" if unmet is not None else ")")
        ),
        **common,
    )


class _Rejected(Exception):
    """A replayed example set aside (what ``reject()`` is to Hypothesis, outside Hypothesis)."""


def _replayed(prop: Callable[[Any], None], cases: list[Any], guarded: _HangGuard) -> bool:
    """Run the property on ``cases``, the cases an earlier search of the same system, strategy,
    settings and seed drew, in their order, as Hypothesis runs each example (Python's and NumPy's
    global random states seeded as Hypothesis seeds them). True when no case failed.

    Drawing is what a search of a fast system spends its time on, and it need not be repeated: a
    Hypothesis search's cases depend only on its seed (for derandomized profiles, the source of
    ``prop``, the same for every spec), strategy and settings, and on how each example ended. The
    earlier search ended every example by returning or setting it aside, so a search whose
    property does the same on every case draws exactly these cases and no others, reads the same
    runs in the same order, and reaches the same verdict. At the first case that fails (or
    raises), the two searches part: the caller then runs the Hypothesis search itself (its first
    cases are these again, read from the run cache), exactly as it would have without the replay."""
    try:
        from hypothesis.internal.entropy import deterministic_PRNG
    except ImportError:  # pragma: no cover - a Hypothesis without it: search as usual
        return False
    guarded.replaying = True
    try:
        for case in cases:
            with deterministic_PRNG():
                try:
                    prop(case)
                except _Rejected:
                    continue
                except Exception:  # a violation (SpecFailure) or an error: Hypothesis' search decides
                    return False
        return True
    finally:
        guarded.replaying = False


class _HangGuard(RunCache):
    """The run cache as one search reads it (:mod:`rlconform.core.hangs`): a hung run ends the search of
    ``lifecycle.responsive`` at once (its failure, unshrunk: shrinking would wait on every hang);
    for any other spec it is set aside as an invalid example (a run stopped at a hang is not
    evidence), until the system's hang budget is spent and the search stops. It also keeps the
    cases the search reads, in order (for :func:`_replayed`)."""

    def __init__(self, inner: RunCache, spec: Spec, on_example: Callable[[int], None] | None = None) -> None:
        super().__init__(size=0)
        self.inner = inner
        self.spec = spec
        self.on_example = on_example
        #: keep the cases read (a search whose cases later searches may replay)
        self.recording = False
        #: the property runs outside Hypothesis (:func:`_replayed`): a set-aside example raises _Rejected
        self.replaying = False
        self.restart()

    def restart(self) -> None:
        """Forget what the search read so far (a replay that gave way to the search itself)."""
        #: examples set aside because the system hung in them, and the first of them
        self.hung = 0
        self.hang: Hang | None = None
        #: runs read so far (the examples of the search, those set aside included)
        self.reads = 0
        self.cases: list[Any] = []

    def get(self, system: System, case: Any) -> Any:
        if self.recording:
            self.cases.append(case)
        run = self.inner.get(system, case)
        self.reads += 1
        if self.on_example is not None:
            self.on_example(self.reads)
        hang = hang_in(system.id, case, run)
        if hang is None:
            return run
        if self.spec.id == RESPONSIVE:
            raise SystemHung(hang)
        self.hung += 1
        self.hang = self.hang or hang
        spent = budget_spent(system.id)
        if spent is not None:
            raise SystemHung(spent)
        if self.replaying:
            raise _Rejected
        reject()  # Hypothesis draws another example in its place

    def clear(self) -> None:
        self.inner.clear()


def _hung_verdict(
    system: System, spec: Spec, hang: Hang, base: dict[str, Any], seconds: float, examples: int = 0
) -> Verdict:
    """``lifecycle.responsive`` fails on the run that hung; any other spec was not run."""
    if spec.id == RESPONSIVE:
        outcome = spec.check(hang.run)
        if outcome.violations:
            more = f" (+{len(outcome.violations) - 1} more)" if len(outcome.violations) > 1 else ""
            # the hung case replayed on the library under a user's stack: a hang of the library's
            # own (Gymnasium's AsyncVectorEnv, FINDINGS G3) is inherited as any failure is
            known, inherited = _explained(system, spec, hang.case, hang.run, outcome.violations)
            return Verdict(
                status="fail",
                message=outcome.violations[0].render() + more,
                reproducer=reproducer_source(system, spec, hang.case, hang.run),
                case=hang.case,
                violations=[v.render() for v in outcome.violations],
                examples=max(examples, 1),
                checked=outcome.checked,
                seconds=seconds,
                known=known,
                inherited=inherited,
                **base,
            )
    return Verdict(status="not_run", message=hang.not_run_message(), examples=examples, seconds=seconds, **base)


@contextlib.contextmanager
def _hypothesis_silenced() -> Iterator[None]:
    """Hypothesis' own printing (seeds to reproduce, "spent more than five minutes shrinking ...
    PLEASE REPORT THIS") and warnings (health checks) are about rlconform's searches, not about the
    user's system: the verdict carries the case and the reproducer, so none of it reaches the user."""
    with with_reporter(lambda text: None), warnings.catch_warnings():
        warnings.simplefilter("ignore", HypothesisWarning)
        yield
