"""The observation space a TorchRL stack declares, as the Gymnasium space ``dtype.observations`` reads.

A TorchRL stack declares its observations in its own ``observation_spec``, and a transform
(``CatFrames``, ``DoubleToFloat``, a ``Compose`` of such) rewrites that spec along with the data:
checking the data against the wrapped Gymnasium env's space would blame the stack for what it
declares. So each observation leaf rlconform reads back (:class:`~rlconform.libraries.torchrl.tensordicts.ObsLayout`)
is checked against its leaf spec for one sub-env: the dtype and shape that spec's ``to_numpy``
gives (how the leaf is read back) and ``spec.is_in`` of the value encoded again. The leaves'
device is ``torchrl.device``'s to check: the values here have been read back to NumPy.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces

from rlconform.envs.driver import StackRefusal
from rlconform.libraries.torchrl.tensordicts import ObsLayout


def unreadable_spec(leaf_spec: Any, key: tuple[str, ...], exc: BaseException) -> str:
    """Why the stack cannot take the observation it was given: the leaf spec it declares cannot
    read back a value of its own (TorchRL's ``CatFrames`` over a one-hot MultiDiscrete leaf widens
    the ``MultiOneHot``'s shape and keeps its categories, so ``to_numpy`` finds no categories to
    split it into)."""
    first = str(exc).splitlines()[0] if str(exc) else "(no message)"
    return (
        f"the stack cannot take this observation: the observation_spec[{'/'.join(key)!r}] it declares "
        f"({type(leaf_spec).__name__}, shape {tuple(leaf_spec.shape)}) cannot read back a value of its own "
        f"(to_numpy(spec.zero()) raised {type(exc).__name__}: {first})"
    )


def _widened_one_hot(leaf_spec: Any) -> str | None:
    """How a ``OneHot`` spec whose last dimension is not its number of categories is described
    (a one-hot vector has exactly one entry per category), or None for any other spec."""
    if type(leaf_spec).__name__ != "OneHot":
        return None
    categories = getattr(getattr(leaf_spec, "space", None), "n", None)
    width = int(leaf_spec.shape[-1]) if len(leaf_spec.shape) else None
    if categories is None or width is None or width == int(categories):
        return None
    return f"a OneHot of {width} entries over {int(categories)} categories"


class DeclaredLeafSpace(spaces.Box):
    """One observation leaf as the stack's TorchRL spec declares it.

    A ``Box`` so that ``dtype.observations`` compares type, dtype and shape as for any array
    space; its bounds are the dtype's whole range, and membership is the spec's own
    ``is_in``, asked of the value encoded back with the spec (a MultiDiscrete leaf is one-hot
    in the TensorDict and read back as indices), and no NaN."""

    def __init__(self, leaf_spec: Any, key: tuple[str, ...]) -> None:
        widened = _widened_one_hot(leaf_spec)
        if widened is not None:
            raise StackRefusal(
                f"the stack cannot take this observation: the observation_spec[{'/'.join(key)!r}] it declares is "
                f"{widened}, which no value of its own fits (its is_in refuses every output of the stack: "
                "CatFrames over a one-hot Discrete leaf widens the vector and keeps the categories)"
            )
        try:
            read = np.asarray(leaf_spec.to_numpy(leaf_spec.zero(), safe=False))
        except Exception as exc:
            raise StackRefusal(unreadable_spec(leaf_spec, key, exc)) from exc
        dtype = read.dtype
        if dtype.kind == "f":
            low, high = -np.inf, np.inf
        elif dtype.kind in "iu":
            low, high = np.iinfo(dtype).min, np.iinfo(dtype).max
        else:
            low, high = 0, 1
        super().__init__(low, high, read.shape, dtype)  # type: ignore[arg-type]
        self.leaf_spec = leaf_spec
        self.key = key

    def contains(self, x: Any) -> bool:
        import torch

        value = np.asarray(x)
        if value.dtype.kind == "f" and bool(np.isnan(value).any()):
            # NaN marks an observation that is unavailable (TorchRL's native auto-reset): no
            # declared space holds it, although an unbounded spec's is_in looks at shape and dtype only
            return False
        try:
            encoded = self.leaf_spec.encode(torch.as_tensor(value))
            return bool(self.leaf_spec.is_in(encoded))
        except Exception:
            return False  # a value the spec cannot even encode is not an element of it

    def __repr__(self) -> str:
        name = "/".join(self.key)
        return (
            f"the env's observation_spec[{name!r}] ({type(self.leaf_spec).__name__}, "
            f"dtype {self.dtype}, shape {self.shape})"
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DeclaredLeafSpace) and repr(self) == repr(other) and super().__eq__(other)

    __hash__ = None  # type: ignore[assignment]


def declared_observation_space(layout: ObsLayout, native: Any) -> Any:
    """One sub-env's observation space as the stack's observation spec declares it, in the
    structure rlconform reads observations back into (a Dict for a Dict env). ``native`` (the
    wrapped env's space) is kept where the layout reads no leaf by its own spec: a Tuple,
    stacked into one entry."""
    if layout.tuple_len is not None:
        return native
    per_leaf = {leaf.path: _leaf_space(leaf, layout, native) for leaf in layout.leaves}
    if not layout.composite:
        return per_leaf[()]
    return _nest(per_leaf)


def _leaf_space(leaf: Any, layout: ObsLayout, native: Any) -> Any:
    """The declared space of one leaf; a non-tensor leaf (``NonTensor``, GymWrapper's spec for a
    ``Text`` leaf) declares no dtype or shape: its values are the env's own strings, checked
    against the wrapped env's leaf space."""
    from torchrl.data import NonTensor

    if isinstance(leaf.spec, NonTensor):
        space = native
        for name in leaf.path:
            space = space[name]
        return space
    return DeclaredLeafSpace(_one_sub_env(leaf.spec, layout.batch_shape), leaf.key)


def _one_sub_env(leaf_spec: Any, batch_shape: tuple[int, ...]) -> Any:
    """The leaf spec of sub-env 0 (the spec carries the env's batch dimensions)."""
    for _ in batch_shape:
        leaf_spec = leaf_spec[0]
    return leaf_spec


def _nest(per_leaf: dict[tuple[str, ...], Any]) -> Any:
    tree: dict[str, Any] = {}
    for path, space in per_leaf.items():
        node = tree
        for name in path[:-1]:
            node = node.setdefault(name, {})
        node[path[-1]] = space
    return _as_dict(tree)


def _as_dict(tree: dict[str, Any]) -> Any:
    return spaces.Dict({k: _as_dict(v) if isinstance(v, dict) else v for k, v in tree.items()})
