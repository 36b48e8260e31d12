"""What a downstream project ships: its own env, and vector-env factories it trains with.

``make_buggy_vec`` carries a wrapper with a real, typical bug (it drops the true terminal
observation that Gymnasium's same-step autoreset puts in ``infos["final_obs"]``); the project
knows and lists it in ``rlconform-expected-failures.txt`` until the fix lands.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import gymnasium
import numpy as np


class GridWalk(gymnasium.Env[np.ndarray, np.int64]):
    """A 1-D walk on 0..5, seeded: reaching 5 terminates; 12 steps truncate."""

    metadata: dict[str, Any] = {"render_modes": []}

    def __init__(self) -> None:
        self.observation_space = gymnasium.spaces.Box(0.0, 5.0, (1,), np.float32)
        self.action_space = gymnasium.spaces.Discrete(2)
        self._position = 0
        self._steps = 0

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        self._position = int(self.np_random.integers(0, 3))
        self._steps = 0
        return np.array([self._position], np.float32), {}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        self._position = int(np.clip(self._position + (1 if int(action) == 1 else -1), 0, 5))
        self._steps += 1
        terminated = self._position == 5
        return np.array([self._position], np.float32), float(terminated), terminated, self._steps >= 12, {}


def make_env() -> gymnasium.Env[Any, Any]:
    return GridWalk()


def make_vec(env_fns: Sequence[Callable[[], gymnasium.Env[Any, Any]]], **kwargs: Any) -> gymnasium.vector.VectorEnv:
    return gymnasium.vector.SyncVectorEnv(env_fns, autoreset_mode=gymnasium.vector.AutoresetMode.SAME_STEP)


class EpisodeLogger(gymnasium.vector.VectorWrapper):
    """Logs episode ends, and (the bug) rebuilds ``infos`` without the terminal observation."""

    def step(self, actions: Any) -> Any:
        obs, rewards, terminated, truncated, infos = self.env.step(actions)
        ended = np.logical_or(terminated, truncated)
        infos = {key: value for key, value in infos.items() if not key.endswith("final_obs")}
        infos["episode_ended"] = ended
        return obs, rewards, terminated, truncated, infos


def make_buggy_vec(
    env_fns: Sequence[Callable[[], gymnasium.Env[Any, Any]]], **kwargs: Any
) -> gymnasium.vector.VectorEnv:
    return EpisodeLogger(make_vec(env_fns))
