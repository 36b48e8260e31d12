"""Execute a case on a system through its family, and cache runs shared by the specs of a system.

Every family runs its own cases (:meth:`rlconform.core.family.Family.run_case`); the core only
dispatches, quiets the family's chatty loggers, and keeps the runs a search may draw again.
"""

from __future__ import annotations

import contextlib
import logging
from collections import OrderedDict
from collections.abc import Iterator
from typing import Any

from rlconform.core.catalog import current
from rlconform.core.family import RunRecord, get_family
from rlconform.core.hangs import note_run
from rlconform.core.system import System


@contextlib.contextmanager
def quiet_library_logs(names: tuple[str, ...] | None = None) -> Iterator[None]:
    """Quiet the loggers (default: every family's chatty loggers) to WARNING while rlconform
    drives a system, so that thousands of INFO lines (TorchRL logs one per GymWrapper and per lazy
    storage) do not bury the report."""
    if names is None:
        names = tuple(sorted({n for family in current().families().values() for n in family.quiet_loggers}))
    loggers = [logging.getLogger(name) for name in names]
    levels = [logger.level for logger in loggers]
    for logger, level in zip(loggers, levels, strict=True):
        logger.setLevel(max(level, logging.WARNING))
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)


def execute(system: System, case: Any, *, with_model: bool = True) -> RunRecord:
    """Run ``case`` on ``system`` (and on its reference model when ``with_model``) through the
    system's family; the run is whatever that family's specs read (a :class:`RunRecord`)."""
    family = get_family(system.family)
    with quiet_library_logs(family.quiet_loggers):
        run: RunRecord = family.run_case(system, case, with_model=with_model)
    return run


class RunCache:
    """Runs keyed by (system id, case). Every spec's search draws the same examples first, so the
    specs of one system share most runs instead of rebuilding the system for each spec."""

    def __init__(self, size: int = 256) -> None:
        self.size = size
        self._runs: OrderedDict[tuple[str, Any], RunRecord] = OrderedDict()
        self.hits = 0
        self.misses = 0
        #: the cases searches drew, by what decides them (system, strategy, settings, seed): a
        #: later search of the same kind replays them instead of drawing them again
        #: (rlconform.core.search._replayed)
        self._drawn: dict[Any, tuple[System, list[Any]]] = {}

    def get(self, system: System, case: Any) -> RunRecord:
        key = (system.id, case)
        run = self._runs.get(key)
        if run is not None:
            self.hits += 1
            self._runs.move_to_end(key)
            return run
        self.misses += 1
        run = execute(system, case)
        note_run(system.id, case, run)  # a fresh hang counts against the system's hang budget
        self._runs[key] = run
        if len(self._runs) > self.size:
            self._runs.popitem(last=False)
        return run

    def drawn_cases(self, key: Any, system: System) -> list[Any] | None:
        """The cases a search of ``system`` keyed ``key`` drew (every one passed), or None."""
        found = self._drawn.get(key)
        return found[1] if found is not None and found[0] == system else None

    def record_drawn(self, key: Any, system: System, cases: list[Any]) -> None:
        self._drawn[key] = (system, list(cases))

    def clear(self) -> None:
        self._runs.clear()
        self._drawn.clear()


RUN_CACHE = RunCache()
