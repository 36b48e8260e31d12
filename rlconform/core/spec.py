"""The spec registry: one small named function per property, with its statement and rationale.

A spec takes the run its family made of a case (a :class:`~rlconform.core.family.RunRecord`: an
:class:`~rlconform.envs.driver.Run` for the families driven around the reference envs) and returns
an :class:`Outcome`: how many facts it checked and which of them failed. "Checked nothing" is an outcome of its own, never a pass: a
search in which no example exercised a spec reports the spec as not exercised.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from rlconform.core.catalog import SPEC_ATTRIBUTE, current
from rlconform.core.impact import IMPACTS, Impact
from rlconform.core.signature import violation_kind

if TYPE_CHECKING:
    from rlconform.core.system import System

#: which cases a spec's search draws (the family's ``cases`` and ``boundary_cases`` read it):
#: "stacks" is env-author mode's ``env.stack_equivalence``, whose runs only drive the stacks
Scenario = Literal["standard", "robustness", "reseed", "stacks"]


#: marks a note that is a tally (:meth:`Checker.count`): ``COUNTED label COUNTED n``
COUNTED = "\x00tally\x00"
#: marks a note that is a requirement (:meth:`Checker.requires`): ``REQUIRED what REQUIRED why``,
#: ``why`` empty where the example met it
REQUIRED = "\x00required\x00"
#: starts the ``why`` of a requirement whose occasion did not arise in the example (no episode
#: ended): a search reports another example's reason over it, which says more
NO_OCCASION = "\x00no occasion\x00"


@dataclass(frozen=True)
class Violation:
    spec_id: str
    message: str
    env: int | None = None
    agent_step: int | None = None
    call: int | None = None
    #: the documentation that makes this departure from the exact value a documented approximation
    #: (:meth:`Checker.approximation`): the verdict is then "known", citing it, never a FAIL
    documented: str | None = None

    def render(self) -> str:
        where = []
        if self.env is not None:
            where.append(f"env {self.env}")
        if self.agent_step:
            where.append(f"agent step {self.agent_step}")
        elif self.call is not None:
            where.append(f"call {self.call}")
        prefix = ", ".join(where)
        return f"{prefix}: {self.message}" if prefix else self.message

    @property
    def kind(self) -> str:
        """What kind of violation this is, without the values (env indices, steps, numbers) that
        change with the case: two cases breaking the spec the same way have the same kind."""
        return violation_kind(self.message)


@dataclass
class Outcome:
    checked: int = 0
    violations: list[Violation] = field(default_factory=list)
    #: why the spec does not apply to this run (e.g. SameStep has no reset step)
    not_applicable: str | None = None
    #: what the spec could not check on this run and why (e.g. a stack whose library is not
    #: installed); the verdict's message repeats them, so that nothing is left out silently
    notes: list[str] = field(default_factory=list)


class Checker:
    """Accumulates the facts a spec checks; every ``expect`` counts as one checked fact.

    A spec function makes its own with ``Checker()``: the spec id is written once, in ``@spec``,
    which puts it on every violation the function returns."""

    def __init__(self, spec_id: str = "") -> None:
        self.spec_id = spec_id
        self.outcome = Outcome()

    def expect(
        self,
        condition: bool,
        message: str | Callable[[], str],
        *,
        env: int | None = None,
        agent_step: int | None = None,
        call: int | None = None,
    ) -> bool:
        self.outcome.checked += 1
        if not condition:
            text = message() if callable(message) else message
            self.outcome.violations.append(Violation(self.spec_id, text, env, agent_step, call))
        return bool(condition)

    def fail(
        self, message: str, *, env: int | None = None, agent_step: int | None = None, call: int | None = None
    ) -> None:
        self.expect(False, message, env=env, agent_step=agent_step, call=call)

    def approximation(self, documented: str, message: str, *, env: int | None = None) -> None:
        """Record a departure from the exact value that the system declares and its library
        documents (``documented`` cites where), with the bias it measured in ``message``. A spec
        whose only violations are approximations gives the verdict "known", citing ``documented``:
        never a silent pass, never a FAIL. Keep approximations in a spec of their own, so that a
        real defect elsewhere is never shrunk into an example that only shows the approximation."""
        self.outcome.checked += 1
        self.outcome.violations.append(Violation(self.spec_id, message, env, documented=documented))

    def note(self, text: str) -> None:
        """Say what was not checked, and why; not a violation."""
        if text not in self.outcome.notes:
            self.outcome.notes.append(text)

    def count(self, label: str, n: int) -> None:
        """Add ``n`` to a tally the verdict reports summed over the search's examples ("episode ends
        crossed through X: 37"), carried in the notes (:data:`COUNTED`) and summed by the search."""
        self.outcome.notes.append(f"{COUNTED}{label}{COUNTED}{int(n)}")

    def requires(self, what: str, met: bool, why_not: str = "", *, occasion: bool = True) -> None:
        """Say that the spec is exercised only by an example in which ``what`` happened (an
        episode end crossed), and whether this one did (``why_not``: why not, with what would let
        it). A search in which no example met a requirement it was told of is "not exercised",
        saying ``what`` and the first ``why_not``, however many other facts it checked: the facts
        the spec exists for were never seen. ``occasion=False``: the example gave no occasion to
        meet it (nothing ended); the search then prefers another example's ``why_not``."""
        why = "" if met else why_not or "not seen"
        if why and not occasion:
            why = NO_OCCASION + why
        self.outcome.notes.append(f"{REQUIRED}{what}{REQUIRED}{why}")

    def not_applicable(self, reason: str) -> Outcome:
        self.outcome.not_applicable = reason
        return self.outcome

    def done(self) -> Outcome:
        return self.outcome


SpecFn = Callable[[Any], Outcome]


@dataclass(frozen=True)
class Spec:
    id: str
    statement: str
    rationale: str
    families: frozenset[str]
    check: SpecFn
    #: what a failure costs the user (rlconform.core.impact): failures are ranked and gated by it
    impact: Impact
    scenario: Scenario = "standard"
    #: static applicability: returns why the spec cannot apply to a system, or None
    applies: Callable[[System], str | None] | None = None
    #: each example costs a lot (it builds several stacks): use the smaller example budget
    expensive: bool = False
    #: applicability that depends on the built stack: why the spec cannot apply to a stack with
    #: these semantics, or None. It reads only rlconform.core.system.STACK_KEYS, so it is decided
    #: before any example where the probe read the stack (``System.stack_semantics``); ``check``
    #: asks it of each usable run's semantics before the spec's own function runs
    applies_to_stack: Callable[[Mapping[str, Any]], str | None] | None = None
    #: what a run must be for the spec to read it (:data:`NEEDS`); a run that is not has nothing
    #: to check, and the spec's function is not called on it
    needs: tuple[str, ...] = ()
    #: its search reads no run the system's other specs make, and it is a large part of the
    #: system's check: where a second worker process is free, it runs in one of its own, beside the
    #: others (rlconform.core.suite); its verdict is the same either way
    own_worker: bool = False
    #: at most this many drawn examples (beside the edge cases), whatever the profile: the spec
    #: checks nothing on later ones (None: the profile's number)
    max_examples: int | None = None

    def not_applicable_reason(self, system: System) -> str | None:
        if system.family not in self.families:
            return f"applies to {', '.join(sorted(self.families))}, not {system.family}"
        if self.applies is not None:
            reason = self.applies(system)
            if reason is not None:
                return reason
        if self.applies_to_stack is not None and system.stack_semantics is not None:
            return self.applies_to_stack(dict(system.stack_semantics))
        return None


def spec(
    id: str,
    *,
    statement: str,
    rationale: str,
    impact: Impact,
    families: frozenset[str],
    scenario: Scenario = "standard",
    applies: Callable[[System], str | None] | None = None,
    expensive: bool = False,
    applies_to_stack: Callable[[Mapping[str, Any]], str | None] | None = None,
    needs: tuple[str, ...] = (),
    own_worker: bool = False,
    max_examples: int | None = None,
) -> Callable[[SpecFn], SpecFn]:
    """Register the decorated function as the spec ``id``.

    ``needs`` is what a run must be for the function to read it (:data:`NEEDS`: ``"usable"``, the
    system built and its run read); on any other run the spec checks nothing, in one place, instead
    of a gate at the top of every spec function.

    ``impact`` is required (one of :data:`rlconform.core.impact.IMPACTS`): a spec whose failure nobody
    classified could not be ranked or gated, so registering one is an error.
    """
    if impact not in IMPACTS:
        raise ValueError(f"spec {id!r}: impact must be one of {', '.join(IMPACTS)}, not {impact!r}")
    unknown = [need for need in needs if need not in NEEDS]
    if unknown:
        raise ValueError(f"spec {id!r}: needs must be among {', '.join(NEEDS)}, not {unknown[0]!r}")

    def decorate(fn: SpecFn) -> SpecFn:
        # data on the function, registered nowhere: the catalog collects a module's spec functions
        setattr(
            fn,
            SPEC_ATTRIBUTE,
            Spec(
                id,
                statement,
                rationale,
                families,
                _naming(id, _gated(needs, _asking_stack(applies_to_stack, fn))),
                impact,
                scenario,
                applies,
                expensive,
                applies_to_stack,
                needs,
                own_worker,
                max_examples,
            ),
        )
        return fn

    return decorate


#: what a spec may need of a run (``@spec(needs=...)``), each a property of the core's RunRecord
NEEDS: dict[str, Callable[[Any], bool]] = {"usable": lambda run: bool(run.usable)}


def _gated(needs: tuple[str, ...], fn: SpecFn) -> SpecFn:
    """``fn``, called only on a run that is what ``needs`` names; on another run nothing is checked
    (an empty outcome: the search counts no fact of it)."""
    if not needs:
        return fn

    @functools.wraps(fn)
    def check(run: Any) -> Outcome:
        if not all(NEEDS[need](run) for need in needs):
            return Outcome()
        return fn(run)

    return check


def _asking_stack(applies_to_stack: Callable[[Mapping[str, Any]], str | None] | None, fn: SpecFn) -> SpecFn:
    """``fn``, which first asks ``applies_to_stack`` of each usable run's semantics: the question
    :meth:`Spec.not_applicable_reason` asks of the probe's reading, asked in one place, so that a
    spec is decided the same way before the examples and during them."""
    if applies_to_stack is None:
        return fn

    @functools.wraps(fn)
    def check(run: Any) -> Outcome:
        if run.usable:
            reason = applies_to_stack(run.semantics)
            if reason is not None:
                return Outcome(not_applicable=reason)
        return fn(run)

    return check


def _naming(spec_id: str, fn: SpecFn) -> SpecFn:
    """``fn`` with ``spec_id`` on every violation it returns (its ``Checker()`` names none)."""

    @functools.wraps(fn)
    def check(run: Any) -> Outcome:
        outcome = fn(run)
        outcome.violations = [
            v if v.spec_id == spec_id else dataclasses.replace(v, spec_id=spec_id) for v in outcome.violations
        ]
        return outcome

    return check


def documented_approximation(violations: list[Violation]) -> str | None:
    """The citation that makes a failure "known": every violation is a documented approximation
    (:meth:`Checker.approximation`); None when any of them is not."""
    cited = [v.documented for v in violations]
    if not cited or any(c is None for c in cited):
        return None
    return "documented approximation: " + "; ".join(dict.fromkeys(c for c in cited if c is not None))


def spec_of(fn: SpecFn) -> Spec:
    """The spec a function decorated with :func:`spec` checks (for specs built in a loop, which
    their module lists in ``SPECS``)."""
    found: Spec = getattr(fn, SPEC_ATTRIBUTE)
    return found


def all_specs() -> list[Spec]:
    """Every spec of the catalog in use."""
    return current().specs()


def get_spec(spec_id: str) -> Spec:
    return current().spec(spec_id)


def registered_impact(spec_id: str) -> Impact | None:
    """The impact class of a spec of the catalog in use (None for an id it does not hold, e.g. a
    result merged from another rlconform); never loads the catalog."""
    found = current().spec_if_loaded(spec_id)
    return found.impact if found is not None else None
