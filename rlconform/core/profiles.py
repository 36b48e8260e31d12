"""Hypothesis settings profiles: fast (local), ci (derandomized), thorough (nightly).

Systems that run their envs in worker processes cost far more per example, so each profile gives
them a smaller budget; the report prints the budget and seed each search used.
"""

from __future__ import annotations

import contextlib
import os
import random
from collections.abc import Iterator
from dataclasses import dataclass

from hypothesis import HealthCheck, Phase, settings

from rlconform.core.config import profile_name


@dataclass(frozen=True)
class Profile:
    name: str
    max_examples: int
    max_examples_out_of_process: int
    derandomize: bool
    description: str
    #: examples shrinking may run after the first failure (in-process, with worker processes)
    shrink_examples: int = 400
    shrink_examples_out_of_process: int = 150
    #: wall-clock limit on shrinking one failure. A shrink cut by the clock stops at a different
    #: candidate on a loaded machine (another minimal case, message and reproducer), so derandomized
    #: profiles bound shrinking by shrink_examples and keep only Hypothesis' own limit as a safety net
    shrink_seconds: float = 30.0

    def examples_for(self, out_of_process: bool) -> int:
        return self.max_examples_out_of_process if out_of_process else self.max_examples

    def shrink_examples_for(self, out_of_process: bool) -> int:
        return self.shrink_examples_out_of_process if out_of_process else self.shrink_examples


#: Hypothesis' own limit on shrinking one failure (hypothesis.internal.conjecture.engine)
HYPOTHESIS_SHRINK_SECONDS = 300.0

PROFILES = {
    "fast": Profile("fast", 20, 8, False, "quick local feedback; a fresh random seed each session"),
    "ci": Profile(
        "ci",
        40,
        20,
        True,
        "derandomized: the same examples and verdicts on every run",
        shrink_seconds=HYPOTHESIS_SHRINK_SECONDS,
    ),
    # one run per release in the compatibility matrix: derandomized like ci, fewer examples and a
    # short shrink (the matrix asks which verdicts change between releases, not for minimal cases),
    # bounded by examples, not seconds, so that its results are the same on every run
    "matrix": Profile(
        "matrix",
        8,
        3,
        True,
        "derandomized and small: one run per release of the compatibility matrix",
        # about what the former 3-second cut allowed on an unloaded machine, as a count
        shrink_examples=20,
        shrink_examples_out_of_process=5,
        shrink_seconds=HYPOTHESIS_SHRINK_SECONDS,
    ),
    "thorough": Profile(
        "thorough", 300, 60, False, "nightly depth; a fresh random seed each session", 2000, 300, 300.0
    ),
}

DEFAULT_PROFILE = "ci"


def get_profile(name: str | None) -> Profile:
    """The profile ``name``, else $RLCONFORM_PROFILE (validated by :mod:`rlconform.core.config`: a bad
    value raises its one-line ConfigError), else the default."""
    name = name or profile_name() or DEFAULT_PROFILE
    try:
        return PROFILES[name]
    except KeyError:
        raise KeyError(f"unknown profile {name!r}; known: {sorted(PROFILES)}") from None


_SESSION_SEED: int | None = None


def session_seed() -> int:
    """The seed non-derandomized profiles use in this process (RLCONFORM_SEED overrides it)."""
    global _SESSION_SEED
    if _SESSION_SEED is None:
        env = os.environ.get("RLCONFORM_SEED")
        _SESSION_SEED = int(env) if env else random.SystemRandom().randrange(2**32)
    return _SESSION_SEED


def hypothesis_settings(profile: Profile, out_of_process: bool, cap: int | None = None) -> settings:
    """The settings of one rlconform search (``cap``: at most that many examples, a spec's own
    limit: ``Spec.max_examples``).

    They derive from Hypothesis' built-in ``default`` profile, not from the profile the process
    loaded (``settings.default``): a user's conftest or ``--hypothesis-profile`` configures their
    own ``@given`` tests, and must not change which examples rlconform's searches draw (a backend
    such as ``hypothesis-urandom`` would make a derandomized search random)."""
    return settings(
        parent=settings.get_profile("default"),
        backend="hypothesis",
        max_examples=profile.examples_for(out_of_process)
        if cap is None
        else min(cap, profile.examples_for(out_of_process)),
        derandomize=profile.derandomize,
        database=None,
        deadline=None,
        print_blob=False,
        report_multiple_bugs=False,
        # the explain phase replays the failing example many times to annotate it; the
        # reproducer already shows the minimal case, and replays of process-based systems are costly
        phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink],
        suppress_health_check=[
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
            HealthCheck.filter_too_much,
            HealthCheck.large_base_example,
            HealthCheck.differing_executors,
        ],
    )


@contextlib.contextmanager
def shrink_time_limit(seconds: float) -> Iterator[None]:
    """Bound the time Hypothesis spends shrinking one failure.

    Hypothesis stops shrinking after MAX_SHRINKING_SECONDS (five minutes) and keeps the smallest
    failure found; the constant is module-level, so it is set for the duration of one search.
    If a future Hypothesis drops it, searches simply keep Hypothesis' own limit."""
    try:
        from hypothesis.internal.conjecture import engine
    except ImportError:  # pragma: no cover
        yield
        return
    previous = getattr(engine, "MAX_SHRINKING_SECONDS", None)
    if previous is None:
        yield
        return
    engine.MAX_SHRINKING_SECONDS = seconds  # type: ignore[assignment]
    try:
        yield
    finally:
        engine.MAX_SHRINKING_SECONDS = previous
