"""Small user envs for env-author mode: correct ones, and ones with one classic bug each.

They are module-level factories so that ``rlconform check rlconform.libraries.envauthor.sample_envs:NAME
--api gymnasium.Env`` works and so that process-based stacks can pickle them by reference.
"""

from __future__ import annotations

import time
from typing import Any, ClassVar

import gymnasium
import numpy as np
from gymnasium import spaces

from rlconform.libraries.gymnasium import sample_wrappers


class CounterEnv(gymnasium.Env[np.ndarray, np.int64]):
    """A correct little env: a seeded random walk that ends at +-3 or after 8 steps."""

    metadata = {"render_modes": []}  # Gymnasium declares it an instance attribute

    def __init__(self) -> None:
        self.observation_space = spaces.Box(-10.0, 10.0, (2,), np.float32)
        self.action_space = spaces.Discrete(3)
        self._position = 0.0
        self._steps = 0

    def _obs(self) -> np.ndarray:
        return np.array([self._position, self._steps], dtype=np.float32)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        self._position = float(self.np_random.integers(-1, 2))
        self._steps = 0
        return self._obs(), {"start": self._position}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        self._position += float(int(action) - 1) + float(self.np_random.choice([-0.5, 0.0, 0.5]))
        self._steps += 1
        terminated = abs(self._position) >= 3
        truncated = self._steps >= 8
        return self._obs(), float(self._position), bool(terminated), bool(truncated), {}


def counter() -> gymnasium.Env[Any, Any]:
    return CounterEnv()


def cartpole() -> gymnasium.Env[Any, Any]:
    """Gymnasium's CartPole as a user would make it (with make's wrappers)."""
    return gymnasium.make("CartPole-v1", max_episode_steps=20)


class GlobalRandomEnv(CounterEnv):
    """Bug: draws from NumPy's global RNG, so seeds do not determine episodes."""

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        _, info = super().reset(seed=seed)
        # a continuous draw: two instances agree by chance with probability ~0, so a replay of the
        # shrunk case shows the violation every time (a draw from {-1, 0, 1} agreed one time in three)
        self._position = float(np.random.uniform(-1.0, 1.0))
        return self._obs(), info


class SeedOnceEnv(CounterEnv):
    """Bug: only the first seed is honoured; a later reset(seed) continues the old RNG."""

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        if getattr(self, "_seeded", False):
            seed = None
        self._seeded = True
        return super().reset(seed=seed)


class ReusedBufferEnv(CounterEnv):
    """Bug: returns the same observation array every call and overwrites it in place."""

    def _obs(self) -> np.ndarray:
        if not hasattr(self, "_buffer"):
            self._buffer = np.zeros(2, dtype=np.float32)
        self._buffer[:] = (self._position, self._steps)
        return self._buffer


class Float64ObsEnv(CounterEnv):
    """Bug: declares float32 observations and returns float64 ones."""

    def _obs(self) -> np.ndarray:
        return np.array([self._position, self._steps], dtype=np.float64)


class FourTupleEnv(CounterEnv):
    """Bug: the pre-0.26 Gym API, step returns (obs, reward, done, info)."""

    def step(self, action: Any) -> Any:
        obs, reward, terminated, truncated, info = super().step(action)
        return obs, reward, terminated or truncated, info


class LeakyEnv(CounterEnv):
    """Bug: a step past the end of an episode shifts where the next episode starts, even seeded."""

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        if getattr(self, "_ended", False):
            self._offset = getattr(self, "_offset", 0.0) + 1.0
        out = super().step(action)
        self._ended = out[2] or out[3]
        return out

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        self._ended = False
        _, info = super().reset(seed=seed)
        self._position += getattr(self, "_offset", 0.0)
        return self._obs(), info


class SharedStateEnv(CounterEnv):
    """Bug: remembers the previous action in a class attribute, shared by every copy in a process."""

    previous_action: ClassVar[list[int]] = [0]

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        SharedStateEnv.previous_action[0] = 0
        return super().reset(seed=seed, options=options)

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        previous = SharedStateEnv.previous_action[0]
        SharedStateEnv.previous_action[0] = int(action)
        obs, reward, terminated, truncated, info = super().step(action)
        return obs, reward + 0.25 * previous, terminated, truncated, info


class CurriculumEnv(CounterEnv):
    """A correct env with state kept across episodes on purpose: a curriculum that lets each
    episode run one step longer than the one before (from 8 steps, up to 20). A stack that was
    driven before (env-author mode's pooled stacks) gives other transitions than a fresh one, so
    its examples are confirmed on fresh builds: innocent, it must pass the stacks."""

    def __init__(self) -> None:
        super().__init__()
        self._episodes = 0

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        self._episodes += 1
        return super().reset(seed=seed, options=options)

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        obs, reward, terminated, _, info = super().step(action)
        return obs, reward, terminated, self._steps >= min(20, 7 + self._episodes), info


def curriculum() -> gymnasium.Env[Any, Any]:
    return CurriculumEnv()


def global_random() -> gymnasium.Env[Any, Any]:
    return GlobalRandomEnv()


def seed_once() -> gymnasium.Env[Any, Any]:
    return SeedOnceEnv()


def reused_buffer() -> gymnasium.Env[Any, Any]:
    return ReusedBufferEnv()


def float64_obs() -> gymnasium.Env[Any, Any]:
    return Float64ObsEnv()


def four_tuple() -> gymnasium.Env[Any, Any]:
    return FourTupleEnv()


def leaky() -> gymnasium.Env[Any, Any]:
    return LeakyEnv()


def shared_state() -> gymnasium.Env[Any, Any]:
    return SharedStateEnv()


# ------------------------------------------------------------- correct envs that stacks cannot all take


class TupleDiscreteEnv(CounterEnv):
    """Correct: a Tuple of Discrete observations (a grid cell and a step phase). Gymnasium's and
    SB3's vectorizers take it; TorchRL's GymWrapper cannot (it stacks a Tuple into one tensor)."""

    def __init__(self) -> None:
        super().__init__()
        self.observation_space = spaces.Tuple((spaces.Discrete(7), spaces.Discrete(8)))  # type: ignore[assignment]

    def _obs(self) -> Any:
        return (int(np.clip(round(self._position), -3, 3)) + 3, self._steps % 8)


class Word(spaces.Space[str]):
    """A custom space of short strings: a legal Gymnasium space that no vectorizer can batch."""

    def __init__(self) -> None:
        super().__init__(shape=None, dtype=None)

    def sample(self, mask: Any = None, probability: Any = None) -> str:
        return "w" + str(int(self.np_random.integers(10)))

    def contains(self, x: Any) -> bool:
        return isinstance(x, str)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Word)

    def __hash__(self) -> int:
        return hash(Word)


class WordEnv(CounterEnv):
    """Correct: observes a string from a custom space (a text-adventure style env)."""

    def __init__(self) -> None:
        super().__init__()
        self.observation_space = Word()  # type: ignore[assignment]

    def _obs(self) -> Any:
        return f"at {self._position:+.1f} after {self._steps}"


class EndlessEnv(CounterEnv):
    """Correct: a continuing task whose episodes never end (no termination, no time limit)."""

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        _, reward, _, _, info = super().step(action)
        self._position = float(np.clip(self._position, -2.5, 2.5))
        self._steps %= 8
        return self._obs(), reward, False, False, info


class ShapeShiftEnv(CounterEnv):
    """Bug: after its third step, returns observations of shape (3,) under a space of shape (2,)."""

    def _obs(self) -> np.ndarray:
        values = [self._position, self._steps] + ([0.0] if self._steps >= 3 else [])
        return np.array(values, dtype=np.float32)


def tuple_discrete() -> gymnasium.Env[Any, Any]:
    return TupleDiscreteEnv()


def word() -> gymnasium.Env[Any, Any]:
    return WordEnv()


def endless() -> gymnasium.Env[Any, Any]:
    return EndlessEnv()


def shape_shift() -> gymnasium.Env[Any, Any]:
    return ShapeShiftEnv()


# ---------------------------------------------------------- correct envs that are unusual, not wrong


class Float64Env(CounterEnv):
    """Correct: float64 observations, declared float64 (a physics env that keeps double precision)."""

    def __init__(self) -> None:
        super().__init__()
        self.observation_space = spaces.Box(-10.0, 10.0, (2,), np.float64)

    def _obs(self) -> np.ndarray:
        return np.array([self._position, self._steps], dtype=np.float64)


class DictObsEnv(CounterEnv):
    """Correct: a Dict observation of a Box and a Discrete (a goal-conditioned layout)."""

    def __init__(self) -> None:
        super().__init__()
        self.observation_space = spaces.Dict(  # type: ignore[assignment]
            {"position": spaces.Box(-10.0, 10.0, (1,), np.float32), "steps": spaces.Discrete(9)}
        )

    def _obs(self) -> Any:
        return {"position": np.array([self._position], dtype=np.float32), "steps": np.int64(self._steps)}


class OffsetDiscreteEnv(CounterEnv):
    """Correct: Discrete spaces that start at -1 (actions -1, 0, 1; observations from 5 on)."""

    def __init__(self) -> None:
        super().__init__()
        self.action_space = spaces.Discrete(3, start=-1)
        self.observation_space = spaces.Discrete(9, start=5)  # type: ignore[assignment]

    def _obs(self) -> Any:
        return np.int64(5 + self._steps)

    def step(self, action: Any) -> Any:
        _, reward, terminated, truncated, info = super().step(int(action) + 1)
        return self._obs(), reward, terminated, truncated, info


class CopyingEnv(CounterEnv):
    """Correct: copies its observations and infos before returning them, and its actions on arrival."""

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Any:
        obs, info = super().reset(seed=seed, options=options)
        return obs.copy(), dict(info)

    def step(self, action: Any) -> Any:
        obs, reward, terminated, truncated, info = super().step(np.array(action, copy=True))
        return obs.copy(), reward, terminated, truncated, dict(info)


def float64_declared() -> gymnasium.Env[Any, Any]:
    return Float64Env()


def dict_obs() -> gymnasium.Env[Any, Any]:
    return DictObsEnv()


def offset_discrete() -> gymnasium.Env[Any, Any]:
    return OffsetDiscreteEnv()


def copying() -> gymnasium.Env[Any, Any]:
    return CopyingEnv()


class MissionEnv(CounterEnv):
    """Correct: a Dict observation with a Gymnasium ``Text`` mission leaf (MiniGrid's layout)."""

    def __init__(self) -> None:
        super().__init__()
        self.observation_space = spaces.Dict(  # type: ignore[assignment]
            {"state": spaces.Box(-10.0, 10.0, (2,), np.float32), "mission": spaces.Text(max_length=32)}
        )

    def _obs(self) -> Any:
        return {"state": super()._obs(), "mission": f"reach{self._steps % 3}"}


def mission() -> gymnasium.Env[Any, Any]:
    return MissionEnv()


def _wrapped(name: str) -> gymnasium.Env[Any, Any]:
    return getattr(sample_wrappers, name)(CounterEnv())  # type: ignore[no-any-return]


def with_step_limit() -> gymnasium.Env[Any, Any]:
    """Correct: the counter under a hand-written time limit that truncates."""
    return _wrapped("step_limit")


def with_terminating_limit() -> gymnasium.Env[Any, Any]:
    """Bug: the counter under a time limit that sets terminated."""
    return _wrapped("terminating_limit")


def with_reset_info_dropper() -> gymnasium.Env[Any, Any]:
    """Bug: the counter under a wrapper that drops the reset info."""
    return _wrapped("reset_info_dropper")


def with_delayed_reward() -> gymnasium.Env[Any, Any]:
    """Bug: the counter under a wrapper that delivers each reward a step late."""
    return _wrapped("delayed_reward")


def with_gymnasium_time_limit() -> gymnasium.Env[Any, Any]:
    """Correct: the counter under Gymnasium's own TimeLimit."""
    return _wrapped("gymnasium_time_limit")


# --------------------------------------------------- long episodes, edges of the action space, seeding


class SwingEnv(gymnasium.Env[np.ndarray, np.ndarray]):
    """Correct: a Pendulum-like swing, Box actions in [-2, 2], episodes of 200 steps ended only by
    truncation (no episode ends within the 40 steps an example used to drive)."""

    metadata = {"render_modes": []}
    #: steps of an episode (all end by truncation, as Pendulum's TimeLimit)
    LENGTH = 200

    def __init__(self) -> None:
        self.observation_space = spaces.Box(-1.0, 1.0, (3,), np.float32)
        self.action_space = spaces.Box(-2.0, 2.0, (1,), np.float32)
        self._angle = 0.0
        self._speed = 0.0
        self._steps = 0

    def _obs(self) -> np.ndarray:
        return np.array([np.cos(self._angle), np.sin(self._angle), self._speed / 8.0], dtype=np.float32)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        self._angle = float(self.np_random.uniform(-np.pi, np.pi))
        self._speed = float(self.np_random.uniform(-1.0, 1.0))
        self._steps = 0
        return self._obs(), {}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        torque = float(np.clip(np.asarray(action, dtype=np.float64).reshape(-1)[0], -2.0, 2.0))
        self._speed = float(np.clip(self._speed + 0.05 * (torque - 3.0 * np.sin(self._angle)), -8.0, 8.0))
        self._angle = float((self._angle + 0.05 * self._speed + np.pi) % (2 * np.pi) - np.pi)
        self._steps += 1
        reward = -(self._angle**2 + 0.1 * self._speed**2 + 0.001 * torque**2)
        return self._obs(), float(reward), False, self._steps >= self.LENGTH, {}


class LastStepOutOfSpaceEnv(SwingEnv):
    """Bug: on the last step of its 200-step episodes, the observation leaves its space (the
    speed is reported unscaled)."""

    def _obs(self) -> np.ndarray:
        obs = super()._obs()
        if self._steps >= self.LENGTH:
            obs[2] = np.float32(8.0 + abs(self._speed))
        return obs


class EdgeRejectingEnv(SwingEnv):
    """Bug: rejects a torque at the bounds of its own action space (an open interval where the
    space declares a closed one)."""

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        torque = float(np.asarray(action).reshape(-1)[0])
        if not -2.0 < torque < 2.0:
            raise ValueError(f"torque {torque} out of range")
        return super().step(action)


class GridMovesEnv(CounterEnv):
    """Correct: MultiDiscrete actions (a move on each axis, and a speed from 1 to 3), every value
    accepted."""

    def __init__(self) -> None:
        super().__init__()
        self.action_space = spaces.MultiDiscrete([3, 3, 3], start=[0, 0, 1])  # type: ignore[assignment]

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        dx, dy, speed = (int(a) for a in action)
        if not (0 <= dx <= 2 and 0 <= dy <= 2 and 1 <= speed <= 3):
            raise ValueError(f"move {action} out of range")
        return super().step(dx)


class ConstantReseedEnv(CounterEnv):
    """Bug: reseeds itself with a constant on every reset without a seed, so every episode after
    the first is the same episode whatever seed the run started with."""

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        return super().reset(seed=0 if seed is None else seed, options=options)


class StreamReseedEnv(CounterEnv):
    """Correct: on a reset without a seed, reseeds itself with a seed drawn from its own RNG (the
    stream a seeded reset started continues through every later episode)."""

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        if seed is None and hasattr(self, "_np_random") and self._np_random is not None:
            seed = int(self.np_random.integers(2**31))
        return super().reset(seed=seed, options=options)


class ClockworkEnv(CounterEnv):
    """Correct: no randomness at all (every episode starts at 0 and moves by the action), so a
    seed changes nothing and a constant reseed could not be told apart."""

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        self._position = 0.0
        self._steps = 0
        return self._obs(), {"start": self._position}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        self._position += float(int(action) - 1)
        self._steps += 1
        return self._obs(), float(self._position), abs(self._position) >= 3, self._steps >= 8, {}


def swing() -> gymnasium.Env[Any, Any]:
    return SwingEnv()


def last_step_out_of_space() -> gymnasium.Env[Any, Any]:
    return LastStepOutOfSpaceEnv()


def edge_rejecting() -> gymnasium.Env[Any, Any]:
    return EdgeRejectingEnv()


def grid_moves() -> gymnasium.Env[Any, Any]:
    return GridMovesEnv()


def constant_reseed() -> gymnasium.Env[Any, Any]:
    return ConstantReseedEnv()


def stream_reseed() -> gymnasium.Env[Any, Any]:
    return StreamReseedEnv()


def clockwork() -> gymnasium.Env[Any, Any]:
    return ClockworkEnv()


def _in_async_worker() -> bool:
    """Whether this is a worker process of Gymnasium's AsyncVectorEnv (its processes' names)."""
    import multiprocessing

    return multiprocessing.current_process().name.startswith("Worker<AsyncVectorEnv>")


class AsyncStepHangEnv(CounterEnv):
    """Answers every call bare and in every other stack; in an AsyncVectorEnv worker its first
    step never returns. Whose hang that is cannot be told from outside (a fork-unsafe lock in
    the env, or the stack's), so env.stack_equivalence names that stack as not compared and
    blames no one (it passes on the stacks that answered)."""

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        if _in_async_worker():
            time.sleep(3600)
        return super().step(action)


class AsyncCloseHangEnv(CounterEnv):
    """Correct, but its close() never returns in an AsyncVectorEnv worker: the stack's close()
    hangs after every step answered, and the transitions are compared all the same."""

    def close(self) -> None:
        if _in_async_worker():
            time.sleep(3600)
        super().close()


def async_step_hang() -> gymnasium.Env[Any, Any]:
    return AsyncStepHangEnv()


def async_close_hang() -> gymnasium.Env[Any, Any]:
    return AsyncCloseHangEnv()
