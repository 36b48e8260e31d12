"""Executable models of Gymnasium's vector semantics, and of its statistics wrappers.

Each model is the obvious loop over sub-envs for one autoreset mode, written from Gymnasium's
documentation, not from its code. Two properties that the real classes are checked against are
built in: a call that fails validates everything before touching any sub-env, and the caller's
``options`` dict is never mutated. The models run through every spec like any other system.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from rlconform.core.system import EnvFn
from rlconform.envs.stacking import stack_obs
from rlconform.libraries.gymnasium.infos import final_entries, merge_info
from rlconform.libraries.gymnasium.options import MODES
from rlconform.libraries.gymnasium.releases import installed as installed_release


def _seeds(seed: int | Sequence[int | None] | None, num_envs: int) -> list[int | None]:
    if seed is None:
        return [None] * num_envs
    if isinstance(seed, (int, np.integer)):
        return [int(seed) + i for i in range(num_envs)]
    seeds = list(seed)
    if len(seeds) != num_envs:
        raise ValueError(f"{len(seeds)} seeds for {num_envs} sub-envs")
    return seeds


def _validated_mask(options: dict[str, Any], num_envs: int) -> np.ndarray | None:
    if "reset_mask" not in options:
        return None
    mask = options["reset_mask"]
    if not isinstance(mask, np.ndarray):
        raise TypeError(f"reset_mask must be a numpy array, got {type(mask).__name__}")
    if mask.shape != (num_envs,):
        raise ValueError(f"reset_mask must have shape ({num_envs},), got {mask.shape}")
    if mask.dtype != np.bool_:
        raise TypeError(f"reset_mask must have dtype bool, got {mask.dtype}")
    if not mask.any():
        raise ValueError("reset_mask must select at least one sub-env")
    return mask


def declared_mode(mode: str) -> Any:
    """What ``metadata["autoreset_mode"]`` holds for ``mode``: an ``AutoresetMode`` where the
    installed release has the enum (1.1+), else the mode's name (0.29 and 1.0 have one mode and no
    tag; a model of another mode still says which it is)."""
    if not installed_release().has_autoreset_mode:
        return mode
    from gymnasium.vector import AutoresetMode

    return AutoresetMode(mode)


class ModelVectorEnv:
    """Gymnasium VectorEnv semantics for one autoreset mode."""

    def __init__(self, env_fns: Sequence[EnvFn], mode: str) -> None:
        from gymnasium.vector.utils import batch_space

        if mode not in MODES:
            raise ValueError(f"unknown autoreset mode {mode!r}")
        self.mode = mode
        self.envs = [fn() for fn in env_fns]
        self.num_envs = len(self.envs)
        self.single_observation_space = self.envs[0].observation_space
        self.single_action_space = self.envs[0].action_space
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self.metadata: dict[str, Any] = {"autoreset_mode": declared_mode(mode)}
        self._ended = [False] * self.num_envs
        self._obs: list[Any] = [None] * self.num_envs

    def reset(
        self, *, seed: int | Sequence[int | None] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        sub_options = dict(options) if options is not None else None
        mask = _validated_mask(sub_options, self.num_envs) if sub_options is not None else None
        if sub_options is not None:
            sub_options.pop("reset_mask", None)
        seeds = _seeds(seed, self.num_envs)
        infos: dict[str, Any] = {}
        for i, env in enumerate(self.envs):
            if mask is not None and not mask[i]:
                continue
            self._obs[i], info = env.reset(seed=seeds[i], options=sub_options)
            self._ended[i] = False
            merge_info(infos, info, i, self.num_envs)
        return stack_obs(self.single_observation_space, self._obs), infos

    def step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        rows = _rows(actions)
        if len(rows) != self.num_envs:
            raise ValueError(f"{len(rows)} actions for {self.num_envs} sub-envs")
        if self.mode == "Disabled" and any(self._ended):
            ended = [i for i, e in enumerate(self._ended) if e]
            raise RuntimeError(f"sub-envs {ended} ended and were not reset (autoreset is disabled)")
        rewards = np.zeros(self.num_envs, dtype=np.float64)
        terminated = np.zeros(self.num_envs, dtype=np.bool_)
        truncated = np.zeros(self.num_envs, dtype=np.bool_)
        infos: dict[str, Any] = {}
        for i, env in enumerate(self.envs):
            if self.mode == "NextStep" and self._ended[i]:
                self._obs[i], info = env.reset()
                self._ended[i] = False
                merge_info(infos, info, i, self.num_envs)
                continue
            obs, reward, term, trunc, info = env.step(rows[i])
            rewards[i], terminated[i], truncated[i] = reward, term, trunc
            if self.mode == "SameStep" and (term or trunc):
                merge_info(infos, final_entries(obs, info), i, self.num_envs)
                obs, info = env.reset()
            else:
                self._ended[i] = bool(term or trunc)
            self._obs[i] = obs
            merge_info(infos, info, i, self.num_envs)
        return stack_obs(self.single_observation_space, self._obs), rewards, terminated, truncated, infos

    def close(self) -> None:
        for env in self.envs:
            env.close()


def _rows(actions: Any) -> list[Any]:
    if isinstance(actions, np.ndarray) and actions.ndim >= 1:
        return [actions[i] for i in range(actions.shape[0])]
    return list(actions)


class _ModelWrapper:
    """Forwarding base for the statistics-wrapper models."""

    def __init__(self, env: ModelVectorEnv) -> None:
        self.env = env
        self.num_envs = env.num_envs
        self.metadata = env.metadata
        self.single_observation_space = env.single_observation_space
        self.single_action_space = env.single_action_space
        self.observation_space = env.observation_space
        self.action_space = env.action_space
        self.mode = env.mode

    def _reset_mask(self, options: dict[str, Any] | None) -> np.ndarray:
        if options is not None and "reset_mask" in options:
            return np.asarray(options["reset_mask"], dtype=bool)
        return np.ones(self.num_envs, dtype=bool)

    def close(self) -> None:
        self.env.close()


class ModelRecordEpisodeStatistics(_ModelWrapper):
    """Episode return and length over real transitions only, reported in ``infos["episode"]``
    on the step that ends the episode; a partial reset restarts only the masked sub-envs."""

    def __init__(self, env: ModelVectorEnv) -> None:
        super().__init__(env)
        self.returns = np.zeros(self.num_envs)
        self.lengths = np.zeros(self.num_envs, dtype=int)
        self.starts = np.zeros(self.num_envs)
        self._reset_step = np.zeros(self.num_envs, dtype=bool)

    def reset(self, *, seed: Any = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        mask = self._reset_mask(options)
        obs, infos = self.env.reset(seed=seed, options=options)
        self.returns[mask] = 0.0
        self.lengths[mask] = 0
        self.starts[mask] = time.perf_counter()
        self._reset_step[mask] = False
        return obs, infos

    def step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        obs, rewards, terminated, truncated, infos = self.env.step(actions)
        real = ~self._reset_step
        self.returns[real] += rewards[real]
        self.lengths[real] += 1
        dones = np.logical_or(terminated, truncated)
        if dones.any():
            now = time.perf_counter()
            infos["episode"] = {
                "r": np.where(dones, self.returns, 0.0),
                "l": np.where(dones, self.lengths, 0),
                "t": np.where(dones, np.round(now - self.starts, 6), 0.0),
            }
            infos["_episode"] = dones
            self.returns[dones] = 0.0
            self.lengths[dones] = 0
            self.starts[dones] = now
        self._reset_step = dones.copy() if self.mode == "NextStep" else np.zeros(self.num_envs, dtype=bool)
        return obs, rewards, terminated, truncated, infos


class _RunningMeanStd:
    """Parallel mean/variance accumulation (Chan et al.), as the normalizers document."""

    def __init__(self, shape: tuple[int, ...] = (), epsilon: float = 1e-4) -> None:
        self.mean = np.zeros(shape, dtype=np.float64)
        self.var = np.ones(shape, dtype=np.float64)
        self.count = epsilon

    def update(self, batch: np.ndarray) -> None:
        batch = np.asarray(batch, dtype=np.float64)
        batch_mean, batch_var, batch_count = batch.mean(axis=0), batch.var(axis=0), batch.shape[0]
        delta = batch_mean - self.mean
        total = self.count + batch_count
        m2 = self.var * self.count + batch_var * batch_count + delta**2 * self.count * batch_count / total
        self.mean = self.mean + delta * batch_count / total
        self.var = m2 / total
        self.count = total

    @classmethod
    def copied(cls, source: Any, shape: tuple[int, ...] = ()) -> _RunningMeanStd:
        """Fresh statistics (``source`` None), or a copy of the mean, variance and count that
        ``source`` (the library's own running statistics, or a model's) holds now: a model that
        starts from a built object's statistics must not follow that object's later updates."""
        rms = cls(shape)
        if source is not None:
            rms.mean = np.array(source.mean, dtype=np.float64, copy=True)
            rms.var = np.array(source.var, dtype=np.float64, copy=True)
            rms.count = float(source.count)
        return rms


class ModelNormalizeReward(_ModelWrapper):
    """Rewards divided by the running standard deviation of each sub-env's discounted return.

    The discounted return is a per-episode quantity: it restarts when an episode starts, whatever
    ended the previous one, and only real transitions (never a reset step) enter the statistics.
    With ``update_running_mean`` off the statistics stay what they were built with
    (``return_rms``: the statistics of the wrapper the model stands for, fresh when None).
    """

    def __init__(
        self,
        env: ModelVectorEnv,
        gamma: float = 0.99,
        epsilon: float = 1e-8,
        update_running_mean: bool = True,
        return_rms: Any = None,
    ) -> None:
        super().__init__(env)
        self.gamma, self.epsilon, self.update_running_mean = gamma, epsilon, update_running_mean
        self.return_rms = _RunningMeanStd.copied(return_rms)
        self.accumulated_reward = np.zeros(self.num_envs)
        self._reset_step = np.zeros(self.num_envs, dtype=bool)

    def reset(self, *, seed: Any = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        mask = self._reset_mask(options)
        out = self.env.reset(seed=seed, options=options)
        self.accumulated_reward[mask] = 0.0
        self._reset_step[mask] = False
        return out

    def step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        obs, rewards, terminated, truncated, infos = self.env.step(actions)
        real = ~self._reset_step
        self.accumulated_reward[real] = self.accumulated_reward[real] * self.gamma + rewards[real]
        if real.any() and self.update_running_mean:
            self.return_rms.update(self.accumulated_reward[real])
        dones = np.logical_or(terminated, truncated)
        self.accumulated_reward[dones] = 0.0
        self._reset_step = dones.copy() if self.mode == "NextStep" else np.zeros(self.num_envs, dtype=bool)
        return obs, rewards / np.sqrt(self.return_rms.var + self.epsilon), terminated, truncated, infos


class ModelNormalizeObservation(_ModelWrapper):
    """Observations standardised with running statistics of every observation returned (with
    ``update_running_mean`` off: with the statistics it was built with, ``obs_rms``)."""

    def __init__(
        self, env: ModelVectorEnv, epsilon: float = 1e-8, update_running_mean: bool = True, obs_rms: Any = None
    ) -> None:
        from gymnasium.spaces import Box
        from gymnasium.vector.utils import batch_space

        super().__init__(env)
        self.epsilon, self.update_running_mean = epsilon, update_running_mean
        shape = self.single_observation_space.shape
        self.obs_rms = _RunningMeanStd.copied(obs_rms, tuple(shape or ()))
        # standardised observations are unbounded float32, whatever the env declared
        self.single_observation_space = Box(-np.inf, np.inf, shape, np.float32)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)

    def _normalize(self, obs: np.ndarray) -> np.ndarray:
        if self.update_running_mean:
            self.obs_rms.update(obs)
        return ((obs - self.obs_rms.mean) / np.sqrt(self.obs_rms.var + self.epsilon)).astype(np.float32)

    def reset(self, *, seed: Any = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        obs, infos = self.env.reset(seed=seed, options=options)
        return self._normalize(obs), infos

    def step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        obs, rewards, terminated, truncated, infos = self.env.step(actions)
        return self._normalize(obs), rewards, terminated, truncated, infos
