"""Which reference model describes a built object: the model of exactly the stack it is, or none.

A bundled or planted system names its model; a user's factory does not, so the stack it built is
read layer by layer (wrapper chain, base vectorizer, sub-env wrappers, wrapper parameters) and
matched against the models in :mod:`rlconform.libraries.gymnasium.reference_systems`.
"""

from __future__ import annotations

from typing import Any

from rlconform.core.family import ModelMatch, layer_chain
from rlconform.core.system import all_systems

#: (top-level package, class name) of the sub-env layers the models assume: the reference env and
#: the checkers ``gymnasium.make`` adds (they change no output). A TimeLimit is either the
#: reference env's own or one the stack adds, which the model applies too (:func:`_sub_env_limit`)
_SUB_ENV_LAYERS = frozenset(
    {
        ("rlconform", "ReferenceEnv"),
        ("gymnasium", "OrderEnforcing"),
        ("gymnasium", "PassiveEnvChecker"),
    }
)
_TIME_LIMIT = ("gymnasium", "TimeLimit")
_GYM_BASES = frozenset({("gymnasium", "SyncVectorEnv"), ("gymnasium", "AsyncVectorEnv")})
#: vector wrapper -> {attribute: value the model assumes}
_GYM_WRAPPERS: dict[str, dict[str, Any]] = {
    "RecordEpisodeStatistics": {"_stats_key": "episode"},
    "NormalizeReward": {"gamma": 0.99, "epsilon": 1e-8, "_update_running_mean": True},
    "NormalizeObservation": {"epsilon": 1e-8, "_update_running_mean": True},
}
_SB3_BASES = frozenset({("stable_baselines3", "DummyVecEnv"), ("stable_baselines3", "SubprocVecEnv")})
_SB3_WRAPPERS: dict[str, dict[str, Any]] = {
    "VecNormalize": {
        "training": True,
        "norm_obs": True,
        "norm_reward": True,
        "gamma": 0.99,
        "clip_obs": 10.0,
        "clip_reward": 10.0,
        "epsilon": 1e-8,
    },
    "VecFrameStack": {"stacked_obs.n_stack": 3, "stacked_obs.channels_first": False},
    "VecMonitor": {"info_keywords": ()},
}


def layer_name(layer: Any) -> str:
    cls = type(layer)
    return f"{cls.__module__}.{cls.__qualname__}"


def _identity(layer: Any) -> tuple[str, str]:
    """(top-level package, class name): exact classes only, so that a subclass (which may change
    any behaviour) or a same-named class of another package is never taken for the library's."""
    cls = type(layer)
    return cls.__module__.split(".")[0], cls.__name__


def _parameter(layer: Any, path: str) -> Any:
    value: Any = layer
    for name in path.split("."):
        value = getattr(value, name, None)
    return value


def _unmodelled_parameters(layer: Any, assumed: dict[str, Any]) -> str | None:
    differences = []
    for path, want in assumed.items():
        got = _parameter(layer, path)
        if got != want and not (isinstance(want, float) and isinstance(got, float) and abs(got - want) < 1e-12):
            differences.append(f"{path.split('.')[-1].lstrip('_')}={got!r} (the model assumes {want!r})")
    if not differences:
        return None
    return f"{type(layer).__name__} with {', '.join(differences)}"


def _is_reference_envs_own(layer: Any) -> bool:
    """Whether a TimeLimit is the one ``make_reference_env`` put around the reference env: right
    around it, with the script's ``max_episode_steps``. Any other TimeLimit is the stack's own
    (a user's ``TimeLimit(env, N)`` in each env thunk), whatever its limit."""
    inner = getattr(layer, "env", None)
    script = getattr(inner, "script", None)
    return (
        inner is not None
        and _identity(inner) == ("rlconform", "ReferenceEnv")
        and script is not None
        and script.max_episode_steps is not None
        and getattr(layer, "_max_episode_steps", None) == script.max_episode_steps
    )


def _sub_env_limit(env: Any) -> tuple[int | None, str | None]:
    """(the tightest time limit the stack adds around this sub-env or None, the first sub-env
    layer no model has or None)."""
    limits: list[int] = []
    for layer in layer_chain(env, "env"):
        if _identity(layer) == _TIME_LIMIT:
            if not _is_reference_envs_own(layer):
                limit = getattr(layer, "_max_episode_steps", None)
                if not isinstance(limit, int) or limit < 1:
                    return None, f"sub-env layer {layer_name(layer)} with max_episode_steps={limit!r}"
                limits.append(limit)
        elif _identity(layer) not in _SUB_ENV_LAYERS:
            return None, f"sub-env layer {layer_name(layer)}"
    return (min(limits) if limits else None), None


def _unmodelled_sub_env(base: Any) -> tuple[int | None, str | None]:
    """(the time limit the stack adds around every sub-env, which the model then applies too; a
    sub-env layer (wrappers the user's factory put around each env) no model has)."""
    limits = set()
    for env in getattr(base, "envs", None) or []:
        limit, problem = _sub_env_limit(env)
        if problem is not None:
            return None, problem
        limits.add(limit)
    if len(limits) > 1:
        described = ", ".join("none" if x is None else str(x) for x in sorted(limits, key=lambda x: x or 0))
        return None, f"sub-envs with different time limits added by the stack ({described})"
    return (limits.pop() if limits else None), None


def _match_stack(
    obj: Any,
    attribute: str,
    bases: frozenset[tuple[str, str]],
    wrappers: dict[str, dict[str, Any]],
    model_id: Any,
) -> ModelMatch:
    """Walk ``obj``'s wrapper chain (outside in through ``attribute``): at most one modelled
    wrapper over one modelled base whose sub-envs are the reference envs; ``model_id(base,
    wrapper)`` names the model of that stack."""
    chain = layer_chain(obj, attribute)
    *outer, base = chain
    if _identity(base) not in bases:
        return ModelMatch(None, f"no reference model of its base layer {layer_name(base)}")
    for layer in outer:
        if _identity(layer)[1] not in wrappers or _identity(layer)[0] != _identity(base)[0]:
            return ModelMatch(None, f"no reference model of its layer {layer_name(layer)}")
    if len(outer) > 1:
        names = " over ".join(type(layer).__name__ for layer in chain)
        return ModelMatch(None, f"no reference model of a stack of several wrappers ({names})")
    time_limit, problem = _unmodelled_sub_env(base)
    if problem is not None:
        return ModelMatch(None, f"no reference model of its {problem}")
    wrapper = outer[0] if outer else None
    if wrapper is not None:
        problem = _unmodelled_parameters(wrapper, wrappers[type(wrapper).__name__])
        if problem is not None:
            return ModelMatch(None, f"no reference model of {problem}")
    candidate = model_id(base, None if wrapper is None else type(wrapper).__name__)
    if candidate not in _registered_models():
        return ModelMatch(None, f"no reference model {candidate} of {' over '.join(layer_name(x) for x in chain)}")
    return ModelMatch(candidate, time_limit=time_limit)


def _registered_models() -> set[str]:
    return {system.id for system in all_systems() if system.kind == "reference"}


def match_vector_env_model(obj: Any, mode: str) -> ModelMatch:
    """The model of a Gymnasium vector stack: Sync/AsyncVectorEnv in ``mode`` (the autoreset
    mode the object declares), optionally under one of the modelled vector wrappers."""

    def model_id(base: Any, wrapper: str | None) -> str:
        return f"reference.gymnasium.vector.{mode}" + ("" if wrapper is None else f".{wrapper}")

    return _match_stack(obj, "env", _GYM_BASES, _GYM_WRAPPERS, model_id)


def match_vec_env_model(obj: Any) -> ModelMatch:
    """The model of an SB3 stack: DummyVecEnv or SubprocVecEnv, optionally under one of the
    modelled VecEnvWrappers."""

    def model_id(base: Any, wrapper: str | None) -> str:
        return f"reference.sb3.{wrapper or 'VecEnv'}"

    return _match_stack(obj, "venv", _SB3_BASES, _SB3_WRAPPERS, model_id)
