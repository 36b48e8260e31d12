"""A deadlocked close() is told from a slow one before its limit (rlconform.core.deadlock).

Each case blocks the main thread on a pipe, under ``deadline(..., watch_deadlock=True)``, while a
worker process (or a thread) answers late in one of the ways a correct close can be slow: busy
with CPU, asleep on a timer, polling with a timeout. Each of those waits longer than
``STILL_SECONDS`` and must still be given its answer; only the worker that waits for a command that
never comes is a deadlock.
"""

from __future__ import annotations

import multiprocessing
import threading
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

import pytest

from rlconform.core.deadlock import STILL_SECONDS, detectable
from rlconform.core.watchdog import CallTimeout, deadline, deadlines_available

pytestmark = pytest.mark.skipif(
    not (detectable() and deadlines_available()), reason="needs Linux's /proc and SIGALRM in the main thread"
)

#: how late the innocent workers answer: longer than the stillness a deadlock is called after
LATE = STILL_SECONDS + 1.5


def waits_for_a_command(conn: Connection) -> None:
    conn.recv()


def busy_then_answers(conn: Connection) -> None:
    end = time.monotonic() + LATE
    while time.monotonic() < end:
        pass
    conn.send("done")


def sleeps_then_answers(conn: Connection) -> None:
    time.sleep(LATE)
    conn.send("done")


def polls_then_answers(conn: Connection) -> None:
    conn.poll(LATE)
    conn.send("done")


def waits_on_a_child_then_answers(conn: Connection) -> None:
    """Joins a process of its own that sleeps: a wait with no timeout for a process on a timer."""
    child = multiprocessing.get_context("fork").Process(target=time.sleep, args=(LATE,))
    child.start()
    child.join()
    conn.send("done")


def _wait_for(worker: Callable[[Connection], None], limit: float, watch: bool = True) -> tuple[Any, float]:
    parent, child = multiprocessing.get_context("fork").Pipe()
    process = multiprocessing.get_context("fork").Process(target=worker, args=(child,))
    process.start()
    started = time.monotonic()
    try:
        with deadline(limit, watch_deadlock=watch):
            answer: Any = parent.recv()
    except CallTimeout as exc:
        answer = exc
    finally:
        process.kill()
        process.join()
    return answer, time.monotonic() - started


def test_workers_waiting_for_a_command_that_never_comes_are_a_deadlock_seen_before_the_limit() -> None:
    answer, took = _wait_for(waits_for_a_command, limit=30.0)
    assert isinstance(answer, CallTimeout)
    assert str(answer).startswith("deadlocked: it and its 1 worker process(es) all waited")
    assert STILL_SECONDS <= took < STILL_SECONDS + 5


def test_without_the_watch_the_same_deadlock_waits_for_its_limit() -> None:
    answer, took = _wait_for(waits_for_a_command, limit=STILL_SECONDS + 2, watch=False)
    assert str(answer) == f"no answer within {STILL_SECONDS + 2:g} s"
    assert took >= STILL_SECONDS + 2


@pytest.mark.parametrize(
    "worker", [busy_then_answers, sleeps_then_answers, polls_then_answers, waits_on_a_child_then_answers]
)
def test_a_worker_that_answers_late_is_slow_not_deadlocked(worker: Callable[[Connection], None]) -> None:
    answer, took = _wait_for(worker, limit=30.0)
    assert answer == "done"
    assert took >= LATE


def test_a_caller_waiting_on_a_thread_of_its_own_is_not_deadlocked() -> None:
    """No worker process: the answer can come from a thread (here one on a futex wait with a timeout)."""
    read, write = multiprocessing.get_context("fork").Pipe(duplex=False)

    def answer_late() -> None:
        threading.Event().wait(LATE)
        write.send("done")

    thread = threading.Thread(target=answer_late)
    thread.start()
    with deadline(30.0, watch_deadlock=True):
        assert read.recv() == "done"
    thread.join()


def test_the_alarm_is_put_back_after_a_deadlock() -> None:
    """After a deadlock the next deadline works as before, and no late alarm reaches the caller."""
    _wait_for(waits_for_a_command, limit=30.0)
    with deadline(1.0):
        time.sleep(0.6)
    with pytest.raises(CallTimeout, match=r"no answer within 0\.2 s"), deadline(0.2):
        time.sleep(1.0)
