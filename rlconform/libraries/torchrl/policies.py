"""Policies for the collector specs: the action is a function of one weight, so that a weight
change shows up in the actions a collector records.

They live in their own module, importable by worker processes (multi-process collectors pickle
the policy), and import torch at module level: only collector systems import this module.
"""

from __future__ import annotations

import copy
import threading
from typing import Any, Literal

import torch
from tensordict.nn import TensorDictModule

PolicyKind = Literal["plain", "handle", "detaching"]

#: the action code the policy picks before and after the in-place weight update
OLD_CODE = 0
NEW_CODE = 2


class ActionCodeNet(torch.nn.Module):
    """Picks action ``round(w)`` (one-hot over ``n``) for every frame."""

    def __init__(self, n: int) -> None:
        super().__init__()
        self.n = n
        self.w = torch.nn.Parameter(torch.tensor(float(OLD_CODE)))

    def forward(self, observation: torch.Tensor) -> torch.Tensor:
        code = self.w.detach().round().long().clamp(0, self.n - 1)
        one_hot = torch.nn.functional.one_hot(code, self.n)
        return one_hot.expand(*observation.shape[:-1], self.n).clone()


class HandleNet(ActionCodeNet):
    """Holds a lock: neither deep-copyable nor picklable (a policy bound to a device or a file)."""

    def __init__(self, n: int) -> None:
        super().__init__(n)
        self.handle = threading.Lock()


class DetachingNet(ActionCodeNet):
    """Its ``__deepcopy__`` silently returns a net with fresh weights of the same value: a copy
    that no longer follows the original (as a policy bound to shared memory or hardware may)."""

    def __deepcopy__(self, memo: dict[int, Any]) -> ActionCodeNet:
        fresh = ActionCodeNet(self.n)
        with torch.no_grad():
            fresh.w.copy_(self.w.detach())
        return fresh


_NETS: dict[str, type[ActionCodeNet]] = {"plain": ActionCodeNet, "handle": HandleNet, "detaching": DetachingNet}


def make_policy(kind: PolicyKind, n: int) -> tuple[TensorDictModule, ActionCodeNet]:
    """The policy (observation -> action) and the net whose weight the specs change."""
    net = _NETS[kind](n)
    return TensorDictModule(net, in_keys=["observation"], out_keys=["action"]), net


def set_new_weights(net: ActionCodeNet) -> None:
    """Change the policy's weight in place, as an optimizer step does."""
    with torch.no_grad():
        net.w.fill_(float(NEW_CODE))


def stale_copy(policy: TensorDictModule) -> TensorDictModule:
    """What a collector that deep-copies its policy holds (used by a planted bug)."""
    return copy.deepcopy(policy)
