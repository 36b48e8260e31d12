"""Reading observations back through the layers a user wraps around each sub-env.

A user's factory often wraps every sub-env before vectorizing it (CleanRL's
``SyncVectorEnv([lambda: NormalizeObservation(FrameStackObservation(make(), 4)), ...])``,
``make_vec_env(wrapper_class=...)``): those layers rewrite each observation, so its stamp no
longer decodes, and the specs that identify observations by their stamp (terminal observations,
fresh first observations, aligned infos) would have nothing to check. Yet those layers are the
sub-env as far as the vectorizer is concerned: what a vectorizer owes its caller is what each
sub-env returned, at the right index and step.

So, where the sub-envs live in this process (a vectorizer that keeps them in ``envs``, as
Gymnasium's SyncVectorEnv and SB3's DummyVecEnv do), the outermost layer of each user-wrapped
sub-env is tapped: its ``reset`` and ``step`` are wrapped, as instance attributes, by a recorder
that calls the original and notes the observation it returned beside the stamp the reference env
inside it wrote last. Nothing returned is changed. An observation the stack delivers that equals
one a tapped layer returned is then read as that stamp, and the spec that owns observation values
reports the transform itself (declared or not) as what it is. Two stamps whose transformed
observations are equal (a clip that saturates) are ambiguous and decode to nothing. Sub-envs in
worker processes cannot be tapped; the specs say so where they cannot check.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Any

import numpy as np

from rlconform.envs.stamp import Stamp

#: how far down the ``.env`` / ``.venv`` chains the sub-envs and the reference env are looked for
_MAX_DEPTH = 32


class SubEnvTap:
    """The observations user-wrapped sub-envs returned, keyed by value, with their stamps."""

    def __init__(self) -> None:
        self._stamps: dict[Hashable, Stamp | None] = {}
        #: sub-env index -> the names of the user's layers around its reference env, outermost first
        self.layers: dict[int, tuple[str, ...]] = {}

    @classmethod
    def attach(cls, obj: Any, own_time_limit: int | None) -> SubEnvTap | None:
        """Tap the user-wrapped sub-envs of ``obj``; None when it has none in this process.

        ``own_time_limit`` is the reference env's own TimeLimit (the script's), which is not a
        user layer."""
        tap = cls()
        for layers, reference in _chains(obj):
            user_layers = layers
            if own_time_limit is not None and layers and _is_time_limit(layers[-1], own_time_limit):
                user_layers = layers[:-1]
            if not user_layers:
                continue
            tap.layers[int(reference.index)] = tuple(type(layer).__name__ for layer in user_layers)
            _wrap(layers[0], reference, tap)
        return tap if tap.layers else None

    def record(self, obs: Any, stamp: Stamp) -> None:
        key = _key(obs)
        if key is None:
            return
        known = self._stamps.get(key, stamp)
        self._stamps[key] = stamp if known == stamp else None

    def lookup(self, value: Any) -> tuple[Stamp | None, tuple[str, ...]] | None:
        """``(stamp, layers)`` when a tapped layer returned ``value`` (stamp None: it returned the
        same value for two stamps); None when no tapped layer returned it."""
        key = _key(value)
        if key is None or key not in self._stamps:
            return None
        stamp = self._stamps[key]
        layers = self.layers.get(stamp.env, ()) if stamp is not None else next(iter(self.layers.values()), ())
        return stamp, layers


def sub_env_layers(obj: Any) -> dict[int, tuple[Any, ...]]:
    """The layers of each in-process sub-env of ``obj`` down to the reference env inside it,
    outermost first (the reference env excluded; the script's own TimeLimit, when it sets one,
    is the last layer), by that reference env's index.

    A family reads per-sub-env state with it (an episode recorder or a running normalizer the
    user put in each sub-env). Empty when the sub-envs are not in this process (worker
    processes) or none of them reaches a reference env."""
    return {int(reference.index): tuple(layers) for layers, reference in _chains(obj)}


def single_env_layers(obj: Any) -> dict[int, tuple[Any, ...]]:
    """:func:`sub_env_layers` of a single env: its own layers down to the reference env it wraps
    (the wrapper chain a user's ``--api gymnasium.Wrapper`` factory built), by that env's index."""
    chain = _chain_to_reference(obj)
    return {} if chain is None else {int(chain[1].index): tuple(chain[0])}


def _chains(obj: Any) -> list[tuple[list[Any], Any]]:
    """For each in-process sub-env of ``obj`` that reaches a reference env: its layers down to that
    env (outermost first, the sub-env itself first, empty when it is the reference env) and the env."""
    return [chain for outer in _sub_envs(obj) if (chain := _chain_to_reference(outer)) is not None]


def _sub_envs(obj: Any) -> list[Any]:
    """The sub-envs of the first object down ``obj``'s wrapper chain that lists them in ``envs``."""
    current = obj
    for _ in range(_MAX_DEPTH):
        envs = getattr(current, "__dict__", {}).get("envs")
        if isinstance(envs, (list, tuple)):
            return list(envs)
        inner = _inner(current)
        if inner is None:
            return []
        current = inner
    return []


def _inner(layer: Any) -> Any:
    attributes = getattr(layer, "__dict__", {})
    for name in ("env", "venv"):
        inner = attributes.get(name)
        if inner is not None and inner is not layer:
            return inner
    return None


def _chain_to_reference(outer: Any) -> tuple[list[Any], Any] | None:
    """The layers from ``outer`` down to the reference env (excluded), and that env."""
    from rlconform.envs.reference_env import ReferenceEnv

    layers: list[Any] = []
    current = outer
    for _ in range(_MAX_DEPTH):
        if isinstance(current, ReferenceEnv):
            return layers, current
        layers.append(current)
        current = _inner(current)
        if current is None:
            return None
    return None


def _is_time_limit(layer: Any, limit: int) -> bool:
    return type(layer).__name__ == "TimeLimit" and getattr(layer, "_max_episode_steps", None) == limit


def _wrap(outer: Any, reference: Any, tap: SubEnvTap) -> None:
    step, reset = outer.step, outer.reset

    def tapped_step(*args: Any, **kwargs: Any) -> Any:
        result = step(*args, **kwargs)
        _note(tap, result, reference)
        return result

    def tapped_reset(*args: Any, **kwargs: Any) -> Any:
        result = reset(*args, **kwargs)
        _note(tap, result, reference)
        return result

    outer.step, outer.reset = tapped_step, tapped_reset


def _note(tap: SubEnvTap, result: Any, reference: Any) -> None:
    try:
        if isinstance(result, tuple) and result:
            tap.record(result[0], reference._stamp())
    except Exception:  # a recorder never breaks the call it watches
        return


def _key(value: Any) -> Hashable | None:
    """A value-equality key that ignores the container a vectorizer copies an observation into
    (a batch row of the declared dtype, a fresh array)."""
    try:
        if isinstance(value, Mapping):
            parts = [(str(k), _key(v)) for k, v in sorted(value.items(), key=lambda item: str(item[0]))]
            return ("dict", tuple(parts))
        if isinstance(value, (tuple, list)):
            return ("seq", tuple(_key(v) for v in value))
        array = np.asarray(value)
        if array.dtype.kind not in "biuf":
            return ("other", repr(value))
        return ("array", array.shape, np.ascontiguousarray(array, dtype=np.float64).tobytes())
    except Exception:
        return None
