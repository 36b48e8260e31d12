"""The observation transforms of a user's ``TransformedEnv`` that rlconform reads back (issue 24).

Every reference observation carries a stamp; a transform that rewrites the observation leaves
none that decodes, and the specs that identify observations by their stamp
(``terminal.final_obs``, ``continuity.fresh_first_obs``) have nothing to check. Two of TorchRL's
observation transforms have an exact reading back, taken from the transform itself:

- ``ObservationNorm(loc, scale)`` is affine: its inverse (``(obs - loc) / scale``, or
  ``obs * scale + loc`` with ``standard_normal=True``, as its own ``_inv_apply_transform``
  computes) gives the env's values back, with the transform's own ``loc`` and ``scale``;
- ``CatFrames(N, dim=-1)`` stacks the last N frames along the last dimension, as SB3's
  VecFrameStack does: the run's semantics say so (``frame_stack``) with the padding CatFrames
  puts before an episode's first step (``"same"``: copies of the first frame; ``"constant"``:
  ``padding_value``), and :func:`rlconform.envs.decode.decode_stacked` reads the newest frame and
  checks the older ones.

Only the transform chain of the ``TransformedEnv`` the factory returns is read (a ``Compose`` is
flattened), for the observation leaves rlconform reads back
(:class:`~rlconform.libraries.torchrl.tensordicts.ObsLayout`); a transform that writes a leaf
under another key leaves that leaf as it is. A ``CatFrames`` along another dimension, or two of
them on one leaf, is not described: those observations stay undecodable.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from rlconform.libraries.torchrl.tensordicts import Key, ObsLayout


@dataclass(frozen=True)
class Norm:
    """One ``ObservationNorm``'s inverse, in float64."""

    loc: np.ndarray
    scale: np.ndarray
    standard_normal: bool

    def invert(self, value: Any) -> np.ndarray:
        array = np.asarray(value, dtype=np.float64)
        if self.standard_normal:
            return array * self.scale + self.loc
        return (array - self.loc) / self.scale


@dataclass(frozen=True)
class Stacking:
    """A ``CatFrames`` along the last dimension, its padding in env units."""

    n: int
    #: ``"same"`` or ``"constant"`` (:data:`rlconform.envs.decode.PADDINGS`)
    padding: str
    padding_value: float = 0.0


@dataclass(frozen=True)
class LeafReading:
    """How one observation leaf is read back into env units: the ``ObservationNorm`` transforms applied
    to each frame before the ``CatFrames`` (if any) and those applied after it, in chain order."""

    before: tuple[Norm, ...] = ()
    stacking: Stacking | None = None
    after: tuple[Norm, ...] = ()
    #: a CatFrames this reading cannot describe, or a transform of a leaf whose values are
    #: encoded (one-hot), rewrites the leaf: it is left as it is
    unreadable: bool = False

    def to_env_units(self, value: Any) -> Any:
        if not self.before and not self.after:
            return value
        array = np.asarray(value, dtype=np.float64)
        for norm in reversed(self.after):
            array = norm.invert(array)
        if self.before:
            n = self.stacking.n if self.stacking is not None else 1
            # the frames side by side along a new axis, so each frame is inverted as a frame
            frames = array.reshape(*array.shape[:-1], n, array.shape[-1] // n)
            for norm in reversed(self.before):
                frames = np.stack([norm.invert(frames[..., i, :]) for i in range(n)], axis=-2)
            array = frames.reshape(array.shape)
        return array


@dataclass(frozen=True)
class ObsReading:
    """How each leaf of a layout is read back into env units (a leaf no transform rewrites: as is)."""

    leaves: dict[Key, LeafReading]
    composite: bool

    @property
    def identity(self) -> bool:
        return all(not r.before and not r.after for r in self.leaves.values())

    def to_env_units(self, value: Any) -> Any:
        """One sub-env's observation (as :meth:`ObsLayout.read` returns it) in env units."""
        if self.identity or value is None:
            return value
        if not self.composite:
            return self.leaves[()].to_env_units(value)
        return _map_paths(value, (), self.leaves)

    def stacking(self) -> dict[str, Any]:
        """The run's frame-stacking semantics (``frame_stack``, its padding), when every leaf is
        stacked alike; empty otherwise."""
        readings = list(self.leaves.values())
        stacks = {r.stacking for r in readings}
        if not readings or len(stacks) != 1 or any(r.unreadable for r in readings):
            return {}
        (stack,) = stacks
        if stack is None:
            return {}
        out: dict[str, Any] = {"frame_stack": stack.n, "frame_stack_padding": stack.padding}
        if stack.padding == "constant":
            out["frame_stack_padding_value"] = stack.padding_value
        return out


def _map_paths(value: Any, path: Key, leaves: dict[Key, LeafReading]) -> Any:
    if isinstance(value, dict):
        return {k: _map_paths(v, (*path, k), leaves) for k, v in value.items()}
    reading = leaves.get(path)
    return value if reading is None else reading.to_env_units(value)


def transform_chain(env: Any) -> list[Any]:
    """The transforms of ``env`` if it is a ``TransformedEnv``, in the order they apply to the
    data (a ``Compose`` flattened); none otherwise."""
    from torchrl.envs import Compose, TransformedEnv

    if not isinstance(env, TransformedEnv):
        return []
    chain: list[Any] = []

    def flatten(transform: Any) -> None:
        if isinstance(transform, Compose):
            for inner in transform.transforms:
                flatten(inner)
        else:
            chain.append(transform)

    flatten(env.transform)
    return chain


def obs_reading(env: Any, layout: ObsLayout) -> ObsReading:
    """How the observation leaves of ``layout`` are read back from ``env``'s transforms."""
    if layout.tuple_len is not None:  # one entry stacks the Tuple's elements: nothing read back
        return ObsReading({}, composite=False)
    chain = transform_chain(env)
    leaves = {leaf.path: _leaf_reading(chain, leaf.key, leaf.spec, layout) for leaf in layout.leaves}
    return ObsReading(leaves, layout.composite)


def _leaf_reading(chain: list[Any], key: Key, leaf_spec: Any, layout: ObsLayout) -> LeafReading:
    """The reading of the leaf under ``key``. Only a leaf whose spec reads its values back as
    they are (``Bounded``, ``Unbounded``: a Box) is read through the transforms; a one-hot
    encoded leaf (``MultiOneHot``) or a ``Binary`` one is read back by its spec, after them."""
    from torchrl.data import Bounded, Unbounded
    from torchrl.envs import CatFrames, ObservationNorm

    touching = [t for t in chain if isinstance(t, (CatFrames, ObservationNorm)) and _rewrites(t, key)]
    if not touching:
        return LeafReading()
    if not isinstance(leaf_spec, (Bounded, Unbounded)):
        return UNREADABLE
    shape = tuple(int(d) for d in leaf_spec.shape)[len(layout.batch_shape) :]
    norms: list[Norm] = []
    before: tuple[Norm, ...] = ()
    stacking: Stacking | None = None
    for transform in touching:
        if isinstance(transform, ObservationNorm):
            norm = _norm(transform)
            if norm is not None:
                norms.append(norm)
        else:
            if stacking is not None or transform.dim != -1 or transform.padding not in ("same", "constant"):
                return UNREADABLE
            before, norms = tuple(norms), []
            if transform.padding == "same":
                stacking = Stacking(int(transform.N), "same")
            else:
                value = _padding_in_env_units(float(transform.padding_value), before)
                if value is None:
                    return UNREADABLE
                stacking = Stacking(int(transform.N), "constant", value)
    reading = LeafReading(before, stacking, tuple(norms))
    return reading if _fits(reading, shape) else LeafReading(stacking=stacking)


#: a leaf rewritten by a transform this module cannot read back: left as it is, undecodable
UNREADABLE = LeafReading(unreadable=True)


def _rewrites(transform: Any, key: Key) -> bool:
    """Whether ``transform`` reads ``key`` and writes its result back under ``key``."""
    ins = [_as_key(k) for k in transform.in_keys]
    outs = [_as_key(k) for k in transform.out_keys]
    return any(i == key and o == key for i, o in zip(ins, outs, strict=False))


def _as_key(key: Any) -> Key:
    return tuple(key) if isinstance(key, tuple) else (key,)


def _norm(transform: Any) -> Norm | None:
    """The inverse of an ``ObservationNorm``; None while its statistics are not initialised."""
    if not transform.initialized:
        return None
    loc = np.asarray(transform.loc.detach().cpu().numpy(), dtype=np.float64)
    scale = np.asarray(transform.scale.detach().cpu().numpy(), dtype=np.float64)
    return Norm(loc, scale, bool(transform.standard_normal))


def _padding_in_env_units(value: float, before: tuple[Norm, ...]) -> float | None:
    """A constant padding frame read back through the normalisations applied before the stacking;
    None where it is not one constant any more (a per-component ``loc`` or ``scale``)."""
    frame = np.asarray(value, dtype=np.float64)
    for norm in reversed(before):
        frame = norm.invert(frame)
    if frame.size == 0 or not np.all(frame == frame.reshape(-1)[0]):
        return None
    return float(frame.reshape(-1)[0])


def _fits(reading: LeafReading, shape: tuple[int, ...]) -> bool:
    """Whether every inverse's ``loc``/``scale`` applies to one sub-env's leaf of ``shape`` (its
    frames, for those before the stacking) without changing its shape (statistics with the batch
    dimensions, say, are not inverted)."""
    frame = shape
    if reading.stacking is not None:
        if not shape or shape[-1] % reading.stacking.n:
            return False
        frame = (*shape[:-1], shape[-1] // reading.stacking.n)
    try:
        for norms, wanted in ((reading.before, frame), (reading.after, shape)):
            for norm in norms:
                if np.broadcast_shapes(norm.loc.shape, norm.scale.shape, wanted) != wanted:
                    return False
    except ValueError:
        return False
    return True
