"""Planted bugs in how a vector env handles calls: the objects it returns and receives, dtypes,
validating a batch, a failed call's side effects, its worker processes, undocumented outputs.

Every spec must catch at least one planted bug of its kind (``plants`` names the specs a bug must
be caught by); the suite's own tests check that it does, and the benchmark measures how fast.
Each bug is the smallest change to a correct model that reproduces a mistake real libraries make.
Bugs in what is returned across steps and episodes are :mod:`.planted_episodes`.
"""

from __future__ import annotations

import multiprocessing
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from rlconform.core.system import Capabilities, EnvFn, SystemTable
from rlconform.libraries.gymnasium.infos import merge_info
from rlconform.libraries.gymnasium.planting import _MODEL, _vector, plant
from rlconform.libraries.gymnasium.vector_model import ModelVectorEnv, _rows

#: this module's systems, read by the catalog (rlconform.core.catalog)
SYSTEMS = SystemTable()


class ReusesBuffer(ModelVectorEnv):
    """Returns its internal observation buffer and overwrites it on the next call."""

    def _fill(self, obs: Any) -> Any:
        if not hasattr(self, "_buffer"):
            self._buffer = obs
            return obs
        return _copy_into(self._buffer, obs)

    def reset(self, *, seed: Any = None, options: dict[str, Any] | None = None) -> Any:
        obs, infos = super().reset(seed=seed, options=options)
        return self._fill(obs), infos

    def step(self, actions: Any) -> Any:
        obs, *rest = super().step(actions)
        return (self._fill(obs), *rest)


def _copy_into(buffer: Any, obs: Any) -> Any:
    """Write ``obs`` into ``buffer`` leaf by leaf (Dict and Tuple observations too: a planted bug
    that raised on them would be blamed by every spec that reads the call)."""
    if isinstance(buffer, dict):
        for key in buffer:
            buffer[key] = _copy_into(buffer[key], obs[key])
        return buffer
    if isinstance(buffer, tuple):
        return tuple(_copy_into(b, o) for b, o in zip(buffer, obs, strict=True))
    np.copyto(buffer, obs)
    return buffer


class PopsOptions(ModelVectorEnv):
    """Removes reset_mask from the caller's options dict."""

    def reset(self, *, seed: Any = None, options: dict[str, Any] | None = None) -> Any:
        out = super().reset(seed=seed, options=options)
        if options is not None:
            options.pop("reset_mask", None)
        return out


class Float64Observations(ModelVectorEnv):
    """Returns observations as float64 whatever the declared dtype."""

    def reset(self, *, seed: Any = None, options: dict[str, Any] | None = None) -> Any:
        obs, infos = super().reset(seed=seed, options=options)
        return _as_float64(obs), infos

    def step(self, actions: Any) -> Any:
        obs, *rest = super().step(actions)
        return (_as_float64(obs), *rest)


def _as_float64(obs: Any) -> Any:
    if isinstance(obs, dict):
        return {k: _as_float64(v) for k, v in obs.items()}
    if isinstance(obs, tuple):
        return tuple(_as_float64(v) for v in obs)
    return np.asarray(obs, dtype=np.float64)


class Float32Rewards(ModelVectorEnv):
    """Returns rewards as float32 (Gymnasium documents float64)."""

    def step(self, actions: Any) -> Any:
        obs, rewards, *rest = super().step(actions)
        return (obs, rewards.astype(np.float32), *rest)


class ListActions(ModelVectorEnv):
    """Hands each sub-env its action converted to a Python list."""

    def step(self, actions: Any) -> Any:
        rows = _rows(actions)
        converted = [np.asarray(r).tolist() for r in rows]

        class _Batch(list):  # type: ignore[type-arg]
            pass

        return super().step(_Batch(converted))


class NoInfoMasks(ModelVectorEnv):
    """Returns infos without their ``_key`` masks."""

    def step(self, actions: Any) -> Any:
        obs, rewards, terminated, truncated, infos = super().step(actions)
        return obs, rewards, terminated, truncated, {k: v for k, v in infos.items() if not k.startswith("_")}


class TruncatesBatch(ModelVectorEnv):
    """Silently uses the first num_envs actions of a longer batch."""

    def step(self, actions: Any) -> Any:
        rows = _rows(actions)
        if len(rows) > self.num_envs:
            actions = np.asarray(actions)[: self.num_envs]
        return super().step(actions)


class StepsBeforeValidating(ModelVectorEnv):
    """Steps the sub-envs it has actions for, then raises on a short batch."""

    def step(self, actions: Any) -> Any:
        rows = _rows(actions)
        if len(rows) < self.num_envs:
            for i, row in enumerate(rows):
                if not self._ended[i]:
                    self.envs[i].step(row)
        return super().step(actions)


class RaisesOnValidAction(ModelVectorEnv):
    """Raises on a well-formed batch whose first action is the space's last value (a conversion
    that only handles some values, as an int() of an array does)."""

    def step(self, actions: Any) -> Any:
        rows = _rows(actions)
        space = self.single_action_space
        if (
            len(rows) == self.num_envs
            and hasattr(space, "n")
            and int(np.asarray(rows[0]).reshape(-1)[0]) == space.n - 1
        ):
            raise TypeError(f"cannot convert action {rows[0]!r}")
        return super().step(actions)


def _sleep_forever() -> None:  # pragma: no cover - runs in the leaked process
    while True:
        time.sleep(60)


class LeaksWorker(ModelVectorEnv):
    """Starts a worker process and never stops it."""

    def __init__(self, env_fns: Sequence[EnvFn], mode: str) -> None:
        super().__init__(env_fns, mode)
        self._worker = multiprocessing.get_context("fork").Process(target=_sleep_forever, daemon=True)
        self._worker.start()


class ExtraInfoKey(ModelVectorEnv):
    """Adds an undocumented info key; only the reference model notices."""

    def step(self, actions: Any) -> Any:
        obs, rewards, terminated, truncated, infos = super().step(actions)
        merge_info(infos, {"planted": 1}, 0, self.num_envs)
        return obs, rewards, terminated, truncated, infos


def _register() -> None:
    same = "SameStep"
    plant(
        "reuses_buffer",
        _vector(ReusesBuffer, same),
        ("aliasing.returned_objects",),
        ReusesBuffer.__doc__ or "",
        table=SYSTEMS,
    )
    plant(
        "pops_options",
        _vector(PopsOptions, same),
        ("aliasing.caller_arguments",),
        PopsOptions.__doc__ or "",
        table=SYSTEMS,
    )
    plant(
        "float64_observations",
        _vector(Float64Observations, same),
        ("dtype.observations",),
        Float64Observations.__doc__ or "",
        capabilities=Capabilities(box_dtypes=frozenset({"float32", "uint8", "int64"})),
        table=SYSTEMS,
    )
    plant(
        "float32_rewards",
        _vector(Float32Rewards, same),
        ("dtype.rewards_flags",),
        Float32Rewards.__doc__ or "",
        table=SYSTEMS,
    )
    plant(
        "list_actions",
        _vector(ListActions, same),
        ("dtype.actions_received",),
        ListActions.__doc__ or "",
        capabilities=Capabilities(action_kinds=frozenset({"box", "multidiscrete"})),
        table=SYSTEMS,
    )
    plant("no_info_masks", _vector(NoInfoMasks, same), ("api.shape",), NoInfoMasks.__doc__ or "", table=SYSTEMS)
    plant(
        "truncates_batch",
        _vector(TruncatesBatch, same),
        ("api.wrong_size_batch_rejected",),
        TruncatesBatch.__doc__ or "",
        table=SYSTEMS,
    )
    plant(
        "steps_before_validating",
        _vector(StepsBeforeValidating, same),
        ("api.failed_call_no_side_effect",),
        StepsBeforeValidating.__doc__ or "",
        table=SYSTEMS,
    )
    plant(
        "raises_on_valid_action",
        _vector(RaisesOnValidAction, same),
        ("api.valid_calls_succeed",),
        RaisesOnValidAction.__doc__ or "",
        table=SYSTEMS,
    )
    plant(
        "leaks_worker", _vector(LeaksWorker, same), ("lifecycle.responsive",), LeaksWorker.__doc__ or "", table=SYSTEMS
    )
    plant(
        "extra_info_key",
        _vector(ExtraInfoKey, same),
        ("model.outputs_match",),
        ExtraInfoKey.__doc__ or "",
        table=SYSTEMS,
    )


_register()


#: For every planted bug (of every module), the exact set of specs it fails; every other spec
#: that applies must pass. One defect may be seen by several specs (a lost terminal observation
#: is also a wrong transition and a departure from the model), but a spec outside this set that
#: fails blames the planted bug for something it does not do (tests/test_specificity.py).
MUST_FAIL: dict[str, frozenset[str]] = {
    f"planted.{name}": frozenset(specs)
    for name, specs in {
        "extra_info_key": (_MODEL,),
        # one story: the dtype; the values are the env's rewards at the precision they were returned in
        "float32_rewards": ("dtype.rewards_flags",),
        "float64_observations": ("dtype.observations", _MODEL),
        "leaks_worker": ("lifecycle.responsive",),
        "list_actions": ("dtype.actions_received",),
        "no_info_masks": ("api.shape", _MODEL),
        "pops_options": ("aliasing.caller_arguments",),
        "raises_on_valid_action": ("api.valid_calls_succeed", _MODEL),
        "reuses_buffer": ("aliasing.returned_objects",),
        "steps_before_validating": ("api.failed_call_no_side_effect",),
        "truncates_batch": ("api.wrong_size_batch_rejected",),
    }.items()
}
