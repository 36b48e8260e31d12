"""Run many (system, spec) searches: in this process, or one system per isolated worker process.

A system's specs always run in the same process, so that they share that process's run cache;
results come back in a fixed order whatever the number of workers, so that verdicts and reports
do not depend on parallelism.

Isolation (:mod:`rlconform.core.isolation`) is what lets a run survive the systems it checks: when a
system's worker process dies or overruns, that system's specs get an ``error`` verdict that says
how it ended, the rest of the run goes on, and the worker's whole process group is killed so that
no env process it started survives it.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import multiprocessing.connection
import pickle
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from rlconform.core.config import SYSTEM_TIMEOUT, seconds
from rlconform.core.crashlog import CrashReport
from rlconform.core.family import get_family
from rlconform.core.findings import mark as mark_findings
from rlconform.core.hangs import RESPONSIVE
from rlconform.core.isolation import STUCK_GRACE_SECONDS, IsolatedCall, can_isolate
from rlconform.core.profiles import Profile, session_seed
from rlconform.core.progress import Event, Events, Progress, throttled
from rlconform.core.runner import quiet_library_logs
from rlconform.core.search import Verdict, check_spec
from rlconform.core.spec import Spec
from rlconform.core.system import System
from rlconform.core.verdict import NATIVE_TRACEBACK, cell_status

#: a plain callable is told of each finished system only; a :class:`~rlconform.core.progress.Progress`
#: also of each spec as it goes
SystemProgress = Callable[[int, int, System, list[Verdict], float], None]

#: seconds one system's whole check may take in an isolated worker (RLCONFORM_SYSTEM_TIMEOUT)
DEFAULT_SYSTEM_TIMEOUT = 1800.0


def system_timeout() -> float:
    return seconds(SYSTEM_TIMEOUT, DEFAULT_SYSTEM_TIMEOUT)


#: the message of a spec an interrupted run never brought to a verdict
INTERRUPTED = "not run: the run was interrupted (Ctrl-C or SIGTERM) before this spec reached a verdict"


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C (or SIGTERM) ended a run: carries every (system, spec) in run order, the verdicts
    finished so far kept as they are and the others "not run" (:data:`INTERRUPTED`), so that the
    CLI can still write them (marked partial) instead of losing the whole run."""

    def __init__(self, verdicts: list[Verdict], finished: int) -> None:
        super().__init__(f"interrupted after {finished} verdict(s)")
        self.verdicts = verdicts
        #: how many of ``verdicts`` were finished before the interruption
        self.finished = finished


def check_system(
    system: System,
    specs: Sequence[Spec],
    profile: Profile,
    done: list[Verdict] | None = None,
    events: Events | None = None,
    keep: Callable[[Verdict], None] | None = None,
    numbering: tuple[Sequence[int], int] | None = None,
) -> list[Verdict]:
    """The verdicts of every spec on ``system``; each is appended to ``done`` as it is reached
    (in this process: what an interrupted run keeps of the system it was checking) and handed to
    ``keep`` (in an isolated worker: sent to the parent, which keeps it if the run is interrupted).
    ``events`` hears how each search goes (:data:`rlconform.core.progress.Event`), each spec
    numbered by ``numbering`` (its position among the system's specs, and their number) where
    ``specs`` are a part of them (:func:`work_units`)."""
    verdicts = done if done is not None else []
    send = throttled(events) if events is not None else None
    # the family's chatty loggers stay at WARNING for the whole check, not only while a case runs:
    # a spec reading its run (sampling a TorchRL buffer) logs INFO lines too
    with quiet_library_logs(get_family(system.family).quiet_loggers):
        _check_specs(system, specs, profile, verdicts, send, keep, numbering)
    return list(verdicts)


def _check_specs(
    system: System,
    specs: Sequence[Spec],
    profile: Profile,
    verdicts: list[Verdict],
    send: Callable[[Any], None] | None,
    keep: Callable[[Verdict], None] | None,
    numbering: tuple[Sequence[int], int] | None = None,
) -> None:
    positions, total = numbering if numbering is not None else (range(1, len(specs) + 1), len(specs))
    for index, spec in zip(positions, specs, strict=True):
        if send is None:
            verdicts.append(check_spec(system, spec, profile))
            if keep is not None:
                keep(verdicts[-1])
            continue
        send(("spec", system.id, index, total, spec.id))
        verdict = check_spec(system, spec, profile, on_example=lambda n: send(("examples", system.id, n)))
        verdicts.append(verdict)
        if keep is not None:
            keep(verdict)
        send(
            (
                "verdict",
                system.id,
                index,
                total,
                spec.id,
                cell_status(verdict),
                verdict.examples,
                verdict.seconds,
                verdict.signature,
            )
        )


def run_checks(
    systems: Sequence[System],
    specs: Sequence[Spec],
    profile: Profile,
    *,
    jobs: int = 1,
    isolate: bool = False,
    progress: Progress | SystemProgress | None = None,
) -> list[Verdict]:
    """Verdicts for every (system, spec), ordered by system then spec.

    With ``jobs > 1`` or ``isolate``, each system is checked in a worker process of its own (at
    most ``jobs`` at a time); otherwise in this process, which is fastest but shares its fate with
    the systems it checks. ``progress`` hears of each finished system, and a
    :class:`~rlconform.core.progress.Progress` of each spec as it goes too. A bundled system's
    failures are marked with the FINDINGS row that explains them (rlconform.core.findings) before
    ``progress`` hears of the system."""
    results: dict[str, list[Verdict]] = {}
    #: the verdicts isolated workers finished so far, per system (what an interruption keeps)
    kept: dict[str, list[Verdict]] = {}
    total = len(systems)
    reporter = progress if isinstance(progress, Progress) else _Legacy(progress)
    try:
        if (jobs <= 1 and not isolate) or not can_isolate():
            for done, system in enumerate(systems, start=1):
                start = time.perf_counter()
                results[system.id] = []
                reporter.system_started(done - 1, total, system)
                check_system(system, specs, profile, results[system.id], reporter.event)
                mark_findings(system, results[system.id])
                reporter.system_finished(done, total, system, results[system.id], time.perf_counter() - start)
        else:
            for done, (system, verdicts, seconds) in enumerate(
                _isolated(systems, specs, profile, max(jobs, 1), reporter, kept), start=1
            ):
                results[system.id] = verdicts
                mark_findings(system, verdicts)
                reporter.system_finished(done, total, system, verdicts, seconds)
    except KeyboardInterrupt:
        # the isolated workers are already killed (_isolated's finally); keep what was finished
        raise _interrupted(systems, specs, profile, results, kept) from None
    finally:
        reporter.close()
    return [verdict for system in systems for verdict in results[system.id]]


def _interrupted(
    systems: Sequence[System],
    specs: Sequence[Spec],
    profile: Profile,
    results: dict[str, list[Verdict]],
    kept: dict[str, list[Verdict]],
) -> RunInterrupted:
    """Every (system, spec) of an interrupted run, in run order: each system's finished verdicts
    (a system's specs run in order, so they are the first ones), then "not run" for the rest."""
    seed = None if profile.derandomize else session_seed()
    verdicts: list[Verdict] = []
    finished = 0
    for system in systems:
        # a system's specs may have run in two workers (work_units): matched by spec id
        done = {verdict.spec_id: verdict for verdict in results.get(system.id) or kept.get(system.id, [])}
        for spec in specs:
            if spec.id in done:
                finished += 1
                verdicts.append(done[spec.id])
            else:
                verdicts.append(Verdict(system.id, spec.id, "not_run", INTERRUPTED, profile=profile.name, seed=seed))
    return RunInterrupted(verdicts, finished)


class _Legacy(Progress):
    """A plain callable, told of finished systems only."""

    def __init__(self, callback: SystemProgress | None) -> None:
        self.callback = callback

    def system_finished(self, done: int, total: int, system: System, verdicts: list[Verdict], seconds: float) -> None:
        if self.callback is not None:
            self.callback(done, total, system, verdicts, seconds)


class _EventPipe:
    """The child's end of a worker's progress pipe: events are sent to the parent, and lost (never
    an error of the check) when the parent no longer reads them."""

    def __init__(self, writer: multiprocessing.connection.Connection) -> None:
        self.writer = writer

    def __call__(self, event: Event) -> None:
        with contextlib.suppress(OSError, ValueError):
            self.writer.send(event)

    def keep(self, verdict: Verdict) -> None:
        """Send a finished verdict, for the parent to keep if the run is interrupted (one that
        cannot be pickled is not kept: the worker still returns it when it finishes)."""
        with contextlib.suppress(Exception):
            self.writer.send((KEPT, verdict.system_id, verdict))


#: the event a worker sends with each finished verdict (kept by :func:`_isolated`, never shown)
KEPT = "kept"


#: a worker's share of a system's check: the system, its specs' positions among the system's specs
#: (1-based), and those specs
WorkUnit = tuple[System, tuple[int, ...], tuple[Spec, ...]]


def work_units(systems: Sequence[System], specs: Sequence[Spec], jobs: int) -> list[WorkUnit]:
    """What the isolated workers run: each system's specs in one worker, except that with two jobs
    or more a spec that runs in a worker of its own (``Spec.own_worker``, and applies to the
    system) is split off for a system whose probe found it worth it (``System.apart``), so that it
    runs beside the system's other specs. Its search reads no run of theirs, so its verdict is the
    one it would have in their worker."""
    units: list[WorkUnit] = []
    for system in systems:
        numbered = list(enumerate(specs, start=1))
        alone = [
            (k, spec)
            for k, spec in numbered
            if jobs >= 2 and system.apart and spec.own_worker and spec.not_applicable_reason(system) is None
        ]
        rest = [(k, spec) for k, spec in numbered if (k, spec) not in alone]
        for part in (alone, rest) if alone and rest else (numbered,):
            units.append((system, tuple(k for k, _spec in part), tuple(spec for _k, spec in part)))
    # the split-off specs first: the longest work starts first
    return sorted(units, key=lambda unit: (systems.index(unit[0]), not any(s.own_worker for s in unit[2])))


def _isolated(
    systems: Sequence[System],
    specs: Sequence[Spec],
    profile: Profile,
    jobs: int,
    progress: Progress | None = None,
    kept: dict[str, list[Verdict]] | None = None,
) -> Iterator[tuple[System, list[Verdict], float]]:
    """Yield (system, verdicts, seconds) as isolated workers finish a system, at most ``jobs``
    workers at a time, each running a :func:`work_units` share of a system's specs; the workers'
    progress events go to ``progress`` as they arrive, and the verdicts they finish to ``kept``
    (per system), so that an interrupted run keeps them. A system's verdicts come in spec order
    however its specs were shared, its seconds those of the longest share."""
    kept = {} if kept is None else kept
    reporter = progress or Progress()
    pending = work_units(systems, specs, jobs)
    #: per system: its shares not finished yet, the verdicts finished, the longest share's seconds
    left = {system.id: sum(1 for unit in pending if unit[0] is system) for system in systems}
    found: dict[str, dict[str, Verdict]] = {system.id: {} for system in systems}
    longest: dict[str, float] = dict.fromkeys(left, 0.0)
    #: per system: the shares whose worker crashed (its specs, how it ended)
    crashed: dict[str, list[tuple[tuple[Spec, ...], str, CrashReport | None]]] = {}
    started: set[str] = set()
    total = len(systems)
    finished = 0
    running: dict[IsolatedCall, WorkUnit] = {}
    #: each worker's progress pipe (the parent's reading end), until it closes
    events: dict[IsolatedCall, multiprocessing.connection.Connection] = {}
    limit = system_timeout()
    try:
        while pending or running:
            while pending and len(running) < jobs:
                unit = pending.pop(0)
                system, positions, shard = unit
                reader, writer = multiprocessing.get_context("fork").Pipe(duplex=False)
                if system.id not in started:
                    started.add(system.id)
                    reporter.system_started(finished, total, system)
                pipe = _EventPipe(writer)
                call = IsolatedCall(
                    check_system, system, shard, profile, None, pipe, pipe.keep, (positions, len(specs))
                )
                writer.close()  # the child has its copy: the pipe ends (EOF) when the child does
                running[call] = unit
                events[call] = reader
            handles = [h for call in running for h in call.handles()] + list(events.values())
            multiprocessing.connection.wait(handles, timeout=1.0)
            _read_events(events, reporter, kept)
            reporter.tick()
            for call, (system, _positions, shard) in list(running.items()):
                if not call.poll(limit):
                    continue
                _read_events(events, reporter, kept, call)
                if call in events:  # else its pipe ended already
                    with contextlib.suppress(OSError):
                        events.pop(call).close()
                del running[call]
                assert call.outcome is not None
                if call.outcome.failure is not None:
                    crashed.setdefault(system.id, []).append((shard, call.outcome.failure, call.outcome.crash))
                else:
                    found[system.id].update((verdict.spec_id, verdict) for verdict in call.outcome.value)
                longest[system.id] = max(longest[system.id], call.elapsed)
                left[system.id] -= 1
                if left[system.id] == 0:
                    finished += 1
                    if system.id in crashed:
                        found[system.id].update(_crash_story(system, specs, profile, crashed.pop(system.id)))
                    yield system, [found[system.id][spec.id] for spec in specs], longest[system.id]
    finally:
        # interrupted (Ctrl-C, SIGTERM, an error here): the workers run in process groups of
        # their own, out of reach of the terminal's signals; end them with the run
        for call in running:
            call.kill()
        # the verdicts the killed workers sent before the end, still in their pipes; what else
        # is there (progress of searches that will never finish) is not shown
        _read_events(events, Progress(), kept)
        for reader in events.values():
            with contextlib.suppress(OSError):
                reader.close()


def _read_events(
    events: dict[IsolatedCall, multiprocessing.connection.Connection],
    reporter: Progress,
    kept: dict[str, list[Verdict]],
    only: IsolatedCall | None = None,
) -> None:
    """Pass on every progress event the workers (or only ``only``) have sent so far, and keep the
    verdicts they sent (:data:`KEPT`)."""
    for call, reader in list(events.items()):
        if only is not None and call is not only:
            continue
        try:
            while reader.poll():
                event = reader.recv()
                if event[0] == KEPT:
                    kept.setdefault(event[1], []).append(event[2])
                else:
                    reporter.event(event)
        except (EOFError, OSError, pickle.UnpicklingError):
            with contextlib.suppress(OSError):
                reader.close()
            del events[call]


def _crash_story(
    system: System,
    specs: Sequence[Spec],
    profile: Profile,
    shares: list[tuple[tuple[Spec, ...], str, CrashReport | None]],
) -> dict[str, Verdict]:
    """One story per crashed system, however many of its workers crashed: the specs of the crashed
    shares, in the system's spec order, told by the share that holds the first of them."""
    lost = {spec.id for shard, _failure, _crash in shares for spec in shard}
    ordered = [spec for spec in specs if spec.id in lost]
    _shard, failure, crash = min(shares, key=lambda share: min(specs.index(spec) for spec in share[0]))
    return {verdict.spec_id: verdict for verdict in _crash_verdicts(system, ordered, profile, failure, crash)}


def _crash_verdicts(
    system: System, specs: Sequence[Spec], profile: Profile, reason: str, crash: CrashReport | None = None
) -> list[Verdict]:
    """One story per crashed worker: the first spec's verdict is the error (how the worker ended,
    the call it was running, the native traceback); every other spec is "not run" and points to it."""
    if not specs:
        return []
    seed = None if profile.derandomize else session_seed()
    if crash is not None and crash.stuck and crash.call:
        return _stuck_verdicts(system, specs, profile.name, seed, crash)
    if reason.startswith("did not finish"):
        reason += " (RLCONFORM_SYSTEM_TIMEOUT)"
    during = f" during {crash.call}" if crash is not None and crash.call else ""
    message = f"the worker process checking {system.id} {reason}{during}; no spec of this system reached a verdict"
    if not reason.startswith("raised"):
        message += " (the system crashed or killed its process: a segfault, os._exit, an out-of-memory kill)"
    if crash is not None and crash.native_traceback:
        message += f"\n\n{NATIVE_TRACEBACK}\n" + crash.native_traceback
    first, *others = specs
    not_run = f"not run: the worker process checking {system.id} {reason}{during} (see {first.id})"
    return [Verdict(system.id, first.id, "error", message, profile=profile.name, seed=seed)] + [
        Verdict(system.id, spec.id, "not_run", not_run, profile=profile.name, seed=seed) for spec in others
    ]


def _stuck_verdicts(
    system: System, specs: Sequence[Spec], profile: str, seed: int | None, crash: CrashReport
) -> list[Verdict]:
    """A call the worker's alarm could not end (native code blocking signals or never returning to
    the interpreter) is a hang like any other: ``lifecycle.responsive`` fails naming it, the other
    specs are not run. There is no reproducer: the case was drawn in the killed worker."""
    hang = f"{crash.call} did not answer within its deadline and could not be interrupted"
    message = (
        f"{hang}; the worker process was killed {STUCK_GRACE_SECONDS:g} s past the deadline "
        "(native code that blocks signals or never returns to the interpreter)"
    )
    if crash.native_traceback:
        message += f"\n\n{NATIVE_TRACEBACK}\n" + crash.native_traceback
    return [
        Verdict(system.id, spec.id, "fail", message, violations=[message.split("\n", 1)[0]], profile=profile, seed=seed)
        if spec.id == RESPONSIVE
        else Verdict(
            system.id,
            spec.id,
            "not_run",
            f"not run: system hung ({hang}; see {RESPONSIVE})",
            profile=profile,
            seed=seed,
        )
        for spec in specs
    ]
