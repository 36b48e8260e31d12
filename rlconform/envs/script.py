"""The script a reference environment follows: episode lengths, how each episode ends, seeds.

A script is plain data (frozen dataclasses whose ``repr`` is valid Python), drawn by Hypothesis
and printed verbatim in reproducers. Everything an env returns is a pure function of the script,
the env index, the seeds it was reset with and the actions it received, so two runs with the same
calls agree exactly and every returned value can be predicted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from rlconform.envs.spaces import (
    ActSpec,
    BoxObs,
    DiscreteAction,
    ObsSpec,
)
from rlconform.envs.stamp import MAX_SALT

EndKind = Literal["terminated", "truncated", "both", "never"]


@dataclass(frozen=True)
class EpisodePlan:
    """One episode: ``length`` steps, then the episode ends the way ``end`` says.

    ``never`` episodes do not end by themselves (only a TimeLimit or a reset ends them).
    """

    length: int
    end: EndKind = "terminated"

    def __post_init__(self) -> None:
        if self.length < 1:
            raise ValueError(f"episode length must be >= 1, got {self.length}")

    def flags_at(self, step: int) -> tuple[bool, bool]:
        """(terminated, truncated) returned by the env's own step that reaches ``step``."""
        if self.end == "never" or step < self.length:
            return False, False
        return self.end in ("terminated", "both"), self.end in ("truncated", "both")


@dataclass(frozen=True)
class EnvScript:
    """Everything a reference env needs to know to behave deterministically.

    ``episodes`` is a cycle of plans; which plan an episode follows depends on the env index
    (``env_stride``), on the seed of the latest seeded reset, and on how many unseeded resets
    followed it. ``max_episode_steps`` wraps each env in Gymnasium's ``TimeLimit``.
    """

    obs: ObsSpec = field(default_factory=BoxObs)
    action: ActSpec = field(default_factory=DiscreteAction)
    episodes: tuple[EpisodePlan, ...] = (EpisodePlan(3),)
    env_stride: int = 0
    max_episode_steps: int | None = None

    def __post_init__(self) -> None:
        if not self.episodes:
            raise ValueError("a script needs at least one episode plan")
        if self.max_episode_steps is not None and self.max_episode_steps < 1:
            raise ValueError("max_episode_steps must be >= 1")

    def plan_for(self, env: int, seed: int | None, episode_in_epoch: int) -> EpisodePlan:
        """The plan of the ``episode_in_epoch``-th episode since the latest seeded reset."""
        offset = 0 if seed is None else seed
        return self.episodes[(offset + env * self.env_stride + episode_in_epoch) % len(self.episodes)]

    @staticmethod
    def salt_for(seed: int | None, episode_in_epoch: int) -> int:
        """Seed-dependent content written into every observation of the episode."""
        if seed is None:
            return episode_in_epoch * 37 % MAX_SALT
        mixed = (seed * 2654435761 + episode_in_epoch * 40503 + 12345) & 0xFFFFFFFF
        return (mixed ^ (mixed >> 13)) % MAX_SALT

    def episode_length_bound(self) -> int:
        """The longest an episode can last before the env or its TimeLimit ends it."""
        longest = max(p.length for p in self.episodes)
        if any(p.end == "never" for p in self.episodes):
            longest = 10**6
        if self.max_episode_steps is not None:
            longest = min(longest, self.max_episode_steps)
        return longest


def reward_for(step_after: int, action_code: int, salt: int) -> float:
    """The reward of the step that reaches ``step_after``.

    It moves with the step (a reward shifted by one step is visible), with the action (a reward
    computed from another sub-env's action is visible) and, below float32 resolution, with the
    salt (a library that silently rounds rewards to float32 is visible).
    """
    return float(step_after) + action_code / 16.0 + (salt + 1) * 2.0**-30
