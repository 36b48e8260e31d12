"""Actions sent inside the system's own action space.

A plan's actions are values of the reference env's action space (a Box action spans [-1, 1]).
A stack may present the caller another space: ``RescaleAction(envs, -0.5, 0.5)`` declares
[-0.5, 0.5] and maps it linearly onto the env's bounds. A correct caller only sends elements of
the space the system declares, so sending the reference env's values there would blame the stack
for the caller's mistake (1.0 becomes 2.0 under that RescaleAction).

So, where a system declares a Box action space of the env's shape with other finite bounds or
dtype, each plan value is sent as the point at the same relative position in the system's space:
the documented inverse of ``RescaleAction``, and the identity wherever the system declares the
env's own space. The recipe keeps the plan value (in env units) as the transition's action, which
is what the env receives back through such a rescaling; the env's own log stays the ground truth.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from rlconform.envs.driver import ActionCodec
from rlconform.envs.spaces import ActionValue, BoxAction


def codec_in_space(action: Any, space: Any) -> ActionCodec | None:
    """A codec sending plan values of ``action`` (an ActSpec) as elements of ``space``, the
    system's single-env action space; None when the reference env's own encoding already is one
    (or when the space is not a bounded Box of the env's shape: sent as they are)."""
    from gymnasium import spaces

    if not isinstance(action, BoxAction) or not isinstance(space, spaces.Box):
        return None
    if tuple(space.shape) != (action.dims,):
        return None
    low = np.asarray(space.low, dtype=np.float64)
    high = np.asarray(space.high, dtype=np.float64)
    if not (np.all(np.isfinite(low)) and np.all(np.isfinite(high))):
        return None
    own = action.build()
    if np.array_equal(low, own.low) and np.array_equal(high, own.high) and space.dtype == own.dtype:
        return None
    dtype = space.dtype

    def single(value: ActionValue) -> np.ndarray:
        unit = np.asarray(value, dtype=np.float64).reshape(action.dims)
        point = low + (unit + 1.0) / 2.0 * (high - low)
        return np.clip(point, low, high).astype(dtype)

    def batch(values: Sequence[ActionValue]) -> np.ndarray:
        if not values:
            return np.zeros((0, action.dims), dtype=dtype)
        return np.stack([single(v) for v in values])

    return ActionCodec(single, batch)


def send_in_space(driver: Any, space: Any) -> None:
    """Make ``driver`` send its plan actions inside ``space`` (see the module docstring)."""
    if not getattr(driver.codec, "reference_units", False):
        return  # a user's own env's actions (env-author mode): already elements of its space
    codec = codec_in_space(driver.case.script.action, space)
    if codec is not None:
        driver.codec = codec
