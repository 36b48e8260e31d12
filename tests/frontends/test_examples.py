"""``examples/downstream``, run as its users run it: pytest in a copy of the repository.

The example is part of the documentation; these tests keep it true (outcomes, ids, the
expected-failures file, strict mode, xdist, JUnit XML and the JSON document).
"""

from __future__ import annotations

import json
import shutil
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

pytest.importorskip("gymnasium")

pytestmark = pytest.mark.slow  # each test runs pytest over the example in a subprocess

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "downstream"


@pytest.fixture
def repo(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    shutil.copytree(EXAMPLE, pytester.path, dirs_exist_ok=True)
    # the derandomized profile, so that separate runs (with and without xdist) reach the same verdicts
    monkeypatch.setenv("RLCONFORM_PROFILE", "ci")
    return pytester


def run(repo: pytest.Pytester, *args: str) -> pytest.RunResult:
    return repo.runpytest_subprocess("-p", "no:cacheprovider", "-rA", *args, timeout=300)


def test_the_example_passes_with_its_expected_failures(repo: pytest.Pytester) -> None:
    result = run(repo, "--junitxml=report.xml", "--rlconform-json=results.json")
    result.assert_outcomes(passed=8, xfailed=2)
    result.stdout.fnmatch_lines(
        [
            "*PASSED tests/test_conformance.py::test_our_vector_envs[[]user:mypkg.envs:make_vec-transitions.exact[]]",
            "*XFAIL *make_buggy_vec-terminal.final_obs* - expected failure: EpisodeLogger drops*(#42)*",
        ]
    )
    assert "matches no check" not in result.stdout.str()
    cases = ET.parse(repo.path / "report.xml").getroot().iter("testcase")
    assert len(list(cases)) == 10
    document = json.loads((repo.path / "results.json").read_text())
    assert document["summary"] == {"pass": 8, "known": 2}
    expected = [r for r in document["results"] if r["expected"]]
    assert {r["spec"] for r in expected} == {"terminal.final_obs", "transitions.exact"}
    # an expected failure has the status known (its outcome is fail) and keeps its reproducer
    assert all((r["status"], r["outcome"]) == ("known", "fail") and r["reproducer"] for r in expected)


def test_same_outcomes_and_verdicts_under_xdist(repo: pytest.Pytester) -> None:
    run(repo, "--rlconform-json=serial.json").assert_outcomes(passed=8, xfailed=2)
    run(repo, "-n", "2", "--rlconform-json=parallel.json").assert_outcomes(passed=8, xfailed=2)

    def verdicts(name: str) -> list[tuple[str, str, str, str]]:
        results = json.loads((repo.path / name).read_text())["results"]
        return [(r["system"], r["spec"], r["status"], r["message"]) for r in results]

    assert verdicts("serial.json") == verdicts("parallel.json")
    for name in ("serial.json", "parallel.json"):
        document = json.loads((repo.path / name).read_text())
        # the document describes every system and spec it has results for, whichever worker ran them
        assert [s["id"] for s in document["systems"]] == [
            "user:mypkg.envs:make_buggy_vec",
            "user:mypkg.envs:make_env",
            "user:mypkg.envs:make_vec",
        ]
        assert {r["spec"] for r in document["results"]} == {s["id"] for s in document["specs"]}


def test_without_the_expected_failures_the_bug_fails_with_a_reproducer(repo: pytest.Pytester) -> None:
    result = run(repo, "-k", "make_buggy_vec and final_obs", "-o", "rlconform_xfail=")
    result.assert_outcomes(failed=1, deselected=9)
    result.stdout.fnmatch_lines(
        [
            "*user:mypkg.envs:make_buggy_vec violates terminal.final_obs",
            "*reproducer (save it as a .py file and run it*",
        ]
    )


def test_a_fixed_bug_fails_strict_mode_and_a_stale_entry_is_warned_about(repo: pytest.Pytester) -> None:
    envs = repo.path / "mypkg" / "envs.py"
    envs.write_text(envs.read_text().replace("return EpisodeLogger(make_vec(env_fns))", "return make_vec(env_fns)"))
    with open(repo.path / "rlconform-expected-failures.txt", "a") as handle:
        handle.write("user:mypkg.envs:make_vec-terminal.final_obz   a typo\n")
    result = run(repo)
    result.assert_outcomes(passed=8, failed=2)
    result.stdout.fnmatch_lines(["*XPASS(strict)*EpisodeLogger drops*", "*final_obz*matches no check*"])
    # without strict mode an unexpected pass is reported, not failed
    run(repo, "-o", "rlconform_xfail_strict=false").assert_outcomes(passed=8, xpassed=2)


def test_the_cli_reads_the_same_expected_failures(repo: pytest.Pytester) -> None:
    result = repo.run(
        sys.executable,
        "-m",
        "rlconform.cli",
        "check",
        "mypkg.envs:make_buggy_vec",
        "--api",
        "gymnasium.vector",
        "--profile",
        "fast",
        "--spec",
        "terminal.final_obs",
        "--expected-failures",
        "rlconform-expected-failures.txt",
        timeout=300,
    )
    assert result.ret == 0, result.stdout.str() + result.stderr.str()
    result.stdout.fnmatch_lines(["*KNOWN*terminal.final_obs*"])
    result.stderr.fnmatch_lines(["*expected-failure entry*transitions.exact*matches no check*"])
