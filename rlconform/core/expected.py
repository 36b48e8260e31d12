"""Expected failures as data owned by the downstream repository.

A project that adopts rlconform usually starts with some failing checks it cannot fix at once (a
documented quirk of the library it wraps, a fix that waits on upstream). Listing them in a file,
with a reason each, keeps CI green on what is known while any new failure still breaks it, and
the list shrinks as fixes land. The file is the project's, not rlconform's: rlconform only reads it.

Format: one entry per line, ``KEY  REASON``; blank lines and ``#`` comments are ignored. KEY is
the first whitespace-separated token and matches a check when it is

- a spec id (``env.determinism``): that spec on every system checked;
- ``SYSTEM-SPEC``, the check's pytest item name (``user:mypkg.vec:make-transitions.exact``);
- a pytest node id ending in ``::SYSTEM-SPEC`` or ``[SYSTEM-SPEC]``;
- a glob of any of these (``gymnasium.AsyncVectorEnv.*-api.*``).

A KEY may pin the failure's signature (the ``signature`` of a result in the JSON, ``SPEC#HASH``:
:mod:`rlconform.core.signature`) by ending in its ``#HASH``: ``user:mypkg.vec:make-transitions.exact#1a2b3c4d``
excuses that spec failing that way only; the same spec failing differently (another kind of
violation) is not excused, and a warning names the signature it failed with. A run prints a
paste-ready line, pinned where the failure has a signature, for every failure the file does not
list (:func:`paste_line`).

A reason is required: an entry without one is an error, so that every expected failure says why.
Entries that match no check are reported (a fixed bug, a renamed system, a typo); strict mode
turns an expected failure that passes into a failure, so that the file cannot go stale.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rlconform.core.verdict import Verdict

#: statuses an expected-failure entry accepts: the check ran and did not pass
FAILING = ("fail", "not_exercised", "error")

#: a KEY's pinned signature hash: ``#`` and the 8 hex digits of :func:`rlconform.core.signature.signature`
_PIN = re.compile(r"#([0-9a-f]{8})$")

#: the reason a paste-ready line carries until the project writes its own
PASTE_REASON = "TODO: say why this failure is expected (an issue, a fix in review)"


class ExpectedFailuresError(ValueError):
    """The expected-failures file cannot be read or has a malformed entry."""


@dataclass(frozen=True)
class Entry:
    key: str
    reason: str
    #: the file and line the entry is written on
    path: str
    line: int

    @property
    def origin(self) -> str:
        """Where the entry is written, for messages (``path:line``)."""
        return f"{self.path}:{self.line}"

    @property
    def pin(self) -> str | None:
        """The signature hash the KEY ends in (``...#1a2b3c4d``), or None: any failure is excused."""
        found = _PIN.search(self.key)
        return found.group(1) if found else None

    @property
    def check_key(self) -> str:
        """The KEY without its pinned signature: what is matched against checks."""
        return _PIN.sub("", self.key)

    def matches(self, system_id: str, spec_id: str, nodeid: str | None = None) -> bool:
        key = self.check_key
        name = f"{system_id}-{spec_id}"
        candidates = [spec_id, name]
        if nodeid is not None:
            candidates.append(nodeid)
        if any(key == c or fnmatch.fnmatchcase(c, key) for c in candidates):
            return True
        # a node id written out in full: "tests/test_x.py::test_rlconform[user:mypkg.vec:make-transitions.exact]"
        return key.endswith((f"::{name}", f"[{name}]"))

    def excuses(self, signature: str | None) -> bool:
        """Whether a failure with ``signature`` is the one this entry expects: any, unless pinned."""
        return self.pin is None or (signature is not None and signature.endswith(f"#{self.pin}"))


@dataclass
class ExpectedFailures:
    entries: list[Entry]
    source: str
    #: an expected failure that passes is a failure (otherwise it is reported, and passes)
    strict: bool = False
    _used: set[Entry] = field(default_factory=set)
    #: (system, spec) of the checks strict mode failed because their entry's failure passed: their
    #: line is already in the file (it is to be removed), so none is offered to add
    _stale: set[tuple[str, str]] = field(default_factory=set)
    #: pinned entries whose check failed with another signature: (entry, check, the signature)
    changed: list[tuple[Entry, str, str | None]] = field(default_factory=list)

    @classmethod
    def load(cls, path: str | Path, *, strict: bool = False) -> ExpectedFailures:
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ExpectedFailuresError(f"cannot read expected-failures file {path}: {exc.strerror or exc}") from None
        return cls.parse(text, str(path), strict=strict)

    @classmethod
    def parse(cls, text: str, source: str = "<expected failures>", *, strict: bool = False) -> ExpectedFailures:
        entries = []
        for number, raw in enumerate(text.splitlines(), start=1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            key, *rest = line.split(None, 1)
            reason = rest[0].strip() if rest else ""
            if not reason:
                raise ExpectedFailuresError(f"{source}:{number}: entry {key!r} has no reason (write 'KEY  REASON')")
            entries.append(Entry(key, reason, source, number))
        return cls(entries, source, strict=strict)

    def match(self, system_id: str, spec_id: str, nodeid: str | None = None) -> Entry | None:
        """The first entry that matches this check; it counts as used."""
        for entry in self.entries:
            if entry.matches(system_id, spec_id, nodeid):
                self._used.add(entry)
                return entry
        return None

    def apply(self, verdict: Verdict, nodeid: str | None = None) -> Entry | None:
        """Mark ``verdict`` as expected when an entry matches it; in strict mode an expected
        failure that passed becomes a failure."""
        entry = self.match(verdict.system_id, verdict.spec_id, nodeid)
        if entry is None:
            return None
        if verdict.status in FAILING and not verdict.known:
            if not entry.excuses(verdict.signature):
                self.changed.append((entry, f"{verdict.system_id}-{verdict.spec_id}", verdict.signature))
                return None
            verdict.expected = f"{entry.reason} ({entry.origin})"
        elif verdict.status == "pass":
            note = unexpected_pass_message(entry)
            if self.strict:
                verdict.status = "fail"
                verdict.message = f"strict expected failures: {note}"
                self._stale.add((verdict.system_id, verdict.spec_id))
            else:
                verdict.message = f"{verdict.message}; {note}" if verdict.message else note
        return entry

    def unused(self) -> list[Entry]:
        """Entries that matched no check looked up so far, in file order."""
        return [entry for entry in self.entries if entry not in self._used]

    def warnings(self) -> list[str]:
        """What the project should fix in its file: pinned failures that changed, unused entries."""
        return [changed_warning(*changed) for changed in self.changed] + [
            unused_warning(entry) for entry in self.unused()
        ]


def unused_warning(entry: Entry) -> str:
    return f"expected-failure entry {entry.key!r} ({entry.origin}) matches no check: remove it or fix its key"


def changed_warning(entry: Entry, check: str, signature: str | None) -> str:
    now = f"signature {signature}" if signature else "no signature"
    return (
        f"expected-failure entry {entry.key!r} ({entry.origin}) pins signature #{entry.pin}, but {check} failed "
        f"with {now}: it fails differently, so it is not excused (pin the new signature if it is expected too)"
    )


def paste_line(verdict: Verdict) -> str:
    """A line to add to the expected-failures file to expect ``verdict``'s failure: its check's
    ``SYSTEM-SPEC``, pinned to its signature where it has one, and a reason to rewrite."""
    key = f"{verdict.system_id}-{verdict.spec_id}"
    if verdict.signature and verdict.signature.startswith(f"{verdict.spec_id}#"):
        key += "#" + verdict.signature.rsplit("#", 1)[1]
    return f"{key}  {PASTE_REASON}"


def unlisted(verdicts: list[Verdict], expected: ExpectedFailures | None = None) -> list[Verdict]:
    """The failures no entry excused (nor rlconform's own list of known ones), in order; a check
    strict mode failed because its listed failure passed is listed already (its entry is stale)."""
    stale = expected._stale if expected is not None else set()
    return [
        v
        for v in verdicts
        if v.status in FAILING and not v.known and not v.expected and (v.system_id, v.spec_id) not in stale
    ]


def unexpected_pass_message(entry: Entry) -> str:
    return f"expected to fail ({entry.origin}: {entry.reason}) but passed: remove the entry"
