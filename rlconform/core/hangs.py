"""Systems that hung in this process, and the bound on the time a hanging system may cost.

A call that does not answer is stopped by its deadline (:mod:`rlconform.core.watchdog`), but every
further case drawn for the same system may wait for the deadline again: forty cases of thirty
specs of a vectorizer that hangs on one step in five took minutes, and one that sleeps forever in
``step`` never finished shrinking. So:

* ``lifecycle.responsive`` fails on the first hung run its search meets, without shrinking (every
  shrink step would wait for a deadline again);
* the other specs skip hung runs: a run stopped at a hang is not evidence about transitions, and
  ``lifecycle.responsive`` already reports it;
* the hung calls of a system cost at most :data:`HANG_BUDGET_SECONDS` in one process: once they
  did, its remaining searches stop, and their specs are "not run: system hung".

A system that hangs only after a rare call sequence (Gymnasium's AsyncVectorEnv, FINDINGS G3)
keeps its other verdicts; one that hangs on every step is done in about the budget.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rlconform.core.deadlock import DEADLOCKED

if TYPE_CHECKING:
    from rlconform.core.family import RunRecord

#: the spec that judges hangs; the others are not run on a system that hung
RESPONSIVE = "lifecycle.responsive"
#: how a call record names a call that passed its deadline
TIMEOUT_ERROR = "CallTimeout"


#: seconds of hung calls (deadlines waited for) one system may cost in one process
HANG_BUDGET_SECONDS = 10.0


@dataclass(frozen=True)
class Hang:
    """A run in which a system hung, and the call that did not answer."""

    system_id: str
    #: which call hung, in words ("env.step(1) did not answer within 2 s (agent step 3)")
    description: str
    case: Any
    run: Any

    def not_run_message(self) -> str:
        return f"not run: system hung ({self.description}; see {RESPONSIVE})"


@dataclass
class _Record:
    first: Hang
    #: seconds spent waiting for hung calls of this system
    spent: float = 0.0


_HUNG: dict[str, _Record] = {}


def hung_call(run: RunRecord | None) -> str | None:
    """Which call of ``run`` hung, in words; None when every call answered (``RunRecord.hang``:
    each family's run says it of its own calls)."""
    return None if run is None else run.hang()


def calls_hang(calls: Iterable[Any], call_timeout: float, close_error: str | None, close_timeout: float) -> str | None:
    """Which of ``calls`` (call records with ``error_type``, ``source``, ``agent_step`` and
    ``position``) did not answer within ``call_timeout``, or whether the close after them hung; the
    ``RunRecord.hang`` of a run recorded call by call."""
    within = f"within {call_timeout:g} s" if call_timeout else "within its deadline"
    for call in calls:
        if call.error_type == TIMEOUT_ERROR:
            where = f"agent step {call.agent_step}" if call.agent_step else f"call {call.position}"
            return f"{call.source} did not answer {within} ({where})"
    return close_hang(close_error, close_timeout, within)


def close_hang(close_error: str | None, close_limit: float, within: str = "within its deadline") -> str | None:
    """How a close() that hung is described: seen deadlocked before its limit
    (:mod:`rlconform.core.deadlock`), or stopped at its limit; None when close() did not hang."""
    if not (close_error or "").startswith(TIMEOUT_ERROR):
        return None
    detail = (close_error or "")[len(TIMEOUT_ERROR) :].lstrip(": ")
    if detail.startswith(DEADLOCKED):
        return f"close() {detail} (its limit: {close_limit:g} s)"
    return f"close() did not answer {f'within {close_limit:g} s' if close_limit else within}"


def hang_in(system_id: str, case: Any, run: Any) -> Hang | None:
    """``run`` as a :class:`Hang` if one of its calls hung; None otherwise."""
    description = hung_call(run)
    return None if description is None else Hang(system_id, description, case, run)


def note_run(system_id: str, case: Any, run: Any) -> None:
    """Count a freshly executed run against its system's hang budget if it hung (the run cache
    calls this once per execution: a hung run read again from the cache costs nothing)."""
    hang = hang_in(system_id, case, run)
    if hang is None:
        return
    record = _HUNG.setdefault(system_id, _Record(hang))
    record.spent += _deadline_of(run)


def _deadline_of(run: RunRecord) -> float:
    """What one hang counts against the budget: its run's call deadline (an env-author run: its
    bare run's), also for a close() that hung past its longer limit, so that one rare close hang
    (Gymnasium's AsyncVectorEnv, FINDINGS G3) does not stop a system's other searches."""
    return float(run.call_deadline or 1.0)


def hang_of(system_id: str) -> Hang | None:
    """The first recorded hang of ``system_id`` in this process, if it hung."""
    record = _HUNG.get(system_id)
    return record.first if record is not None else None


def budget_spent(system_id: str) -> Hang | None:
    """The system's first hang once its hung calls have cost :data:`HANG_BUDGET_SECONDS`."""
    record = _HUNG.get(system_id)
    return record.first if record is not None and record.spent >= HANG_BUDGET_SECONDS else None


def forget(system_id: str | None = None) -> None:
    """Forget one system's hangs (all of them with no argument): a fresh check re-draws its cases."""
    if system_id is None:
        _HUNG.clear()
    else:
        _HUNG.pop(system_id, None)


class SystemHung(BaseException):
    """Ends a Hypothesis search at once when the system hangs (a BaseException: Hypothesis would
    treat an Exception as a failure to shrink, waiting for the deadline on every shrink step)."""

    def __init__(self, hang: Hang) -> None:
        super().__init__(hang.description)
        self.hang = hang
