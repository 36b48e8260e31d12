"""What the libraries under a check say while rlconform drives them: captured, counted, reported.

A check drives a library hundreds of times, and some libraries say the same thing each time:
TorchRL logs ``[torchrl][WARNING] Got a tensordict without a time-marked dimension`` (in colour,
straight to the terminal) on every call of a shifted GAE, Gymnasium warns that a Box's precision
was lowered. Printed as they come, a few hundred such lines bury the report. While rlconform drives
a system (:func:`rlconform.core.search.check_spec`, around the whole search), :func:`captured`
takes them off the screen and counts them instead, deduplicated and with ANSI colour codes
stripped; the counts travel with the verdict (:attr:`rlconform.core.verdict.Verdict.library_messages`,
also out of an isolated worker), the results document lists them and the front ends say in one
line how many there were.

Only what a *library* says is captured, never what the user's own code says (those warnings are
about the code being checked, which is what the user wants to see):

* log records of level WARNING or above from the loggers the checked family names in
  ``Family.quiet_loggers`` (and their child loggers);
* :mod:`warnings` whose location (the file the warning is attributed to) lies inside the package
  of a library the family declares (``Family.libraries``, as pip names them, read as the import
  packages they install, e.g. ``stable-baselines3`` -> ``stable_baselines3``), or of a logger's
  top-level package: TorchRL, TensorDict, Gymnasium, Stable-Baselines3, torch.

Every other warning goes on as it would have (to the warnings filters and ``showwarning`` in use:
pytest's record, the terminal), and the filters themselves are left alone: a warning the user
silenced stays silent, one they turned into an error still raises.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.metadata
import importlib.util
import logging
import os
import re
import warnings
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, TextIO

#: an ANSI escape sequence (colours, cursor moves): stripped from every captured message
ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]")


def clean(text: str) -> str:
    """``text`` without ANSI escape codes or surrounding blank space."""
    return ANSI.sub("", text).strip()


def library_of(key: str) -> str:
    """The library a captured message's key names (its first word: ``torchrl``, ``gymnasium``)."""
    return key.split(" ", 1)[0]


def message_key(library: str, kind: str, text: str) -> str:
    """How a captured message is counted and listed: ``LIBRARY KIND: TEXT`` (``torchrl WARNING:
    Got a tensordict ...``, ``gymnasium UserWarning: WARN: Box low's precision lowered ...``)."""
    return f"{library} {kind}: {clean(text)}"


@functools.cache
def import_packages(distribution: str) -> tuple[str, ...]:
    """The top-level import packages the installed ``distribution`` provides (``stable-baselines3``
    -> ``stable_baselines3``); its normalized name when it is not installed or does not say."""
    fallback = (re.sub(r"[-.]+", "_", distribution).lower(),)
    try:
        dist = importlib.metadata.distribution(distribution)
    except importlib.metadata.PackageNotFoundError:
        return fallback
    top_level = dist.read_text("top_level.txt")
    if top_level:
        names = tuple(line.strip() for line in top_level.splitlines() if line.strip())
        if names:
            return names
    found = {
        file.parts[0]
        for file in dist.files or ()
        if len(file.parts) > 1
        and file.parts[-1] == "__init__.py"
        and not file.parts[0].endswith((".dist-info", "-info"))
    }
    return tuple(sorted(found)) or fallback


@functools.cache
def package_dirs(packages: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    """(directory, package) of each of ``packages`` that is installed, found without importing it."""
    found = []
    for name in packages:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            continue
        if spec is None or not spec.submodule_search_locations:
            continue
        for location in spec.submodule_search_locations:
            found.append((os.path.join(os.path.realpath(location), ""), name))
    return tuple(found)


def packages_of(loggers: Iterable[str], libraries: Iterable[str]) -> tuple[str, ...]:
    """The import packages whose warnings are a library's: those of ``libraries`` (distribution
    names) and the top-level packages of ``loggers``, each once, sorted."""
    names = {logger.split(".", 1)[0] for logger in loggers}
    for distribution in libraries:
        names.update(import_packages(distribution))
    return tuple(sorted(names))


class _Capture(logging.Filter):
    """A filter that counts, and stops, the WARNING+ records of the captured loggers."""

    def __init__(self, names: tuple[str, ...], counts: Counter[str]) -> None:
        super().__init__()
        self.names = names
        self.counts = counts

    def named(self, name: str) -> bool:
        """``name`` is a captured logger or a child of one."""
        return any(name == logger or name.startswith(f"{logger}.") for logger in self.names)

    def captures(self, record: logging.LogRecord) -> bool:
        return record.levelno >= logging.WARNING and self.named(record.name)

    def filter(self, record: logging.LogRecord) -> bool:
        if not self.captures(record):
            return True
        try:
            text = record.getMessage()
        except Exception:  # a record whose arguments do not format: count it by its format string
            text = str(record.msg)
        self.counts[message_key(record.name.split(".", 1)[0], record.levelname, text)] += 1
        return False


@contextlib.contextmanager
def captured(loggers: Iterable[str], libraries: Iterable[str] = ()) -> Iterator[Counter[str]]:
    """Count, and keep off the screen, what the libraries say inside the block: the WARNING+
    records of ``loggers`` (and their children) and the warnings located in the packages of
    ``libraries`` and of ``loggers`` (see the module's docstring); yields the counts, by
    :func:`message_key`, filled as the block runs. Everything else is left as it was."""
    counts: Counter[str] = Counter()
    names = tuple(dict.fromkeys(loggers))
    dirs = package_dirs(packages_of(names, libraries))
    with _logs_captured(names, counts), _warnings_captured(dirs, counts):
        yield counts


@contextlib.contextmanager
def _logs_captured(names: tuple[str, ...], counts: Counter[str]) -> Iterator[None]:
    """The filter on each named logger and its existing children (records made on them), and on
    the handlers a record of theirs can reach (their own, the root's, logging's last resort)."""
    if not names:
        yield
        return
    capture = _Capture(names, counts)
    loggers: list[logging.Logger] = [logging.getLogger(name) for name in names]
    for existing in list(logging.Logger.manager.loggerDict.values()):
        if isinstance(existing, logging.Logger) and capture.named(existing.name):
            loggers.append(existing)
    handlers: list[Any] = [handler for logger in loggers for handler in logger.handlers]
    handlers += [*logging.getLogger().handlers, logging.lastResort]
    filtered = list(
        {id(target): target for target in [*loggers, *handlers] if isinstance(target, logging.Filterer)}.values()
    )
    for target in filtered:
        target.addFilter(capture)
    try:
        yield
    finally:
        for target in filtered:
            target.removeFilter(capture)


@contextlib.contextmanager
def _warnings_captured(dirs: tuple[tuple[str, str], ...], counts: Counter[str]) -> Iterator[None]:
    """``warnings.showwarning`` counting the warnings located in ``dirs`` and handing on every
    other one to the ``showwarning`` in use before (the filters are not touched)."""
    if not dirs:
        yield
        return
    previous = warnings.showwarning

    def showwarning(
        message: Warning | str,
        category: type[Warning],
        filename: str,
        lineno: int,
        file: TextIO | None = None,
        line: str | None = None,
    ) -> None:
        package = _package_at(filename, dirs)
        if package is None:
            previous(message, category, filename, lineno, file, line)
            return
        counts[message_key(package, category.__name__, str(message))] += 1

    warnings.showwarning = showwarning
    try:
        yield
    finally:
        # put back only our own: what ran inside may have installed its own meanwhile, and kept it
        if warnings.showwarning is showwarning:
            warnings.showwarning = previous


def _package_at(filename: str, dirs: tuple[tuple[str, str], ...]) -> str | None:
    try:
        path = os.path.realpath(filename)
    except (OSError, ValueError):
        return None
    for directory, package in dirs:
        if path.startswith(directory):
            return package
    return None


def merged(counts: Iterable[Mapping[str, int]]) -> dict[str, int]:
    """Several checks' counts added up, sorted by key."""
    total: Counter[str] = Counter()
    for each in counts:
        total.update(each)
    return dict(sorted(total.items()))


def summary_line(counts: Mapping[str, int], where: str) -> str | None:
    """``library messages: 19 (torchrl: 2 distinct; WHERE)``: how much the libraries said during a
    check, by library (None when they said nothing)."""
    total = sum(counts.values())
    if not total:
        return None
    distinct = Counter(library_of(key) for key in counts)
    parts = ", ".join(f"{library}: {n} distinct" for library, n in sorted(distinct.items()))
    return f"library messages: {total} ({parts}; {where})"
