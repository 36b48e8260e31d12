"""envpool's Gymnasium vector envs as bundled systems of family ``gymnasium.VectorEnv`` (issue 26).

envpool (sail-sg/envpool) steps every sub-env in C++ on a thread pool of its own, and
``envpool.make_gymnasium(task, num_envs=n, seed=s)`` returns a ``gymnasium.vector.VectorEnv``
subclass: a ready-made vector env, checked black-box like any other. What it declares and
documents, read in its source (envpool 1.2.5, ``envpool/python/gymnasium_envpool.py``,
``envpool/core/env.h``; docs/content/python_interface.rst):

- autoreset: NEXT_STEP, declared in ``metadata["autoreset_mode"]`` (on Gymnasium releases without
  ``AutoresetMode`` it declares nothing, and the family assumes NEXT_STEP, which is what it does);
- seeding: at construction only. Sub-env i's generator is seeded ``seed + i`` when the pool is
  built; ``reset(seed=...)`` is ignored with a warning. Declared ``--seeding construction``, as its
  user would: the factory fixes the seed, and there is no single env to replay with ``seed + i``
  (envpool's C++ generators are not NumPy's);
- time limit: ``max_episode_steps``, a construction option kept in ``env.spec.config`` (its spec
  is envpool's own EnvSpec, not Gymnasium's); at the limit it returns ``truncated=True`` and
  ``terminated = done & ~truncated``;
- ``observation_space`` and ``action_space`` are the single env's spaces, "for backward
  compatibility" (documented): a batch is not an element of them. Listed as a known violation of
  ``vector.observations_in_space`` (FINDINGS.md, P1).

Two tasks: CartPole-v1 (a discrete action, episodes that terminate within a case) and
Pendulum-v1 with ``max_episode_steps=25`` (a continuous action, episodes that only a time limit
ends, so that truncation and the reset steps after it fall within a case's 60 steps). Nothing here
imports envpool or Gymnasium at module level: a system reports "not installed: envpool" where it
is missing. The factories are user factories too::

    rlconform check rlconform.libraries.gymnasium.native_envpool:cartpole --api gymnasium.VectorEnv --seeding construction
"""

from __future__ import annotations

import functools
from typing import Any

from rlconform.core.system import Capabilities, System, SystemTable
from rlconform.specs.families import NATIVE_VECTOR

SYSTEMS = SystemTable()
MODULE = "rlconform.libraries.gymnasium.native_envpool"
#: the seed every pool is built with (envpool seeds sub-env i with SEED + i when it builds it)
SEED = 0
#: the time limit of the Pendulum system, short enough for a case's steps to reach it
PENDULUM_LIMIT = 25

#: the documented behaviour each system shows (spec id, why it is known; FINDINGS.md)
SINGLE_SPACES = (
    "vector.observations_in_space",
    "FINDINGS P1: envpool keeps observation_space and action_space as the single env's spaces "
    '"for backward compatibility" (docs/content/python_interface.rst): a batch of observations is '
    "not an element of observation_space, while every sub-env's observation is one of single_observation_space",
)


def make(task: str, num_envs: int, **options: Any) -> Any:
    """``envpool.make_gymnasium(task, num_envs=num_envs, seed=SEED, **options)``, imported when built."""
    import envpool

    return envpool.make_gymnasium(task, num_envs=num_envs, seed=SEED, **options)


def cartpole(num_envs: int) -> Any:
    """envpool's CartPole-v1, ``num_envs`` sub-envs, seeded 0 + i."""
    return make("CartPole-v1", num_envs)


def pendulum(num_envs: int) -> Any:
    """envpool's Pendulum-v1 with a time limit of :data:`PENDULUM_LIMIT` steps, seeded 0 + i."""
    return make("Pendulum-v1", num_envs, max_episode_steps=PENDULUM_LIMIT)


#: system id -> (factory name, title)
TASKS = {
    "envpool.CartPole-v1": ("cartpole", f"envpool.make_gymnasium('CartPole-v1', num_envs=n, seed={SEED})"),
    "envpool.Pendulum-v1": (
        "pendulum",
        f"envpool.make_gymnasium('Pendulum-v1', num_envs=n, seed={SEED}, max_episode_steps={PENDULUM_LIMIT})",
    ),
}


def _build(factory: str, num_envs: int) -> Any:
    return globals()[factory](num_envs)


for _id, (_factory, _title) in TASKS.items():
    SYSTEMS.add(
        System(
            id=_id,
            family=NATIVE_VECTOR,
            title=_title,
            build=functools.partial(_build, _factory),
            source=f"{MODULE}:{_factory}",
            requires=("envpool", "gymnasium"),
            kind="library",
            capabilities=Capabilities(partial_reset=True, min_envs=2, max_envs=4),
            options=(("seeding", "construction"),),
            known_violations=(SINGLE_SPACES,),
            description="envpool's natively vectorized env (C++ sub-envs on its own thread pool), checked black-box",
        )
    )
