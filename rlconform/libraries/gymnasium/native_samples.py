"""Small natively vectorized envs, correct and buggy, for family ``gymnasium.VectorEnv`` (they import
Gymnasium: rlconform.libraries.gymnasium.native_planted registers them without importing it).

``BatchedWalk`` is a NumPy-batched random walk written as such envs are (one array per state
variable, a generator per sub-env seeded ``seed + i``), in each autoreset mode. Each planted bug
is one mistake the authors of such envs make; the innocent variants are correct but unusual.
They are user factories (``make(num_envs) -> VectorEnv``) as well as bundled planted systems.
"""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces
from gymnasium.envs.registration import EnvSpec
from gymnasium.vector.utils import batch_space

#: the time limit every walk declares (env.spec.max_episode_steps)
LIMIT = 8


class BatchedWalk(gymnasium.vector.VectorEnv):  # type: ignore[type-arg]  # not generic before Gymnasium 1.0
    """Correct: ``num_envs`` seeded random walks that end at +-3 (terminated) or after ``LIMIT``
    steps (truncated), in the autoreset mode it declares."""

    obs_dtype: Any = np.float32

    def __init__(self, num_envs: int, mode: str = "NextStep") -> None:
        self.num_envs = num_envs
        self.metadata = {"autoreset_mode": gymnasium.vector.AutoresetMode(_MODE_VALUES[mode])}
        self.mode = mode
        self.single_observation_space = spaces.Box(-10.0, 10.0, (2,), self.obs_dtype)
        self.single_action_space = spaces.Discrete(3)
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)
        self.spec = EnvSpec("rlconform/BatchedWalk-v0", max_episode_steps=LIMIT)
        self.position = np.zeros(num_envs)
        self.steps = np.zeros(num_envs, dtype=np.int64)
        self.autoreset = np.zeros(num_envs, dtype=bool)
        self.rngs = [np.random.default_rng(i) for i in range(num_envs)]

    # -- the parts the planted bugs change ------------------------------------------------------
    def _start(self, i: int) -> None:
        self.position[i] = float(self.rngs[i].integers(-1, 2))
        self.steps[i] = 0

    def _noise(self, actions: np.ndarray, moving: np.ndarray) -> np.ndarray:
        # only the sub-envs that move draw: a reset step draws its start alone, as the single env's
        # reset does, so that every episode of sub-env i is the single env's (seed + i)
        return np.array([rng.choice([-0.5, 0.0, 0.5]) if m else 0.0 for rng, m in zip(self.rngs, moving, strict=True)])

    def _obs(self) -> np.ndarray:
        return np.stack([self.position, self.steps]).T.astype(self.obs_dtype)

    def _flags(self) -> tuple[np.ndarray, np.ndarray]:
        return np.abs(self.position) >= 3, self.steps >= LIMIT

    # -- the vector API ---------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Any:
        mask = (
            np.ones(self.num_envs, dtype=bool) if not options or "reset_mask" not in options else options["reset_mask"]
        )
        if seed is not None:
            self.rngs = [np.random.default_rng(seed + i) for i in range(self.num_envs)]
        for i in map(int, np.flatnonzero(mask)):
            self._start(i)
        self.autoreset &= ~mask
        return self._obs(), {}

    def step(self, actions: Any) -> Any:
        actions = np.asarray(actions)
        moving = ~self.autoreset if self.mode == "NextStep" else np.ones(self.num_envs, dtype=bool)
        noise = self._noise(actions, moving)
        self.position = np.where(moving, self.position + (actions - 1) + noise, self.position)
        self.steps = np.where(moving, self.steps + 1, self.steps)
        terminated, truncated = self._flags()
        terminated, truncated = terminated & moving, truncated & moving
        rewards = np.where(moving, self.position, 0.0).astype(np.float64)
        info: dict[str, Any] = {}
        if self.mode == "NextStep":
            for i in map(int, np.flatnonzero(self.autoreset)):
                self._start(i)
            obs = self._obs()
            self.autoreset = terminated | truncated
            return obs, self._reset_step_rewards(rewards), terminated, truncated, info
        if self.mode == "SameStep":
            done = terminated | truncated
            if done.any():
                info = self._final_infos(done)
                for i in map(int, np.flatnonzero(done)):
                    self._start(i)
        return self._obs(), rewards, terminated, truncated, info

    def _reset_step_rewards(self, rewards: np.ndarray) -> np.ndarray:
        return rewards

    def _final_infos(self, done: np.ndarray) -> dict[str, Any]:
        final = self._obs()
        final_obs = np.full(self.num_envs, None, dtype=object)  # one entry per sub-env, as Gymnasium's
        length = np.zeros(self.num_envs, dtype=np.int64)  # the ended episodes' lengths, at their index
        for i in map(int, np.flatnonzero(done)):
            final_obs[i] = final[i]
            length[i] = self.steps[i]
        return {
            "final_obs": final_obs,
            "_final_obs": done.copy(),
            "final_info": {"length": self._final_lengths(length, done), "_length": done.copy()},
            "_final_info": done.copy(),
        }

    def _final_lengths(self, length: np.ndarray, done: np.ndarray) -> np.ndarray:
        return length


_MODE_VALUES = {"NextStep": "NextStep", "SameStep": "SameStep", "Disabled": "Disabled"}


class ResetStepReward(BatchedWalk):
    """Bug (NEXT_STEP): the reset step returns a reward of 1 instead of 0."""

    def _reset_step_rewards(self, rewards: np.ndarray) -> np.ndarray:
        return np.where(self.autoreset_before, 1.0, rewards)

    def step(self, actions: Any) -> Any:
        self.autoreset_before = self.autoreset.copy()
        return super().step(actions)


class ResetStepAppliesAction(BatchedWalk):
    """Bug (NEXT_STEP): the reset step applies its action to the new episode's start."""

    def step(self, actions: Any) -> Any:
        resetting = self.autoreset.copy()
        _, rewards, terminated, truncated, info = super().step(actions)
        self.position = np.where(resetting, self.position + (np.asarray(actions) - 1), self.position)
        return self._obs(), rewards, terminated, truncated, info


class NoFinalObs(BatchedWalk):
    """Bug (SAME_STEP): infos carry no final_obs where a sub-env ended."""

    def _final_infos(self, done: np.ndarray) -> dict[str, Any]:
        return {}


class TimeoutTerminates(BatchedWalk):
    """Bug: the time limit sets terminated instead of truncated."""

    def _flags(self) -> tuple[np.ndarray, np.ndarray]:
        terminated, truncated = super()._flags()
        return terminated | truncated, np.zeros(self.num_envs, dtype=bool)


class SharedNoise(BatchedWalk):
    """Bug: one generator draws noise only for the sub-envs that move right, so each sub-env's
    noise depends on the other sub-envs' actions."""

    def _noise(self, actions: np.ndarray, moving: np.ndarray) -> np.ndarray:
        return np.array([self.rngs[0].choice([-0.5, 0.5]) if a == 2 else 0.0 for a in actions])


class ReusedBuffer(BatchedWalk):
    """Bug: returns its internal observation buffer, overwritten by the next call."""

    def _obs(self) -> np.ndarray:
        if not hasattr(self, "_buffer"):
            self._buffer = np.zeros((self.num_envs, 2), dtype=self.obs_dtype)
        self._buffer[:, 0], self._buffer[:, 1] = self.position, self.steps
        return self._buffer


class IgnoresSeed(BatchedWalk):
    """Bug: starts its walks from how many envs were built before it, not from the seed given to
    reset (a counter or clock instead of the seed)."""

    built = 0

    def __init__(self, num_envs: int, mode: str = "NextStep") -> None:
        super().__init__(num_envs, mode)
        IgnoresSeed.built += 1
        self.serial = IgnoresSeed.built

    def _start(self, i: int) -> None:
        self.position[i] = float((self.serial + i) % 3 - 1)
        self.steps[i] = 0


class IntFlags(BatchedWalk):
    """Bug: returns the flags as int64 arrays, not bool."""

    def step(self, actions: Any) -> Any:
        obs, rewards, terminated, truncated, info = super().step(actions)
        return obs, rewards, terminated.astype(np.int64), truncated.astype(np.int64), info


class UndeclaredFloat64(BatchedWalk):
    """Bug: returns float64 observations under its float32 observation space."""

    def _obs(self) -> np.ndarray:
        return super()._obs().astype(np.float64)


class DoubledReward(BatchedWalk):
    """Bug: its reward is twice the single env's (the vectorized reimplementation drifted)."""

    def step(self, actions: Any) -> Any:
        obs, rewards, terminated, truncated, info = super().step(actions)
        return obs, rewards * 2.0, terminated, truncated, info


class PackedFinalInfo(BatchedWalk):
    """Bug (SAME_STEP): the ended sub-envs' final_info values are packed from index 0, in the order
    of the ended sub-envs, instead of at each one's index (the ``_length`` mask is right)."""

    def _final_lengths(self, length: np.ndarray, done: np.ndarray) -> np.ndarray:
        packed = np.zeros_like(length)
        packed[: int(done.sum())] = length[done]
        return packed


class SameSeedEverywhere(BatchedWalk):
    """Bug: seeds every sub-env's generator with ``seed`` itself, not ``seed + i``: the sub-envs
    are copies of one another."""

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Any:
        if seed is not None:
            self.rngs = [np.random.default_rng(seed) for _ in range(self.num_envs)]
        return super().reset(seed=None, options=options)


class ReplaysFirstEpisode(BatchedWalk):
    """Bug: reseeds a sub-env with its first seed whenever it starts a new episode, so every
    episode after the first replays the first (given the same actions)."""

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Any:
        if seed is not None:
            self.seeds = [seed + i for i in range(self.num_envs)]
        return super().reset(seed=seed, options=options)

    def _start(self, i: int) -> None:
        if self.steps[i] > 0 and hasattr(self, "seeds"):  # an autoreset, not the seeded reset
            self.rngs[i] = np.random.default_rng(self.seeds[i])
        super()._start(i)


class IgnoresResetSeed(BatchedWalk):
    """Bug: seeds sub-env i with ``i`` when built and ignores the seed given to ``reset``."""

    def __init__(self, num_envs: int, mode: str = "NextStep") -> None:
        super().__init__(num_envs, mode)
        self.rngs = [np.random.default_rng(i) for i in range(num_envs)]

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Any:
        return super().reset(seed=None, options=options)


class SeedOnlyOnFirstReset(BatchedWalk):
    """Bug: honours ``reset(seed=...)`` on its first reset only (a ``seeded`` flag set once, as
    an env that seeds a generator lazily does): a second ``reset(seed=s)`` on the same instance
    continues the old streams, so a seeded evaluation after training is not the seeded run."""

    def __init__(self, num_envs: int, mode: str = "NextStep") -> None:
        super().__init__(num_envs, mode)
        self.seeded = False

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Any:
        if seed is not None and self.seeded:
            seed = None
        self.seeded = self.seeded or seed is not None
        return super().reset(seed=seed, options=options)


class StaleSpecTimeoutTerminates(TimeoutTerminates):
    """Bug: the time limit sets terminated, and the spec keeps a stale registered limit (500)
    beside the one the walks were built with, as ``gymnasium.make_vec(id, max_episode_steps=k)``
    leaves it (FINDINGS G10): a checker that trusts ``spec.max_episode_steps`` never reaches it."""

    def __init__(self, num_envs: int, mode: str = "NextStep") -> None:
        super().__init__(num_envs, mode)
        self.spec = EnvSpec("rlconform/BatchedWalk-v0", max_episode_steps=500, kwargs={"max_episode_steps": LIMIT})


class Float64Walk(BatchedWalk):
    """Correct: float64 observations, declared float64."""

    obs_dtype = np.float64


class CurriculumWalk(BatchedWalk):
    """Correct but unusual: a curriculum. Each sub-env counts its episodes across resets, seeded or
    not, and its walks start further out as the count grows, so a second ``reset(seed=s)`` of the
    same instance does not repeat the first run; the seed still decides every start."""

    def __init__(self, num_envs: int, mode: str = "NextStep") -> None:
        super().__init__(num_envs, mode)
        self.episodes = np.zeros(num_envs, dtype=np.int64)

    def _start(self, i: int) -> None:
        super()._start(i)
        self.position[i] = float(np.clip(self.position[i] * (1 + min(self.episodes[i], 1)), -2, 2))
        self.episodes[i] += 1


class LongWalk(BatchedWalk):
    """Correct: episodes of ``LENGTH`` steps, ended only by truncation (as Pendulum's and
    Acrobot's), longer than any case's own steps: checked only when driven past an end."""

    LENGTH = 150

    def __init__(self, num_envs: int, mode: str = "NextStep") -> None:
        super().__init__(num_envs, mode)
        self.spec = EnvSpec("rlconform/LongWalk-v0", max_episode_steps=self.LENGTH)

    def _obs(self) -> np.ndarray:
        return np.stack([np.clip(self.position, -9.0, 9.0), self.steps / self.LENGTH]).T.astype(self.obs_dtype)

    def _flags(self) -> tuple[np.ndarray, np.ndarray]:
        return np.zeros(self.num_envs, dtype=bool), self.steps >= self.LENGTH


class LongResetStepReward(ResetStepReward, LongWalk):
    """Bug (NEXT_STEP): ResetStepReward's, in LongWalk's episodes, longer than any case's own
    steps: found only when the case is driven past an episode end."""


class CheckedActions(BatchedWalk):
    """Correct: validates the actions up front and copies them."""

    def step(self, actions: Any) -> Any:
        actions = np.array(actions, copy=True)
        if not self.action_space.contains(actions):
            raise ValueError(f"invalid actions {actions!r}")
        return super().step(actions)


def walk(num_envs: int) -> BatchedWalk:
    return BatchedWalk(num_envs)


def walk_same_step(num_envs: int) -> BatchedWalk:
    return BatchedWalk(num_envs, "SameStep")


def walk_disabled(num_envs: int) -> BatchedWalk:
    return BatchedWalk(num_envs, "Disabled")


class SingleWalk(gymnasium.Env[np.ndarray, np.int64]):
    """One walk: the single env each sub-env of a seed+i ``BatchedWalk`` equals (``--single-env``)."""

    def __init__(self) -> None:
        self.observation_space = spaces.Box(-10.0, 10.0, (2,), np.float32)
        self.action_space = spaces.Discrete(3)
        self.spec = EnvSpec("rlconform/Walk-v0", max_episode_steps=LIMIT)
        self.position, self.steps = 0.0, 0

    def _obs(self) -> np.ndarray:
        return np.array([self.position, self.steps], dtype=np.float32)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Any:
        super().reset(seed=seed)
        self.position, self.steps = float(self.np_random.integers(-1, 2)), 0
        return self._obs(), {}

    def step(self, action: Any) -> Any:
        self.position += float(int(action) - 1) + float(self.np_random.choice([-0.5, 0.0, 0.5]))
        self.steps += 1
        return self._obs(), float(self.position), abs(self.position) >= 3, self.steps >= LIMIT, {"length": self.steps}


def single_walk() -> gymnasium.Env[Any, Any]:
    return SingleWalk()


def cartpole_vector(num_envs: int) -> Any:
    """Gymnasium's own natively vectorized CartPole (its ``vector_entry_point``)."""
    return gymnasium.make_vec("CartPole-v1", num_envs=num_envs, vectorization_mode="vector_entry_point")


def cartpole_sync(num_envs: int) -> Any:
    """CartPole vectorized by SyncVectorEnv, made as a ready-made vector env (the control)."""
    return gymnasium.make_vec("CartPole-v1", num_envs=num_envs, vectorization_mode="sync")


def cartpole_single() -> Any:
    return gymnasium.make("CartPole-v1")


#: the time limit of :func:`cartpole_sync_short`, short enough for a case to reach it
SHORT_LIMIT = 10


def cartpole_sync_short(num_envs: int) -> Any:
    """``make_vec(..., max_episode_steps=10)``: the sub-envs truncate at 10 steps, while
    ``env.spec.max_episode_steps`` stays the registered 500 (FINDINGS G10)."""
    return gymnasium.make_vec(
        "CartPole-v1", num_envs=num_envs, vectorization_mode="sync", max_episode_steps=SHORT_LIMIT
    )


def cartpole_single_short() -> Any:
    return gymnasium.make("CartPole-v1", max_episode_steps=SHORT_LIMIT)


def same_seed_everywhere(num_envs: int) -> BatchedWalk:
    return SameSeedEverywhere(num_envs)


def ignores_reset_seed(num_envs: int) -> BatchedWalk:
    return IgnoresResetSeed(num_envs)


def float64_walk(num_envs: int) -> BatchedWalk:
    return Float64Walk(num_envs)


def checked_actions(num_envs: int) -> BatchedWalk:
    return CheckedActions(num_envs)


def long_walk(num_envs: int) -> BatchedWalk:
    return LongWalk(num_envs)


def curriculum_walk(num_envs: int) -> BatchedWalk:
    return CurriculumWalk(num_envs)


def timeout_terminates(num_envs: int) -> BatchedWalk:
    return TimeoutTerminates(num_envs)


def single_walk_of(num_envs: int) -> gymnasium.Env[Any, Any]:
    """Wrong: a factory of num_envs that returns one single env."""
    return SingleWalk()


def from_env_fns(env_fns: list[Any]) -> Any:
    """Wrong for --api gymnasium.VectorEnv: a vectorizer of env factories (--api gymnasium.vector)."""
    return gymnasium.vector.SyncVectorEnv(env_fns)
