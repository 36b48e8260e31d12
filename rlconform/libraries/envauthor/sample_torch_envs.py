"""Torch-native user envs for env-author mode: a correct one, and ones with one classic bug each.

They follow TorchRL's GymLikeEnv / Isaac Lab style: Gymnasium spaces are declared, but ``reset``
and ``step`` return torch tensors (observation, a 0-d reward, 0-d bool flags) and ``step`` takes
a torch action tensor, refusing anything else as such envs do. Module-level factories, so that
``rlconform check rlconform.libraries.envauthor.sample_torch_envs:torch_counter --api gymnasium.Env`` works and
ParallelEnv's workers can import them.
"""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np
import torch
from gymnasium import spaces


class TorchCounterEnv(gymnasium.Env[Any, Any]):  # Gymnasium's Env types its spaces by element type
    """A correct torch-native env: a seeded walk driven by a continuous action, ending at +-2 or
    after 8 steps; everything in and out is a tensor on ``device``."""

    metadata = {"render_modes": []}  # Gymnasium declares it an instance attribute

    def __init__(self, device: str = "cpu") -> None:
        self.device = torch.device(device)
        self.observation_space = spaces.Box(-10.0, 10.0, (2,), np.float32)
        self.action_space = spaces.Box(-1.0, 1.0, (1,), np.float32)
        self._generator = torch.Generator(device=self.device)
        self._position = torch.zeros((), device=self.device)
        self._steps = 0

    def _obs(self) -> torch.Tensor:
        steps = torch.tensor(float(self._steps), device=self.device)
        return torch.stack([self._position, steps]).to(torch.float32)

    def _noise(self) -> torch.Tensor:
        return torch.rand((), generator=self._generator, device=self.device) - 0.5

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[torch.Tensor, dict[str, Any]]:
        super().reset(seed=seed)
        if seed is not None:
            self._generator.manual_seed(int(self.np_random.integers(2**31)))
        self._position = self._noise()
        self._steps = 0
        return self._obs(), {}

    def step(self, action: Any) -> Any:  # tensor reward and flags: not Env.step's declared types
        if not isinstance(action, torch.Tensor):
            raise TypeError(f"expected a torch.Tensor action, got {type(action).__name__}")
        self._position = self._position + action.to(self.device).reshape(()) + 0.2 * self._noise()
        self._steps += 1
        terminated = self._position.abs() >= 2
        truncated = torch.tensor(self._steps >= 8, device=self.device)
        return self._obs(), self._position.clone().to(torch.float32), terminated, truncated, {}


class TorchOutOfSpaceEnv(TorchCounterEnv):
    """Bug: observes its position in centimetres, outside the declared Box(-10, 10)."""

    def _obs(self) -> torch.Tensor:
        return super()._obs() * torch.tensor([100.0, 1.0], device=self.device)


class TorchLeakyEnv(TorchCounterEnv):
    """Bug: a step past the end of an episode shifts where the next episode starts, even seeded."""

    def step(self, action: Any) -> Any:
        if getattr(self, "_ended", False):
            self._offset = getattr(self, "_offset", 0.0) + 1.0
        out = super().step(action)
        self._ended = bool(out[2] or out[3])
        return out

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Any:
        self._ended = False
        _, info = super().reset(seed=seed)
        self._position = self._position + getattr(self, "_offset", 0.0)
        return self._obs(), info


class TorchDtypeDriftEnv(TorchCounterEnv):
    """Bug: its reward turns float64 after the first step (a Python float mixed into a tensor op)."""

    def step(self, action: Any) -> Any:
        obs, reward, terminated, truncated, info = super().step(action)
        if self._steps > 1:
            reward = reward.to(torch.float64)
        return obs, reward, terminated, truncated, info


def torch_counter() -> gymnasium.Env[Any, Any]:
    return TorchCounterEnv()


def torch_out_of_space() -> gymnasium.Env[Any, Any]:
    return TorchOutOfSpaceEnv()


def torch_leaky() -> gymnasium.Env[Any, Any]:
    return TorchLeakyEnv()


def torch_dtype_drift() -> gymnasium.Env[Any, Any]:
    return TorchDtypeDriftEnv()
