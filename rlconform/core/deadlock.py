"""Telling a deadlocked ``close()`` from a slow one, before its limit runs out.

A user's stack gets 30 s to close (``watchdog.CLOSE_TIMEOUT``): shutting down a spawned worker
with torch imported takes seconds, and that is slow, not hung. Gymnasium's AsyncVectorEnv after a
failed call (FINDINGS.md, G3) instead blocks forever: the caller waits on a pipe for replies its
workers will never send, and each worker waits on its pipe for a command. Waiting out the whole
limit for that made the check of such a stack six times as long as its Sync twin's.

A deadlock can be seen from outside. Every process involved sleeps in a wait that has no timer (a
pipe or socket read, a wait for a child), none is runnable, none uses CPU. The slow closes seen
here show something else: a worker that shuts down is runnable or uses CPU, and a caller that polls
sleeps on a timer (a spawned ParallelEnv's close: runnable workers, and a caller in
``hrtimer_nanosleep`` throughout). So a thread samples the caller's main thread and every process below it from
``/proc``, and reports the deadlock once all of them have been still for :data:`STILL_SECONDS`.

Only waits known to have no timeout count as still: a ``poll``, ``select`` or futex wait may end by
itself, so a close waiting in one is given its whole limit. Two long-lived helpers of
multiprocessing (the fork server and the resource tracker) wait on their pipes for as long as the
process lives, and are left out. Where ``/proc`` or its wait channels cannot be read (another
platform, a kernel that hides them), nothing counts as still, and the limit alone applies. A
caller with no worker process is never called deadlocked: what it waits for may be a thread of its
own.

What this cannot see: a process outside the caller's tree. A close that waits with no timeout for
a server nobody here started, while every worker of its own idles on its pipe, would be called
deadlocked after :data:`STILL_SECONDS` even if the server answers later. None of the bundled
stacks closes that way; for a user's stack that does, the verdict's message says what was seen.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from dataclasses import dataclass

#: seconds every process must have been still for the close to count as deadlocked
STILL_SECONDS = 2.0
#: how a deadlock's finding (the CallTimeout's message) begins
DEADLOCKED = "deadlocked"
#: seconds between two samples
SAMPLE_SECONDS = 0.25

#: kernel wait channels of a wait with no timeout: a read of a pipe or of a Unix socket (a
#: multiprocessing Connection), and ``waitpid`` without WNOHANG (``Process.join()``)
UNTIMED_WAITS = frozenset(
    {"anon_pipe_read", "pipe_read", "pipe_wait", "unix_stream_read_generic", "unix_stream_data_wait", "do_wait"}
)
#: wait channels of a timed sleep (``time.sleep``): the sleeper wakes by itself
TIMED_SLEEPS = frozenset({"hrtimer_nanosleep", "do_nanosleep", "clock_nanosleep"})


@dataclass(frozen=True)
class Task:
    """One thread or process as ``/proc`` shows it."""

    state: str
    #: user and system CPU time in clock ticks
    cpu: int
    wchan: str


def detectable() -> bool:
    """Whether this platform has Linux's ``/proc`` (a kernel that hides wait channels shows "0":
    nothing then counts as still)."""
    return read_task("/proc/self") is not None


def stat_fields(folder: str) -> list[str] | None:
    """The fields of ``folder``'s ``stat`` after the command name (state first, then the parent's
    pid; the name, in parentheses, may hold spaces); None: gone, or unreadable."""
    try:
        with open(os.path.join(folder, "stat")) as f:
            stat = f.read()
    except OSError:
        return None
    return stat[stat.rfind(")") + 2 :].split()


def read_task(folder: str) -> Task | None:
    """The task whose ``/proc`` folder is ``folder`` (None: gone, or unreadable)."""
    fields = stat_fields(folder)
    if fields is None:
        return None
    try:
        with open(os.path.join(folder, "wchan")) as f:
            wchan = f.read().strip()
    except OSError:
        return None
    return Task(fields[0], int(fields[11]) + int(fields[12]), wchan)


def descendants(root: int) -> list[int]:
    """Every process below ``root``, its children's children included."""
    children: dict[int, list[int]] = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return []
    for name in names:
        fields = stat_fields(f"/proc/{name}") if name.isdigit() else None
        if fields is not None:
            children.setdefault(int(fields[1]), []).append(int(name))
    found: list[int] = []
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def bystanders() -> set[int]:
    """multiprocessing's fork server and resource tracker: they wait on their pipes for as long as
    this process lives, whatever the stack does."""
    import multiprocessing.forkserver
    import multiprocessing.resource_tracker

    pids = {
        getattr(getattr(multiprocessing.forkserver, "_forkserver", None), "_forkserver_pid", None),
        getattr(getattr(multiprocessing.resource_tracker, "_resource_tracker", None), "_pid", None),
    }
    return {pid for pid in pids if isinstance(pid, int)}


@dataclass(frozen=True)
class Sample:
    """What one look at the caller and its processes found."""

    #: every task checked waits with no timeout, none runnable (False: something may still happen)
    still: bool
    #: the CPU ticks of the caller's threads (but the monitor's) and of its processes, summed
    cpu: int
    processes: frozenset[int]


def sample(main_thread: int, monitor_thread: int) -> Sample:
    """The caller (this process; its main thread must wait with no timeout, its other threads must
    not run or sleep on a timer) and every process below it, bystanders left out."""
    own = f"/proc/{os.getpid()}/task"
    still = True
    cpu = 0
    try:
        threads = [int(name) for name in os.listdir(own)]
    except OSError:
        return Sample(False, 0, frozenset())
    for tid in threads:
        if tid == monitor_thread:
            continue
        task = read_task(f"{own}/{tid}")
        if task is None:
            continue
        cpu += task.cpu
        running = task.state in ("R", "D") or task.wchan in TIMED_SLEEPS
        if running or (tid == main_thread and task.wchan not in UNTIMED_WAITS):
            still = False
    skip = bystanders()
    processes = [pid for pid in descendants(os.getpid()) if pid not in skip]
    for pid in processes:
        task = read_task(f"/proc/{pid}")
        if task is None or task.state in ("Z", "X"):
            continue
        cpu += task.cpu
        if task.state != "S" or task.wchan not in UNTIMED_WAITS:
            still = False
    return Sample(still, cpu, frozenset(processes))


class DeadlockMonitor:
    """A thread that calls ``on_deadlock`` once the caller and its processes have been still
    (see :func:`sample`, same CPU time, same processes) for ``still_seconds``, and
    ``finding`` says what it saw."""

    def __init__(self, on_deadlock: Callable[[], None], still_seconds: float = STILL_SECONDS) -> None:
        self.on_deadlock = on_deadlock
        self.still_seconds = still_seconds
        self.finding: str | None = None
        self._main = threading.main_thread().native_id
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="rlconform-deadlock-monitor", daemon=True)

    def __enter__(self) -> DeadlockMonitor:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _watch(self) -> None:
        me = threading.get_native_id()
        first: Sample | None = None
        still_for = 0.0
        while not self._stop.wait(SAMPLE_SECONDS):
            now = sample(self._main or 0, me)
            # a deadlock among processes: a caller alone, blocked on a pipe, waits for a thread of its own
            quiet = now.still and bool(now.processes)
            if not quiet or first is None or (now.cpu, now.processes) != (first.cpu, first.processes):
                first, still_for = (now if quiet else None), 0.0
                continue
            still_for += SAMPLE_SECONDS
            if still_for >= self.still_seconds:
                self.finding = (
                    f"{DEADLOCKED}: it and its {len(now.processes)} worker process(es) all waited on a pipe "
                    f"or a child process with no timeout, none using CPU, for {self.still_seconds:g} s"
                )
                self.on_deadlock()
                return
