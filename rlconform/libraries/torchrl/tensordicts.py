"""Reading TorchRL TensorDicts back into a Gymnasium env's own values, one per sub-env.

TorchRL's GymWrapper maps a native observation onto TensorDict entries: a Box, Discrete,
MultiDiscrete or MultiBinary observation under ``"observation"``; a Tuple of alike spaces stacked
along a new first dimension under ``"observation"``; each entry of a Dict under its own key (a
top-level ``"state"`` renamed ``"observation"``), and it encodes each entry with its spec
(one-hot for Discrete). Comparing a TorchRL stack with the bare env needs the native structure
back. Each entry is read with its spec's own inverse, ``spec.to_numpy``, the very function TorchRL
applies to actions before they reach a Gymnasium env; nothing is cast, clipped or repaired, so a
value TorchRL changed stays changed and shows up in the comparison.

Rewards and flags are read as TorchRL documents them: tensors of shape ``batch_size + (1,)``; a
tensor of another shape raises :class:`~rlconform.envs.batching.BatchShapeError`, which the
runner records as an output without the documented structure.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rlconform.envs.batching import BatchShapeError

#: the TensorDict key GymWrapper gives a non-Dict observation, and the Dict key it renames to it
OBSERVATION_KEY = "observation"
RENAMED_DICT_KEY = "state"

Key = tuple[str, ...]


@dataclass(frozen=True)
class Leaf:
    """One array of the native observation and the TensorDict entry that holds it."""

    #: where in the native observation (``()``: the observation itself is this array)
    path: Key
    #: the TensorDict key GymWrapper writes it under
    key: Key
    #: the entry's TorchRL spec (with the env's batch dimensions), whose ``to_numpy`` reads it back
    spec: Any


class UnsupportedSpaceError(ValueError):
    """A native observation space this reader cannot map back (a Tuple inside a Dict)."""


@dataclass(frozen=True)
class ObsLayout:
    """Where a native observation lives in a TorchRL env's TensorDicts, and how to read it back."""

    leaves: tuple[Leaf, ...]
    #: the native observation is a Dict (possibly nested) rather than one array
    composite: bool
    #: the env's batch dimensions: ``()`` for one env, ``(n,)`` for n sub-envs
    batch_shape: tuple[int, ...]
    #: the native observation is a Tuple of this many elements, stacked in one entry
    tuple_len: int | None = None

    @classmethod
    def of(cls, native_space: Any, observation_spec: Any, batch_shape: tuple[int, ...]) -> ObsLayout:
        """The layout GymWrapper uses for ``native_space`` (the env's, or one sub-env's, space)."""
        from gymnasium import spaces

        if isinstance(native_space, spaces.Dict):
            leaves = tuple(_dict_leaves(native_space, (), observation_spec, top=True))
            return cls(leaves, True, batch_shape)
        keys = [_as_key(k) for k in observation_spec.keys(True, True)]
        key = (OBSERVATION_KEY,) if (OBSERVATION_KEY,) in keys else keys[0]
        tuple_len = len(native_space.spaces) if isinstance(native_space, spaces.Tuple) else None
        return cls((Leaf((), key, observation_spec[key]),), False, batch_shape, tuple_len)

    @property
    def num_envs(self) -> int:
        return self.batch_shape[0] if self.batch_shape else 1

    def read(self, td: Any) -> list[Any]:
        """The native observation of each sub-env held by the root of ``td``."""
        per_leaf = [_leaf_rows(leaf, td.get(leaf.key), self.batch_shape) for leaf in self.leaves]
        if self.tuple_len is not None:
            return [tuple(value[i] for i in range(self.tuple_len)) for value in per_leaf[0]]
        if not self.composite:
            return per_leaf[0]
        out: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        for leaf, values in zip(self.leaves, per_leaf, strict=True):
            for env, value in enumerate(values):
                _place(out[env], leaf.path, value)
        return out


def _leaf_rows(leaf: Leaf, value: Any, batch_shape: tuple[int, ...]) -> list[Any]:
    """One native value per sub-env of one entry. A non-tensor entry (GymWrapper's ``NonTensor``
    spec for a Gymnasium ``Text`` leaf) holds the env's own Python values: they are read as they
    are, one per sub-env, not through ``to_numpy``."""
    from tensordict import is_non_tensor

    if is_non_tensor(value):
        data = value.tolist()
        return rows(data, batch_shape) if batch_shape else [data]
    return rows(leaf.spec.to_numpy(value, safe=False), batch_shape)


def _dict_leaves(space: Any, path: Key, observation_spec: Any, *, top: bool) -> list[Leaf]:
    from gymnasium import spaces

    names = list(space.spaces)
    leaves: list[Leaf] = []
    for name in names:
        sub = space.spaces[name]
        key_name = OBSERVATION_KEY if top and name == RENAMED_DICT_KEY and OBSERVATION_KEY not in names else name
        key = (*path, key_name)
        if isinstance(sub, spaces.Dict):
            leaves.extend(_dict_leaves(sub, (*path, name), observation_spec, top=False))
        elif isinstance(sub, spaces.Tuple):
            raise UnsupportedSpaceError("a Tuple observation inside a Dict is not read back from TensorDicts")
        else:
            leaves.append(Leaf((*path, name), key, observation_spec[key]))
    return leaves


def _as_key(key: Any) -> Key:
    return tuple(key) if isinstance(key, tuple) else (key,)


def _place(target: dict[str, Any], path: Key, value: Any) -> None:
    for name in path[:-1]:
        target = target.setdefault(name, {})
    target[path[-1]] = value


def rows(value: Any, batch_shape: tuple[int, ...]) -> list[Any]:
    """One element per sub-env of a batched array (the value itself for an unbatched env)."""
    if not batch_shape:
        return [value]
    n = batch_shape[0]
    if isinstance(value, list):
        if len(value) != n:
            raise BatchShapeError(f"{len(value)} values for a batch of {n} sub-envs")
        return value
    shape = tuple(getattr(value, "shape", ()))
    if not shape or shape[0] != n:
        raise BatchShapeError(f"an entry of shape {shape} for a batch of {n} sub-envs")
    return [value[i] for i in range(n)]


def per_env_scalars(td: Any, key: Key, batch_shape: tuple[int, ...]) -> list[Any]:
    """A reward or flag entry (documented shape ``batch_size + (1,)``) as one Python scalar per sub-env."""
    value = td.get(key)
    shape = tuple(value.shape)
    if shape != (*batch_shape, 1):
        raise BatchShapeError(f"{'/'.join(key)} has shape {shape}; documented: {(*batch_shape, 1)}")
    return [v.item() for v in value.reshape(-1)]
