"""The RLCONFORM_* environment variables, read and validated in one place.

A bad value is the user's input, not a verdict on their system and not a crash of rlconform: the
CLI and the pytest plugin call :func:`validate` before anything runs, and a bad value stops them
with one line (CLI: exit status 2; plugin: a pytest usage error) that names the variable, its
value and what it must be. The readers below are what the rest of rlconform uses, so that a
value is parsed the same way wherever it is read.
"""

from __future__ import annotations

import math
import os

PROFILE = "RLCONFORM_PROFILE"
SEED = "RLCONFORM_SEED"
CALL_TIMEOUT = "RLCONFORM_CALL_TIMEOUT"
SYSTEM_TIMEOUT = "RLCONFORM_SYSTEM_TIMEOUT"
EPISODE_SECONDS_VARIABLE = "RLCONFORM_EPISODE_SECONDS"

#: seconds a probe may step one episode looking for its end (RLCONFORM_EPISODE_SECONDS overrides
#: it): episodes are bounded by time, not by a step count, so that a 200-step MountainCar and a
#: many-thousand-step Atari game reach their ends alike (env-author mode, ready-made vector envs)
EPISODE_SECONDS = 5.0


def episode_seconds() -> float:
    """The episode budget of the probes that drive an env to an episode end."""
    return float(os.environ.get(EPISODE_SECONDS_VARIABLE, EPISODE_SECONDS))


class ConfigError(ValueError):
    """An RLCONFORM_* variable holds a value rlconform cannot use; the message is one line."""


def _raw(name: str) -> str | None:
    """The variable's value; None when unset or empty (an empty value means "the default")."""
    value = os.environ.get(name)
    return value if value else None


def seconds(name: str, default: float) -> float:
    """A positive, finite number of seconds from ``name`` (``default`` when unset)."""
    value = _raw(name)
    if value is None:
        return default
    try:
        number = float(value)
    except ValueError:
        raise ConfigError(f"{name}={value!r} is not a number of seconds") from None
    if not math.isfinite(number) or number <= 0:
        raise ConfigError(f"{name}={value!r} is not a number of seconds (it must be positive and finite)")
    return number


def seed() -> int | None:
    """The seed of non-derandomized searches from RLCONFORM_SEED (None when unset)."""
    value = _raw(SEED)
    if value is None:
        return None
    try:
        number = int(value)
    except ValueError:
        raise ConfigError(f"{SEED}={value!r} is not an integer seed") from None
    return number


def profile_name() -> str | None:
    """The profile named by RLCONFORM_PROFILE (None when unset), checked against the profiles."""
    from rlconform.core.profiles import PROFILES

    value = _raw(PROFILE)
    if value is not None and value not in PROFILES:
        raise ConfigError(f"{PROFILE}={value!r} is not a profile; known: {', '.join(sorted(PROFILES))}")
    return value


def validate() -> None:
    """Raise :class:`ConfigError` for the first RLCONFORM_* variable with an unusable value."""
    profile_name()
    seed()
    seconds(CALL_TIMEOUT, 1.0)
    seconds(SYSTEM_TIMEOUT, 1.0)
