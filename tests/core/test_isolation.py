"""A system that crashes, kills its process or hangs gets a verdict; the run goes on; nothing is left.

Each case runs ``rlconform check`` as a user would (a process in a directory holding their module)
with a marker in its environment: every process it starts inherits the marker, so scanning
``/proc`` afterwards finds any process it left behind, orphans reparented to init included.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

pytest.importorskip("gymnasium")
pytestmark = [
    pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs Linux /proc"),
    pytest.mark.slow,  # each test runs the CLI in a subprocess
]

CRASHERS = '''
import os
import signal
import subprocess
import sys

import gymnasium
import numpy as np


class SegfaultEnv(gymnasium.Env):
    """Dies from SIGSEGV on its third step, as a buggy C extension would."""

    def __init__(self):
        self.observation_space = gymnasium.spaces.Box(-1.0, 1.0, (2,), np.float32)
        self.action_space = gymnasium.spaces.Discrete(2)
        self._steps = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self._steps = 0
        return np.zeros(2, np.float32), {}

    def step(self, action):
        self._steps += 1
        if self._steps >= 3:
            os.kill(os.getpid(), signal.SIGSEGV)
        return np.zeros(2, np.float32), 0.0, False, False, {}


def segfault_env():
    return SegfaultEnv()


class ExitingAsync(gymnasium.vector.VectorWrapper):
    """Starts worker processes and a server process that outlives its parent (as a simulator
    server may), then ends its own process with os._exit on the second step."""

    def __init__(self, env):
        super().__init__(env)
        self._steps = 0
        self._server = subprocess.Popen(
            [sys.executable, "-c", "import time; time.sleep(120)"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )

    def step(self, actions):
        self._steps += 1
        if self._steps >= 2:
            os._exit(3)
        return self.env.step(actions)


def slow_async(env_fns, **kwargs):
    import functools

    inner = gymnasium.vector.AsyncVectorEnv(env_fns, **kwargs)
    inner.step = functools.partial(_slow_step, inner.step)
    return inner


def _slow_step(step, actions):
    import time

    time.sleep(0.2)
    return step(actions)


def exiting_async(env_fns, **kwargs):
    return ExitingAsync(gymnasium.vector.AsyncVectorEnv(env_fns, **kwargs))
'''


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    (tmp_path / "crashers.py").write_text(CRASHERS)
    return tmp_path


def processes_with(marker: str) -> list[str]:
    """Command lines of the live processes whose environment carries ``marker``."""
    found = []
    needle = f"RLCONFORM_TEST_MARKER={marker}".encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if needle in (entry / "environ").read_bytes():
                found.append((entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"))
        except OSError:
            continue  # gone meanwhile, or not ours to read
    return found


def check(cwd: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], str]:
    marker = uuid.uuid4().hex
    env = {**os.environ, "RLCONFORM_PROFILE": "fast", "RLCONFORM_TEST_MARKER": marker}
    env.pop("RLCONFORM_SEED", None)
    proc = subprocess.run(
        [sys.executable, "-m", "rlconform.cli", "check", *args, "--json", "out.json"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,  # a process left holding the output pipes would block the run: fail instead
    )
    return proc, marker


def no_leftovers(marker: str) -> list[str]:
    deadline = time.monotonic() + 5  # killed processes may take a moment to be reaped
    while (left := processes_with(marker)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


def test_a_segfaulting_env_gets_error_verdicts_and_the_run_goes_on(workdir: Path) -> None:
    """One story per crash: the first spec's verdict is the error, the others are not run and
    point to it (before, every spec repeated the same error)."""
    proc, marker = check(workdir, "crashers:segfault_env", "--api", "gymnasium.Env")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    results = json.loads((workdir / "out.json").read_text())["results"]
    assert results, "every spec gets a verdict"
    assert results[0]["status"] == "error"
    assert {r["status"] for r in results[1:]} == {"not_run"}
    assert all(f"(see {results[0]['spec']})" in r["message"] for r in results[1:])
    assert all("died from SIGSEGV" in r["message"] for r in results), results[0]["message"]
    assert "Traceback" not in proc.stdout
    assert no_leftovers(marker) == []


def test_a_system_that_exits_its_process_leaves_no_worker_behind(workdir: Path) -> None:
    proc, marker = check(workdir, "crashers:exiting_async", "--api", "gymnasium.vector", "--spec", "transitions.*")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    results = json.loads((workdir / "out.json").read_text())["results"]
    assert results[0]["status"] == "error" and {r["status"] for r in results[1:]} <= {"not_run"}
    assert all("exited with status 3" in r["message"] for r in results), results[0]["message"]
    # the AsyncVectorEnv workers and the server it had started are gone with it
    assert no_leftovers(marker) == []


def test_the_leftover_scan_sees_what_an_unisolated_crash_leaves(workdir: Path) -> None:
    """Control: in-process, the same crash ends rlconform itself and leaves the server running."""
    proc, marker = check(
        workdir, "crashers:exiting_async", "--api", "gymnasium.vector", "--spec", "transitions.exact", "--in-process"
    )
    try:
        assert proc.returncode == 3
        assert not (workdir / "out.json").exists()
        assert any("time.sleep(120)" in cmd for cmd in no_leftovers(marker))
    finally:
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit() and f"RLCONFORM_TEST_MARKER={marker}".encode() in _environ(entry):
                os.kill(int(entry.name), 9)


def _environ(entry: Path) -> bytes:
    try:
        return (entry / "environ").read_bytes()
    except OSError:
        return b""


def test_sigterm_ends_the_run_and_its_workers(workdir: Path) -> None:
    """A CI job cancelled mid-run (SIGTERM) leaves no worker or env process behind, although the
    isolated workers sit in process groups of their own."""
    import signal

    marker = uuid.uuid4().hex
    env = {**os.environ, "RLCONFORM_PROFILE": "ci", "RLCONFORM_TEST_MARKER": marker}
    proc = subprocess.Popen(
        [sys.executable, "-m", "rlconform.cli", "check", "crashers:slow_async", "--api", "gymnasium.vector"],
        cwd=workdir,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    # wait until the isolated worker has started the AsyncVectorEnv's env processes
    while len(processes_with(marker)) < 4 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert len(processes_with(marker)) >= 4, processes_with(marker)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 128 + signal.SIGTERM
    assert no_leftovers(marker) == []


def test_in_process_mode_is_still_available_for_debugging(workdir: Path) -> None:
    (workdir / "fine.py").write_text(
        "from rlconform.libraries.envauthor.sample_envs import counter\n\ndef make():\n    return counter()\n"
    )
    proc, marker = check(workdir, "fine:make", "--api", "gymnasium.Env", "--spec", "env.api_shape", "--in-process")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert no_leftovers(marker) == []
