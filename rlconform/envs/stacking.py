"""Batching single observations into the structure a vector env returns (fresh arrays each time)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np


def stack_obs(space: Any, observations: Sequence[Any]) -> Any:
    """Stack per-sub-env observations following ``space`` (a single-env Gymnasium space)."""
    from gymnasium import spaces

    if isinstance(space, spaces.Dict):
        return {key: stack_obs(sub, [o[key] for o in observations]) for key, sub in space.spaces.items()}
    if isinstance(space, spaces.Tuple):
        return tuple(stack_obs(sub, [o[i] for o in observations]) for i, sub in enumerate(space.spaces))
    return np.stack([np.asarray(o, dtype=space.dtype) for o in observations])
