"""A torch-backed reference env: the NumPy reference env behind a Gymnasium API that speaks torch.

Why: TorchRL's ``GymLikeEnv`` serves torch-native envs (Isaac Lab and the like) as well as NumPy
ones, and its ``convert_actions_to_numpy`` switch decides which type reaches the env's ``step``.
The only way to know what a torch-native env really receives is to be one and log it.

What this env returns, as a single torch-native env does (Isaac Lab returns tensors throughout):
observations are torch tensors of the declared space's dtype on :attr:`device` (each leaf of a
Dict/Tuple observation); the reward is a 0-d ``torch.float64`` tensor (float64 keeps the reference
reward exact; TorchRL's reward spec casts it) and ``terminated``/``truncated`` are 0-d
``torch.bool`` tensors, all on :attr:`device`. Infos stay as the NumPy env makes them.

What it logs: the scripts, decoding and logging are the wrapped :class:`ReferenceEnv`'s own
(this env is a ``gymnasium.Wrapper`` around whatever ``make_reference_env`` built, TimeLimit
included). The action is handed down *unchanged*, so the call log's receipt describes the very
object this env received: its type (``torch.Tensor``, ``numpy.ndarray``, ...), dtype, shape and
device. Whether it shares storage with the caller's buffers is not logged: ``ActionReceipt``
(``fixtures/calllog.py``) has no field for it.

How it declares itself: ``metadata[TORCH_NATIVE] = True`` and ``metadata[TORCH_DEVICE] = "cpu"``
(the device it works on), the Gymnasium way of declaring semantics (as ``autoreset_mode`` is).
:func:`declared_torch_device` reads that declaration from an env or any wrapper around it.
"""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np

from rlconform.envs.calllog import LogSink
from rlconform.envs.reference_env import make_reference_env
from rlconform.envs.script import EnvScript

#: metadata key: the env's step takes and returns torch tensors
TORCH_NATIVE = "torch_native"
#: metadata key: the device (``str(torch.device)``) the env works on, where its actions belong
TORCH_DEVICE = "torch_device"


class TorchReferenceEnv(gymnasium.Wrapper[Any, Any, Any, Any]):
    """The reference env with torch tensors out and actions passed in untouched (see module)."""

    def __init__(self, env: gymnasium.Env[Any, Any], device: str = "cpu") -> None:
        import torch

        super().__init__(env)
        self.device = torch.device(device)
        self.metadata = {**env.metadata, TORCH_NATIVE: True, TORCH_DEVICE: str(self.device)}

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        obs, info = self.env.reset(seed=seed, options=options)
        return self._tensor(obs), info

    def step(self, action: Any) -> tuple[Any, Any, Any, Any, dict[str, Any]]:
        import torch

        obs, reward, terminated, truncated, info = self.env.step(action)
        return (
            self._tensor(obs),
            torch.tensor(float(reward), dtype=torch.float64, device=self.device),
            torch.tensor(bool(terminated), device=self.device),
            torch.tensor(bool(truncated), device=self.device),
            info,
        )

    def _tensor(self, value: Any) -> Any:
        """Each NumPy leaf as a tensor of its own dtype on the env's device (Discrete: 0-d int64)."""
        import torch

        if isinstance(value, dict):
            return {key: self._tensor(leaf) for key, leaf in value.items()}
        if isinstance(value, tuple):
            return tuple(self._tensor(leaf) for leaf in value)
        return torch.as_tensor(np.asarray(value), device=self.device)


def make_torch_reference_env(
    script: EnvScript, index: int, sink: LogSink | None = None, device: str = "cpu"
) -> TorchReferenceEnv:
    """``make_reference_env(script, index, sink)`` behind the torch API, on ``device``."""
    return TorchReferenceEnv(make_reference_env(script, index, sink), device)


def declared_torch_device(env: Any) -> str | None:
    """The device an env declares itself torch-native on (None: it does not declare it)."""
    metadata = getattr(env, "metadata", None) or {}
    if metadata.get(TORCH_NATIVE):
        return str(metadata.get(TORCH_DEVICE, "cpu"))
    return None
