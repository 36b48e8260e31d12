"""Reading a reference observation that a stack flattened into one vector, or transposed.

Observation-flattening wrappers (Gymnasium's ``FlattenObservation``, TorchRL's
``FlattenObservation`` over a multi-dimensional Box) keep every value of the observation and
change only its layout, following ``gymnasium.spaces.flatten``. Unflattening with the env's own
space gives back the observation the env returned, so its stamp survives and the transition it
belongs to is still identified, not reported as garbage. Image wrappers that move the channels
first for PyTorch (SB3's ``VecTransposeImage``: (height, width, channels) to (channels, height,
width)) keep every value too; moving the channels back gives the env's observation. A small
Discrete observation flattened (``FlattenObservation``) or one-hot encoded (TorchRL's
``GymWrapper``) is a vector of ``n`` entries with a single 1 at its code: the same layout.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rlconform.envs.spaces import BoxObs, Decoded, Garbage, ObsSpec, SmallDiscreteObs


def decode_flattened(spec: ObsSpec, value: Any) -> Decoded | None:
    """The stamp of ``value`` read as ``gymnasium.spaces.flatten(spec.build(), obs)``; None when
    ``value`` is not a flat vector of that size (then it is no flattened layout at all)."""
    from gymnasium import spaces

    if hasattr(value, "detach"):  # a torch tensor
        value = value.detach().cpu().numpy()
    if not isinstance(value, np.ndarray) or value.ndim != 1:
        return None
    space = spec.build()
    if value.size != spaces.flatdim(space) or (spec.kind == "box" and value.shape == space.shape):
        return None
    try:
        unflat = spaces.unflatten(space, value)
    except Exception as exc:  # a vector of the right size that is no flattened observation
        return Garbage(f"a flat vector that does not unflatten: {exc}")
    return spec.decode(unflat)


def channels_first(shape: tuple[int, ...]) -> tuple[int, ...]:
    """``shape`` (height, width, channels) with its channels moved first."""
    return (shape[-1], *shape[:-1])


def decode_transposed(spec: ObsSpec, value: Any) -> Decoded | None:
    """The stamp of ``value`` read as the env's (height, width, channels) observation with its
    channels moved first; None when ``spec`` is no 3-dimensional Box or ``value`` does not have the
    channel-first shape (then it is no transposed layout at all)."""
    if not isinstance(spec, BoxObs) or len(spec.shape) != 3:
        return None
    if hasattr(value, "detach"):  # a torch tensor
        value = value.detach().cpu().numpy()
    if not isinstance(value, np.ndarray) or value.shape == spec.shape or value.shape != channels_first(spec.shape):
        return None
    return spec.decode(np.moveaxis(value, 0, -1))


def decode_one_hot(spec: SmallDiscreteObs, value: Any) -> int | Garbage | None:
    """The code of ``value`` read as the one-hot vector of a :class:`SmallDiscreteObs` code
    (``gymnasium.spaces.flatten`` of ``Discrete(n)``, of any numeric or bool dtype), or why it is
    none (zero or several ones, another value than 0 and 1); None when ``value`` is not a vector
    of ``n`` entries (then it is no one-hot layout at all)."""
    if hasattr(value, "detach"):  # a torch tensor
        value = value.detach().cpu().numpy()
    if not isinstance(value, np.ndarray) or value.shape != (spec.n,):
        return None
    if not (np.issubdtype(value.dtype, np.number) or value.dtype == np.bool_):
        return Garbage(f"a one-hot vector of dtype {value.dtype}, expected numbers")
    numbers = value.astype(np.float64)
    if not np.all((numbers == 0) | (numbers == 1)):
        return Garbage(f"a vector of {spec.n} entries that is not one-hot: entries other than 0 and 1")
    ones = np.flatnonzero(numbers)
    if ones.size == 0:
        return Garbage(f"a one-hot vector of {spec.n} entries with no 1 (a zero-filled or uninitialised buffer)")
    if ones.size > 1:
        return Garbage(f"a one-hot vector of {spec.n} entries with {ones.size} ones (at {ones[:4].tolist()})")
    if ones[0] == 0:
        return Garbage("a one-hot vector with its 1 at index 0: code 0 is never written")
    return int(ones[0])
