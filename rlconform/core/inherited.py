"""Failures a user's stack inherits from the library under it.

A user's factory builds on a library (``SyncVectorEnv(env_fns)`` under a wrapper of the user's,
``DummyVecEnv`` under a ``VecEnvWrapper``): a defect of that library fails the user's system too,
and listed as the user's own it buries the failures that are. So a failure of a user's system is
replayed on each bundled system that is the library part of the user's stack (the family reads
them off the built object: ``Family.library_systems``), with the same minimal case: where the
library alone fails the spec with every kind of violation the user's failure has, the failure is
inherited, named with the library system and the FINDINGS.md row of its defect. A failure the
library alone does not show, or shows another way, stays the user's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rlconform.core.family import get_family
from rlconform.core.runner import execute
from rlconform.core.spec import Spec
from rlconform.core.system import System, get_system


def inherited_from(system: System, spec: Spec, case: Any, run: Any, kinds: Sequence[str]) -> str | None:
    """Why the failure of ``spec`` on ``case`` is the library's (None: it is the user's)."""
    if system.kind != "user" or not kinds or run is None:
        return None
    family = get_family(system.family)
    for library_id in family.library_systems(run):
        try:
            library = get_system(library_id)
        except Exception:
            continue  # not bundled in this catalog
        if library.skip_reason() is not None or not _takes(library, case):
            continue
        try:
            replayed = execute(library, case)
            outcome = spec.check(replayed)
        except Exception:
            continue  # the library cannot run this case: nothing says the failure is its own
        if set(kinds) <= {v.kind for v in outcome.violations}:
            row = family.findings_row(library_id, spec.id)
            return f"{library_id} fails it the same way on its own" + (f" (FINDINGS {row})" if row else "")
    return None


def _takes(system: System, case: Any) -> bool:
    """Whether the library system can run ``case`` as drawn for the user's system."""
    caps = system.capabilities
    script = getattr(case, "script", None)
    num_envs = getattr(case, "num_envs", None)
    if script is None or num_envs is None:
        return False
    return bool(caps.accepts(script)) and caps.min_envs <= num_envs <= caps.max_envs
