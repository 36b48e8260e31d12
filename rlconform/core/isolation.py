"""Running a function in a process of its own, so that whatever it runs cannot take rlconform down.

A user's system may segfault, call ``os._exit``, be killed for memory or hang inside C code where
no signal handler runs. The function runs in a forked child that makes itself the leader of a new
process group; when the child is done, dies or overruns its time, the whole group is killed, so
the worker processes and servers the system started go with it and no orphan survives.

Isolation must not change what the libraries under test see. A fork child inherits this
process's memory, but two pieces of multiprocessing state do not carry over as they are, and the
child puts them back before it runs the function (:func:`_as_in_parent`):

- the global start method: ``Process._bootstrap`` forces it to the start method of the child's
  own ``Process`` ('fork'), where the user's process may have none set (TorchRL then defaults to
  spawn, and importing TorchRL sets it to spawn) or another one. TorchRL's ``ParallelEnv`` and
  Gymnasium's ``AsyncVectorEnv(context=None)`` read it: under 'fork' they would fork their
  workers, which copy rather than pickle what they are given;
- this process's fork server, if it started one: the child cannot use it (``ensure_running``
  waits on a process that is not the child's and raises ChildProcessError), and the workers it
  forks would live outside the child's process group. The child starts a fork server of its own
  when a library asks for one, with the same preloaded modules.

Nor must the child finalize what the parent built. The child inherits the parent's heap, garbage
awaiting collection included, but not its threads: a library object whose destructor stops
threads it started (envpool's thread pool: a pool built in the parent, then collected in a forked
child, kills the child with SIGSEGV) cannot be destroyed in the child. The child freezes the heap
it inherited (``gc.freeze``) before it runs the function, so its collections see only what it
builds itself: a library the system builds in the child starts its own threads and runs as it
does in its user's process, and the parent's objects are left to the parent. (An inherited object
the child's code releases by reference count is still destroyed there: the system's own doing.)
For the same reason an inherited torch runs on one thread in the child (:func:`_one_torch_thread`).
"""

from __future__ import annotations

import contextlib
import gc
import multiprocessing
import multiprocessing.connection
import os
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rlconform.core.crashlog import CrashLog, CrashReport

#: seconds past a call's deadline after which the parent kills the worker: the alarm in the worker
#: (rlconform.core.watchdog) ends a hung call at its deadline unless native code blocks it
STUCK_GRACE_SECONDS = 5.0


def can_isolate() -> bool:
    """Fork and process groups are available (Linux); elsewhere functions run in this process."""
    return sys.platform.startswith("linux") and hasattr(os, "setpgid")


#: how an outcome says the parent killed a child whose call its deadline could not interrupt
HUNG_PAST_DEADLINE = "a call went on past its deadline, which could not interrupt it"


@dataclass
class Outcome:
    """What an isolated call produced: its return value, or why there is none."""

    value: Any = None
    #: None when the function returned; otherwise how the child ended ("died from SIGSEGV ...")
    failure: str | None = None
    #: when the child ended without a value: the call it was running and its native traceback
    crash: CrashReport | None = None


class IsolatedCall:
    """One function call running in a forked child process (see the module docstring)."""

    def __init__(self, fn: Callable[..., Any], *args: Any) -> None:
        context = multiprocessing.get_context("fork")
        self.reader, writer = context.Pipe(duplex=False)
        self.crash_log = CrashLog()
        start_method = multiprocessing.get_start_method(allow_none=True)
        self.process = context.Process(
            target=_child, args=(fn, args, writer, self.crash_log, start_method), daemon=False
        )
        self.started = time.perf_counter()
        self.process.start()
        writer.close()
        self.outcome: Outcome | None = None
        self._message: tuple[str, Any] | None = None

    @property
    def elapsed(self) -> float:
        return time.perf_counter() - self.started

    def handles(self) -> list[Any]:
        """What to wait on: the result pipe (until read) and the process sentinel."""
        return [self.process.sentinel] + ([self.reader] if self._message is None else [])

    def poll(self, timeout: float | None) -> bool:
        """Read the child's message if one is ready; finish when the child has ended or overrun
        ``timeout`` seconds. True once finished (then :attr:`outcome` is set)."""
        if self.outcome is not None:
            return True
        if self._message is None and self.reader.poll():
            try:
                self._message = self.reader.recv()
            except (EOFError, OSError):
                self._message = ("", None)  # died before sending: its exit code tells how
        overran = timeout is not None and self.elapsed > timeout
        stuck = self._message is None and self.crash_log.stuck_call(STUCK_GRACE_SECONDS) is not None
        if self.process.is_alive() and not overran and not stuck:
            return False
        if stuck and self.process.pid is not None:
            self.crash_log.dump(self.process.pid)  # where it is stuck, for the verdict
        if overran or stuck:
            kill_group(self.process.pid)
        self.process.join(5)
        kill_group(self.process.pid)  # whatever the child left behind
        self.reader.close()
        kind, payload = self._message or ("", None)
        if kind == "value":
            self.outcome = Outcome(payload)
        elif kind == "failure":
            self.outcome = Outcome(failure=payload)
        elif stuck:
            self.outcome = Outcome(failure=f"was killed: {HUNG_PAST_DEADLINE}")
        elif overran:
            self.outcome = Outcome(failure=f"did not finish within {timeout:.0f} s and was killed")
        else:
            self.outcome = Outcome(failure=exit_description(self.process.exitcode))
        if self.outcome.failure is not None:
            self.outcome.crash = self.crash_log.read(stuck=stuck and kind not in ("value", "failure"))
        self.crash_log.remove()
        return True

    def kill(self) -> None:
        """End the child and everything it started, without waiting for a result."""
        kill_group(self.process.pid)
        self.process.join(5)
        self.reader.close()
        self.crash_log.remove()


def run_isolated(fn: Callable[..., Any], *args: Any, timeout: float | None = None) -> Outcome:
    """``fn(*args)`` in an isolated child (in this process where isolation is unavailable)."""
    if not can_isolate():
        return Outcome(fn(*args))
    call = IsolatedCall(fn, *args)
    try:
        while not call.poll(timeout):
            multiprocessing.connection.wait(call.handles(), timeout=1.0)
    except BaseException:
        call.kill()
        raise
    assert call.outcome is not None
    return call.outcome


def _child(
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    writer: multiprocessing.connection.Connection,
    crash_log: CrashLog,
    start_method: str | None,
) -> None:
    os.setpgid(0, 0)  # a group of its own: the parent can kill everything this child starts
    gc.freeze()  # the inherited heap is the parent's to collect (see the module docstring)
    _one_torch_thread()
    crash_log.install()  # if the system kills this process, the parent can still say where and how
    _as_in_parent(start_method)
    try:
        message: tuple[str, Any] = ("value", fn(*args))
    except BaseException as exc:  # a crash of rlconform itself, or of the system outside any call
        first = str(exc).splitlines()[0] if str(exc) else ""
        message = ("failure", f"raised {type(exc).__name__}: {first}")
    writer.send(message)
    writer.close()


def _one_torch_thread() -> None:
    """Torch, where the parent imported it, runs on one thread in the child: the child inherits the
    parent's OpenMP state but not its worker threads, so once the parent has run a parallel torch
    operation (PPO's sampling over several sub-envs does), the child's first parallel region waits
    forever for threads that do not exist (SB3's orthogonal weight init hung so in a probe). One
    thread takes the serial path; a torch the child imports itself is left as it is."""
    torch = sys.modules.get("torch")
    set_threads = getattr(torch, "set_num_threads", None)
    if callable(set_threads):
        set_threads(1)


def _as_in_parent(start_method: str | None) -> None:
    """Put back the multiprocessing state the parent had (see the module docstring)."""
    multiprocessing.set_start_method(start_method, force=True)
    from multiprocessing import forkserver

    server: Any = forkserver._forkserver  # type: ignore[attr-defined]  # private: what to forget is private
    if server._forkserver_pid is not None:  # the parent's: forget it (the parent keeps it running)
        with contextlib.suppress(OSError):
            os.close(server._forkserver_alive_fd)
        server._forkserver_address = server._forkserver_alive_fd = server._forkserver_pid = None


def kill_group(pid: int | None) -> None:
    if pid is None:
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def exit_description(exitcode: int | None) -> str:
    if exitcode is not None and exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        return f"died from {name} before reporting"
    return f"exited with status {exitcode} before reporting"
