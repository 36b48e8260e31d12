"""Torch-native envs in env-author mode: recognising one, speaking to it in tensors, reading it.

A ``gymnasium.Env`` may declare Gymnasium spaces and still take and return torch tensors (TorchRL's
GymLikeEnv style, Isaac Lab's single-env bridges): its observations, rewards and flags are tensors
on one device, and its ``step`` expects a tensor action. Such an env is checked natively: the
actions it is given are tensors on its device, its observations are compared with the declared
space after conversion to NumPy, and its tensors must keep one dtype and device from call to call.
It is never failed for not being NumPy. Torch is never imported here: a tensor is recognised by its
type's module, and a tensor is only ever made for an env that already returned one.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np


def is_tensor(value: Any) -> bool:
    return type(value).__module__.startswith("torch") and hasattr(value, "detach")


def leaves(value: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    """``(path, leaf)`` of a nested dict / tuple / list output; the path names the leaf in the
    messages (``['position']``, ``[1]``)."""
    if isinstance(value, Mapping):
        for key, sub in value.items():
            yield from leaves(sub, f"{path}[{key!r}]")
    elif isinstance(value, (tuple, list)):
        for i, sub in enumerate(value):
            yield from leaves(sub, f"{path}[{i}]")
    else:
        yield path, value


def torch_device(value: Any) -> str | None:
    """The device of the first torch tensor in ``value`` (an observation), or None if it holds none."""
    for _, leaf in leaves(value):
        if is_tensor(leaf):
            return str(leaf.device)
    return None


def to_numpy(value: Any) -> Any:
    """The same nested value with every tensor as a NumPy array (what the space check reads)."""
    if isinstance(value, Mapping):
        return {key: to_numpy(sub) for key, sub in value.items()}
    if isinstance(value, tuple):
        return tuple(to_numpy(sub) for sub in value)
    if is_tensor(value):
        return value.detach().cpu().numpy()
    return value


def to_env_action(action: Any, device: str | None) -> Any:
    """The action a correct caller passes to an env on ``device``: a tensor there (a dict or tuple
    of them for composite spaces); unchanged for a NumPy env (``device`` None)."""
    if device is None:
        return action
    if isinstance(action, Mapping):
        return {key: to_env_action(sub, device) for key, sub in action.items()}
    if isinstance(action, tuple):
        return tuple(to_env_action(sub, device) for sub in action)
    import torch

    return torch.as_tensor(np.asarray(action), device=device)


def tensor_signature(value: Any) -> str:
    """``dtype on device`` of a tensor, the type name of anything else."""
    if is_tensor(value):
        return f"{value.dtype} on {value.device}"
    return type(value).__name__


def is_scalar_tensor(value: Any, *, boolean: bool) -> bool:
    """A one-element tensor of a bool dtype (``boolean``) or of a real-number dtype (not bool)."""
    if not is_tensor(value) or value.numel() != 1:
        return False
    is_bool = str(value.dtype) == "torch.bool"
    return is_bool if boolean else not is_bool and not value.is_complex()
