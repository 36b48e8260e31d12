"""Aliasing specs: returned objects stay as returned; the caller's arguments stay as passed.

Neither applies to ``torchrl.EnvBase`` as stated: TorchRL's documented loop writes the action into
the TensorDict the previous call returned, and ``env.step(td)`` writes ``"next"`` into the
TensorDict it is given, so both would flag the documented loop itself. What is well defined for
TorchRL is read by ``aliasing.torchrl_returned_data``: every leaf a returned TensorDict held when
it was returned keeps its value to the end of the run, apart from the action entries the loop
itself writes into a root it passes back (``"next"`` is a new entry, never a changed leaf)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rlconform.core.compare import first_difference
from rlconform.core.spec import Checker, Outcome, spec
from rlconform.specs.families import TORCHRL_ENVBASE, TUPLE_FAMILIES

if TYPE_CHECKING:
    from rlconform.envs.driver import Run


@spec(
    "aliasing.returned_objects",
    impact="training-data",
    statement="An object returned by one call is not modified by any later call.",
    rationale=(
        "Rollout buffers keep the arrays a step returns; a library that hands out its internal buffer and "
        "overwrites it on the next step turns every stored observation into the latest one."
    ),
    families=TUPLE_FAMILIES,
    needs=("usable",),
)
def returned_objects(run: Run) -> Outcome:
    ck = Checker()
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
    impact="training-data",
    statement="A call never modifies the objects the caller passed in (actions, options).",
    rationale=(
        "Callers reuse their action buffers and option dicts; a library that pops keys from options or writes "
        "into the action array changes the caller's data behind its back (a second reset with the same options "
        "then does something else)."
    ),
    families=TUPLE_FAMILIES,
    needs=("usable",),
)
def caller_arguments(run: Run) -> Outcome:
    ck = Checker()
    for call in run.calls:
        diff = first_difference(call.args_live, call.args_snapshot)
        ck.expect(
            diff is None,
            f"{call.source} modified the caller's arguments ({_after_before(diff)})",
            agent_step=call.agent_step or None,
            call=call.position,
        )
    return ck.done()


@spec(
    "aliasing.torchrl_returned_data",
    impact="training-data",
    statement=(
        "Every tensor leaf of a TensorDict a TorchRL env returned (reset's root, step_and_maybe_reset's data "
        "and root) keeps the value it had when returned until the end of the run, apart from the action the "
        "documented loop writes into a root it passes back."
    ),
    rationale=(
        "Rollouts and collectors keep the data TensorDict of every step; an env whose leaves share memory with a "
        "buffer it overwrites (a NumPy buffer wrapped without a copy) turns every stored transition into the latest one."
    ),
    families=frozenset({TORCHRL_ENVBASE}),
    needs=("usable",),
)
def torchrl_returned_data(run: Run) -> Outcome:
    ck = Checker()
    action_keys = {str(k) for k in run.semantics.get("action_keys", ["action"])}
    passed_back = {id(call.args_live[0]) for call in run.calls if call.agent_step and call.args_live}
    for call in run.calls:
        if call.failed or call.view is None:
            continue
        for name, live, snap in _returned(call):
            skip = action_keys if id(live) in passed_back else set()
            diff = _leaf_difference(live, snap, skip)
            ck.expect(
                diff is None,
                f"{name} returned by {call.source} changed after it was returned ({diff}): the leaf shares "
                "memory with a buffer a later call overwrote",
                agent_step=call.agent_step or None,
                call=call.position,
            )
    return ck.done()


def _returned(call: Any) -> list[tuple[str, Any, Any]]:
    """The TensorDicts a TorchRL call returned: (name, live object, snapshot when returned)."""
    if call.view.kind == "reset":
        return [("the root", call.result_live, call.result_snapshot)]
    (data, root), (data_snap, root_snap) = call.result_live, call.result_snapshot
    return [("the transition data", data, data_snap), ("the next root", root, root_snap)]


def _leaf_difference(live: Any, snap: Any, skip: set[str]) -> str | None:
    """The first leaf of ``snap`` whose value ``live`` no longer has (a leaf on the meta device,
    which holds no values, is left to ``torchrl.device``)."""
    for key, value in snap.items(True, True):
        name = key if isinstance(key, str) else "/".join(key)
        if (key if isinstance(key, str) else str(key)) in skip or name in skip:
            continue
        if getattr(getattr(value, "device", None), "type", None) == "meta":
            continue
        now = live.get(key, None)
        if now is None:
            return f"{name}: removed"
        diff = first_difference(now, value, path=name)
        if diff is not None:
            return _after_before(diff, "now", "when returned")
    return None


def _after_before(diff: str | None, first: str = "after the call", second: str = "before") -> str:
    """Reword a comparison of (live, snapshot) so the reader sees which side is which."""
    if diff is None:
        return ""
    return diff.replace("only in first", f"only {first}").replace("only in second", f"only {second}").replace(
        " vs ", f" ({first}) vs ", 1
    ) + (f" ({second})" if " vs " in diff else "")
