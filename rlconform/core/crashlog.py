"""What an isolated worker was doing when it died: the library call running, and the native traceback.

A system that segfaults takes its worker process with it, and the worker can no longer say what
happened. So, before the worker runs anything, it points :mod:`faulthandler` at a file and keeps
a second, one-record file naming the library call in progress (:func:`announce`, from
``envs.driver.Driver.call``). The parent reads both when the worker dies: the verdict names the call
that crashed and carries the Python traceback faulthandler wrote at the fatal signal.

The call record is overwritten in place (one ``pwrite`` at offset 0, padded to a fixed size), so
keeping it current costs two system calls per library call and nothing in the parent process.
"""

from __future__ import annotations

import contextlib
import faulthandler
import os
import shutil
import signal
import tempfile
import time
from dataclasses import dataclass
from typing import IO

#: bytes of the call record (a longer call description is cut)
RECORD_SIZE = 512
#: the signal at which a worker dumps its threads' tracebacks (sent by the parent before it kills
#: a worker whose call is stuck; faulthandler answers it in C, even while native code holds the GIL)
DUMP_SIGNAL = signal.SIGUSR1
#: characters of native traceback kept in a verdict
MAX_TRACEBACK = 4000

_call_fd: int | None = None
_fault_file: IO[str] | None = None


def announce(call: str, deadline: float = 0.0) -> None:
    """Record ``call`` as the library call now running in this worker ("" once it returned), and
    the seconds it is allowed (0: none); a no-op outside an isolated worker."""
    if _call_fd is None:
        return
    due = f"{time.time() + deadline:.3f}" if call and deadline > 0 else "0"
    data = f"{due}\t{call}".encode("utf-8", "replace")[: RECORD_SIZE - 1]
    with contextlib.suppress(OSError):
        os.pwrite(_call_fd, data.ljust(RECORD_SIZE, b"\0"), 0)


def trim_traceback(text: str) -> str:
    """faulthandler's dump, cut to what concerns the system: in each thread's stack (most recent
    call first), the frames down to the first one inside rlconform (the call rlconform made),
    then one line for the rest; without the list of loaded extension modules."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep  # rlconform/
    lines: list[str] = []
    inside = False
    for line in text.strip().splitlines():
        if line.startswith("Extension modules:"):
            break
        frame = line.startswith("  File ")
        if not frame:
            inside = False
            lines.append(line)
        elif not inside:
            lines.append(line)
            if f'"{package}' in line:
                inside = True
                lines.append("  ... (rlconform's own frames)")
    return "\n".join(lines).strip()


@dataclass(frozen=True)
class CrashReport:
    #: the library call running when the worker died; None when none was
    call: str | None
    #: what faulthandler wrote at the fatal signal ("" when it wrote nothing: os._exit, SIGKILL)
    native_traceback: str
    #: the call was still running long past its deadline: the alarm could not interrupt it (a hang
    #: in native code that blocks signals or never returns to the interpreter), so the worker was killed
    stuck: bool = False


class CrashLog:
    """The files one isolated worker writes as it goes; made by the parent before the fork."""

    def __init__(self) -> None:
        self.folder = tempfile.mkdtemp(prefix="rlconform-worker-")
        self.call_path = os.path.join(self.folder, "call")
        self.traceback_path = os.path.join(self.folder, "faulthandler.txt")

    def install(self) -> None:
        """In the worker: dump every thread's traceback at a fatal signal, and keep the call record."""
        global _call_fd, _fault_file
        _fault_file = open(self.traceback_path, "w", encoding="utf-8")  # noqa: SIM115 (open while the worker lives)
        faulthandler.enable(file=_fault_file, all_threads=True)
        if hasattr(faulthandler, "register"):  # the parent asks for a dump before killing a stuck worker
            faulthandler.register(DUMP_SIGNAL, file=_fault_file, all_threads=True)
        _call_fd = os.open(self.call_path, os.O_RDWR | os.O_CREAT, 0o600)

    def _record(self) -> tuple[float, str | None]:
        """(when the running call is due, 0 for never; the call, None when none is running)."""
        raw = ""
        with contextlib.suppress(OSError), open(self.call_path, "rb") as handle:
            raw = handle.read(RECORD_SIZE).rstrip(b"\0").decode("utf-8", "replace")
        due, _, call = raw.partition("\t")
        try:
            return float(due), call or None
        except ValueError:
            return 0.0, None

    def dump(self, pid: int, wait: float = 0.5) -> None:
        """Ask the worker ``pid`` for its tracebacks (before it is killed) and give it ``wait`` s."""
        with contextlib.suppress(OSError):
            os.kill(pid, DUMP_SIGNAL)
            time.sleep(wait)

    def stuck_call(self, grace: float) -> str | None:
        """In the parent, while the worker runs: the call that is more than ``grace`` seconds past
        its deadline (its alarm did not end it), or None."""
        due, call = self._record()
        return call if call is not None and due > 0 and time.time() > due + grace else None

    def read(self, *, stuck: bool = False) -> CrashReport:
        """In the parent, after the worker ended: what it left."""
        call = self._record()[1]
        text = ""
        with contextlib.suppress(OSError), open(self.traceback_path, encoding="utf-8", errors="replace") as handle:
            text = trim_traceback(handle.read())
        if len(text) > MAX_TRACEBACK:
            text = text[:MAX_TRACEBACK] + "\n..."
        return CrashReport(call, text, stuck)

    def remove(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)
