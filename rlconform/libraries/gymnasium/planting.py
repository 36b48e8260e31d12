"""Registering a planted bug: :func:`plant` adds one to a planted-bug module's systems (Gymnasium's
:mod:`.planted_episodes` and :mod:`.planted_calls`, SB3's ``planted``), naming the specs it must be
caught by and the correct model it is one defect away from."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from rlconform.core.system import Capabilities, EnvFn, System, SystemTable
from rlconform.libraries.gymnasium.vector_model import ModelVectorEnv
from rlconform.specs.families import GYMNASIUM_VECTOR, SB3_VECENV


def plant(
    name: str,
    build: Callable[[Sequence[EnvFn]], Any],
    plants: tuple[str, ...],
    description: str,
    *,
    family: str = GYMNASIUM_VECTOR,
    capabilities: Capabilities | None = None,
    model: str | None = None,
    source: str | None = None,
    mode: str = "SameStep",
    table: SystemTable,
) -> None:
    """Add the planted bug ``planted.<name>`` to ``table`` (its module's systems)."""
    # a planted bug is its correct model plus one defect: it names that model, since no stack of
    # library classes is there to be recognised (a user's system gets the model of its stack)
    model = model or {
        GYMNASIUM_VECTOR: f"reference.gymnasium.vector.{mode}",
        SB3_VECENV: "reference.sb3.VecEnv",
    }.get(family)
    table.add(
        System(
            id=f"planted.{name}",
            family=family,
            title=f"planted bug: {description}",
            build=build,
            source=source or f"planted.{name}(env_fns)",
            requires=("stable-baselines3",) if family == SB3_VECENV else ("gymnasium",),
            kind="planted",
            capabilities=capabilities or Capabilities(),
            model=model,
            plants=plants,
            description=description,
        )
    )


def _vector(cls: type[ModelVectorEnv], mode: str) -> Callable[[Sequence[EnvFn]], Any]:
    return lambda env_fns: cls(list(env_fns), mode)


#: why a planted bug fails specs beyond the ones it plants: the same defect, seen from another side
_MODEL = "model.outputs_match"  # the reference model sees every change of output
_EXACT = "transitions.exact"  # the recipe extracts the changed transitions
