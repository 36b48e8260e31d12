"""Plans: the sequence of calls a test makes on a system, as plain, printable data.

A :class:`Case` (script + number of sub-envs + operations) fully determines a run: the same case
on the same system gives the same outputs, which is what makes shrinking, caching across specs
and standalone reproducers possible.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rlconform.envs.script import EnvScript
from rlconform.envs.spaces import ActionValue


@dataclass(frozen=True)
class Reset:
    """``reset(seed=...)``; with ``mask`` a partial reset of the masked sub-envs only."""

    seed: int | None = None
    mask: tuple[bool, ...] | None = None

    def describe(self) -> str:
        if self.mask is not None:
            return f"reset(seed={self.seed}, reset_mask={list(self.mask)})"
        return f"reset(seed={self.seed})"


def reset_options(op: Reset) -> dict[str, Any] | None:
    """The ``options`` a single env's reset is given: an empty dict with an odd seed, none
    otherwise, so that a search resets with and without options, and with a seed and options
    together (a wrapper or env that drops the seed when it is given options is found by
    ``seeding.reset_determinism`` and ``env.determinism``: its two ``reset(seed=s, options={})``
    runs differ)."""
    return {} if op.seed is not None and op.seed % 2 == 1 else None


@dataclass(frozen=True)
class Step:
    """One agent step: one action per sub-env (one action for a single env)."""

    actions: tuple[ActionValue, ...]

    def describe(self) -> str:
        return f"step({list(self.actions)})"


@dataclass(frozen=True)
class BadStep:
    """A step with the wrong number of actions: a correct system rejects it and changes nothing."""

    actions: tuple[ActionValue, ...]

    def describe(self) -> str:
        return f"step({list(self.actions)})  # {len(self.actions)} actions: wrong batch size"


Op = Reset | Step | BadStep


@dataclass(frozen=True)
class Case:
    """Everything that determines one run of a system."""

    script: EnvScript
    num_envs: int
    ops: tuple[Op, ...]

    def __post_init__(self) -> None:
        if self.num_envs < 1:
            raise ValueError("num_envs must be >= 1")
        if not self.ops or not isinstance(self.ops[0], Reset) or self.ops[0].mask is not None:
            raise ValueError("a case must start with a full reset")

    @property
    def agent_steps(self) -> int:
        return sum(isinstance(op, Step) for op in self.ops)
