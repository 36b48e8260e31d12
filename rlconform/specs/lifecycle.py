"""Lifecycle specs: every call answers, and close() shuts the system down completely.

``lifecycle.responsive`` also judges a user's own env (env-author mode, family ``gymnasium.Env``): its
bare runs are driven under the same deadlines, and an env whose ``step`` never returns hangs every
stack it is put in."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rlconform.core.hangs import close_hang
from rlconform.core.spec import Checker, Outcome, spec
from rlconform.specs.families import TRANSITION_FAMILIES, USER_ENV

if TYPE_CHECKING:
    from rlconform.envs.driver import Run


@spec(
    "lifecycle.responsive",
    impact="robustness",
    statement="Every call returns or raises within the per-call time limit, close() returns within its limit (for a user's stack at least 30 s: shutting spawned workers down takes seconds) and without deadlocking, and no worker process outlives close().",
    rationale=(
        "A vectorizer whose worker protocol falls out of step (a reply left unread after a failed call) hangs "
        "training runs forever or leaks processes until the machine runs out of memory."
    ),
    scenario="robustness",
    families=TRANSITION_FAMILIES | {USER_ENV},
)
def responsive(run: Any) -> Outcome:
    ck = Checker()
    if run.build_error is not None:
        return ck.done()
    if not hasattr(run, "calls"):  # an env-author EnvRun: the runs of the bare env
        for part in (getattr(run, "first", None), getattr(run, "second", None)):
            if part is not None:
                _check_run(ck, part)
        return ck.done()
    _check_run(ck, run)
    return ck.done()


def _check_run(ck: Checker, run: Run) -> None:
    if run.build_error is not None:
        return
    for call in run.calls:
        ck.expect(
            call.error_type != "CallTimeout",
            f"{call.source} did not answer within {run.call_timeout:g} s; the run was stopped there",
            agent_step=call.agent_step or None,
            call=call.position,
        )
    hang = close_hang(run.close_error, run.close_timeout)
    ck.expect(run.close_error is None, hang or f"close() failed: {run.close_error}")
    ck.expect(
        run.orphans == 0, f"{run.orphans} worker process(es) were still alive after close() and had to be terminated"
    )
