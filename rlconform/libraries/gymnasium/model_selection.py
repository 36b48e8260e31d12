"""Which reference model describes a built object: the model of exactly the stack it is, or none.

A bundled or planted system names its model; a user's factory does not, so the stack it built is
read layer by layer (wrapper chain, base vectorizer, sub-env wrappers, wrapper parameters) and
matched against the models in :mod:`rlconform.libraries.gymnasium.reference_systems`. A wrapper's
settings the models implement (``n_stack``, ``gamma``, ``training``, ...) are read off the object
and the model is built with them (``ModelMatch.parameters``); only the settings no model implements
leave a stack without one.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from rlconform.core.family import ModelMatch, layer_chain
from rlconform.core.system import all_systems

#: (top-level package, class name) of the sub-env layers the models assume: the reference env and
#: the checkers ``gymnasium.make`` adds (they change no output). A TimeLimit is either the
#: reference env's own or one the stack adds, which the model applies too (:func:`sub_env_limit`)
_SUB_ENV_LAYERS = frozenset(
    {
        ("rlconform", "ReferenceEnv"),
        ("gymnasium", "OrderEnforcing"),
        ("gymnasium", "PassiveEnvChecker"),
    }
)
_TIME_LIMIT = ("gymnasium", "TimeLimit")
_GYM_BASES = frozenset({("gymnasium", "SyncVectorEnv"), ("gymnasium", "AsyncVectorEnv")})


def _statistics(layer: Any, name: str) -> Any:
    """A copy of the running statistics ``layer`` holds now (None: it has none): the model
    starts from them, and the stack's later updates must not reach the model's copy."""
    return copy.deepcopy(getattr(layer, name, None))


def _normalize_reward(layer: Any) -> dict[str, Any]:
    return {
        "gamma": float(layer.gamma),
        "epsilon": float(layer.epsilon),
        "update_running_mean": bool(layer._update_running_mean),
        "return_rms": _statistics(layer, "return_rms"),
    }


def _normalize_observation(layer: Any) -> dict[str, Any]:
    return {
        "epsilon": float(layer.epsilon),
        "update_running_mean": bool(layer._update_running_mean),
        "obs_rms": _statistics(layer, "obs_rms"),
    }


def _vec_normalize(layer: Any) -> dict[str, Any]:
    # training=False freezes the statistics at what the object holds when built (SB3's evaluation
    # setup, often after VecNormalize.load): the model is built with a copy of them
    parameters: dict[str, Any] = {name: bool(getattr(layer, name)) for name in ("training", "norm_obs", "norm_reward")}
    parameters.update({name: float(getattr(layer, name)) for name in ("gamma", "clip_obs", "clip_reward", "epsilon")})
    parameters.update(obs_rms=_statistics(layer, "obs_rms"), ret_rms=_statistics(layer, "ret_rms"))
    return parameters


def _vec_frame_stack(layer: Any) -> dict[str, Any]:
    return {"n_stack": int(layer.stacked_obs.n_stack)}


def _no_parameters(layer: Any) -> dict[str, Any]:
    return {}


#: vector wrapper -> ({attribute: the only value the models implement}, the parameters its model
#: is built with, read off the wrapper)
_GYM_WRAPPERS: dict[str, tuple[dict[str, Any], Callable[[Any], dict[str, Any]]]] = {
    "RecordEpisodeStatistics": ({"_stats_key": "episode"}, _no_parameters),
    "NormalizeReward": ({}, _normalize_reward),
    "NormalizeObservation": ({}, _normalize_observation),
}
_SB3_BASES = frozenset({("stable_baselines3", "DummyVecEnv"), ("stable_baselines3", "SubprocVecEnv")})
_SB3_WRAPPERS: dict[str, tuple[dict[str, Any], Callable[[Any], dict[str, Any]]]] = {
    # the model normalises every key of a Dict space (norm_obs_keys: see _unmodelled_keys)
    "VecNormalize": ({}, _vec_normalize),
    # channels_first (channels_order="first", or an image space laid out channel-first) stacks
    # along the first axis of each observation; the model stacks along the last axis only, so such
    # a stack stays unmodelled rather than compared with a model of another layout
    "VecFrameStack": ({"stacked_obs.channels_first": False}, _vec_frame_stack),
    "VecMonitor": ({"info_keywords": ()}, _no_parameters),
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
    differences.extend(_unmodelled_keys(layer))
    if not differences:
        return None
    return f"{type(layer).__name__} with {', '.join(differences)}"


def _unmodelled_keys(layer: Any) -> list[str]:
    """VecNormalize's ``norm_obs_keys`` when it names fewer than all keys of a Dict space: the
    model normalises every key."""
    keys = getattr(layer, "norm_obs_keys", None)
    if type(layer).__name__ != "VecNormalize" or not getattr(layer, "norm_obs", False) or keys is None:
        return []
    every = getattr(getattr(getattr(layer, "venv", None), "observation_space", None), "spaces", None)
    if every is not None and set(keys) == set(every):
        return []
    return [f"norm_obs_keys={list(keys)!r} (the model normalises every key)"]


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


def sub_env_limit(env: Any) -> tuple[int | None, str | None]:
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
        limit, problem = sub_env_limit(env)
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
    wrappers: dict[str, tuple[dict[str, Any], Callable[[Any], dict[str, Any]]]],
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
    parameters: dict[str, Any] = {}
    if wrapper is not None:
        assumed, read_parameters = wrappers[type(wrapper).__name__]
        problem = _unmodelled_parameters(wrapper, assumed)
        if problem is not None:
            return ModelMatch(None, f"no reference model of {problem}")
        parameters = read_parameters(wrapper)
    candidate = model_id(base, None if wrapper is None else type(wrapper).__name__)
    if candidate not in _registered_models():
        return ModelMatch(None, f"no reference model {candidate} of {' over '.join(layer_name(x) for x in chain)}")
    return ModelMatch(candidate, time_limit=time_limit, parameters=parameters)


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
