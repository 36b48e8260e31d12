"""Executable model of a single Gymnasium env under TimeLimit and (optionally) Autoreset.

The model takes the bare reference env out of the factory's stack and implements the time limit
and the next-step autoreset itself, so that Gymnasium's own wrappers are checked against an
independent implementation rather than against themselves.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rlconform.core.system import EnvFn


class ModelEnv:
    """TimeLimit semantics: truncated once ``max_episode_steps`` steps were taken in the episode.
    Autoreset semantics: the step after an episode end resets and returns reward 0, no flags."""

    def __init__(self, env_fn: EnvFn, *, autoreset: bool) -> None:
        self.env = env_fn().unwrapped
        self.limit: int | None = self.env.script.max_episode_steps
        self.autoreset = autoreset
        self.observation_space = self.env.observation_space
        self.action_space = self.env.action_space
        self.metadata: dict[str, Any] = dict(self.env.metadata)
        self._elapsed = 0
        self._ended = False

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        self._elapsed = 0
        self._ended = False
        return self.env.reset(seed=seed, options=options)

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        if self.autoreset and self._ended:
            obs, info = self.reset()
            return obs, 0.0, False, False, info
        obs, reward, terminated, truncated, info = self.env.step(action)
        self._elapsed += 1
        if self.limit is not None and self._elapsed >= self.limit:
            truncated = True
        self._ended = bool(terminated or truncated)
        return obs, reward, terminated, truncated, info

    def close(self) -> None:
        self.env.close()


class ModelAutoreset(ModelEnv):
    """The model under next-step autoreset (named so the family reads its semantics)."""

    def __init__(self, env_fn: EnvFn) -> None:
        super().__init__(env_fn, autoreset=True)


def build_model_env(env_fns: Sequence[EnvFn], *, autoreset: bool) -> ModelEnv:
    if len(env_fns) != 1:
        raise ValueError(f"a single-env model takes one env factory, got {len(env_fns)}")
    return ModelAutoreset(env_fns[0]) if autoreset else ModelEnv(env_fns[0], autoreset=False)
