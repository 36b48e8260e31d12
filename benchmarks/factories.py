"""Users' factories the check profile (``bench.py --check-profile``) times ``rlconform check`` on.

Plain factories, as a user writes them: a Sync vectorizer and its multi-process twins (Gymnasium's
AsyncVectorEnv, SB3's SubprocVecEnv, TorchRL's ParallelEnv). Nothing is imported at module level:
worker processes started with forkserver or spawn re-import this module.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any


def sync(env_fns: Sequence[Callable[[], Any]]) -> Any:
    import gymnasium

    return gymnasium.vector.SyncVectorEnv(list(env_fns))


def async_(env_fns: Sequence[Callable[[], Any]]) -> Any:
    import gymnasium

    return gymnasium.vector.AsyncVectorEnv(list(env_fns))


def dummy(env_fns: Sequence[Callable[[], Any]]) -> Any:
    from stable_baselines3.common.vec_env import DummyVecEnv

    return DummyVecEnv(list(env_fns))


def subproc(env_fns: Sequence[Callable[[], Any]]) -> Any:
    from stable_baselines3.common.vec_env import SubprocVecEnv

    return SubprocVecEnv(list(env_fns))


def serial(env_fn: Callable[[], Any]) -> Any:
    from torchrl.envs import GymWrapper, SerialEnv

    return SerialEnv(2, lambda: GymWrapper(env_fn()))


def parallel(env_fn: Callable[[], Any]) -> Any:
    from torchrl.envs import GymWrapper, ParallelEnv

    return ParallelEnv(2, lambda: GymWrapper(env_fn()))
