"""Systems that hung in this process, remembered per system so that one hang costs one deadline.

A call that does not answer is stopped by its deadline (:mod:`rlconform.watchdog`), but every
further case drawn for the same system would wait for the deadline again: forty cases of thirty
specs of a vectorizer that hangs on one step in five took minutes, and one that sleeps forever in
``step`` never finished its shrinking. So the first run in which a system hangs is recorded here;
``lifecycle.responsive`` fails on that run (its hung call named, its case replayable) and every
other spec of the system is "not run: system hung" instead of drawing more hanging cases.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: the spec that judges hangs; the others are not run on a system that hung
RESPONSIVE = "lifecycle.responsive"
#: how a call record names a call that passed its deadline
TIMEOUT_ERROR = "CallTimeout"


@dataclass(frozen=True)
class Hang:
    """The first run in which a system hung, and the call that did not answer."""

    system_id: str
    #: which call hung, in words ("step (agent step 3) did not answer within 2 s")
    description: str
    case: Any
    run: Any

    def not_run_message(self) -> str:
        return f"not run: system hung ({self.description}; see {RESPONSIVE})"


_HUNG: dict[str, Hang] = {}


def hung_call(run: Any) -> str | None:
    """Which call of ``run`` hung, in words; None when every call answered.

    ``run`` is a :class:`~rlconform.runner.Run` (its calls and close) or an env-author
    :class:`~rlconform.envcheck.EnvRun` (its runs of the bare env)."""
    if run is None:
        return None
    calls = getattr(run, "calls", None)
    if calls is None:  # an EnvRun: the runs of the bare env it drove
        for part in (getattr(run, "first", None), getattr(run, "second", None)):
            found = hung_call(part)
            if found is not None:
                return found
        return None
    limit = getattr(run, "call_timeout", 0.0)
    within = f"within {limit:g} s" if limit else "within its deadline"
    for call in calls:
        if call.error_type == TIMEOUT_ERROR:
            where = f"agent step {call.agent_step}" if call.agent_step else f"call {call.position}"
            return f"{call.source} did not answer {within} ({where})"
    close_error = getattr(run, "close_error", None) or ""
    if close_error.startswith(TIMEOUT_ERROR):
        return f"close() did not answer {within}"
    return None


def note_run(system_id: str, case: Any, run: Any) -> Hang | None:
    """Remember ``system_id`` as hung if ``run`` hung and it is the first such run; return the
    system's hang (the first one recorded), or None while it has not hung."""
    if system_id not in _HUNG:
        description = hung_call(run)
        if description is not None:
            _HUNG[system_id] = Hang(system_id, description, case, run)
    return _HUNG.get(system_id)


def hang_of(system_id: str) -> Hang | None:
    """The recorded hang of ``system_id`` in this process, if it hung."""
    return _HUNG.get(system_id)


def forget(system_id: str | None = None) -> None:
    """Forget one system's hang (all of them with no argument): a fresh check re-draws its cases."""
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
