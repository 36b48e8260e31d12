"""What an isolated worker was doing when it died: the library call running, and the native traceback.

A system that segfaults takes its worker process with it, and the worker can no longer say what
happened. So, before the worker runs anything, it points :mod:`faulthandler` at a file and keeps
a second, one-record file naming the library call in progress (:func:`announce`, from
``runner.Session.call``). The parent reads both when the worker dies: the verdict names the call
that crashed and carries the Python traceback faulthandler wrote at the fatal signal.

The call record is overwritten in place (one ``pwrite`` at offset 0, padded to a fixed size), so
keeping it current costs two system calls per library call and nothing in the parent process.
"""

from __future__ import annotations

import contextlib
import faulthandler
import os
import shutil
import tempfile
from dataclasses import dataclass
from typing import IO

#: bytes of the call record (a longer call description is cut)
RECORD_SIZE = 512
#: characters of native traceback kept in a verdict
MAX_TRACEBACK = 4000

_call_fd: int | None = None
_fault_file: IO[str] | None = None


def announce(call: str) -> None:
    """Record ``call`` as the library call now running in this worker ("" once it returned).
    A no-op outside an isolated worker."""
    if _call_fd is None:
        return
    data = call.encode("utf-8", "replace")[: RECORD_SIZE - 1]
    with contextlib.suppress(OSError):
        os.pwrite(_call_fd, data.ljust(RECORD_SIZE, b"\0"), 0)


def trim_traceback(text: str) -> str:
    """faulthandler's dump, cut to what concerns the system: in each thread's stack (most recent
    call first), the frames down to the first one inside rlconform (the call rlconform made),
    then one line for the rest; without the list of loaded extension modules."""
    package = os.path.dirname(os.path.abspath(__file__)) + os.sep
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
        _call_fd = os.open(self.call_path, os.O_RDWR | os.O_CREAT, 0o600)

    def read(self) -> CrashReport:
        """In the parent, after the worker ended: what it left."""
        call = None
        with contextlib.suppress(OSError), open(self.call_path, "rb") as handle:
            call = handle.read(RECORD_SIZE).rstrip(b"\0").decode("utf-8", "replace") or None
        text = ""
        with contextlib.suppress(OSError), open(self.traceback_path, encoding="utf-8", errors="replace") as handle:
            text = trim_traceback(handle.read())
        if len(text) > MAX_TRACEBACK:
            text = text[:MAX_TRACEBACK] + "\n..."
        return CrashReport(call, text)

    def remove(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)
