"""Progress of long checks, per spec: a line redrawn in place on a terminal, plain lines elsewhere.

The reporters are fed events as the searches send them; then ``run_checks`` drives them, in this
process and from isolated worker processes (whose events cross a pipe); last, ``rlconform check``
is run with its output on a pseudo-terminal and on a pipe.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from rlconform.core.profiles import get_profile
from rlconform.core.progress import LineProgress, Progress, TerminalProgress, reporter, throttled
from rlconform.core.spec import get_spec
from rlconform.core.suite import run_checks
from rlconform.core.system import System, get_system
from rlconform.core.verdict import Verdict


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def system(system_id: str = "sys.a") -> System:
    return System(id=system_id, family="gymnasium.vector", title=system_id, build=lambda env_fns: None, source="")


def feed(progress: Progress) -> None:
    a = system()
    progress.system_started(0, 1, a)
    progress.event(("spec", "sys.a", 1, 2, "flags.terminated"))
    progress.event(("examples", "sys.a", 7))
    progress.event(("verdict", "sys.a", 1, 2, "flags.terminated", "pass", 40, 1.25))
    progress.event(("spec", "sys.a", 2, 2, "terminal.final_obs"))
    progress.event(("verdict", "sys.a", 2, 2, "terminal.final_obs", "fail", 52, 3.5))
    verdicts = [Verdict("sys.a", "flags.terminated", "pass"), Verdict("sys.a", "terminal.final_obs", "fail")]
    progress.system_finished(1, 1, a, verdicts, 4.75)
    progress.close()


def test_plain_lines_one_per_finished_spec_then_the_system() -> None:
    """The system's line names what failed; a bundled system's failure that no FINDINGS.md row
    explains (this made-up system has none) is NEW."""
    out = io.StringIO()
    feed(LineProgress(out))
    assert out.getvalue().splitlines() == [
        "  [1/2] sys.a :: flags.terminated: pass (40 examples, 1.2 s)",
        "  [2/2] sys.a :: terminal.final_obs: fail (52 examples, 3.5 s)",
        "[1/1] sys.a: 1 fail, 1 pass (4.8 s); failed: terminal.final_obs NEW",
    ]
    assert "\r" not in out.getvalue()


def test_a_run_writes_one_line_per_system_naming_the_findings_rows() -> None:
    """``rlconform run``: no line per spec (``--verbose``: one per spec that ran, never one for a
    spec that does not apply); the system's line names each failure's FINDINGS.md row and wraps
    at 100 columns."""
    a = System(
        id="gymnasium.SyncVectorEnv.NextStep.nocopy." + "x" * 40,
        family="gymnasium.vector",
        title="",
        build=lambda env_fns: None,
        source="",
    )
    verdicts = [
        Verdict(a.id, "aliasing.returned_objects", "fail", finding="G7"),
        Verdict(a.id, "aliasing.caller_arguments", "fail", finding="G1"),
        Verdict(a.id, "transitions.exact", "fail"),
        Verdict(a.id, "flags.terminated", "not_applicable"),
    ]
    spec_line = f"[1/2] {a.id} :: transitions.exact: fail (3 examples, 1.0 s)"
    for per_spec, spec_lines in ((False, ""), (True, spec_line)):
        out = io.StringIO()
        progress = reporter(out, per_spec=per_spec, not_applicable=False, line_width=100)
        progress.event(("verdict", a.id, 1, 2, "transitions.exact", "fail", 3, 1.0))
        progress.event(("verdict", a.id, 2, 2, "flags.terminated", "not_applicable", 0, 0.0))
        progress.system_finished(1, 1, a, verdicts, 4.75)
        lines = out.getvalue().splitlines()
        first = next(i for i, line in enumerate(lines) if line.startswith("[1/1] "))
        assert " ".join(line.strip() for line in lines[:first]) == spec_lines
        system_lines = lines[first:]
        assert len(system_lines) > 1 and all(len(line) <= 100 for line in lines)
        assert all(line.startswith("    ") for line in system_lines[1:])
        assert " ".join(line.strip() for line in system_lines) == (
            f"[1/1] {a.id}: 3 fail, 1 not_applicable (4.8 s); failed: aliasing.returned_objects G7, "
            "aliasing.caller_arguments G1, transitions.exact NEW"
        )
    # ``check`` keeps its lines whole (scripts read them): the same system line, unwrapped
    out = io.StringIO()
    LineProgress(out).system_finished(1, 1, a, verdicts, 4.75)
    assert out.getvalue().count("\n") == 1 and "transitions.exact NEW" in out.getvalue()


def test_terminal_line_is_redrawn_in_place() -> None:
    out = Terminal()
    progress = TerminalProgress(out, width=200)
    a = system()
    progress.system_started(0, 2, a)
    progress.event(("spec", "sys.a", 3, 4, "flags.terminated"))
    progress.event(("examples", "sys.a", 17))
    line = progress.line()
    assert line.startswith("[" + "#" * 7 + "-" * 13 + "] 0/2 systems")  # 3/4 of one system of two
    assert "sys.a: spec 3/4 flags.terminated" in line and "17 examples" in line and "system 0 s" in line
    progress.system_finished(1, 2, a, [Verdict("sys.a", "flags.terminated", "pass")], 2.0)
    progress.close()
    text = out.getvalue()
    assert text.count("\r") >= 4 and "\n" in text
    # what remains on the screen: the finished system's line, the progress line erased
    screen = [chunk.split("\r")[-1].rstrip() for chunk in text.split("\n")]
    assert screen == ["[1/2] sys.a: 1 pass (2.0 s)", ""]


def test_terminal_line_fits_the_width_and_names_other_running_systems() -> None:
    progress = TerminalProgress(Terminal(), width=40)
    progress.system_started(0, 3, system("sys.a"))
    progress.system_started(0, 3, system("sys.b"))
    assert "+1 more running" in progress.line()
    progress.tick()
    assert progress._shown <= 39


def test_the_stream_decides_the_reporter() -> None:
    assert isinstance(reporter(Terminal()), TerminalProgress)
    assert isinstance(reporter(io.StringIO()), LineProgress)
    assert isinstance(reporter(io.StringIO(), tty=True), TerminalProgress)


def test_examples_events_are_throttled_and_others_are_not() -> None:
    seen: list[Any] = []
    send = throttled(seen.append, interval=3600)
    send(("spec", "s", 1, 1, "x"))
    for n in range(1, 50):
        send(("examples", "s", n))
    send(("verdict", "s", 1, 1, "x", "pass", 49, 0.1))
    assert [e[0] for e in seen] == ["spec", "verdict"]


class Recorder(Progress):
    def __init__(self) -> None:
        self.events: list[Any] = []
        self.finished: list[str] = []

    def event(self, event: Any) -> None:
        self.events.append(event)

    def system_finished(self, done: int, total: int, system: System, verdicts: list[Verdict], seconds: float) -> None:
        self.finished.append(f"{done}/{total} {system.id} {len(verdicts)}")


@pytest.mark.parametrize("isolate", [False, True], ids=["in-process", "isolated"])
def test_run_checks_reports_every_spec(isolate: bool) -> None:
    pytest.importorskip("gymnasium")
    systems = [get_system("gymnasium.SyncVectorEnv.NextStep")]
    specs = [get_spec("flags.terminated"), get_spec("lifecycle.no_step_after_end")]
    progress = Recorder()
    verdicts = run_checks(systems, specs, get_profile("fast"), isolate=isolate, progress=progress)
    kinds = [e[0] for e in progress.events]
    assert kinds[0] == "spec" and kinds[-1] == "verdict"
    finished = [(e[2], e[4], e[5], e[6]) for e in progress.events if e[0] == "verdict"]
    assert finished == [(i, v.spec_id, "pass", v.examples) for i, v in enumerate(verdicts, start=1)]
    assert progress.finished == ["1/1 gymnasium.SyncVectorEnv.NextStep 2"]


MYVEC = """
import gymnasium


def make(env_fns, **kwargs):
    return gymnasium.vector.SyncVectorEnv(env_fns)
"""


def check_command(tmp_path: Path) -> list[str]:
    (tmp_path / "myvec.py").write_text(MYVEC)
    command = [sys.executable, "-m", "rlconform.cli", "check", "myvec:make", "--api", "gymnasium.vector"]
    return [*command, "--spec", "flags.*", "--profile", "fast"]


@pytest.mark.slow  # runs the CLI in a subprocess
def test_check_prints_plain_lines_into_a_pipe(tmp_path: Path) -> None:
    pytest.importorskip("gymnasium")
    done = subprocess.run(check_command(tmp_path), cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "\r" not in done.stdout
    assert "  [1/2] user:myvec:make :: flags.terminated: pass (" in done.stdout
    assert "  [2/2] user:myvec:make :: flags.truncated: pass (" in done.stdout
    assert "[1/1] user:myvec:make: 2 pass (" in done.stdout


@pytest.mark.slow  # runs the CLI in a subprocess
def test_check_redraws_one_line_on_a_terminal(tmp_path: Path) -> None:
    pytest.importorskip("gymnasium")
    pty = pytest.importorskip("pty")
    leader, follower = pty.openpty()
    process = subprocess.Popen(check_command(tmp_path), cwd=tmp_path, stdout=follower, stderr=subprocess.PIPE)
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # the terminal closed with the process
            break
        if not chunk:
            break
        chunks.append(chunk)
    assert process.wait(timeout=300) == 0
    os.close(leader)
    text = b"".join(chunks).decode()
    assert "\r" in text and "] 0/1 systems | user:myvec:make: spec " in text
    assert "  [1/2] user:myvec:make :: flags.terminated" not in text  # no line per spec: the line is redrawn
    assert "[1/1] user:myvec:make: 2 pass (" in text


def test_an_expected_failure_shows_as_known_in_the_spec_line_and_the_system_line() -> None:
    """`check --expected-failures`: the project's expected failure is never shown as a failure,
    neither in its spec's progress line nor in its system's; a failure not listed still is."""
    from rlconform.core.expected import ExpectedFailures
    from rlconform.core.session import expected_progress as _progress_with_expected

    out = io.StringIO()
    expected = ExpectedFailures.parse("sys.a-terminal.final_obs  upstream bug (#3)\n", "xf.txt")
    feed(_progress_with_expected(expected, set(), LineProgress(out)))
    assert out.getvalue().splitlines() == [
        "  [1/2] sys.a :: flags.terminated: pass (40 examples, 1.2 s)",
        "  [2/2] sys.a :: terminal.final_obs: known (52 examples, 3.5 s)",
        "[1/1] sys.a: 1 known, 1 pass (4.8 s)",
    ]
    out = io.StringIO()
    other = ExpectedFailures.parse("sys.b-terminal.final_obs  another system\n", "xf.txt")
    feed(_progress_with_expected(other, set(), LineProgress(out)))
    assert "terminal.final_obs: fail (52" in out.getvalue() and "1 fail, 1 pass" in out.getvalue()
