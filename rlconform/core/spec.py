"""The spec registry: one small named function per property, with its statement and rationale.

A spec takes a :class:`~rlconform.core.runner.Run` and returns an :class:`Outcome`: how many facts it
checked and which of them failed. "Checked nothing" is an outcome of its own, never a pass: a
search in which no example exercised a spec reports the spec as not exercised.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from rlconform.core.impact import IMPACTS, Impact
from rlconform.core.signature import violation_kind

if TYPE_CHECKING:
    from rlconform.core.system import System

Scenario = Literal["standard", "robustness", "reseed"]


@dataclass(frozen=True)
class Violation:
    spec_id: str
    message: str
    env: int | None = None
    agent_step: int | None = None
    call: int | None = None

    def render(self) -> str:
        where = []
        if self.env is not None:
            where.append(f"env {self.env}")
        if self.agent_step:
            where.append(f"agent step {self.agent_step}")
        elif self.call is not None:
            where.append(f"call {self.call}")
        prefix = ", ".join(where)
        return f"{prefix}: {self.message}" if prefix else self.message

    @property
    def kind(self) -> str:
        """What kind of violation this is, without the values (env indices, steps, numbers) that
        change with the case: two cases breaking the spec the same way have the same kind."""
        return violation_kind(self.message)


@dataclass
class Outcome:
    checked: int = 0
    violations: list[Violation] = field(default_factory=list)
    #: why the spec does not apply to this run (e.g. SameStep has no reset step)
    not_applicable: str | None = None
    #: what the spec could not check on this run and why (e.g. a stack whose library is not
    #: installed); the verdict's message repeats them, so that nothing is left out silently
    notes: list[str] = field(default_factory=list)


class Checker:
    """Accumulates the facts a spec checks; every ``expect`` counts as one checked fact."""

    def __init__(self, spec_id: str) -> None:
        self.spec_id = spec_id
        self.outcome = Outcome()

    def expect(
        self,
        condition: bool,
        message: str | Callable[[], str],
        *,
        env: int | None = None,
        agent_step: int | None = None,
        call: int | None = None,
    ) -> bool:
        self.outcome.checked += 1
        if not condition:
            text = message() if callable(message) else message
            self.outcome.violations.append(Violation(self.spec_id, text, env, agent_step, call))
        return bool(condition)

    def fail(
        self, message: str, *, env: int | None = None, agent_step: int | None = None, call: int | None = None
    ) -> None:
        self.expect(False, message, env=env, agent_step=agent_step, call=call)

    def note(self, text: str) -> None:
        """Say what was not checked, and why; not a violation."""
        if text not in self.outcome.notes:
            self.outcome.notes.append(text)

    def not_applicable(self, reason: str) -> Outcome:
        self.outcome.not_applicable = reason
        return self.outcome

    def done(self) -> Outcome:
        return self.outcome


SpecFn = Callable[[Any], Outcome]


@dataclass(frozen=True)
class Spec:
    id: str
    statement: str
    rationale: str
    families: frozenset[str]
    check: SpecFn
    #: what a failure costs the user (rlconform.core.impact): failures are ranked and gated by it
    impact: Impact
    scenario: Scenario = "standard"
    #: static applicability: returns why the spec cannot apply to a system, or None
    applies: Callable[[System], str | None] | None = None
    #: each example costs a lot (it builds several stacks): use the smaller example budget
    expensive: bool = False

    def not_applicable_reason(self, system: System) -> str | None:
        if system.family not in self.families:
            return f"applies to {', '.join(sorted(self.families))}, not {system.family}"
        if self.applies is not None:
            return self.applies(system)
        return None


_SPECS: dict[str, Spec] = {}

#: the families whose systems are driven with reference envs (a user's own env is "user.env")
ALL_FAMILIES = frozenset({"gymnasium.Env", "gymnasium.vector", "sb3.VecEnv"})
VECTOR_FAMILIES = frozenset({"gymnasium.vector", "sb3.VecEnv"})
#: TorchRL envs are driven with TensorDicts: the specs that read transitions, env logs and
#: observations apply to them; those that read Gymnasium/SB3 tuples, infos or a seed + i
#: convention do not (each such spec says why in its own docstring)
TORCHRL_FAMILY = "torchrl.EnvBase"
#: Isaac Lab's DirectRLEnv contract (torch tensors out, same-step autoreset): the specs that read
#: transitions, env logs and decoded observations apply to it
ISAACLAB_FAMILY = "isaaclab"
#: Isaac Lab's RslRlVecEnvWrapper (dones and extras["time_outs"], no terminal observation)
ISAACLAB_RSL_RL_FAMILY = "isaaclab.rsl_rl"
TRANSITION_FAMILIES = ALL_FAMILIES | {TORCHRL_FAMILY, ISAACLAB_FAMILY, ISAACLAB_RSL_RL_FAMILY}


def spec(
    id: str,
    *,
    statement: str,
    rationale: str,
    impact: Impact,
    families: frozenset[str] = ALL_FAMILIES,
    scenario: Scenario = "standard",
    applies: Callable[[System], str | None] | None = None,
    expensive: bool = False,
) -> Callable[[SpecFn], SpecFn]:
    """Register the decorated function as the spec ``id``.

    ``impact`` is required (one of :data:`rlconform.core.impact.IMPACTS`): a spec whose failure nobody
    classified could not be ranked or gated, so registering one is an error.
    """
    if impact not in IMPACTS:
        raise ValueError(f"spec {id!r}: impact must be one of {', '.join(IMPACTS)}, not {impact!r}")

    def decorate(fn: SpecFn) -> SpecFn:
        existing = _SPECS.get(id)
        if existing is not None and _origin(existing.check) != _origin(fn):
            raise ValueError(f"duplicate spec id {id!r}")
        # the same definition seen again (its module was re-imported) replaces the old one
        _SPECS[id] = Spec(id, statement, rationale, families, fn, impact, scenario, applies, expensive)
        return fn

    return decorate


def _origin(fn: Any) -> tuple[str, str]:
    return (getattr(fn, "__module__", ""), getattr(fn, "__qualname__", ""))


def _load() -> None:
    from rlconform.libraries.envauthor import family as envcheck  # noqa: F401
    from rlconform.libraries.torchrl import collectors as torchrl_collectors  # noqa: F401
    from rlconform.libraries.torchrl import replay_buffers as torchrl_replay  # noqa: F401

    if importlib.util.find_spec("isaaclab") is not None:  # checkable (and controlled) only with isaaclab
        from rlconform.libraries.isaaclab import device_specs as isaaclab_device  # noqa: F401
        from rlconform.libraries.isaaclab import torch_family as family  # noqa: F401


def all_specs() -> list[Spec]:
    _load()
    return list(_SPECS.values())


def get_spec(spec_id: str) -> Spec:
    _load()
    try:
        return _SPECS[spec_id]
    except KeyError:
        raise KeyError(f"unknown spec {spec_id!r}; known: {sorted(_SPECS)}") from None


def registered_impact(spec_id: str) -> Impact | None:
    """The impact class of a spec already registered (None for an id this process never
    registered, e.g. a result merged from another rlconform); never imports the spec modules."""
    found = _SPECS.get(spec_id)
    return found.impact if found is not None else None
