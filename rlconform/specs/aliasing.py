"""Aliasing specs: returned objects stay as returned; the caller's arguments stay as passed.

Neither applies to ``torchrl.EnvBase`` as stated: TorchRL's documented loop writes the action into
the TensorDict the previous call returned, and ``env.step(td)`` writes ``"next"`` into the
TensorDict it is given, so both would flag the documented loop itself. TorchRL's own aliasing
property (the ``data`` a call returned is not changed by later calls) needs a spec of its own."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rlconform.compare import first_difference
from rlconform.specs.registry import Checker, Outcome, spec

if TYPE_CHECKING:
    from rlconform.runner import Run


@spec(
    "aliasing.returned_objects",
    statement="An object returned by one call is not modified by any later call.",
    rationale=(
        "Rollout buffers keep the arrays a step returns; a library that hands out its internal buffer and "
        "overwrites it on the next step turns every stored observation into the latest one."
    ),
)
def returned_objects(run: Run) -> Outcome:
    ck = Checker("aliasing.returned_objects")
    if not run.usable:
        return ck.done()
    for call in run.calls:
        if call.failed:
            continue
        diff = first_difference(call.result_live, call.result_snapshot)
        ck.expect(
            diff is None,
            f"the result of {call.source} was modified after it was returned ({_after_before(diff, 'now', 'when returned')}): "
            "the library reuses the objects it returns",
            agent_step=call.agent_step or None,
            call=call.position,
        )
    return ck.done()


@spec(
    "aliasing.caller_arguments",
    statement="A call never modifies the objects the caller passed in (actions, options).",
    rationale=(
        "Callers reuse their action buffers and option dicts; a library that pops keys from options or writes "
        "into the action array changes the caller's data behind its back (a second reset with the same options "
        "then does something else)."
    ),
)
def caller_arguments(run: Run) -> Outcome:
    ck = Checker("aliasing.caller_arguments")
    if not run.usable:
        return ck.done()
    for call in run.calls:
        diff = first_difference(call.args_live, call.args_snapshot)
        ck.expect(
            diff is None,
            f"{call.source} modified the caller's arguments ({_after_before(diff)})",
            agent_step=call.agent_step or None,
            call=call.position,
        )
    return ck.done()


def _after_before(diff: str | None, first: str = "after the call", second: str = "before") -> str:
    """Reword a comparison of (live, snapshot) so the reader sees which side is which."""
    if diff is None:
        return ""
    return diff.replace("only in first", f"only {first}").replace("only in second", f"only {second}").replace(
        " vs ", f" ({first}) vs ", 1
    ) + (f" ({second})" if " vs " in diff else "")
