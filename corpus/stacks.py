"""The third-party corpus: real stacks and real environments that nobody here wrote.

Each factory below builds a stack the way a user of that library would, from the library's public
API, in the signature its ``--api`` family expects (``rlconform check corpus.stacks:NAME --api
FAMILY``). The corpus exists to keep rlconform honest: a verdict on any of these is a claim about
Gymnasium's, SB3's, TorchRL's, ALE's or MiniGrid's code, and every FAIL must be judged against that
library's source (FINDINGS.md, "Third-party corpus"). ``CORPUS`` lists the entries; nothing here
repairs or adapts what a library does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

EnvFns = Sequence[Callable[[], Any]]


@dataclass(frozen=True)
class Entry:
    """One corpus stack: its factory's name in this module, its ``--api`` family, the library
    that provides the stack (the one a verdict is about), what makes it worth having, and what
    its user declares it changes on purpose."""

    name: str
    api: str
    library: str
    why: str
    #: the value changes the stack makes on purpose, declared as its user would (``--intended``)
    intended: tuple[str, ...] = ()

    @property
    def target(self) -> str:
        return f"corpus.stacks:{self.name}"


# --- Gymnasium vector envs and vector wrappers: (env_fns, **kwargs) -> VectorEnv -------------------


def gym_record_episode_statistics(env_fns: EnvFns, **kwargs: Any) -> Any:
    from gymnasium.vector import SyncVectorEnv
    from gymnasium.wrappers.vector import RecordEpisodeStatistics

    return RecordEpisodeStatistics(SyncVectorEnv(list(env_fns), **kwargs))


def gym_transform_reward(env_fns: EnvFns, **kwargs: Any) -> Any:
    from gymnasium.vector import SyncVectorEnv
    from gymnasium.wrappers.vector import TransformReward

    return TransformReward(SyncVectorEnv(list(env_fns), **kwargs), lambda reward: 2.0 * reward)


def gym_clip_reward(env_fns: EnvFns, **kwargs: Any) -> Any:
    from gymnasium.vector import SyncVectorEnv
    from gymnasium.wrappers.vector import ClipReward

    return ClipReward(SyncVectorEnv(list(env_fns), **kwargs), min_reward=-0.1, max_reward=0.1)


def gym_normalize_observation(env_fns: EnvFns, **kwargs: Any) -> Any:
    from gymnasium.vector import SyncVectorEnv
    from gymnasium.wrappers.vector import NormalizeObservation

    return NormalizeObservation(SyncVectorEnv(list(env_fns), **kwargs))


def gym_flatten_observation(env_fns: EnvFns, **kwargs: Any) -> Any:
    from gymnasium.vector import SyncVectorEnv
    from gymnasium.wrappers.vector import FlattenObservation

    return FlattenObservation(SyncVectorEnv(list(env_fns), **kwargs))


def gym_dict_info_to_list(env_fns: EnvFns, **kwargs: Any) -> Any:
    from gymnasium.vector import SyncVectorEnv
    from gymnasium.wrappers.vector import DictInfoToList

    return DictInfoToList(SyncVectorEnv(list(env_fns), **kwargs))


def gym_rescale_action(env_fns: EnvFns, **kwargs: Any) -> Any:
    from gymnasium.vector import SyncVectorEnv
    from gymnasium.wrappers.vector import RescaleAction

    return RescaleAction(SyncVectorEnv(list(env_fns), **kwargs), min_action=-0.5, max_action=0.5)


def gym_clip_action(env_fns: EnvFns, **kwargs: Any) -> Any:
    from gymnasium.vector import SyncVectorEnv
    from gymnasium.wrappers.vector import ClipAction

    return ClipAction(SyncVectorEnv(list(env_fns), **kwargs))


def gym_sync_no_copy(env_fns: EnvFns, **kwargs: Any) -> Any:
    from gymnasium.vector import SyncVectorEnv

    return SyncVectorEnv(list(env_fns), copy=False, **kwargs)


def gym_async_no_shared_memory(env_fns: EnvFns, **kwargs: Any) -> Any:
    from gymnasium.vector import AsyncVectorEnv

    return AsyncVectorEnv(list(env_fns), shared_memory=False, **kwargs)


# --- Stable-Baselines3 VecEnv wrappers: (env_fns) -> VecEnv ----------------------------------------


def sb3_vec_monitor(env_fns: EnvFns) -> Any:
    from stable_baselines3.common.vec_env import DummyVecEnv, VecMonitor

    return VecMonitor(DummyVecEnv(list(env_fns)))


def sb3_vec_normalize(env_fns: EnvFns) -> Any:
    from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

    return VecNormalize(DummyVecEnv(list(env_fns)))


def sb3_vec_normalize_reward_only(env_fns: EnvFns) -> Any:
    from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

    return VecNormalize(DummyVecEnv(list(env_fns)), norm_obs=False, norm_reward=True)


def sb3_vec_frame_stack(env_fns: EnvFns) -> Any:
    from stable_baselines3.common.vec_env import DummyVecEnv, VecFrameStack

    return VecFrameStack(DummyVecEnv(list(env_fns)), n_stack=2)


def sb3_vec_check_nan(env_fns: EnvFns) -> Any:
    from stable_baselines3.common.vec_env import DummyVecEnv, VecCheckNan

    return VecCheckNan(DummyVecEnv(list(env_fns)), raise_exception=True)


def sb3_monitor_per_env(env_fns: EnvFns) -> Any:
    """SB3's ``make_vec_env`` style: a ``Monitor`` around each env, then DummyVecEnv."""
    from stable_baselines3.common.monitor import Monitor
    from stable_baselines3.common.vec_env import DummyVecEnv

    return DummyVecEnv([lambda fn=fn: Monitor(fn()) for fn in env_fns])  # type: ignore[misc]


# --- TorchRL envs and transforms: (env_fn) -> EnvBase ----------------------------------------------


def torchrl_reward_clipping(env_fn: Callable[[], Any]) -> Any:
    from torchrl.envs import GymWrapper, TransformedEnv
    from torchrl.envs.transforms import RewardClipping

    return TransformedEnv(GymWrapper(env_fn()), RewardClipping(-0.1, 0.1))


def torchrl_step_counter_limit(env_fn: Callable[[], Any]) -> Any:
    from torchrl.envs import GymWrapper, TransformedEnv
    from torchrl.envs.transforms import StepCounter

    return TransformedEnv(GymWrapper(env_fn()), StepCounter(max_steps=4))


def torchrl_reward_sum(env_fn: Callable[[], Any]) -> Any:
    from torchrl.envs import GymWrapper, TransformedEnv
    from torchrl.envs.transforms import RewardSum

    return TransformedEnv(GymWrapper(env_fn()), RewardSum())


def torchrl_serial_env(env_fn: Callable[[], Any]) -> Any:
    from torchrl.envs import GymWrapper, SerialEnv

    return SerialEnv(2, lambda: GymWrapper(env_fn()))


def torchrl_parallel_env(env_fn: Callable[[], Any]) -> Any:
    from torchrl.envs import ParallelEnv

    return ParallelEnv(2, _GymWrapperOf(env_fn))


class _GymWrapperOf:
    """``lambda: GymWrapper(env_fn())`` as a picklable object (ParallelEnv sends it to workers)."""

    def __init__(self, env_fn: Callable[[], Any]) -> None:
        self.env_fn = env_fn

    def __call__(self) -> Any:
        from torchrl.envs import GymWrapper

        return GymWrapper(self.env_fn())


# --- Real environments (env-author mode): () -> gymnasium.Env --------------------------------------


def cartpole() -> Any:
    import gymnasium

    return gymnasium.make("CartPole-v1")


def mountain_car() -> Any:
    import gymnasium

    return gymnasium.make("MountainCar-v0")


def pendulum() -> Any:
    import gymnasium

    return gymnasium.make("Pendulum-v1")


def frozen_lake() -> Any:
    import gymnasium

    return gymnasium.make("FrozenLake-v1")


def taxi() -> Any:
    import gymnasium

    return gymnasium.make("Taxi-v4")


def blackjack() -> Any:
    import gymnasium

    return gymnasium.make("Blackjack-v1")


def ale_pong_ram() -> Any:
    """Atari Pong from ale-py (ROMs ship in the wheel), RAM observations: episodes of thousands of
    frames, sticky actions and frame skip inside the env."""
    import ale_py
    import gymnasium

    gymnasium.register_envs(ale_py)
    return gymnasium.make("ALE/Pong-v5", obs_type="ram")


def minigrid_empty() -> Any:
    """MiniGrid's Empty room: a Dict observation with an image and a Text ``mission``."""
    import gymnasium
    import minigrid

    gymnasium.register_envs(minigrid)
    return gymnasium.make("MiniGrid-Empty-5x5-v0")


CORPUS: tuple[Entry, ...] = (
    Entry("gym_record_episode_statistics", "gymnasium.vector", "gymnasium", "episode statistics across autoresets"),
    Entry("gym_transform_reward", "gymnasium.vector", "gymnasium", "reward changed on purpose", ("reward",)),
    Entry("gym_clip_reward", "gymnasium.vector", "gymnasium", "reward clipped on purpose", ("reward",)),
    Entry(
        "gym_normalize_observation",
        "gymnasium.vector",
        "gymnasium",
        "observations normalised (stamp lost)",
        ("observation",),
    ),
    Entry("gym_flatten_observation", "gymnasium.vector", "gymnasium", "observation layout changed", ("observation",)),
    Entry("gym_dict_info_to_list", "gymnasium.vector", "gymnasium", "info layout converted"),
    Entry("gym_rescale_action", "gymnasium.vector", "gymnasium", "a Box-only wrapper with its own action space"),
    Entry("gym_clip_action", "gymnasium.vector", "gymnasium", "a Box-only action wrapper"),
    Entry("gym_sync_no_copy", "gymnasium.vector", "gymnasium", "documented buffer reuse (copy=False)"),
    Entry("gym_async_no_shared_memory", "gymnasium.vector", "gymnasium", "worker processes, pickled observations"),
    Entry("sb3_vec_monitor", "sb3.VecEnv", "stable-baselines3", "episode info added by a wrapper"),
    Entry(
        "sb3_vec_normalize",
        "sb3.VecEnv",
        "stable-baselines3",
        "observations and rewards normalised",
        ("observation", "reward"),
    ),
    Entry(
        "sb3_vec_normalize_reward_only", "sb3.VecEnv", "stable-baselines3", "VecNormalize(norm_obs=False)", ("reward",)
    ),
    Entry(
        "sb3_vec_frame_stack", "sb3.VecEnv", "stable-baselines3", "stacked observations across resets", ("observation",)
    ),
    Entry("sb3_vec_check_nan", "sb3.VecEnv", "stable-baselines3", "a pass-through validating wrapper"),
    Entry("sb3_monitor_per_env", "sb3.VecEnv", "stable-baselines3", "Monitor inside each env (make_vec_env)"),
    Entry("torchrl_reward_clipping", "torchrl.EnvBase", "torchrl", "reward clipped by a transform", ("reward",)),
    Entry(
        "torchrl_step_counter_limit", "torchrl.EnvBase", "torchrl", "a time limit added by a transform", ("time_limit",)
    ),
    Entry("torchrl_reward_sum", "torchrl.EnvBase", "torchrl", "episode reward accumulated by a transform"),
    Entry("torchrl_serial_env", "torchrl.EnvBase", "torchrl", "batched in this process"),
    Entry("torchrl_parallel_env", "torchrl.EnvBase", "torchrl", "batched in worker processes"),
    Entry("cartpole", "gymnasium.Env", "gymnasium", "classic control, TimeLimit 500"),
    Entry("mountain_car", "gymnasium.Env", "gymnasium", "long episodes (200 steps) that never terminate early"),
    Entry("pendulum", "gymnasium.Env", "gymnasium", "Box actions, truncation only"),
    Entry("frozen_lake", "gymnasium.Env", "gymnasium", "toy text, slippery transitions"),
    Entry("taxi", "gymnasium.Env", "gymnasium", "toy text, action masks in info"),
    Entry("blackjack", "gymnasium.Env", "gymnasium", "Tuple of Discrete observations"),
    Entry("ale_pong_ram", "gymnasium.Env", "ale-py", "a third-party env package; thousands of steps per episode"),
    Entry("minigrid_empty", "gymnasium.Env", "minigrid", "a third-party env package; Dict obs with a Text space"),
)
