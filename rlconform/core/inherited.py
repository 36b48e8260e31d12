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

import re
from collections.abc import Sequence
from typing import Any

from rlconform.core.family import get_family
from rlconform.core.runner import execute
from rlconform.core.spec import Spec, Violation
from rlconform.core.system import System, get_system


def inherited_from(system: System, spec: Spec, case: Any, run: Any, violations: Sequence[Violation]) -> str | None:
    """Why the failure of ``spec`` on ``case`` is the library's (None: it is the user's).

    The library alone fails the same way when it shows every kind of violation the user's
    stack shows, or, where the user's layer words a violation otherwise (a wrapper that
    renames a call in the message), when it fails the spec at every place the user's stack
    does: the same sub-env at the same agent step (or call) of the same minimal case."""
    if system.kind != "user" or not violations or run is None:
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
            if getattr(replayed, "usable", True) is False:
                continue  # the library cannot run this case: nothing says the failure is its own
            outcome = spec.check(replayed)
        except Exception:
            continue  # the library cannot run this case: nothing says the failure is its own
        if _same_failure(violations, outcome.violations):
            row = family.findings_row(library_id, spec.id)
            return f"{library_id} fails it the same way on its own" + (f" (FINDINGS {row})" if row else "")
    return _built_like(family, run, spec)


def _built_like(family: Any, run: Any, spec: Spec) -> str | None:
    """The library's defect by how the user's object is built: made of the library's own classes
    only, like a bundled system that shows a FINDINGS defect on this spec (a TorchRL slice sampler
    told episode ends by ``end_key`` alone, sized otherwise than the bundled one: T3)."""
    if not family.built_from_library_classes(run):
        return None
    for library_id in family.library_systems(run):
        row = family.findings_row(library_id, spec.id)
        if row:
            return (
                f"built from the library's own classes as {library_id} is, whose defect on this spec is FINDINGS {row}"
            )
    return None


def _same_failure(own: Sequence[Violation], library: Sequence[Violation]) -> bool:
    """Every kind of the user's violations among the library's; or, where the user's stack words
    one otherwise (its observations read through a transform, a call of its own layer named),
    each of its violations at a place where the library has one that opens the same way."""
    if not library:
        return False
    if {_hang_key(v.kind) for v in own} <= {_hang_key(v.kind) for v in library}:
        return True
    at = {(_place(v), _opening(v)) for v in library}
    return all((_place(v), _opening(v)) in at for v in own)


#: a call that hung, however its hang was told: seen deadlocked before its limit, or stopped at it
#: (rlconform.core.hangs.close_hang: which one a run shows depends on when the deadlock is seen)
_HUNG_CALL = re.compile(r"^(.*?\)) (?:deadlocked\b|did not answer within\b).*$")


def _hang_key(kind: str) -> str:
    """A violation's kind, a hung call's told as "<call> hung"."""
    return _HUNG_CALL.sub(r"\1 hung", kind)


def _place(v: Violation) -> tuple[int | None, int | None, int | None]:
    """Where a violation is: the sub-env and the agent step (or, for a reset, the call)."""
    return (v.env, v.agent_step, None if v.agent_step else v.call)


#: how many words of a violation's kind say what happened, before what differs with the stack
#: (the call's source, the observation as decoded through a transform)
OPENING_WORDS = 4


def _opening(v: Violation) -> str:
    """The first words of a violation's kind, what stands in brackets left out (a call's
    arguments, a sampler's parameters: the user's own)."""
    kind = v.kind
    while True:
        shorter = re.sub(r"\([^()]*\)|\[[^\[\]]*\]", "", kind)
        if shorter == kind:
            break
        kind = shorter
    return " ".join(kind.split()[:OPENING_WORDS])


def _takes(system: System, case: Any) -> bool:
    """Whether the library system can be given ``case`` as drawn for the user's system: its
    number of sub-envs and its time limit. The observation and action kinds a bundled system
    is searched with are a choice of the search, not a limit of the library (DummyVecEnv runs
    the image observations a user's VecTransposeImage over it is drawn with); a replay that
    cannot build or run is not used."""
    caps = system.capabilities
    script = getattr(case, "script", None)
    num_envs = getattr(case, "num_envs", None)
    if num_envs is None:
        return False
    # a case with no script (a ready-made vector env's: seeds and steps) has no time limit to fit
    if script is not None and caps.time_limit == "forbidden" and script.max_episode_steps is not None:
        return False
    if script is not None and caps.time_limit == "required" and script.max_episode_steps is None:
        return False
    return caps.min_envs <= num_envs <= caps.max_envs
