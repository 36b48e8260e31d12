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


def hits(findings: list[Finding]) -> list[Finding]:
    """The findings that hold: every unmasked one, and each masked one whose mask has a True.

    All masks are read with one host synchronisation (``torch.stack(...).tolist()``), whatever the
    number of findings: a check that asked ``bad.any()`` per finding would stall a GPU env once per
    spec per step."""
    masked = [f for f in findings if f.bad is not None]
    if not masked:
        return list(findings)
    import torch

    flags = iter(torch.stack([f.bad.any() for f in masked]).tolist())
    return [f for f in findings if f.bad is None or next(flags)]
