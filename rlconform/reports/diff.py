"""The verdicts that changed between two results documents, regressions first.

A CI job keeps a baseline results document and compares each new run against it: what it needs
first is whether anything that used to hold (or was documented as failing) now fails, because that
is what should fail the job. Fixes come next (worth a changelog line), then any other change, then
the (system, spec) pairs only one document has (a spec added or removed, a system whose library is
missing). Statuses are the documents' statuses (``Result.status``, the one vocabulary every
report shows), each document read through its schema version: a schema_version 1 baseline wrote a
known or inherited failure as "fail", and is read as "known" or "inherited", so a diff of an old
baseline with a new run shows the verdicts that changed, never the change of vocabulary. A failure
that became documented as known is a change, not a fix. The header names both documents' library versions, and which ones
differ, because a verdict change between releases is read against the release that caused it.

A check that fails in both documents but with another signature (``rlconform.core.signature``: the spec
and its kinds of violation) fails in another way: a release that fixes one defect and brings
another under the same spec. That is listed in a section of its own, right after the regressions.
It does not make ``rlconform diff`` exit 1 (only a regression does): the check was already failing
in the baseline, so the gate's answer is unchanged, but the change is visible in the listing. A
document written before signatures has none, and a missing signature is never a change.
"""

from __future__ import annotations

from dataclasses import dataclass

from rlconform.reports.document import Result, ResultsDocument
from rlconform.reports.markdown import code, inline

#: statuses a system is fine in: passing, not concerned, or failing in a documented way
GOOD = ("pass", "not_applicable", "known")
#: statuses that fail a run
BAD = ("fail", "error", "not_exercised")
#: change kinds in report order, with their section titles
KINDS = {
    "regression": "Regressions",
    "signature": "Failing differently (same status, another kind of violation)",
    "fix": "Fixes",
    "changed": "Other changes",
    "added": "Added",
    "removed": "Removed",
}


@dataclass(frozen=True)
class Change:
    system: str
    spec: str
    kind: str
    old: str | None
    new: str | None
    #: the first line of the new message (of the old one for a removed pair)
    headline: str
    #: the failure signatures, for a "signature" change
    old_signature: str | None = None
    new_signature: str | None = None

    @property
    def transition(self) -> str:
        if self.kind == "signature":
            return f"{self.old} {self.old_signature} -> {self.new} {self.new_signature}"
        return f"{self.old or '(absent)'} -> {self.new or '(absent)'}"


def classify(old: str | None, new: str | None) -> str | None:
    """The kind of change from table status ``old`` to ``new`` (None: absent); None when equal."""
    if old == new:
        return None
    if old is None:
        return "added"
    if new is None:
        return "removed"
    if old in GOOD and new in BAD:
        return "regression"
    if old in BAD and new == "pass":
        return "fix"
    return "changed"


def signature_changed(before: Result | None, after: Result | None) -> bool:
    """Both failed (the same status, and the outcome fail) and both say how, differently."""
    if before is None or after is None or before.status != after.status or not before.failed:
        return False
    if not after.failed or before.signature is None or after.signature is None:
        return False
    return before.signature != after.signature


def _pairs(document: ResultsDocument) -> list[tuple[str, str]]:
    return [(r.system, r.spec) for r in document.results]


def changes(old: ResultsDocument, new: ResultsDocument) -> list[Change]:
    """Every (system, spec) whose status differs, by kind in ``KINDS`` order, then in document order."""
    order = {pair: i for i, pair in enumerate(dict.fromkeys(_pairs(new) + _pairs(old)))}
    found = []
    for pair in order:
        before: Result | None = old.result(*pair)
        after: Result | None = new.result(*pair)
        kind = classify(before.cell if before else None, after.cell if after else None)
        if kind is None and signature_changed(before, after):
            kind = "signature"
        if kind is None:
            continue
        shown = after or before
        found.append(
            Change(
                pair[0],
                pair[1],
                kind,
                before.cell if before else None,
                after.cell if after else None,
                shown.headline if shown else "",
                before.signature if before else None,
                after.signature if after else None,
            )
        )
    rank = list(KINDS)
    return sorted(found, key=lambda c: (rank.index(c.kind), order[(c.system, c.spec)]))


def version_changes(old: ResultsDocument, new: ResultsDocument) -> list[tuple[str, str | None, str | None]]:
    """(library, old version, new version) for each library whose version differs."""
    before, after = old.libraries, new.libraries
    names = dict.fromkeys([*before, *after])
    return [(n, before.get(n), after.get(n)) for n in names if before.get(n) != after.get(n)]


def _version(version: str | None) -> str:
    return version or "not installed"


@dataclass
class Diff:
    old_name: str
    new_name: str
    old: ResultsDocument
    new: ResultsDocument

    def __post_init__(self) -> None:
        self.changes = changes(self.old, self.new)
        self.versions = version_changes(self.old, self.new)

    @property
    def regressions(self) -> list[Change]:
        return [c for c in self.changes if c.kind == "regression"]

    def counts(self) -> dict[str, int]:
        return {kind: sum(c.kind == kind for c in self.changes) for kind in KINDS}

    def count_text(self) -> str:
        words = {
            "regression": "regression",
            "signature": "failing differently",
            "fix": "fix",
            "changed": "other change",
        }
        parts = []
        for kind, n in self.counts().items():
            if kind == "signature" and not n:
                continue  # shown only when there is one: the line reads as before signatures existed
            word = words.get(kind)
            plural = "" if kind == "signature" else "es" if word == "fix" else "s"
            parts.append(f"{n} {word}{plural}" if word and n != 1 else f"{n} {word or kind}")
        return f"{len(self.changes)} changed: " + ", ".join(parts)

    def versions_text(self) -> str:
        if not self.versions:
            return "same library versions"
        return "library versions differ: " + ", ".join(
            f"{name} {_version(a)} -> {_version(b)}" for name, a, b in self.versions
        )


def render_text(diff: Diff) -> str:
    """The listing printed by ``rlconform diff``: one line per change, grouped by kind."""
    lines = [
        f"old: {diff.old_name} ({diff.old.versions_text() or 'no versions recorded'})",
        f"new: {diff.new_name} ({diff.new.versions_text() or 'no versions recorded'})",
        diff.versions_text(),
        diff.count_text(),
    ]
    for kind, title in KINDS.items():
        group = [c for c in diff.changes if c.kind == kind]
        if not group:
            continue
        lines += ["", f"{title} ({len(group)}):"]
        for change in group:
            message = f": {change.headline}" if change.headline else ""
            lines.append(f"  {change.system} :: {change.spec}  {change.transition}{message}")
    if not diff.changes:
        lines += ["", "No verdict changed."]
    return "\n".join(lines) + "\n"


def render_markdown(diff: Diff) -> str:
    """The same listing as GitHub-flavoured Markdown (a pull request comment, a step summary)."""
    lines = [
        "# rlconform diff",
        "",
        f"- old: {code(diff.old_name)}: {inline(diff.old.versions_text()) or 'no versions recorded'}",
        f"- new: {code(diff.new_name)}: {inline(diff.new.versions_text()) or 'no versions recorded'}",
        f"- {inline(diff.versions_text())}",
        "",
        f"**{inline(diff.count_text())}**",
    ]
    for kind, title in KINDS.items():
        group = [c for c in diff.changes if c.kind == kind]
        if not group:
            continue
        lines += [
            "",
            f"## {title} ({len(group)})",
            "",
            "| system | spec | old | new | message |",
            "|:--|:--|:--|:--|:--|",
        ]
        for c in group:
            old, new = (code(s) if s else "(absent)" for s in (c.old, c.new))
            if c.kind == "signature":
                old, new = f"{old} {code(c.old_signature or '')}", f"{new} {code(c.new_signature or '')}"
            lines.append(f"| {code(c.system)} | {code(c.spec)} | {old} | {new} | {inline(c.headline)} |")
    if not diff.changes:
        lines += ["", "No verdict changed."]
    return "\n".join(lines) + "\n"
