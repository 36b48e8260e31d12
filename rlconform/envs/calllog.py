"""The call log of a reference environment: every call it received, exactly as received.

The log is the ground truth the specs compare a library's output against. It lives outside the
system under test: in memory for envs stepped in this process, in an append-only file for envs
that a library moves into worker processes (AsyncVectorEnv, SubprocVecEnv), so that reading it
never depends on the library's own attribute-forwarding machinery.
"""

from __future__ import annotations

import os
import pickle
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Protocol

import numpy as np

from rlconform.envs.script import EpisodePlan
from rlconform.envs.spaces import ActionValue
from rlconform.envs.stamp import Stamp


@dataclass(frozen=True)
class ActionReceipt:
    """The action object as the env received it: its type, dtype, shape, device and value."""

    type_name: str
    dtype: str | None
    shape: tuple[int, ...] | None
    value: ActionValue | None
    code: int
    device: str | None = None
    in_space: bool = True

    def describe(self) -> str:
        parts = [self.type_name]
        if self.dtype is not None:
            parts.append(f"dtype={self.dtype}")
        if self.shape is not None:
            parts.append(f"shape={self.shape}")
        if self.device is not None:
            parts.append(f"device={self.device}")
        return f"{self.value!r} ({', '.join(parts)})"


@dataclass(frozen=True)
class ResetRecord:
    seq: int
    seed: int | None
    options: str | None
    episode: int
    salt: int
    plan: EpisodePlan
    stamp: Stamp
    #: time.monotonic_ns() when the call arrived; CLOCK_MONOTONIC is system-wide on Linux, so
    #: records from worker processes can be placed between the driver's calls
    t_ns: int = 0


@dataclass(frozen=True)
class StepRecord:
    seq: int
    action: ActionReceipt
    episode: int
    step_after: int
    reward: float
    terminated: bool
    truncated: bool
    #: the env had already returned terminated or truncated for this episode
    after_end: bool
    stamp: Stamp
    t_ns: int = 0


@dataclass(frozen=True)
class RejectedRecord:
    """A call the env refused (a step before the first reset)."""

    seq: int
    call: str
    reason: str
    t_ns: int = 0


LogRecord = ResetRecord | StepRecord | RejectedRecord


def describe_action(action: Any) -> tuple[str, str | None, tuple[int, ...] | None, str | None]:
    """(type name, dtype, shape, device) of an action object, for NumPy, torch and Python values."""
    cls = type(action)
    type_name = f"{cls.__module__}.{cls.__qualname__}" if cls.__module__ != "builtins" else cls.__qualname__
    dtype = getattr(action, "dtype", None)
    shape = getattr(action, "shape", None)
    device = getattr(action, "device", None)
    return (
        type_name,
        None if dtype is None else str(dtype),
        None if shape is None else tuple(int(s) for s in shape),
        None if device is None else str(device),
    )


class LogSink(Protocol):
    """Where a reference env writes its records."""

    def write(self, record: LogRecord) -> None: ...

    def read(self) -> list[LogRecord]: ...


class MemorySink:
    """Records kept in this process. Refuses to be written from another process: records written
    there would be lost silently, and a lost record would make a wrong verdict."""

    def __init__(self) -> None:
        self.records: list[LogRecord] = []
        self._pid = os.getpid()

    def write(self, record: LogRecord) -> None:
        if os.getpid() != self._pid:
            raise RuntimeError(
                "rlconform: a MemorySink was written from a worker process; this system runs its "
                "envs out of process and must be declared with out_of_process=True"
            )
        self.records.append(record)

    def read(self) -> list[LogRecord]:
        return list(self.records)


class FileSink:
    """Append-only pickled records in one file, flushed after every record; safe across fork,
    spawn and forkserver because only the path travels."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = str(path)
        self._handle: IO[bytes] | None = None
        self._pid: int | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {"path": self.path, "_handle": None, "_pid": None}

    def write(self, record: LogRecord) -> None:
        if self._handle is None or self._pid != os.getpid():
            self._handle = open(self.path, "ab")  # noqa: SIM115 - kept open for the env's life
            self._pid = os.getpid()
        pickle.dump(record, self._handle, protocol=pickle.HIGHEST_PROTOCOL)
        self._handle.flush()

    def read(self) -> list[LogRecord]:
        records: list[LogRecord] = []
        path = Path(self.path)
        if not path.exists():
            return records
        with path.open("rb") as handle:
            while True:
                try:
                    records.append(pickle.load(handle))
                except EOFError:
                    break
        return records

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None


def receipt_value_equal(a: ActionValue | None, b: ActionValue | None) -> bool:
    """Compare two canonical action values, tolerating float32 rounding of Box actions."""
    if a is None or b is None:
        return a is b
    if isinstance(a, tuple) and isinstance(b, tuple):
        if len(a) != len(b):
            return False
        return bool(np.allclose(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64), rtol=0, atol=1e-6))
    return a == b
