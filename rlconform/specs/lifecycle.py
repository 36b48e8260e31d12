"""Lifecycle specs: every call answers, and close() shuts the system down completely."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rlconform.specs.registry import TRANSITION_FAMILIES, Checker, Outcome, spec

if TYPE_CHECKING:
    from rlconform.runner import Run


@spec(
    "lifecycle.responsive",
    impact="robustness",
    statement="Every call returns or raises within the per-call time limit, close() returns, and no worker process outlives close().",
    rationale=(
        "A vectorizer whose worker protocol falls out of step (a reply left unread after a failed call) hangs "
        "training runs forever or leaks processes until the machine runs out of memory."
    ),
    scenario="robustness",
    families=TRANSITION_FAMILIES,
)
def responsive(run: Run) -> Outcome:
    ck = Checker("lifecycle.responsive")
    if run.build_error is not None:
        return ck.done()
    for call in run.calls:
        ck.expect(
            call.error_type != "CallTimeout",
            f"{call.source} did not answer within {run.call_timeout:g} s; the run was stopped there",
            agent_step=call.agent_step or None,
            call=call.position,
        )
    ck.expect(run.close_error is None, f"close() failed: {run.close_error}")
    ck.expect(
        run.orphans == 0, f"{run.orphans} worker process(es) were still alive after close() and had to be terminated"
    )
    return ck.done()
