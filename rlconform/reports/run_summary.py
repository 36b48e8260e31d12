"""The screen ``rlconform run`` ends on: per library, what was checked and which defects it showed.

A whole run checks over a hundred bundled systems against sixty specs, and nearly every failure
it finds is a library defect FINDINGS.md already describes (G1 alone reaches two dozen Gymnasium
systems). Printed one failure at a time, with the systems x specs grid, that was thousands of
lines in which the one failure nobody had seen before was lost. So the run ends on this summary,
rendered from the results document like every report: per library (a system's id begins with it:
``gymnasium``, ``sb3``, ``torchrl``, ``envpool``, ``isaaclab``; the reference models are
``reference``), the systems checked, the specs passed and the failures grouped by the FINDINGS.md
row that explains them, each with the specs it fails and the systems it reaches (a long list as
one pattern: ``12 systems: gymnasium.AsyncVectorEnv.*``); then, flagged ``NEW``, the failures no
row explains (rlconform.core.findings), which are what a reader must look at. Every line fits
:data:`WIDTH` columns; the grid itself goes to a file (the Markdown and HTML reports).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from rlconform.core.progress import LINE_WIDTH, wrap
from rlconform.reports.document import Result, ResultsDocument
from rlconform.reports.results import summary_sentence, summary_status

#: the columns every line of the summary fits: a progress line's
WIDTH = LINE_WIDTH
#: how many systems a list names one by one before it becomes a pattern
NAMED_SYSTEMS = 2
#: how many it names when their pattern would say no more than the library (``torchrl.*``)
NAMED_WHEN_VAGUE = 6
#: how many groups of new failures the summary lists before it counts the rest
NEW_LISTED = 20


def library_of(system_id: str) -> str:
    """The library a bundled system's id names first (``gymnasium.SyncVectorEnv.NextStep``:
    gymnasium); a user's system (``user:mypkg:make``) is the user's."""
    if system_id.startswith("user:"):
        return "user"
    return system_id.split(".", 1)[0]


def compress(system_ids: Sequence[str]) -> str:
    """A list of systems as a reader takes it in: a few by name, more as their count and the
    pattern they share, made of the dotted components their ids begin and end with
    (``10 systems: gymnasium.*.nocopy``, ``4 systems: sb3.*DummyVecEnv``). A pattern that says no
    more than the library (``torchrl.*``) names up to :data:`NAMED_WHEN_VAGUE` systems instead."""
    ids = sorted(dict.fromkeys(system_ids))
    if len(ids) <= NAMED_SYSTEMS:
        return ", ".join(ids)
    pattern = shared_pattern(ids)
    if pattern.count(".") <= 1 and pattern.endswith(".*") and len(ids) <= NAMED_WHEN_VAGUE:
        return ", ".join(ids)
    return f"{len(ids)} systems: {pattern}"


def shared_pattern(system_ids: Sequence[str]) -> str:
    """The glob every id of ``system_ids`` matches, made of their common leading and trailing
    dotted components (``*`` for what differs, which may be nothing: ``sb3.*DummyVecEnv`` matches
    ``sb3.DummyVecEnv`` too)."""
    parts = [i.split(".") for i in system_ids]
    shortest = min(len(p) for p in parts)
    head = 0
    while head < shortest and len({p[head] for p in parts}) == 1:
        head += 1
    tail = 0
    while tail < shortest - head and len({p[len(p) - 1 - tail] for p in parts}) == 1:
        tail += 1
    left = ".".join(parts[0][:head])
    right = ".".join(parts[0][len(parts[0]) - tail :])
    if any(len(p) == head + tail for p in parts):  # an id with nothing between: the star takes a dot
        return f"{left}.*{right}" if left and right else f"{left}*{right}"
    return ".".join(part for part in (left, "*", right) if part)


def _row_key(row: str) -> tuple[str, int, str]:
    """FINDINGS rows in their file's order within a letter: G2 before G10."""
    found = re.match(r"([A-Za-z]*)(\d*)(.*)", row)
    assert found is not None
    letters, number, rest = found.groups()
    return (letters, int(number) if number else 0, rest)


@dataclass
class Library:
    """What one library's systems did in the run."""

    name: str
    systems: set[str] = field(default_factory=set)
    #: the systems that could not run here, by why (not installed, not in this release)
    skipped: dict[str, set[str]] = field(default_factory=dict)
    counts: Counter[str] = field(default_factory=Counter)
    #: FINDINGS row -> its failures
    findings: dict[str, list[Result]] = field(default_factory=dict)
    #: the failures no row explains
    new: list[Result] = field(default_factory=list)

    def headline(self) -> str:
        """``gymnasium: 32 systems checked, 593 specs passed, 92 failed (all explained), 3 known``."""
        checked = len(self.systems)
        parts = [f"{checked} system{'' if checked == 1 else 's'} checked"] if checked else []
        if checked:
            parts.append(f"{self.counts['pass']} specs passed")
        failed = self.counts["fail"] + self.counts["error"]
        if failed:
            new = len(self.new)
            explained = "all explained" if not new else f"{new} NEW"
            parts.append(f"{failed} failed ({explained})")
        for status, word in (("known", "known"), ("inherited", "inherited"), ("not_exercised", "not exercised")):
            if self.counts[status]:
                parts.append(f"{self.counts[status]} {word}")
        skipped = sum(len(ids) for ids in self.skipped.values())
        if skipped:
            parts.append(f"{skipped} skipped")
        return f"{self.name}: {', '.join(parts)}"


def libraries(document: ResultsDocument) -> list[Library]:
    """The document's results by library, libraries in the order their systems come."""
    found: dict[str, Library] = {}
    for result in document.results:
        library = found.setdefault(library_of(result.system), Library(library_of(result.system)))
        status = result.status
        if status == "skipped":
            library.skipped.setdefault(result.headline or "skipped", set()).add(result.system)
            continue
        library.systems.add(result.system)
        library.counts[status] += 1
        if result.finding:
            library.findings.setdefault(result.finding, []).append(result)
        elif document.is_new(result):
            library.new.append(result)
    for library in found.values():
        library.systems.difference_update(*library.skipped.values())
    # the reference models (the control rows) after the libraries they model
    return sorted(found.values(), key=lambda library: library.name == "reference")


def _lines(text: str, indent: str) -> list[str]:
    return wrap(text, WIDTH, indent + "    ", first=indent).splitlines()


def finding_lines(row: str, results: Sequence[Result]) -> list[str]:
    """``G7 aliasing.returned_objects: 10 systems: gymnasium.*.nocopy`` (known ones say so)."""
    specs = ", ".join(dict.fromkeys(sorted(r.spec for r in results)))
    known = " (documented behaviour)" if all(r.status == "known" for r in results) else ""
    return _lines(f"{row} {specs}: {compress([r.system for r in results])}{known}", "    ")


def new_lines(results: Sequence[Result]) -> list[str]:
    """The failures no FINDINGS row explains, one group per spec and outcome: the systems, then
    the first one's message (its first line), so that a reader sees what broke."""
    groups: dict[tuple[str, str], list[Result]] = {}
    for result in results:
        groups.setdefault((result.spec, result.outcome), []).append(result)
    lines = []
    for (spec, outcome), members in list(groups.items())[:NEW_LISTED]:
        what = spec if outcome == "fail" else f"{spec} ({outcome.replace('_', ' ')})"
        lines += _lines(f"NEW {what}: {compress([r.system for r in members])}", "    ")
        if members[0].headline:
            lines += _lines(members[0].headline, "        ")
    if len(groups) > NEW_LISTED:
        lines += _lines(f"... and {len(groups) - NEW_LISTED} more groups of new failures (in the results)", "    ")
    return lines


def render_run_summary(document: ResultsDocument, closing: Sequence[str] = ()) -> str:
    """The summary ``rlconform run`` ends on: the counts, then each library with its FINDINGS rows
    and its new failures, then the ``closing`` lines (the files written, what the libraries said,
    the exit status and why)."""
    counts = Counter(summary_status(r.status, r.known, r.expected, r.inherited) for r in document.results)
    systems = len({r.system for r in document.results})
    lines = _lines(f"summary: {systems} systems, {len(document.results)} checks: {summary_sentence(counts)}", "")
    found = libraries(document)
    if found:
        lines.append("by library, each FINDINGS.md row with the specs it fails and the systems it reaches:")
    for library in found:
        lines += _lines(library.headline(), "  ")
        for row in sorted(library.findings, key=_row_key):
            lines += finding_lines(row, library.findings[row])
        lines += new_lines(library.new)
        for reason, ids in library.skipped.items():
            lines += _lines(f"skipped {compress(sorted(ids))}: {reason}", "    ")
    for line in closing:
        lines += _lines(line, "")
    return "\n".join(lines)
