"""The expected-failures file: its format, what a key matches, and what strict mode does."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlconform.core.expected import ExpectedFailures, ExpectedFailuresError
from rlconform.core.verdict import Verdict

TEXT = """
# comment lines and blank lines are ignored

env.determinism                       draws from the global RNG (#12)
user:pkg:make_vec-transitions.exact   next-step mode is what we want
gymnasium.Async*-api.*                 waits on upstream
tests/test_x.py::test_rl[user:pkg:make_vec-flags.truncated]  by node id
"""


def test_keys_match_spec_ids_item_names_globs_and_node_ids() -> None:
    expected = ExpectedFailures.parse(TEXT, "xf.txt")
    assert [e.line for e in expected.entries] == [4, 5, 6, 7]
    assert expected.match("anything", "env.determinism").reason == "draws from the global RNG (#12)"  # type: ignore[union-attr]
    assert expected.match("user:pkg:make_vec", "transitions.exact") is not None
    assert expected.match("user:pkg:other", "transitions.exact") is None
    assert expected.match("gymnasium.AsyncVectorEnv.NextStep", "api.shape") is not None
    assert expected.match("gymnasium.SyncVectorEnv.NextStep", "api.shape") is None
    assert expected.match("user:pkg:make_vec", "flags.truncated") is not None
    assert expected.unused() == []


def test_unused_entries_are_listed_in_file_order() -> None:
    expected = ExpectedFailures.parse(TEXT, "xf.txt")
    expected.match("x", "env.determinism")
    assert [e.origin for e in expected.unused()] == ["xf.txt:5", "xf.txt:6", "xf.txt:7"]


@pytest.mark.parametrize("text", ["env.determinism\n", "env.determinism   \n"])
def test_an_entry_needs_a_reason(text: str) -> None:
    with pytest.raises(ExpectedFailuresError, match=r"xf.txt:1: entry 'env.determinism' has no reason"):
        ExpectedFailures.parse(text, "xf.txt")


def test_a_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ExpectedFailuresError, match="cannot read expected-failures file"):
        ExpectedFailures.load(tmp_path / "nope.txt")


def test_apply_marks_failures_and_strict_mode_fails_unexpected_passes() -> None:
    failing = Verdict("s", "env.determinism", "fail", "differs")
    passing = Verdict("s", "env.determinism", "pass")
    lenient = ExpectedFailures.parse(TEXT, "xf.txt")
    lenient.apply(failing)
    lenient.apply(passing)
    assert failing.ok and failing.expected == "draws from the global RNG (#12) (xf.txt:4)"
    assert passing.status == "pass" and "but passed" in passing.message
    strict_pass = Verdict("s", "env.determinism", "pass")
    ExpectedFailures.parse(TEXT, "xf.txt", strict=True).apply(strict_pass)
    assert strict_pass.status == "fail" and not strict_pass.ok
    assert "expected to fail (xf.txt:4: draws from the global RNG (#12)) but passed" in strict_pass.message


def test_a_known_violation_stays_known() -> None:
    known = Verdict("s", "env.determinism", "fail", "differs", known="documented by the library")
    ExpectedFailures.parse(TEXT).apply(known)
    assert known.expected is None and known.ok


# ------------------------------------------------------------------ pinned signatures (issue 25)

PINNED = "user:pkg:make_vec-transitions.exact#1a2b3c4d   reward one step late, upstream (#7)\n"


def _failing(signature: str | None, spec: str = "transitions.exact") -> Verdict:
    return Verdict("user:pkg:make_vec", spec, "fail", "violation", signature=signature)


def test_a_pinned_entry_excuses_only_the_failure_with_its_signature() -> None:
    expected = ExpectedFailures.parse(PINNED, "xf.txt")
    (entry,) = expected.entries
    assert entry.pin == "1a2b3c4d" and entry.check_key == "user:pkg:make_vec-transitions.exact"
    same = _failing("transitions.exact#1a2b3c4d")
    assert expected.apply(same) is entry and same.ok
    assert expected.warnings() == []
    other = _failing("transitions.exact#99999999")
    assert expected.apply(other) is None and not other.ok and other.expected is None
    (warning,) = expected.warnings()
    assert warning.startswith("expected-failure entry 'user:pkg:make_vec-transitions.exact#1a2b3c4d' (xf.txt:1)")
    assert "failed with signature transitions.exact#99999999: it fails differently, so it is not excused" in warning
    unexercised = Verdict("user:pkg:make_vec", "transitions.exact", "not_exercised", "no example")
    assert ExpectedFailures.parse(PINNED).apply(unexercised) is None and not unexercised.ok


def test_a_pinned_entry_that_passes_is_an_unexpected_pass_and_a_pin_is_no_glob() -> None:
    passing = Verdict("user:pkg:make_vec", "transitions.exact", "pass")
    ExpectedFailures.parse(PINNED, "xf.txt", strict=True).apply(passing)
    assert passing.status == "fail" and "but passed" in passing.message
    # only '#' and 8 hex digits pin; any other '#' is part of the key
    (entry,) = ExpectedFailures.parse("weird#key  why\n").entries
    assert entry.pin is None and entry.check_key == "weird#key"


def test_a_stale_strict_entry_is_not_offered_again_as_a_line_to_add() -> None:
    """Issue 34: a strict entry whose failure now passes failed the check ("remove the entry") and
    was also listed under "to expect a failure, add its line": its line is the stale one."""
    from rlconform.core.expected import unlisted

    passing = Verdict("user:pkg:make_vec", "transitions.exact", "pass")
    other = _failing("flags.truncated#0badc0de", spec="flags.truncated")
    expected = ExpectedFailures.parse(PINNED, "xf.txt", strict=True)
    for verdict in (passing, other):
        expected.apply(verdict)
    assert passing.status == "fail" and "remove the entry" in passing.message
    assert unlisted([passing, other], expected) == [other]


def test_every_unlisted_failure_gets_a_paste_ready_line_that_expects_it() -> None:
    from rlconform.core.expected import PASTE_REASON, paste_line, unlisted

    listed = _failing("transitions.exact#1a2b3c4d")
    new = _failing("flags.truncated#0badc0de", spec="flags.truncated")
    error = Verdict("user:pkg:make_vec", "api.shape", "error", "the worker died")
    known = Verdict("user:pkg:make_vec", "env.determinism", "fail", "x", known="documented")
    verdicts = [listed, new, error, known, Verdict("user:pkg:make_vec", "flags.terminated", "pass")]
    expected = ExpectedFailures.parse(PINNED, "xf.txt")
    for verdict in verdicts:
        expected.apply(verdict)
    lines = [paste_line(verdict) for verdict in unlisted(verdicts)]
    assert lines == [
        f"user:pkg:make_vec-flags.truncated#0badc0de  {PASTE_REASON}",
        f"user:pkg:make_vec-api.shape  {PASTE_REASON}",  # no signature: not pinned
    ]
    # pasted into the file, each line excuses its failure, and only it
    pasted = ExpectedFailures.parse(PINNED + "\n".join(lines) + "\n", "xf.txt")
    again = [
        _failing("flags.truncated#0badc0de", spec="flags.truncated"),
        _failing("flags.truncated#11111111", spec="flags.truncated"),
    ]
    pasted.apply(again[0])
    pasted.apply(again[1])
    assert again[0].ok and not again[1].ok
