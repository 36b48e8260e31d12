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
import time
from collections.abc import Callable, Iterator, Sequence
from typing import TextIO

from rlconform.core.config import SYSTEM_TIMEOUT, seconds
from rlconform.core.crashlog import CrashReport
from rlconform.core.hangs import RESPONSIVE
from rlconform.core.isolation import STUCK_GRACE_SECONDS, IsolatedCall, can_isolate
from rlconform.core.profiles import Profile, session_seed
from rlconform.core.progress import Event, Events, Progress, reporter, throttled
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


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C (or SIGTERM) ended a run: carries the verdicts finished so far, in run order, so that
    the CLI can still write them (marked partial) instead of losing the whole run."""

    def __init__(self, verdicts: list[Verdict]) -> None:
        super().__init__(f"interrupted after {len(verdicts)} verdict(s)")
        self.verdicts = verdicts


def check_system(
    system: System,
    specs: Sequence[Spec],
    profile: Profile,
    done: list[Verdict] | None = None,
    events: Events | None = None,
) -> list[Verdict]:
    """The verdicts of every spec on ``system``; each is appended to ``done`` as it is reached
    (in this process: what an interrupted run keeps of the system it was checking). ``events``
    hears how each search goes (:data:`rlconform.core.progress.Event`)."""
    verdicts = done if done is not None else []
    send = throttled(events) if events is not None else None
    for index, spec in enumerate(specs, start=1):
        if send is None:
            verdicts.append(check_spec(system, spec, profile))
            continue
        send(("spec", system.id, index, len(specs), spec.id))
        verdict = check_spec(system, spec, profile, on_example=lambda n: send(("examples", system.id, n)))
        verdicts.append(verdict)
        send(
            ("verdict", system.id, index, len(specs), spec.id, cell_status(verdict), verdict.examples, verdict.seconds)
        )
    return list(verdicts)


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
    :class:`~rlconform.core.progress.Progress` of each spec as it goes too."""
    results: dict[str, list[Verdict]] = {}
    total = len(systems)
    reporter = progress if isinstance(progress, Progress) else _Legacy(progress)
    try:
        if (jobs <= 1 and not isolate) or not can_isolate():
            for done, system in enumerate(systems, start=1):
                start = time.perf_counter()
                results[system.id] = []
                reporter.system_started(done - 1, total, system)
                check_system(system, specs, profile, results[system.id], reporter.event)
                reporter.system_finished(done, total, system, results[system.id], time.perf_counter() - start)
        else:
            for done, (system, verdicts, seconds) in enumerate(
                _isolated(systems, specs, profile, max(jobs, 1), reporter), start=1
            ):
                results[system.id] = verdicts
                reporter.system_finished(done, total, system, verdicts, seconds)
    except KeyboardInterrupt:
        # the isolated workers are already killed (_isolated's finally); keep what was finished
        raise RunInterrupted([v for system in systems for v in results.get(system.id, [])]) from None
    finally:
        reporter.close()
    return [verdict for system in systems for verdict in results[system.id]]


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


def _isolated(
    systems: Sequence[System], specs: Sequence[Spec], profile: Profile, jobs: int, progress: Progress | None = None
) -> Iterator[tuple[System, list[Verdict], float]]:
    """Yield (system, verdicts, seconds) as isolated workers finish, at most ``jobs`` at a time;
    the workers' progress events go to ``progress`` as they arrive."""
    reporter = progress or Progress()
    pending = list(systems)
    total = len(systems)
    finished = 0
    running: dict[IsolatedCall, System] = {}
    #: each worker's progress pipe (the parent's reading end), until it closes
    events: dict[IsolatedCall, multiprocessing.connection.Connection] = {}
    limit = system_timeout()
    try:
        while pending or running:
            while pending and len(running) < jobs:
                system = pending.pop(0)
                reader, writer = multiprocessing.get_context("fork").Pipe(duplex=False)
                reporter.system_started(finished, total, system)
                call = IsolatedCall(check_system, system, specs, profile, None, _EventPipe(writer))
                writer.close()  # the child has its copy: the pipe ends (EOF) when the child does
                running[call] = system
                events[call] = reader
            handles = [h for call in running for h in call.handles()] + list(events.values())
            multiprocessing.connection.wait(handles, timeout=1.0)
            _read_events(events, reporter)
            reporter.tick()
            for call, system in list(running.items()):
                if not call.poll(limit):
                    continue
                _read_events(events, reporter, call)
                if call in events:  # else its pipe ended already
                    with contextlib.suppress(OSError):
                        events.pop(call).close()
                del running[call]
                finished += 1
                assert call.outcome is not None
                verdicts = call.outcome.value
                if call.outcome.failure is not None:
                    verdicts = _crash_verdicts(system, specs, profile, call.outcome.failure, call.outcome.crash)
                yield system, verdicts, call.elapsed
    finally:
        # interrupted (Ctrl-C, SIGTERM, an error here): the workers run in process groups of
        # their own, out of reach of the terminal's signals; end them with the run
        for call in running:
            call.kill()
        for reader in events.values():
            with contextlib.suppress(OSError):
                reader.close()


def _read_events(
    events: dict[IsolatedCall, multiprocessing.connection.Connection],
    reporter: Progress,
    only: IsolatedCall | None = None,
) -> None:
    """Pass on every progress event the workers (or only ``only``) have sent so far."""
    for call, reader in list(events.items()):
        if only is not None and call is not only:
            continue
        try:
            while reader.poll():
                reporter.event(reader.recv())
        except (EOFError, OSError):
            with contextlib.suppress(OSError):
                reader.close()
            del events[call]


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


def print_progress(stream: TextIO, *, tty: bool | None = None) -> Progress:
    """Progress written to ``stream``: a line redrawn in place on a terminal, plain lines (one per
    finished spec, one per finished system) elsewhere (:func:`rlconform.core.progress.reporter`)."""
    return reporter(stream, tty=tty)
