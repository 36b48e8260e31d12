"""Selecting systems and specs by pattern, and leaving specs out (rlconform.core.selection): the
CLI and the pytest plugin both select this way and refuse the same bad input."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from rlconform.core.selection import SelectionError, check_skip_patterns, matching, without_skipped


@dataclass(frozen=True)
class Named:
    id: str


ITEMS = [Named("flags.terminated"), Named("flags.truncated"), Named("transitions.exact")]


def test_patterns_are_globs_or_ids_and_none_selects_all() -> None:
    assert matching(ITEMS, None) == ITEMS and matching(ITEMS, []) == ITEMS
    assert matching(ITEMS, ["flags.*"]) == ITEMS[:2]
    assert matching(ITEMS, ["transitions.exact", "flags.truncated"]) == ITEMS[1:]
    assert matching(ITEMS, ["FLAGS.*"]) == []  # ids are case-sensitive


def test_a_skip_pattern_that_matches_no_selected_spec_is_bad_input() -> None:
    check_skip_patterns(ITEMS, ["flags.*"], "--skip-spec")
    with pytest.raises(SelectionError, match=r"--skip-spec 'nosuch\.\*' matches no selected spec"):
        check_skip_patterns(ITEMS, ["flags.*", "nosuch.*"], "--skip-spec")


def test_skipping_leaves_specs_out_and_names_them() -> None:
    assert without_skipped(ITEMS, [], "--skip-spec") == (ITEMS, [])
    assert without_skipped(ITEMS, ["flags.*"], "--skip-spec") == (ITEMS[2:], ITEMS[:2])


def test_skipping_every_spec_is_bad_input() -> None:
    with pytest.raises(SelectionError, match="--rlconform-skip-spec leaves no spec to check"):
        without_skipped(ITEMS, ["*"], "--rlconform-skip-spec")
