"""What the task receives: a tap on the method that first gets the action inside the env.

Why: ``DirectRLEnv.step`` hands the action to ``_pre_physics_step`` after ``action.to(device)``,
``ManagerBasedRLEnv.step`` to ``action_manager.process_action``. What arrives there (type, dtype,
device, storage) is what the task computes with; what the caller passed is not enough to know it,
since a wrapper or the env can copy, cast or move the action on the way. The tap replaces the
method on the instance (the class is untouched) and records one :class:`ActionReceipt` per call.

On CUDA the tap also counts host synchronisations: ``torch.cuda.set_sync_debug_mode("warn")``
makes every synchronising call warn, the monitor records the warnings of a whole step, and the
receipt notes how many had been recorded when the action reached the task; those happened on
the action's way in (a ``.cpu()``/``.numpy()`` round trip synchronises, ``.to(device)`` of a
tensor already there does not).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch


@dataclass(frozen=True)
class ActionReceipt:
    """The action as the task received it."""

    type_name: str
    dtype: str | None
    shape: tuple[int, ...] | None
    device: str | None
    data_ptr: int | None
    #: host synchronisations recorded in this step before the task got the action (CUDA only)
    syncs_before: int = 0

    def describe(self) -> str:
        return f"{self.type_name} (dtype={self.dtype}, shape={self.shape}, device={self.device})"


def receipt_of(action: Any, syncs_before: int = 0) -> ActionReceipt:
    cls = type(action)
    type_name = f"{cls.__module__}.{cls.__qualname__}" if cls.__module__ != "builtins" else cls.__qualname__
    if isinstance(action, torch.Tensor):
        return ActionReceipt(
            "torch.Tensor",
            str(action.dtype),
            tuple(action.shape),
            str(action.device),
            int(action.data_ptr()),
            syncs_before,
        )
    shape = getattr(action, "shape", None)
    dtype = getattr(action, "dtype", None)
    return ActionReceipt(
        type_name,
        None if dtype is None else str(dtype),
        None if shape is None else tuple(int(s) for s in shape),
        None,
        None,
        syncs_before,
    )


class ActionProbe:
    """Records every action the task receives; see the module docstring."""

    def __init__(self, env: Any, sync_count: Callable[[], int] = lambda: 0) -> None:
        self.receipts: list[ActionReceipt] = []
        self._env = env
        self._sync_count = sync_count
        self.where = self._attach(env)

    def _attach(self, env: Any) -> str | None:
        manager = getattr(env, "action_manager", None)
        if manager is not None and callable(getattr(manager, "process_action", None)):
            self._wrap(manager, "process_action")
            return "action_manager.process_action"
        if callable(getattr(env, "_pre_physics_step", None)):
            self._wrap(env, "_pre_physics_step")
            return "_pre_physics_step"
        return None

    def _wrap(self, owner: Any, name: str) -> None:
        # an earlier probe's tap is replaced, not wrapped: one receipt per action, whatever the
        # number of monitors the env has seen
        original = owner.__dict__.get(f"_rlconform_untapped_{name}") or getattr(owner, name)
        owner.__dict__[f"_rlconform_untapped_{name}"] = original

        def tapped(action: Any, *args: Any, **kwargs: Any) -> Any:
            self.receipts.append(receipt_of(action, self._sync_count()))
            return original(action, *args, **kwargs)

        setattr(owner, name, tapped)

    def detach(self) -> None:
        """Put the tapped method back."""
        for owner in (self._env, getattr(self._env, "action_manager", None)):
            if owner is None:
                continue
            for key in [k for k in vars(owner) if k.startswith("_rlconform_untapped_")]:
                name = key.removeprefix("_rlconform_untapped_")
                vars(owner).pop(key)
                vars(owner).pop(name, None)

    def take(self) -> list[ActionReceipt]:
        """The receipts since the last take."""
        taken, self.receipts = self.receipts, []
        return taken
