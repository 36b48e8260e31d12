"""Small user wrappers, correct and buggy, for ``--api gymnasium.Wrapper`` (tests, docs, examples).

Each is a ``make(env) -> Env`` factory as a user would write it. The buggy ones are the mistakes
hand-written wrappers make at an episode boundary; the correct ones are unusual but right.
"""

from __future__ import annotations

from typing import Any

import gymnasium

#: the limit of the hand-written time limits below
LIMIT = 3


class StepCounter(gymnasium.Wrapper[Any, Any, Any, Any]):
    """Correct: counts the steps of the episode and passes everything through."""

    def __init__(self, env: gymnasium.Env[Any, Any]) -> None:
        super().__init__(env)
        self.steps = 0

    def reset(self, **kwargs: Any) -> Any:
        self.steps = 0
        return self.env.reset(**kwargs)

    def step(self, action: Any) -> Any:
        self.steps += 1
        return self.env.step(action)


class StepLimit(StepCounter):
    """Correct: a hand-written time limit that truncates the episode at its ``LIMIT``-th step."""

    def step(self, action: Any) -> Any:
        obs, reward, terminated, truncated, info = super().step(action)
        return obs, reward, terminated, truncated or self.steps >= LIMIT, info


class TerminatingLimit(StepCounter):
    """Bug: a time limit that ends the episode with ``terminated`` instead of ``truncated`` (a
    learner then bootstraps nothing from a state that is not terminal)."""

    def step(self, action: Any) -> Any:
        obs, reward, terminated, truncated, info = super().step(action)
        return obs, reward, terminated or self.steps >= LIMIT, truncated, info


class ResetInfoDropper(StepCounter):
    """Bug: returns an empty info from reset (the env's reset info is lost)."""

    def reset(self, **kwargs: Any) -> Any:
        obs, _ = super().reset(**kwargs)
        return obs, {}


class DelayedReward(StepCounter):
    """Bug: returns the previous step's reward (0 on the first step of an episode)."""

    def __init__(self, env: gymnasium.Env[Any, Any]) -> None:
        super().__init__(env)
        self.previous = 0.0

    def reset(self, **kwargs: Any) -> Any:
        self.previous = 0.0
        return super().reset(**kwargs)

    def step(self, action: Any) -> Any:
        obs, reward, terminated, truncated, info = super().step(action)
        delayed, self.previous = self.previous, float(reward)
        return obs, delayed, terminated, truncated, info


def step_counter(env: gymnasium.Env[Any, Any]) -> gymnasium.Env[Any, Any]:
    return StepCounter(env)


def step_limit(env: gymnasium.Env[Any, Any]) -> gymnasium.Env[Any, Any]:
    return StepLimit(env)


def terminating_limit(env: gymnasium.Env[Any, Any]) -> gymnasium.Env[Any, Any]:
    return TerminatingLimit(env)


def reset_info_dropper(env: gymnasium.Env[Any, Any]) -> gymnasium.Env[Any, Any]:
    return ResetInfoDropper(env)


def delayed_reward(env: gymnasium.Env[Any, Any]) -> gymnasium.Env[Any, Any]:
    return DelayedReward(env)


def gymnasium_time_limit(env: gymnasium.Env[Any, Any]) -> gymnasium.Env[Any, Any]:
    """Correct: Gymnasium's own TimeLimit with its own limit."""
    from gymnasium.wrappers import TimeLimit

    return TimeLimit(env, max_episode_steps=LIMIT)
