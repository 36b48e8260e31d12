"""Reading a reference observation that a stack flattened into one vector.

Observation-flattening wrappers (Gymnasium's ``FlattenObservation``, TorchRL's
``FlattenObservation`` over a multi-dimensional Box) keep every value of the observation and
change only its layout, following ``gymnasium.spaces.flatten``. Unflattening with the env's own
space gives back the observation the env returned, so its stamp survives and the transition it
belongs to is still identified, not reported as garbage.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rlconform.envs.spaces import Decoded, Garbage, ObsSpec


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
