"""How long an env's episodes may run: the time limit it declares, and why a drive that looked for
an episode end saw none, with the budget that would let it (env-author mode, ready-made vector
envs)."""

from __future__ import annotations

import math
from typing import Any

from rlconform.core.config import EPISODE_SECONDS_VARIABLE


def positive_limit(limit: Any) -> int | None:
    """``limit`` where it is a step count that limits anything (a positive int), else None."""
    return limit if isinstance(limit, int) and not isinstance(limit, bool) and limit > 0 else None


def declared_time_limit(spec: Any) -> int | None:
    """The time limit the envs of an env with this ``spec`` enforce: the ``max_episode_steps``
    they were built with where the spec keeps it (``spec.kwargs``: ``gymnasium.make_vec(id,
    max_episode_steps=k)`` builds every sub-env with ``k`` but leaves the registered limit in
    ``spec.max_episode_steps``, FINDINGS.md G10), else ``spec.max_episode_steps`` (Gymnasium's
    EnvSpec), else ``spec.config.max_episode_steps``: envpool's EnvSpec keeps the options it was
    built with, its documented ``max_episode_steps`` among them, in ``config``, and has no attribute
    of that name (without this, an envpool env was told it "declares no time limit")."""
    kwargs = getattr(spec, "kwargs", None)
    if isinstance(kwargs, dict) and "max_episode_steps" in kwargs:
        # built with it: a non-positive one (make's -1) is no time limit at all
        return positive_limit(kwargs["max_episode_steps"])
    for holder in (spec, getattr(spec, "config", None)):
        limit = positive_limit(getattr(holder, "max_episode_steps", None) if holder is not None else None)
        if limit is not None:
            return limit
    return None


def no_end_reason(budget: float, steps: int, time_limit: int | None) -> str:
    """Why no episode end was seen in ``budget`` seconds (``steps`` steps of random actions), with
    the budget that would let one be seen where the env's time limit (:func:`declared_time_limit`)
    bounds its episodes: that many steps at the rate seen, with half as much again for a loaded
    machine."""
    said = f"no episode ended within {budget:g} s of random actions ({steps} steps)"
    if time_limit and steps:
        needed = math.ceil(1.5 * budget / steps * (time_limit + 1))
        return (
            f"{said}; its time limit ends an episode at step {time_limit}: "
            f"{EPISODE_SECONDS_VARIABLE}={needed} would let one end"
        )
    return (
        f"{said}, and it declares no time limit (env.spec.max_episode_steps): "
        f"{EPISODE_SECONDS_VARIABLE} sets how long to wait for one"
    )
