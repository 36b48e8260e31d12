"""What a vectorized check reports: a spec, the sub-envs that broke it (a bool mask), a message."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Finding:
    """One spec broken at one call by the sub-envs where ``bad`` is True.

    ``bad`` is a bool tensor of shape ``(num_envs,)`` on the env's device, or None when the
    violation is not per sub-env (a wrong type, a missing key)."""

    spec: str
    message: str
    bad: Any = None
