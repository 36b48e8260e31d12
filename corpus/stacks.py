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


# Stacks that transform, built per sub-env as CleanRL's ``make_env`` thunks do: each sub-env is
# wrapped by the user before ``SyncVectorEnv`` sees it.


def _thunks(env_fns: EnvFns, wrap: Callable[[Any], Any]) -> list[Callable[[], Any]]:
    """A user's ``make_env``: one thunk per sub-env, ``wrap(fn())``."""
    return [lambda fn=fn: wrap(fn()) for fn in env_fns]  # type: ignore[misc]


def gym_time_limit_per_env(env_fns: EnvFns, **kwargs: Any) -> Any:
    from gymnasium.vector import SyncVectorEnv
    from gymnasium.wrappers import TimeLimit

    return SyncVectorEnv(_thunks(env_fns, lambda env: TimeLimit(env, max_episode_steps=4)), **kwargs)


def gym_frame_stack_per_env(env_fns: EnvFns, **kwargs: Any) -> Any:
    from gymnasium.vector import SyncVectorEnv
    from gymnasium.wrappers import FrameStackObservation

    return SyncVectorEnv(_thunks(env_fns, lambda env: FrameStackObservation(env, stack_size=3)), **kwargs)


def gym_flatten_observation_per_env(env_fns: EnvFns, **kwargs: Any) -> Any:
    """FlattenObservation around each sub-env: a Discrete observation becomes a one-hot vector."""
    from gymnasium.vector import SyncVectorEnv
    from gymnasium.wrappers import FlattenObservation

    return SyncVectorEnv(_thunks(env_fns, FlattenObservation), **kwargs)


def gym_normalize_observation_per_env(env_fns: EnvFns, **kwargs: Any) -> Any:
    from gymnasium.vector import SyncVectorEnv
    from gymnasium.wrappers import NormalizeObservation

    return SyncVectorEnv(_thunks(env_fns, NormalizeObservation), **kwargs)


def gym_normalize_reward_per_env(env_fns: EnvFns, **kwargs: Any) -> Any:
    from gymnasium.vector import SyncVectorEnv
    from gymnasium.wrappers import NormalizeReward

    return SyncVectorEnv(_thunks(env_fns, lambda env: NormalizeReward(env, gamma=0.99)), **kwargs)


def gym_record_episode_statistics_per_env(env_fns: EnvFns, **kwargs: Any) -> Any:
    """CleanRL's discrete-action ``make_env``: ``RecordEpisodeStatistics`` around each env."""
    from gymnasium.vector import SyncVectorEnv
    from gymnasium.wrappers import RecordEpisodeStatistics

    return SyncVectorEnv(_thunks(env_fns, RecordEpisodeStatistics), **kwargs)


def gym_cleanrl_continuous_per_env(env_fns: EnvFns, **kwargs: Any) -> Any:
    """CleanRL's ``ppo_continuous_action.py`` ``make_env``, wrapper for wrapper (Gymnasium 1.x
    signature of ``TransformObservation``)."""
    import gymnasium as gym
    import numpy as np
    from gymnasium.vector import SyncVectorEnv

    def wrap(env: Any) -> Any:
        env = gym.wrappers.FlattenObservation(env)
        env = gym.wrappers.RecordEpisodeStatistics(env)
        env = gym.wrappers.ClipAction(env)
        env = gym.wrappers.NormalizeObservation(env)
        env = gym.wrappers.TransformObservation(env, lambda obs: np.clip(obs, -10, 10), env.observation_space)
        env = gym.wrappers.NormalizeReward(env, gamma=0.99)
        env = gym.wrappers.TransformReward(env, lambda reward: np.clip(reward, -10, 10))  # type: ignore[call-overload]
        return env

    return SyncVectorEnv(_thunks(env_fns, wrap), **kwargs)


def gym_clip_reward_per_env(env_fns: EnvFns, **kwargs: Any) -> Any:
    from gymnasium.vector import SyncVectorEnv
    from gymnasium.wrappers import ClipReward

    return SyncVectorEnv(_thunks(env_fns, lambda env: ClipReward(env, min_reward=-0.1, max_reward=0.1)), **kwargs)


def gym_time_aware_observation_per_env(env_fns: EnvFns, **kwargs: Any) -> Any:
    """``TimeAwareObservation`` needs a ``TimeLimit`` (or a spec's ``max_episode_steps``) below it."""
    from gymnasium.vector import SyncVectorEnv
    from gymnasium.wrappers import TimeAwareObservation, TimeLimit

    return SyncVectorEnv(
        _thunks(env_fns, lambda env: TimeAwareObservation(TimeLimit(env, max_episode_steps=4))), **kwargs
    )


def gym_normalize_reward(env_fns: EnvFns, **kwargs: Any) -> Any:
    from gymnasium.vector import SyncVectorEnv
    from gymnasium.wrappers.vector import NormalizeReward

    return NormalizeReward(SyncVectorEnv(list(env_fns), **kwargs), gamma=0.99)


def gym_record_episode_statistics_time_limit(env_fns: EnvFns, **kwargs: Any) -> Any:
    from gymnasium.vector import SyncVectorEnv
    from gymnasium.wrappers import TimeLimit
    from gymnasium.wrappers.vector import RecordEpisodeStatistics

    return RecordEpisodeStatistics(
        SyncVectorEnv(_thunks(env_fns, lambda env: TimeLimit(env, max_episode_steps=4)), **kwargs)
    )


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


def sb3_make_vec_env_time_limit(env_fns: EnvFns) -> Any:
    """``make_vec_env(..., wrapper_class=TimeLimit)``: SB3 puts each env in a ``Monitor`` and the
    user's wrapper outside it. ``make_vec_env`` calls one env callable per rank, in rank order, so
    the callable hands out the given envs one by one."""
    from gymnasium.wrappers import TimeLimit
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import DummyVecEnv

    remaining = iter(env_fns)
    return make_vec_env(
        lambda: next(remaining)(),
        n_envs=len(env_fns),
        wrapper_class=TimeLimit,  # type: ignore[arg-type]
        wrapper_kwargs={"max_episode_steps": 4},
        vec_env_cls=DummyVecEnv,
    )


def sb3_vec_normalize_eval(env_fns: EnvFns) -> Any:
    """SB3's documented evaluation setup: statistics frozen, rewards left as they are."""
    from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

    return VecNormalize(DummyVecEnv(list(env_fns)), training=False, norm_reward=False)


def sb3_vec_normalize_custom(env_fns: EnvFns) -> Any:
    from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

    return VecNormalize(DummyVecEnv(list(env_fns)), clip_obs=5.0, clip_reward=5.0, gamma=0.9)


def sb3_vec_frame_stack_4(env_fns: EnvFns) -> Any:
    from stable_baselines3.common.vec_env import DummyVecEnv, VecFrameStack

    return VecFrameStack(DummyVecEnv(list(env_fns)), n_stack=4)


def sb3_vec_transpose_image(env_fns: EnvFns) -> Any:
    """Takes image or Dict observations only; a Dict without an image key passes through."""
    from stable_baselines3.common.vec_env import DummyVecEnv, VecTransposeImage

    return VecTransposeImage(DummyVecEnv(list(env_fns)))


def sb3_vec_extract_dict_obs(env_fns: EnvFns) -> Any:
    """Takes Dict observations only, and keeps the ``"state"`` entry."""
    from stable_baselines3.common.vec_env import DummyVecEnv, VecExtractDictObs

    return VecExtractDictObs(DummyVecEnv(list(env_fns)), key="state")


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


def torchrl_cat_frames(env_fn: Callable[[], Any]) -> Any:
    from torchrl.envs import GymWrapper, TransformedEnv
    from torchrl.envs.transforms import CatFrames

    return TransformedEnv(GymWrapper(env_fn()), CatFrames(N=3, dim=-1, in_keys=["observation"]))


def torchrl_double_to_float(env_fn: Callable[[], Any]) -> Any:
    from torchrl.envs import GymWrapper, TransformedEnv
    from torchrl.envs.transforms import DoubleToFloat

    return TransformedEnv(GymWrapper(env_fn()), DoubleToFloat())


def torchrl_step_counter_reward_sum(env_fn: Callable[[], Any]) -> Any:
    from torchrl.envs import GymWrapper, TransformedEnv
    from torchrl.envs.transforms import Compose, RewardSum, StepCounter

    return TransformedEnv(GymWrapper(env_fn()), Compose(StepCounter(), RewardSum()))


def torchrl_init_tracker(env_fn: Callable[[], Any]) -> Any:
    from torchrl.envs import GymWrapper, TransformedEnv
    from torchrl.envs.transforms import InitTracker

    return TransformedEnv(GymWrapper(env_fn()), InitTracker())


def torchrl_observation_norm(env_fn: Callable[[], Any]) -> Any:
    from torchrl.envs import GymWrapper, TransformedEnv
    from torchrl.envs.transforms import ObservationNorm

    return TransformedEnv(GymWrapper(env_fn()), ObservationNorm(loc=0.5, scale=2.0, in_keys=["observation"]))


def torchrl_step_counter(env_fn: Callable[[], Any]) -> Any:
    from torchrl.envs import GymWrapper, TransformedEnv
    from torchrl.envs.transforms import StepCounter

    return TransformedEnv(GymWrapper(env_fn()), StepCounter())


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


# --- TorchRL return estimators: (value_network) -> ValueEstimatorBase ------------------------------


def torchrl_gae_average_gae(value_network: Any) -> Any:
    """GAE with standardized advantages (``average_gae=True``, documented: "the resulting GAE values
    will be standardized"): every advantage depends on the whole batch's mean and deviation."""
    from torchrl.objectives.value import GAE

    return GAE(gamma=0.99, lmbda=0.95, value_network=value_network, average_gae=True)


# --- TorchRL replay buffers: () -> ReplayBuffer ---------------------------------------------------


def torchrl_slice_sampler_not_strict() -> Any:
    """A slice sampler that keeps trajectories shorter than ``slice_len`` (``strict_length=False``):
    slices of varying length, the last row of each marked ``("next", "truncated")``."""
    from torchrl.data import LazyTensorStorage, SliceSampler, TensorDictReplayBuffer

    return TensorDictReplayBuffer(
        storage=LazyTensorStorage(100),
        sampler=SliceSampler(slice_len=4, strict_length=False),
        batch_size=16,
    )


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


# --- sb3-contrib algorithms: (env: VecEnv) -> BaseAlgorithm (family sb3.Algorithm) -----------------


def _contrib_policy(env: Any, flat: str, dict_policy: str) -> str:
    """The policy a user picks for the env's observations, as sb3-contrib's docs say to."""
    return dict_policy if type(env.observation_space).__name__ == "Dict" else flat


def sb3_contrib_qrdqn(env: Any) -> Any:
    from sb3_contrib import QRDQN

    return QRDQN(_contrib_policy(env, "MlpPolicy", "MultiInputPolicy"), env)


def sb3_contrib_tqc(env: Any) -> Any:
    from sb3_contrib import TQC

    return TQC(_contrib_policy(env, "MlpPolicy", "MultiInputPolicy"), env)


def sb3_contrib_crossq(env: Any) -> Any:
    from sb3_contrib import CrossQ

    return CrossQ("MlpPolicy", env)


def sb3_contrib_trpo(env: Any) -> Any:
    from sb3_contrib import TRPO

    return TRPO(_contrib_policy(env, "MlpPolicy", "MultiInputPolicy"), env, n_steps=16)


def sb3_contrib_recurrent_ppo(env: Any) -> Any:
    from sb3_contrib import RecurrentPPO

    return RecurrentPPO(_contrib_policy(env, "MlpLstmPolicy", "MultiInputLstmPolicy"), env, n_steps=16, batch_size=16)


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
    Entry(
        "gym_time_limit_per_env",
        "gymnasium.vector",
        "gymnasium",
        "a TimeLimit the user puts on each sub-env (CleanRL's thunks)",
        ("time_limit",),
    ),
    Entry(
        "gym_frame_stack_per_env",
        "gymnasium.vector",
        "gymnasium",
        "FrameStackObservation(stack_size=3) on each sub-env",
        ("observation",),
    ),
    Entry(
        "gym_normalize_observation_per_env",
        "gymnasium.vector",
        "gymnasium",
        "a running observation normaliser in each sub-env",
        ("observation",),
    ),
    Entry(
        "gym_record_episode_statistics_per_env",
        "gymnasium.vector",
        "gymnasium",
        "episode statistics added by each sub-env (CleanRL's ppo.py)",
    ),
    Entry(
        "gym_flatten_observation_per_env",
        "gymnasium.vector",
        "gymnasium",
        "a one-hot wrapper in each sub-env: small Discrete observations one-hot encoded",
        ("observation",),
    ),
    Entry("gym_clip_reward_per_env", "gymnasium.vector", "gymnasium", "reward clipped in each sub-env", ("reward",)),
    Entry(
        "gym_time_aware_observation_per_env",
        "gymnasium.vector",
        "gymnasium",
        "the step count appended to each sub-env's observation, over a TimeLimit",
        ("observation", "time_limit"),
    ),
    Entry(
        "gym_normalize_reward",
        "gymnasium.vector",
        "gymnasium",
        "the vector reward normaliser",
        ("reward",),
    ),
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
    Entry(
        "sb3_make_vec_env_time_limit",
        "sb3.VecEnv",
        "stable-baselines3",
        "make_vec_env(wrapper_class=TimeLimit): a TimeLimit outside each Monitor",
        ("time_limit",),
    ),
    Entry(
        "sb3_vec_normalize_eval",
        "sb3.VecEnv",
        "stable-baselines3",
        "VecNormalize(training=False, norm_reward=False), SB3's evaluation setup",
        ("observation",),
    ),
    Entry(
        "sb3_vec_normalize_custom",
        "sb3.VecEnv",
        "stable-baselines3",
        "VecNormalize(clip_obs=5, clip_reward=5, gamma=0.9)",
        ("observation", "reward"),
    ),
    Entry("sb3_vec_frame_stack_4", "sb3.VecEnv", "stable-baselines3", "VecFrameStack(n_stack=4)", ("observation",)),
    Entry(
        "sb3_vec_transpose_image",
        "sb3.VecEnv",
        "stable-baselines3",
        "an image-only wrapper given no image (Dict observations pass through)",
        ("observation",),
    ),
    Entry(
        "sb3_vec_extract_dict_obs",
        "sb3.VecEnv",
        "stable-baselines3",
        "one entry of a Dict observation, terminal observations included",
        ("observation",),
    ),
    Entry("torchrl_reward_clipping", "torchrl.EnvBase", "torchrl", "reward clipped by a transform", ("reward",)),
    Entry(
        "torchrl_step_counter_limit", "torchrl.EnvBase", "torchrl", "a time limit added by a transform", ("time_limit",)
    ),
    Entry("torchrl_reward_sum", "torchrl.EnvBase", "torchrl", "episode reward accumulated by a transform"),
    Entry("torchrl_cat_frames", "torchrl.EnvBase", "torchrl", "CatFrames(N=3) over the observation", ("observation",)),
    Entry("torchrl_double_to_float", "torchrl.EnvBase", "torchrl", "float64 entries cast to float32", ("observation",)),
    Entry("torchrl_step_counter_reward_sum", "torchrl.EnvBase", "torchrl", "Compose(StepCounter(), RewardSum())"),
    Entry("torchrl_init_tracker", "torchrl.EnvBase", "torchrl", "an is_init entry added by a transform"),
    Entry(
        "torchrl_observation_norm",
        "torchrl.EnvBase",
        "torchrl",
        "a fixed affine map of the observation (ObservationNorm)",
        ("observation",),
    ),
    Entry("torchrl_step_counter", "torchrl.EnvBase", "torchrl", "a step count added by a transform, no limit"),
    Entry("torchrl_serial_env", "torchrl.EnvBase", "torchrl", "batched in this process"),
    Entry("torchrl_parallel_env", "torchrl.EnvBase", "torchrl", "batched in worker processes"),
    Entry(
        "torchrl_gae_average_gae",
        "torchrl.ValueEstimator",
        "torchrl",
        "standardized advantages: each depends on the whole batch (issue 35)",
    ),
    Entry(
        "torchrl_slice_sampler_not_strict",
        "torchrl.ReplayBuffer",
        "torchrl",
        "SliceSampler(strict_length=False): slices of varying length, ends marked truncated (issue 35)",
    ),
    Entry("cartpole", "gymnasium.Env", "gymnasium", "classic control, TimeLimit 500"),
    Entry("mountain_car", "gymnasium.Env", "gymnasium", "long episodes (200 steps) that never terminate early"),
    Entry("pendulum", "gymnasium.Env", "gymnasium", "Box actions, truncation only"),
    Entry("frozen_lake", "gymnasium.Env", "gymnasium", "toy text, slippery transitions"),
    Entry("taxi", "gymnasium.Env", "gymnasium", "toy text, action masks in info"),
    Entry("blackjack", "gymnasium.Env", "gymnasium", "Tuple of Discrete observations"),
    Entry("ale_pong_ram", "gymnasium.Env", "ale-py", "a third-party env package; thousands of steps per episode"),
    Entry("minigrid_empty", "gymnasium.Env", "minigrid", "a third-party env package; Dict obs with a Text space"),
    Entry(
        "gym_normalize_reward_per_env",
        "gymnasium.vector",
        "gymnasium",
        "a running reward normaliser in each sub-env",
        ("reward",),
    ),
    Entry(
        "gym_cleanrl_continuous_per_env",
        "gymnasium.vector",
        "gymnasium",
        "CleanRL's continuous-action stack: statistics, clipped actions, normalised and clipped obs and rewards",
        ("observation", "reward"),
    ),
    Entry(
        "gym_record_episode_statistics_time_limit",
        "gymnasium.vector",
        "gymnasium",
        "vector episode statistics over a TimeLimit on each sub-env",
        ("time_limit",),
    ),
    Entry(
        "sb3_contrib_qrdqn", "sb3.Algorithm", "sb3-contrib", "a distributional off-policy algorithm (quantile targets)"
    ),
    Entry("sb3_contrib_tqc", "sb3.Algorithm", "sb3-contrib", "truncated quantile critics, Box actions"),
    Entry("sb3_contrib_crossq", "sb3.Algorithm", "sb3-contrib", "no target networks, batch-normalised critics"),
    Entry("sb3_contrib_trpo", "sb3.Algorithm", "sb3-contrib", "an on-policy algorithm with its own update"),
    Entry(
        "sb3_contrib_recurrent_ppo",
        "sb3.Algorithm",
        "sb3-contrib",
        "a recurrent policy and its RecurrentRolloutBuffer (LSTM states)",
    ),
)
