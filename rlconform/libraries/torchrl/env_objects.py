"""The TorchRL objects the ``torchrl.EnvBase`` family reads: the batched env under a stack of
transforms, its batch shape, its declared and native observation spaces, its leaves' specs, the
entries its transforms add (:func:`added_entries`) and the seeds its sub-envs were reset with.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rlconform.libraries.torchrl.obs_transforms import ObsReading, obs_reading
from rlconform.libraries.torchrl.tensordicts import ObsLayout, UnsupportedSpaceError, per_env_scalars
from rlconform.specs.families import TORCHRL_ENVBASE

NAME = TORCHRL_ENVBASE
#: record.extra key: per sub-env, the seeds of the resets it received from ``set_seed(s); reset()``
SUB_ENV_RESETS = "sub_env_resets"


def _base(env: Any) -> Any:
    """The env under a TransformedEnv (GymWrapper around a vector env returns one)."""
    from torchrl.envs import TransformedEnv

    return env.base_env if isinstance(env, TransformedEnv) else env


def _is_batched_env(env: Any) -> bool:
    from torchrl.envs.batched_envs import BatchedEnvBase

    return isinstance(env, BatchedEnvBase)


def batch_shape(env: Any) -> tuple[int, ...]:
    return tuple(int(d) for d in env.batch_size)


def native_observation_space(env: Any) -> Any:
    """One sub-env's Gymnasium observation space, through the attribute access TorchRL documents:
    a GymWrapper forwards unknown attributes to the env it wraps; a batched env answers with one
    value per worker (a batched env must have been started)."""
    base = _base(env)
    policy = _isaaclab_policy_space(base)
    if policy is not None:
        return policy
    if _is_batched_env(base):
        if base.is_closed:
            # a user's factory may return a batched env not started yet (TorchRL starts it
            # lazily on the first reset): its workers answer attribute access only once started
            base.start()
        return next(iter(base.observation_space))
    if batch_shape(base):
        return base.single_observation_space
    return base.observation_space


def _isaaclab_policy_space(base: Any) -> Any | None:
    """An Isaac Lab env under a TorchRL wrapper: one sub-env observes its ``"policy"`` group.
    ``DirectRLEnv.single_observation_space`` is ``Dict(policy=...)`` while its observations are
    that group's tensor, which Isaac Lab's own wrapper returns under ``"policy"`` and TorchRL's
    ``IsaacLabWrapper`` (from the batched ``observation_space`` Box) under ``"observation"``."""
    if _is_batched_env(base):  # attribute access on a batched env asks its workers
        return None
    try:
        unwrapped = base.unwrapped  # Isaac Lab's wrapper defines it; a GymWrapper forwards it to its env
    except AttributeError:
        return None
    if unwrapped is None or not any(c.__module__.startswith("isaaclab.envs") for c in type(unwrapped).__mro__):
        return None
    return unwrapped.single_observation_space["policy"]


def observation_reading(env: Any) -> ObsReading | None:
    """How the stack's observation transforms are read back (None: observations rlconform does
    not read back leaf by leaf)."""
    try:
        layout = ObsLayout.of(native_observation_space(env), env.observation_spec, batch_shape(env))
    except (UnsupportedSpaceError, KeyError):
        return None
    return obs_reading(env, layout)


def declared_observation_space(env: Any) -> Any:
    """One sub-env's observation space as the stack declares it: each leaf rlconform reads back
    against the env's own observation spec (:mod:`rlconform.libraries.torchrl.declared_space`),
    which a transform (``DoubleToFloat``, ``CatFrames``) rewrites along with the data; the
    wrapped env's space where no leaf can be read back by its spec."""
    from rlconform.libraries.torchrl import declared_space

    native = native_observation_space(env)
    try:
        layout = ObsLayout.of(native, env.observation_spec, batch_shape(env))
    except (UnsupportedSpaceError, KeyError):
        return native
    return declared_space.declared_observation_space(layout, native)


def key_name(key: Any) -> str:
    """A TensorDict key as one string: ``"reward"``, ``"next/reward"``."""
    return "/".join(key) if isinstance(key, tuple) else str(key)


def leaf_specs(env: Any) -> dict[str, dict[str, Any]]:
    """What the env declares for each entry it returns, by :func:`key_name`: the ``kind`` of spec
    (observation, reward, done, action), its dtype, shape (with the batch dimensions) and device
    (None: the spec declares none). Recorded as strings and tuples, read by the specs later."""
    out: dict[str, dict[str, Any]] = {}
    parts = (
        ("observation", env.full_observation_spec),
        ("reward", env.full_reward_spec),
        ("done", env.full_done_spec),
        ("action", env.full_action_spec),
    )
    for kind, composite in parts:
        for key, leaf in composite.items(True, True):
            out[key_name(key)] = {
                "kind": kind,
                "dtype": str(leaf.dtype),
                "shape": tuple(int(d) for d in leaf.shape),
                "device": None if leaf.device is None else str(leaf.device),
            }
    return out


#: the transforms whose added entries ``torchrl.transform_values`` checks
ADDING_TRANSFORMS = ("RewardSum", "StepCounter", "InitTracker")


def _transforms_of(transform: Any) -> list[Any]:
    """A transform, or the transforms of a ``Compose`` (nested ones too), in the order they run."""
    from torchrl.envs import Compose

    if isinstance(transform, Compose):
        return [leaf for t in transform.transforms for leaf in _transforms_of(t)]
    return [transform]


def _layers_of(env: Any) -> list[Any]:
    """The transforms a stack runs on its data, innermost first: those of every ``TransformedEnv``
    in it and, for a ``SerialEnv`` (its sub-envs live in this process), those of its first sub-env,
    which every sub-env of a batched env shares by construction. A ``ParallelEnv``'s sub-envs live
    in worker processes: their transforms are not read."""
    from torchrl.envs import SerialEnv, TransformedEnv

    if isinstance(env, TransformedEnv):
        return [*_layers_of(env.base_env), *_transforms_of(env.transform)]
    if isinstance(env, SerialEnv):
        sub_envs = getattr(env, "_envs", None) or []  # set once the env is started
        return _layers_of(sub_envs[0]) if sub_envs else []
    return []


def added_entries(env: Any) -> list[dict[str, Any]]:
    """What the stack's ``RewardSum``, ``StepCounter`` and ``InitTracker`` transforms (or subclasses)
    write into its TensorDicts: for each entry, the ``transform`` kind (one of
    :data:`ADDING_TRANSFORMS`), its ``class`` name, the ``key`` as a list of its parts and its
    ``name`` (:func:`key_name`); a RewardSum's ``in_key`` and ``in_name`` too, a StepCounter's
    ``max_steps``. Read from the transforms' own key properties, so that custom keys are followed;
    never raises (a transform whose keys cannot be named adds nothing checked)."""
    entries: list[dict[str, Any]] = []
    try:
        layers = _layers_of(env)
    except Exception:
        return entries
    for transform in layers:
        try:
            entries.extend(_entries_of(transform))
        except Exception:
            continue
    return entries


def _parts(key: Any) -> list[str]:
    return [str(p) for p in key] if isinstance(key, tuple) else [str(key)]


def _entries_of(transform: Any) -> list[dict[str, Any]]:
    from torchrl.envs import InitTracker, RewardSum, StepCounter

    def entry(kind: str, key: Any, **more: Any) -> dict[str, Any]:
        parts = _parts(key)
        return {"transform": kind, "class": type(transform).__name__, "key": parts, "name": "/".join(parts), **more}

    if isinstance(transform, RewardSum):
        return [
            entry("RewardSum", out_key, in_key=_parts(in_key), in_name="/".join(_parts(in_key)))
            for in_key, out_key in zip(transform.in_keys, transform.out_keys, strict=True)
        ]
    if isinstance(transform, StepCounter):
        return [entry("StepCounter", key, max_steps=transform.max_steps) for key in transform.step_count_keys]
    if isinstance(transform, InitTracker):
        return [entry("InitTracker", key) for key in transform.init_keys]
    return []


def _read_added(
    td: Any, entries: Sequence[dict[str, Any]], shape: tuple[int, ...], *, in_keys: bool = False
) -> dict[str, list[Any] | str]:
    """Each added entry of ``td`` (a RewardSum's in_key too with ``in_keys``) as one Python scalar
    per sub-env, or the reason it could not be read; never raises (the recipe must not lose the
    transition over an entry only ``torchrl.transform_values`` reads)."""
    out: dict[str, list[Any] | str] = {}
    keys = [(e["name"], e["key"]) for e in entries]
    if in_keys:
        keys += [(e["in_name"], e["in_key"]) for e in entries if "in_key" in e]
    for name, parts in keys:
        try:
            if td.get(tuple(parts), None) is None:
                out[name] = "absent"
            else:
                out[name] = per_env_scalars(td, tuple(parts), shape)
        except Exception as exc:
            out[name] = f"{type(exc).__name__}: {exc}"
    return out


def sub_env_resets(env: Any, seed: int, num_envs: int) -> list[tuple[int | None, ...]]:
    """The ``reset(seed=...)`` calls each sub-env receives from ``env.set_seed(seed); env.reset()``
    (see the module docstring); the last one starts the episode the first transition comes from."""
    base = _base(env)
    if _is_batched_env(base):
        from torchrl._utils import seed_generator  # what EnvBase.set_seed returns as the next seed

        seeds = [seed]
        while len(seeds) < num_envs:
            seeds.append(int(seed_generator(seeds[-1])))
        return [(s, None) for s in seeds]
    if batch_shape(base):
        return [(seed + i, None) for i in range(num_envs)]
    return [(seed, None)]


def close_env(env: Any) -> None:
    """Close once: a ParallelEnv's close() shuts its worker processes down (and raises if it
    is called on an env already closed)."""
    if not getattr(env, "is_closed", False):
        env.close()
