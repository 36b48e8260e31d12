"""Which systems and specs a run checks: glob patterns on ids, and the specs a user leaves out.

The CLI (``--spec``, ``--skip-spec``) and the pytest plugin (``--rlconform-specs``,
``--rlconform-skip-spec``) select the same way and refuse the same bad input; each front end turns
a :class:`SelectionError` into its own kind of usage error.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from typing import Protocol, TypeVar


class _HasId(Protocol):
    @property
    def id(self) -> str: ...


Item = TypeVar("Item", bound=_HasId)


class SelectionError(ValueError):
    """A pattern that selects nothing the user meant: bad input, said before any check runs."""


def matching(items: Sequence[Item], patterns: Sequence[str] | None) -> list[Item]:
    """``items`` whose id matches one of ``patterns`` (a glob, case-sensitive as ids are, or the id
    itself); all of them when there are no patterns."""
    if not patterns:
        return list(items)
    return [item for item in items if any(item.id == p or fnmatch.fnmatchcase(item.id, p) for p in patterns)]


def check_skip_patterns(selected: Sequence[Item], skip_patterns: Sequence[str], option: str) -> None:
    """Each pattern of ``option`` (the user's skip option, as they typed it) must match a selected
    spec: one that matches none is a typo, and silently skipping nothing would hide it."""
    for pattern in skip_patterns:
        if not matching(selected, [pattern]):
            raise SelectionError(f"{option} {pattern!r} matches no selected spec")


def without_skipped(specs: Sequence[Item], skip_patterns: Sequence[str], option: str) -> tuple[list[Item], list[Item]]:
    """``specs`` without those ``skip_patterns`` leave out, and those; leaving none to check is bad
    input (the run would check nothing and report nothing wrong)."""
    skipped = matching(specs, skip_patterns) if skip_patterns else []
    kept = [spec for spec in specs if spec not in skipped]
    if skipped and not kept:
        raise SelectionError(f"{option} leaves no spec to check (it matches all of {', '.join(s.id for s in specs)})")
    return kept, skipped
