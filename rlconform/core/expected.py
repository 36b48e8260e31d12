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

A reason is required: an entry without one is an error, so that every expected failure says why.
Entries that match no check are reported (a fixed bug, a renamed system, a typo); strict mode
turns an expected failure that passes into a failure, so that the file cannot go stale.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rlconform.core.verdict import Verdict

#: statuses an expected-failure entry accepts: the check ran and did not pass
FAILING = ("fail", "not_exercised", "error")


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

    def matches(self, system_id: str, spec_id: str, nodeid: str | None = None) -> bool:
        name = f"{system_id}-{spec_id}"
        candidates = [spec_id, name]
        if nodeid is not None:
            candidates.append(nodeid)
        if any(self.key == c or fnmatch.fnmatchcase(c, self.key) for c in candidates):
            return True
        # a node id written out in full: "tests/test_x.py::test_rlconform[user:mypkg.vec:make-transitions.exact]"
        return self.key.endswith((f"::{name}", f"[{name}]"))


@dataclass
class ExpectedFailures:
    entries: list[Entry]
    source: str
    #: an expected failure that passes is a failure (otherwise it is reported, and passes)
    strict: bool = False
    _used: set[Entry] = field(default_factory=set)

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
            verdict.expected = f"{entry.reason} ({entry.origin})"
        elif verdict.status == "pass":
            note = unexpected_pass_message(entry)
            if self.strict:
                verdict.status = "fail"
                verdict.message = f"strict expected failures: {note}"
            else:
                verdict.message = f"{verdict.message}; {note}" if verdict.message else note
        return entry

    def unused(self) -> list[Entry]:
        """Entries that matched no check looked up so far, in file order."""
        return [entry for entry in self.entries if entry not in self._used]


def unused_warning(entry: Entry) -> str:
    return f"expected-failure entry {entry.key!r} ({entry.origin}) matches no check: remove it or fix its key"


def unexpected_pass_message(entry: Entry) -> str:
    return f"expected to fail ({entry.origin}: {entry.reason}) but passed: remove the entry"
