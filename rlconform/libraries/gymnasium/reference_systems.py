"""The reference models as systems: they are driven and checked like any library system, and
every spec must pass on them (the suite's control group)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

from rlconform.core.system import Capabilities, EnvFn, System, register

_IMPORTS = ("import numpy as np", "from rlconform.libraries.gymnasium import vector_model as models")


def _vector_model(mode: str, wrapper: str | None, capabilities: Capabilities) -> System:
    def build(env_fns: Sequence[EnvFn]) -> Any:
        from rlconform.libraries.gymnasium import vector_model as models

        env: Any = models.ModelVectorEnv(list(env_fns), mode)
        if wrapper is not None:
            env = getattr(models, f"Model{wrapper}")(env)
        return env

    inner = f"models.ModelVectorEnv(env_fns, {mode!r})"
    source = inner if wrapper is None else f"models.Model{wrapper}({inner})"
    suffix = "" if wrapper is None else f".{wrapper}"
    return System(
        id=f"reference.gymnasium.vector.{mode}{suffix}",
        family="gymnasium.vector",
        title=f"reference model: Gymnasium vector {mode}" + ("" if wrapper is None else f" + {wrapper}"),
        build=build,
        source=source,
        requires=("gymnasium",),
        kind="reference",
        imports=_IMPORTS,
        capabilities=capabilities,
        model=None,
    )


def _register_vector_models() -> None:
    for mode in ("NextStep", "SameStep", "Disabled"):
        register(_vector_model(mode, None, Capabilities()))
        register(_vector_model(mode, "RecordEpisodeStatistics", Capabilities()))
        register(_vector_model(mode, "NormalizeReward", Capabilities()))
    register(
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
    imports: tuple[str, ...],
    capabilities: Capabilities,
    requires: tuple[str, ...] = ("gymnasium",),
    known_violations: tuple[tuple[str, str], ...] = (),
) -> System:
    """A reference system (used by the other model modules)."""
    return register(
        System(
            id=system_id,
            family=family,
            title=title,
            build=build,
            source=source,
            requires=requires,
            kind="reference",
            imports=imports,
            capabilities=capabilities,
            known_violations=known_violations,
        )
    )


def _build_env_model(env_fns: Sequence[EnvFn], *, autoreset: bool) -> Any:
    from rlconform.libraries.gymnasium.env_model import build_model_env

    return build_model_env(env_fns, autoreset=autoreset)


def _register_env_models() -> None:
    imports = ("import numpy as np", "from rlconform.libraries.gymnasium.env_model import build_model_env")
    for autoreset in (False, True):
        model_system(
            "reference.gymnasium.Env" + (".Autoreset" if autoreset else ""),
            "gymnasium.Env",
            "reference model: single Gymnasium env" + (" under next-step Autoreset" if autoreset else ""),
            functools.partial(_build_env_model, autoreset=autoreset),
            f"build_model_env(env_fns, autoreset={autoreset})",
            imports,
            Capabilities(partial_reset=False, max_envs=1),
        )


_register_vector_models()
_register_env_models()


def _register_sb3_models() -> None:
    from rlconform.libraries.sb3 import model as sb3_model

    imports = ("import numpy as np", "from rlconform.libraries.sb3 import model as models")
    box_or_dict = Capabilities(
        obs_kinds=frozenset({"box", "dict"}), composite_box_leaves_only=True, partial_reset=False
    )
    clipping = (
        "SB3 documents that VecNormalize clips normalised observations to clip_obs (default 10) and normalises "
        "terminal_observation the same way; its off-policy recipe then calls unnormalize_obs, which cannot undo "
        "the clipping, so a terminal observation further than clip_obs deviations from the running mean is lost"
    )
    known = {
        "VecNormalize": (("transitions.exact", clipping), ("terminal.final_obs", clipping)),
    }
    entries: list[tuple[str, Any, str, Capabilities]] = [
        (
            "VecEnv",
            lambda fns: sb3_model.ModelVecEnv(fns),
            "models.ModelVecEnv(env_fns)",
            Capabilities(partial_reset=False),
        ),
        (
            "VecNormalize",
            lambda fns: sb3_model.ModelVecNormalize(sb3_model.ModelVecEnv(fns)),
            "models.ModelVecNormalize(models.ModelVecEnv(env_fns))",
            box_or_dict,
        ),
        (
            "VecFrameStack",
            lambda fns: sb3_model.ModelVecFrameStack(sb3_model.ModelVecEnv(fns), n_stack=3),
            "models.ModelVecFrameStack(models.ModelVecEnv(env_fns), n_stack=3)",
            box_or_dict,
        ),
        (
            "VecMonitor",
            lambda fns: sb3_model.ModelVecMonitor(sb3_model.ModelVecEnv(fns)),
            "models.ModelVecMonitor(models.ModelVecEnv(env_fns))",
            Capabilities(partial_reset=False),
        ),
    ]
    for name, build, source, capabilities in entries:
        model_system(
            f"reference.sb3.{name}",
            "sb3.VecEnv",
            f"reference model: SB3 {name}",
            build,
            source,
            imports,
            capabilities,
            requires=("gymnasium",),
            known_violations=known.get(name, ()),
        )


_register_sb3_models()
