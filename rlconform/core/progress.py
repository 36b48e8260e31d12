"""Progress of a long run, per spec: what is being checked, the examples run so far, elapsed time.

The searches report :data:`Event` tuples as they go (a spec starts, examples were run, a spec has
its verdict); a system checked in an isolated worker process sends them to the parent over a pipe
(:mod:`rlconform.core.suite`), so that one reporter in the parent sees every system's progress.

Two reporters write it (:func:`reporter` picks by the stream):

* on a terminal, one line redrawn in place (carriage return): a bar of the specs done, the spec
  running now, its examples and seconds, and the system's seconds; each finished system leaves
  one summary line above it;
* elsewhere (CI logs, files, pipes), plain lines that are never redrawn: one per finished spec
  (``rlconform check``, ``run --verbose``), then the system's summary line; ``rlconform run`` of
  every bundled system (over a hundred systems, sixty specs each, most of which do not apply)
  writes the system lines only.

A system's line names what failed, by spec id, each with the FINDINGS.md row that explains it
(``G7``) or, for a bundled system's failure no row explains, ``NEW`` (rlconform.core.findings);
``rlconform run`` wraps its lines at :data:`LINE_WIDTH` columns (``line_width``): a log of a whole
run reads one system per line or two. ``check`` keeps each line whole, as scripts read it.
"""

from __future__ import annotations

import shutil
import textwrap
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TextIO

from rlconform.core.findings import UNEXPLAINED_OUTCOMES, new_verdict
from rlconform.core.verdict import Verdict, cell_status

if TYPE_CHECKING:
    from rlconform.core.system import System

#: ("spec", system id, spec index from 1, spec count, spec id): a spec's search starts;
#: ("examples", system id, examples run so far in the running search);
#: ("verdict", system id, spec index from 1, spec count, spec id, status, examples, seconds, signature)
#: (the failure's signature, or None: what an expected-failures entry pinned to one is matched with)
Event = tuple[Any, ...]
Events = Callable[[Event], None]

#: seconds between two "examples" events of one search (the terminal line is redrawn about as often)
EXAMPLES_INTERVAL = 0.25


class Progress:
    """Receives a run's progress; every method does nothing here (subclasses write it)."""

    def event(self, event: Event) -> None:
        """A search's progress (:data:`Event`)."""

    def system_finished(self, done: int, total: int, system: System, verdicts: list[Verdict], seconds: float) -> None:
        """``system``, the ``done``-th of ``total``, has all its verdicts."""

    def system_started(self, done: int, total: int, system: System) -> None:
        """``system`` starts (``done`` systems are finished out of ``total``)."""

    def tick(self) -> None:
        """About once a second while checks run: time to redraw elapsed seconds."""

    def close(self) -> None:
        """The run is over (or interrupted): leave the stream at the start of a fresh line."""


def throttled(events: Events, interval: float = EXAMPLES_INTERVAL) -> Events:
    """``events``, passing "examples" events on at most once per ``interval`` seconds per search."""
    last = [0.0]

    def send(event: Event) -> None:
        if event[0] == "examples":
            now = time.monotonic()
            if now - last[0] < interval:
                return
            last[0] = now
        elif event[0] == "spec":
            last[0] = time.monotonic()
        events(event)

    return send


def summary(verdicts: Sequence[Verdict]) -> str:
    counts: dict[str, int] = {}
    for verdict in verdicts:
        key = cell_status(verdict)
        counts[key] = counts.get(key, 0) + 1
    return ", ".join(f"{n} {k}" for k, n in sorted(counts.items()))


#: the columns a line of progress fits (wrapped, continued on indented lines beyond it)
LINE_WIDTH = 100


def wrap(text: str, width: int = LINE_WIDTH, indent: str = "    ", first: str = "") -> str:
    """``text`` in lines of at most ``width`` columns, the first indented by ``first``, the rest
    by ``indent``; ids and spec names are never broken (a word longer than a line keeps a line of
    its own)."""
    return textwrap.fill(
        text, width, initial_indent=first, subsequent_indent=indent, break_long_words=False, break_on_hyphens=False
    )


def failed(system: System, verdicts: Sequence[Verdict]) -> list[str]:
    """What failed on ``system``, by spec id, each with what explains it: its FINDINGS row
    (``aliasing.returned_objects G7``), ``NEW`` for a bundled system's failure no row explains,
    ``inherited`` for a user's failure the library under it shows alone; an error or an unexercised
    spec says so. Documented and expected failures are counted, not named (they are known)."""
    items = []
    for verdict in verdicts:
        if verdict.status not in UNEXPLAINED_OUTCOMES or verdict.known or verdict.expected:
            continue
        name = verdict.spec_id if verdict.status == "fail" else f"{verdict.spec_id} ({verdict.status})"
        if verdict.finding:
            name += f" {verdict.finding}"
        elif new_verdict(system, verdict):
            name += " NEW"
        elif verdict.inherited:
            name += " inherited"
        items.append(name)
    return items


def system_line(
    done: int, total: int, system: System, verdicts: Sequence[Verdict], seconds: float, width: int | None = None
) -> str:
    """The line a finished system leaves, in plain logs and above a terminal's redrawn line alike:
    its counts, its seconds and what failed (:func:`failed`), wrapped at ``width`` if given."""
    text = f"[{done}/{total}] {system.id}: {summary(verdicts)} ({seconds:.1f} s)"
    items = failed(system, verdicts)
    if items:
        text += f"; failed: {', '.join(items)}"
    return text if width is None else wrap(text, width)


def _verdict_line(event: Event, width: int | None = None) -> str:
    _, system_id, index, count, spec_id, status, examples, seconds = event[:8]
    text = f"  [{index}/{count}] {system_id} :: {spec_id}: {status} ({examples} examples, {seconds:.1f} s)"
    return text if width is None else wrap(text, width, indent="      ")


class LineProgress(Progress):
    """Plain lines, never redrawn (CI logs, files): one per finished spec (``per_spec``; a spec
    that does not apply too, unless ``not_applicable`` is False), one per finished system."""

    def __init__(
        self, stream: TextIO, *, per_spec: bool = True, not_applicable: bool = True, line_width: int | None = None
    ) -> None:
        self.stream = stream
        self.line_width = line_width
        self.per_spec = per_spec
        self.not_applicable = not_applicable

    def event(self, event: Event) -> None:
        if event[0] != "verdict" or not self.per_spec:
            return
        if event[5] == "not_applicable" and not self.not_applicable:
            return
        print(_verdict_line(event, self.line_width), file=self.stream, flush=True)

    def system_finished(self, done: int, total: int, system: System, verdicts: list[Verdict], seconds: float) -> None:
        print(system_line(done, total, system, verdicts, seconds, self.line_width), file=self.stream, flush=True)


@dataclass
class _Running:
    """What the terminal line shows of one system being checked."""

    started: float
    spec_id: str = ""
    index: int = 0
    count: int = 0
    examples: int = 0
    spec_started: float = field(default_factory=time.monotonic)


#: characters of the terminal line's bar
BAR_WIDTH = 20


class TerminalProgress(Progress):
    """One line redrawn in place with a carriage return; finished systems print their summary above it."""

    def __init__(self, stream: TextIO, width: int | None = None, *, line_width: int | None = None) -> None:
        self.stream = stream
        #: where the systems' lines wrap (None: kept whole)
        self.line_width = line_width
        self.width = width
        self.running: dict[str, _Running] = {}
        self.done = 0
        self.total = 0
        self._shown = 0  # characters of the line now on the terminal

    def _columns(self) -> int:
        return self.width or shutil.get_terminal_size(fallback=(100, 24)).columns

    def system_started(self, done: int, total: int, system: System) -> None:
        self.done, self.total = done, total
        self.running[system.id] = _Running(time.monotonic())
        self._draw()

    def event(self, event: Event) -> None:
        running = self.running.get(event[1])
        if running is None:
            running = self.running[event[1]] = _Running(time.monotonic())
        if event[0] == "spec":
            running.index, running.count, running.spec_id = event[2], event[3], event[4]
            running.examples, running.spec_started = 0, time.monotonic()
        elif event[0] == "examples":
            running.examples = event[2]
        elif event[0] == "verdict":
            running.index, running.count = event[2], event[3]
        self._draw()

    def system_finished(self, done: int, total: int, system: System, verdicts: list[Verdict], seconds: float) -> None:
        self.done, self.total = done, total
        self.running.pop(system.id, None)
        self._clear()
        print(system_line(done, total, system, verdicts, seconds, self.line_width), file=self.stream, flush=True)
        self._draw()

    def tick(self) -> None:
        self._draw()

    def close(self) -> None:
        self._clear()

    def line(self) -> str:
        """The progress line as it is drawn now (without the carriage return)."""
        if not self.running:
            return ""
        now = time.monotonic()
        total = max(self.total, 1)
        fraction = (self.done + sum(r.index / r.count for r in self.running.values() if r.count)) / total
        filled = min(BAR_WIDTH, int(fraction * BAR_WIDTH))
        bar = "[" + "#" * filled + "-" * (BAR_WIDTH - filled) + "]"
        system_id, running = next(iter(self.running.items()))
        spec = f"spec {running.index}/{running.count} {running.spec_id}" if running.count else "starting"
        parts = [
            f"{bar} {self.done}/{self.total} systems",
            f"{system_id}: {spec}",
            f"{running.examples} examples, {now - running.spec_started:.0f} s",
            f"system {now - running.started:.0f} s",
        ]
        if len(self.running) > 1:
            parts.append(f"+{len(self.running) - 1} more running")
        return " | ".join(parts)

    def _draw(self) -> None:
        text = self.line()[: max(self._columns() - 1, 10)]
        pad = " " * max(self._shown - len(text), 0)  # what is left of a longer line
        self.stream.write("\r" + text + pad)
        self.stream.flush()
        self._shown = len(text)

    def _clear(self) -> None:
        if self._shown:
            self.stream.write("\r" + " " * self._shown + "\r")
            self.stream.flush()
            self._shown = 0


def reporter(
    stream: TextIO,
    *,
    tty: bool | None = None,
    per_spec: bool = True,
    not_applicable: bool = True,
    line_width: int | None = None,
) -> Progress:
    """The progress reporter for ``stream``: a redrawn line on a terminal, plain lines elsewhere
    (``tty`` overrides what ``stream.isatty()`` says). ``per_spec`` False: the plain lines are the
    systems' only (``rlconform run``); ``not_applicable`` False: no line for a spec that does not
    apply (``run --verbose``); ``line_width``: the lines wrap there (``run``: :data:`LINE_WIDTH`)."""
    if tty is None:
        isatty = getattr(stream, "isatty", None)
        tty = bool(isatty()) if callable(isatty) else False
    if tty:
        return TerminalProgress(stream, line_width=line_width)
    return LineProgress(stream, per_spec=per_spec, not_applicable=not_applicable, line_width=line_width)
