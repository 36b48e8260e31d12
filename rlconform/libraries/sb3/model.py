"""Executable models of SB3's VecEnv semantics and of VecNormalize, VecFrameStack and VecMonitor,
written from SB3's documentation: same-step autoreset with ``terminal_observation`` and
``TimeLimit.truncated`` in the infos, seeds applied at the next reset, statistics over every step.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from rlconform.core.system import EnvFn
from rlconform.envs.stacking import stack_obs
from rlconform.libraries.gymnasium.vector_model import _rows, _RunningMeanStd


class ModelVecEnv:
    """DummyVecEnv/SubprocVecEnv semantics."""

    def __init__(self, env_fns: Sequence[EnvFn]) -> None:
        self.envs = [fn() for fn in env_fns]
        self.num_envs = len(self.envs)
        self.observation_space = self.envs[0].observation_space
        self.action_space = self.envs[0].action_space
        self.metadata: dict[str, Any] = {"render_modes": []}
        self.reset_infos: list[dict[str, Any]] = [{} for _ in self.envs]
        self._seeds: list[int | None] = [None] * self.num_envs

    def seed(self, seed: int | None = None) -> list[int | None]:
        self._seeds = [None if seed is None else seed + i for i in range(self.num_envs)]
        return list(self._seeds)

    def reset(self) -> Any:
        observations = []
        for i, env in enumerate(self.envs):
            obs, self.reset_infos[i] = env.reset(seed=self._seeds[i])
            observations.append(obs)
        self._seeds = [None] * self.num_envs
        return stack_obs(self.observation_space, observations)

    def step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, list[dict[str, Any]]]:
        rows = _rows(actions)
        if len(rows) != self.num_envs:
            raise ValueError(f"{len(rows)} actions for {self.num_envs} sub-envs")
        observations, rewards, dones, infos = [], [], [], []
        for i, env in enumerate(self.envs):
            obs, reward, terminated, truncated, info = env.step(rows[i])
            info = dict(info)
            done = bool(terminated or truncated)
            info["TimeLimit.truncated"] = bool(truncated and not terminated)
            if done:
                info["terminal_observation"] = obs
                obs, self.reset_infos[i] = env.reset()
            observations.append(obs)
            rewards.append(reward)
            dones.append(done)
            infos.append(info)
        return (
            stack_obs(self.observation_space, observations),
            np.asarray(rewards, dtype=np.float64),
            np.asarray(dones, dtype=np.bool_),
            infos,
        )

    def close(self) -> None:
        for env in self.envs:
            env.close()


class _ModelVecWrapper:
    def __init__(self, venv: Any) -> None:
        self.venv = venv
        self.num_envs = venv.num_envs
        self.observation_space = venv.observation_space
        self.action_space = venv.action_space
        self.metadata = venv.metadata

    @property
    def reset_infos(self) -> list[dict[str, Any]]:
        """The wrapped VecEnv's reset infos: a wrapper must not hide them."""
        return self.venv.reset_infos

    def seed(self, seed: int | None = None) -> list[int | None]:
        return self.venv.seed(seed)

    def close(self) -> None:
        self.venv.close()


class ModelVecNormalize(_ModelVecWrapper):
    """Observations standardised and clipped with running statistics of every returned
    observation; rewards divided by the running deviation of each sub-env's discounted return,
    which restarts with each episode; the terminal observation normalised too.

    ``norm_obs``/``norm_reward`` off: that output passes through unchanged (rewards as float32, as
    SB3 returns them). ``training`` off: no statistic is updated (SB3's evaluation setup), so the
    outputs follow from the statistics the model is built with: ``obs_rms`` (a dict of them for a
    Dict space) and ``ret_rms``, copied from the VecNormalize the model stands for; fresh when None.
    """

    def __init__(
        self,
        venv: Any,
        gamma: float = 0.99,
        clip_obs: float = 10.0,
        clip_reward: float = 10.0,
        epsilon: float = 1e-8,
        *,
        training: bool = True,
        norm_obs: bool = True,
        norm_reward: bool = True,
        obs_rms: Any = None,
        ret_rms: Any = None,
    ) -> None:
        from gymnasium import spaces

        super().__init__(venv)
        self.gamma, self.clip_obs, self.clip_reward, self.epsilon = gamma, clip_obs, clip_reward, epsilon
        self.training, self.norm_obs, self.norm_reward = training, norm_obs, norm_reward
        space = venv.observation_space
        if isinstance(space, spaces.Dict):
            given = obs_rms or {}
            self.obs_rms: Any = {
                key: _RunningMeanStd.copied(given.get(key), tuple(sub.shape or ())) for key, sub in space.spaces.items()
            }
            normalized: Any = spaces.Dict(
                {key: spaces.Box(-clip_obs, clip_obs, sub.shape, np.float32) for key, sub in space.spaces.items()}
            )
        else:
            self.obs_rms = _RunningMeanStd.copied(obs_rms, tuple(space.shape or ()))
            normalized = spaces.Box(-clip_obs, clip_obs, space.shape, np.float32)
        # without norm_obs the observations are the wrapped VecEnv's, in its space
        self.observation_space = normalized if norm_obs else space
        self.ret_rms = _RunningMeanStd.copied(ret_rms)
        self.returns = np.zeros(self.num_envs)
        self.old_obs: Any = None
        self.old_reward: Any = None

    def _each(self, obs: Any, fn: Any) -> Any:
        if isinstance(obs, dict):
            return {key: fn(value, self.obs_rms[key]) for key, value in obs.items()}
        return fn(obs, self.obs_rms)

    def normalize_obs(self, obs: Any) -> Any:
        if not self.norm_obs:
            return obs
        return self._each(
            obs,
            lambda x, rms: np.clip(
                (x - rms.mean) / np.sqrt(rms.var + self.epsilon), -self.clip_obs, self.clip_obs
            ).astype(np.float32),
        )

    def unnormalize_obs(self, obs: Any) -> Any:
        if not self.norm_obs:
            return obs
        return self._each(obs, lambda x, rms: x * np.sqrt(rms.var + self.epsilon) + rms.mean)

    def _update_obs(self, obs: Any) -> None:
        self._each(obs, lambda x, rms: rms.update(x))

    def get_original_obs(self) -> Any:
        return self.old_obs

    def get_original_reward(self) -> Any:
        return self.old_reward

    def reset(self) -> Any:
        obs = self.venv.reset()
        self.old_obs = obs
        self.returns = np.zeros(self.num_envs)
        if self.training:
            self._update_obs(obs)
        return self.normalize_obs(obs)

    def step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, list[dict[str, Any]]]:
        obs, rewards, dones, infos = self.venv.step(actions)
        self.old_obs, self.old_reward = obs, rewards
        if self.training:
            self._update_obs(obs)
            self.returns = self.returns * self.gamma + rewards
            self.ret_rms.update(self.returns)
        normalized = rewards.astype(np.float32)
        if self.norm_reward:
            normalized = np.clip(
                rewards / np.sqrt(self.ret_rms.var + self.epsilon), -self.clip_reward, self.clip_reward
            )
        for i, done in enumerate(dones):
            if done and "terminal_observation" in infos[i]:
                infos[i]["terminal_observation"] = self.normalize_obs(infos[i]["terminal_observation"])
        self.returns[dones] = 0.0
        return self.normalize_obs(obs), normalized, dones, infos


class _Stack:
    """Frames of one Box observation stacked along the last axis, oldest first, zeros before the
    episode's first observation."""

    def __init__(self, num_envs: int, space: Any, n_stack: int) -> None:
        from gymnasium import spaces

        self.n_stack = n_stack
        self.width = space.shape[-1]
        self.buffer = np.zeros((num_envs, *space.shape[:-1], self.width * n_stack), dtype=space.dtype)
        self.space = spaces.Box(
            low=np.repeat(space.low, n_stack, axis=-1), high=np.repeat(space.high, n_stack, axis=-1), dtype=space.dtype
        )

    def reset(self, obs: np.ndarray) -> np.ndarray:
        self.buffer = np.zeros_like(self.buffer)
        self.buffer[..., -self.width :] = obs
        return self.buffer.copy()

    def update(self, obs: np.ndarray, dones: np.ndarray, terminals: list[Any]) -> tuple[np.ndarray, list[Any]]:
        shifted = np.concatenate(
            [self.buffer[..., self.width :], np.zeros_like(self.buffer[..., : self.width])], axis=-1
        )
        stacked_terminals: list[Any] = [None] * len(dones)
        for i, done in enumerate(dones):
            if done and terminals[i] is not None:
                stacked_terminals[i] = np.concatenate([self.buffer[i, ..., self.width :], terminals[i]], axis=-1)
            if done:
                shifted[i] = 0
        shifted[..., -self.width :] = obs
        self.buffer = shifted
        return self.buffer.copy(), stacked_terminals


class ModelVecFrameStack(_ModelVecWrapper):
    """The last ``n_stack`` observations of the current episode, stacked along the last axis."""

    def __init__(self, venv: Any, n_stack: int) -> None:
        from gymnasium import spaces

        super().__init__(venv)
        self.n_stack = n_stack
        space = venv.observation_space
        if isinstance(space, spaces.Dict):
            self.stacks: Any = {key: _Stack(self.num_envs, sub, n_stack) for key, sub in space.spaces.items()}
            self.observation_space = spaces.Dict({key: s.space for key, s in self.stacks.items()})
        else:
            self.stacks = _Stack(self.num_envs, space, n_stack)
            self.observation_space = self.stacks.space

    def reset(self) -> Any:
        obs = self.venv.reset()
        if isinstance(self.stacks, dict):
            return {key: stack.reset(obs[key]) for key, stack in self.stacks.items()}
        return self.stacks.reset(obs)

    def step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, list[dict[str, Any]]]:
        obs, rewards, dones, infos = self.venv.step(actions)
        terminals = [info.get("terminal_observation") for info in infos]
        if isinstance(self.stacks, dict):
            stacked = {}
            for key, stack in self.stacks.items():
                stacked[key], key_terminals = stack.update(
                    obs[key], dones, [t[key] if t is not None else None for t in terminals]
                )
                for i, terminal in enumerate(key_terminals):
                    if terminal is not None:
                        infos[i]["terminal_observation"][key] = terminal
            return stacked, rewards, dones, infos
        stacked_obs, stacked_terminals = self.stacks.update(obs, dones, terminals)
        for i, terminal in enumerate(stacked_terminals):
            if terminal is not None:
                infos[i]["terminal_observation"] = terminal
        return stacked_obs, rewards, dones, infos


class ModelVecMonitor(_ModelVecWrapper):
    """Episode return and length in ``infos[i]["episode"]`` on the step that ends an episode."""

    def __init__(self, venv: Any) -> None:
        super().__init__(venv)
        self.returns = np.zeros(self.num_envs)
        self.lengths = np.zeros(self.num_envs, dtype=np.int64)
        self.t_start = time.time()

    def reset(self) -> Any:
        obs = self.venv.reset()
        self.returns[:] = 0.0
        self.lengths[:] = 0
        return obs

    def step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, list[dict[str, Any]]]:
        obs, rewards, dones, infos = self.venv.step(actions)
        self.returns += rewards
        self.lengths += 1
        for i, done in enumerate(dones):
            if done:
                infos[i] = dict(infos[i])
                infos[i]["episode"] = {
                    "r": self.returns[i],
                    "l": self.lengths[i],
                    "t": round(time.time() - self.t_start, 6),
                }
                self.returns[i] = 0.0
                self.lengths[i] = 0
        return obs, rewards, dones, infos
