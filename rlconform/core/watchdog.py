"""Deadlines for library calls, and clean-up of worker processes a system leaves behind.

A system under test may hang (a worker process wedged by an earlier failed call, a pipe that
never answers). A hang must become a verdict, not a stuck suite: every call runs under a deadline
delivered by SIGALRM, which interrupts blocking pipe reads in the main thread. Off the main
thread (or where SIGALRM does not exist) calls run without a deadline, and the report says so.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import threading
from collections.abc import Iterator

from rlconform.core.config import CALL_TIMEOUT, seconds
from rlconform.core.deadlock import DeadlockMonitor, detectable

#: seconds a call may take when the envs are rlconform's reference envs (microseconds per step)
REFERENCE_CALL_TIMEOUT = 2.0
#: seconds a call may take when the envs are a user's own (they may simulate physics)
USER_CALL_TIMEOUT = 10.0


def call_timeout(*, user_envs: bool = False) -> float:
    """Seconds a single library call may take (RLCONFORM_CALL_TIMEOUT overrides the default)."""
    return seconds(CALL_TIMEOUT, USER_CALL_TIMEOUT if user_envs else REFERENCE_CALL_TIMEOUT)


#: seconds a user's stack's close() may take at the least: it shuts worker processes down, and a
#: spawned worker's interpreter shutdown with torch imported takes seconds (TorchRL's default
#: ParallelEnv workers: 6 to 13 s on a loaded 2-core machine), which is slow, not hung
CLOSE_TIMEOUT = 30.0


def close_timeout(call_deadline: float) -> float:
    """Seconds ``close()`` may take, given the per-call deadline (0: none)."""
    return max(call_deadline, CLOSE_TIMEOUT) if call_deadline > 0 else call_deadline


class CallTimeout(BaseException):
    """A library call exceeded its deadline."""


def deadlines_available() -> bool:
    return hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()


@contextlib.contextmanager
def deadline(seconds: float, *, watch_deadlock: bool = False) -> Iterator[None]:
    """Raise :class:`CallTimeout` in the body if it runs longer than ``seconds``, or, with
    ``watch_deadlock``, as soon as the body and its worker processes are seen deadlocked
    (:mod:`rlconform.core.deadlock`: a close() that can never return need not wait out its limit).

    The alarm repeats every ``seconds`` until the body ends: Python drops an exception a signal
    handler raises while a garbage-collection callback runs (Hypothesis installs one), printing
    "Exception ignored", and a single alarm lost that way would leave a hung call without a deadline.
    """
    if seconds <= 0 or not deadlines_available():
        yield
        return

    monitor: DeadlockMonitor | None = None
    #: the body has ended: an alarm that fires while the deadline is taken down raises nothing
    ended = False

    def on_alarm(signum: int, frame: object) -> None:
        if ended:
            return
        if monitor is not None and monitor.finding is not None:
            raise CallTimeout(monitor.finding)
        raise CallTimeout(f"no answer within {seconds:g} s")

    def alarm_now() -> None:
        # from the monitor's thread: the alarm is the process's, its handler runs in the main thread
        signal.setitimer(signal.ITIMER_REAL, 0.01, DEADLOCK_ALARM_SECONDS)

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds, seconds)
    with contextlib.ExitStack() as watching:
        try:
            if watch_deadlock and seconds > DEADLOCK_ALARM_SECONDS and detectable():
                monitor = watching.enter_context(DeadlockMonitor(alarm_now))
            yield
        finally:
            ended = True
            watching.close()  # the monitor's thread ends before the alarm is put back
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)


#: seconds between the alarms raised once a deadlock is seen (repeated, as the deadline's are)
DEADLOCK_ALARM_SECONDS = 0.5


def child_processes() -> set[multiprocessing.process.BaseProcess]:
    return set(multiprocessing.active_children())


def reap(before: set[multiprocessing.process.BaseProcess]) -> int:
    """Terminate (then kill) the child processes started since ``before`` that are still alive;
    return how many there were."""
    leftovers = [p for p in multiprocessing.active_children() if p not in before]
    for process in leftovers:
        process.terminate()
    for process in leftovers:
        process.join(timeout=2)
        if process.is_alive():
            process.kill()
            process.join(timeout=2)
    return len(leftovers)


@contextlib.contextmanager
def stderr_to(path: str) -> Iterator[None]:
    """Point file descriptor 2 at ``path`` for the body, so that worker processes forked meanwhile
    write their tracebacks there instead of over the report."""
    import sys

    sys.stderr.flush()
    saved = os.dup(2)
    target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.dup2(target, 2)
    try:
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
        os.close(target)
