"""Real third-party envs an env author checks (issue 39's target set): factories for
``rlconform check benchmarks.real_envs:NAME --api gymnasium.Env`` (run from the repository root,
or with it on ``PYTHONPATH``). Each is a plain ``gymnasium.make`` of a registered env, as its
author would write it; their episodes are long enough that every check drives them across their
first end through every stack."""

from __future__ import annotations

from typing import Any


def acrobot() -> Any:
    """Gymnasium's Acrobot: episodes of up to 500 steps (random actions rarely end one sooner)."""
    import gymnasium

    return gymnasium.make("Acrobot-v1")


def mountain_car_continuous() -> Any:
    """Gymnasium's MountainCarContinuous: a Box action, episodes cut at 999 steps."""
    import gymnasium

    return gymnasium.make("MountainCarContinuous-v0")


def minigrid_doorkey() -> Any:
    """MiniGrid's DoorKey 5x5 with image observations only (``ImgObsWrapper``): 7x7x3 uint8
    frames, episodes cut at 250 steps."""
    import gymnasium
    import minigrid
    from minigrid.wrappers import ImgObsWrapper

    gymnasium.register_envs(minigrid)
    return ImgObsWrapper(gymnasium.make("MiniGrid-DoorKey-5x5-v0"))


def car_racing() -> Any:
    """Gymnasium's CarRacing (Box2D): 96x96x3 pixel observations rendered every step, episodes cut
    at 1000 steps."""
    import gymnasium

    return gymnasium.make("CarRacing-v3")
