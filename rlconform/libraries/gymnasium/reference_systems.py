"""The reference models as systems: they are driven and checked like any library system, and
every spec must pass on them (the suite's control group)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

from rlconform.core.system import Capabilities, EnvFn, System, SystemTable
from rlconform.libraries.gymnasium import vector_model as models
from rlconform.libraries.gymnasium.env_model import build_model_env
from rlconform.libraries.gymnasium.options import MODES
from rlconform.specs.families import GYMNASIUM_ENV, GYMNASIUM_VECTOR

#: this module's systems, read by the catalog (rlconform.core.catalog)
SYSTEMS = SystemTable()


def _vector_model(mode: str, wrapper: str | None, capabilities: Capabilities) -> System:
    def build(env_fns: Sequence[EnvFn], **parameters: Any) -> Any:
        """The model; ``parameters`` (a user's wrapper's settings, see ``ModelMatch``) go to the
        wrapper's model, and none give the defaults the bundled stacks use."""
        env: Any = models.ModelVectorEnv(list(env_fns), mode)
        if wrapper is not None:
            env = getattr(models, f"Model{wrapper}")(env, **parameters)
        elif parameters:
            raise TypeError(f"the plain vector model takes no parameters, got {sorted(parameters)}")
        return env

    inner = f"models.ModelVectorEnv(env_fns, {mode!r})"
    source = inner if wrapper is None else f"models.Model{wrapper}({inner})"
    suffix = "" if wrapper is None else f".{wrapper}"
    return System(
        id=f"reference.gymnasium.vector.{mode}{suffix}",
        family=GYMNASIUM_VECTOR,
        title=f"reference model: Gymnasium vector {mode}" + ("" if wrapper is None else f" + {wrapper}"),
        build=build,
        source=source,
        requires=("gymnasium",),
        kind="reference",
        capabilities=capabilities,
        model=None,
    )


def _register_vector_models() -> None:
    for mode in MODES:
        SYSTEMS.add(_vector_model(mode, None, Capabilities()))
        SYSTEMS.add(_vector_model(mode, "RecordEpisodeStatistics", Capabilities()))
        SYSTEMS.add(_vector_model(mode, "NormalizeReward", Capabilities()))
    SYSTEMS.add(
        _vector_model(
            "NextStep", "NormalizeObservation", Capabilities(obs_kinds=frozenset({"box"}), partial_reset=False)
        )
    )


def model_system(
    system_id: str,
    family: str,
    title: str,
    build: Callable[[Sequence[EnvFn]], Any],
    source: str,
    capabilities: Capabilities,
    requires: tuple[str, ...] = ("gymnasium",),
    known_violations: tuple[tuple[str, str], ...] = (),
) -> System:
    """A reference system (the SB3 models' module builds its own with it)."""
    return System(
        id=system_id,
        family=family,
        title=title,
        build=build,
        source=source,
        requires=requires,
        kind="reference",
        capabilities=capabilities,
        known_violations=known_violations,
    )


def _build_env_model(env_fns: Sequence[EnvFn], *, autoreset: bool) -> Any:
    return build_model_env(env_fns, autoreset=autoreset)


def _register_env_models() -> None:
    for autoreset in (False, True):
        SYSTEMS.add(
            model_system(
                "reference.gymnasium.Env" + (".Autoreset" if autoreset else ""),
                GYMNASIUM_ENV,
                "reference model: single Gymnasium env" + (" under next-step Autoreset" if autoreset else ""),
                functools.partial(_build_env_model, autoreset=autoreset),
                f"build_model_env(env_fns, autoreset={autoreset})",
                Capabilities(partial_reset=False, max_envs=1),
            )
        )


_register_vector_models()
_register_env_models()
