"""``torchrl.device``: every tensor a TorchRL env returns lives on the device the env declares.

An env with a ``device`` puts every output there (TorchRL casts its outputs to ``env.device``);
an env that declares none (GymWrapper's default) promises each leaf on the device of its own spec,
and a leaf no spec declares on the CPU, where GymWrapper reads NumPy values. A policy or buffer
built on the declared device otherwise fails (or silently copies) on the first leaf elsewhere.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rlconform.core.spec import Checker, Outcome, spec
from rlconform.specs.families import TORCHRL_ENVBASE

if TYPE_CHECKING:
    from rlconform.envs.driver import Run

#: where a leaf goes when neither the env nor its spec declares a device
DEFAULT_DEVICE = "cpu"


def same_device(actual: Any, declared: str) -> bool:
    """``cpu`` and ``cpu:0`` name one device; ``cuda`` without an index matches any ``cuda:i``."""
    import torch

    want = torch.device(declared)
    return bool(actual.type == want.type and (want.index is None or actual.index in (None, want.index)))


def expected_device(run: Run, key: str) -> str:
    """The device ``key`` (``"next/observation"``) should be on, from the recorded semantics."""
    declared = run.semantics.get("device")
    if declared is not None:
        return str(declared)
    specs: dict[str, dict[str, Any]] = run.semantics.get("leaf_specs", {})
    entry = specs.get(key.removeprefix("next/"))
    if entry is not None and entry.get("device") is not None:
        return str(entry["device"])
    return DEFAULT_DEVICE


@spec(
    "torchrl.device",
    impact="api-contract",
    statement="Every tensor leaf a TorchRL env returns is on the device the env (or, without one, the leaf's spec) declares.",
    rationale=(
        "Policies, losses and replay buffers are placed on the env's declared device; a leaf elsewhere makes the "
        "first forward pass fail, or copies every step behind the user's back."
    ),
    families=frozenset({TORCHRL_ENVBASE}),
    needs=("usable",),
)
def device(run: Run) -> Outcome:
    ck = Checker()
    for call in run.calls:
        if call.failed or call.view is None:
            continue
        results = [call.result_snapshot] if call.view.kind == "reset" else list(call.result_snapshot)
        for td in results:
            for key, value in td.items(True, True):
                actual = getattr(value, "device", None)
                if actual is None:
                    continue  # a non-tensor leaf
                name = key if isinstance(key, str) else "/".join(key)
                want = expected_device(run, name)
                ck.expect(
                    same_device(actual, want),
                    f"{name} returned by {call.source} is on {actual}; declared: {want}",
                    agent_step=call.agent_step or None,
                    call=call.position,
                )
    return ck.done()
