"""The main job tells its story in one screen (issue 37).

``rlconform run`` writes one line per system as it finishes (never one per spec that does not
apply), the entries of the failures nobody explained, and ends on a summary by library that fits
100 columns: each FINDINGS.md row with the specs it fails and the systems it reaches, then the
failures no row explains, flagged NEW. The systems x specs grid goes to the Markdown and HTML
reports beside the results JSON. Every report names a bundled failure's FINDINGS row, and the run
exits 1 on a new failure only.

The first tests render hand-made verdicts (nothing is searched); the last two run the CLI in a
subprocess, its output piped (as in a CI log), on two fast bundled Gymnasium systems: once as it
is (G1 and G7, both explained: exit 0) and once with the G7 row taken out of the family's findings
table, as if that defect were unknown (NEW, exit 1).
"""

from __future__ import annotations

import fnmatch
import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

pytest.importorskip("gymnasium")

from rlconform.core.findings import is_new
from rlconform.core.profiles import get_profile
from rlconform.core.spec import get_spec
from rlconform.core.system import get_system
from rlconform.core.verdict import Verdict
from rlconform.reports import render_html, render_junit, render_markdown, validate
from rlconform.reports.results import Results
from rlconform.reports.run_summary import WIDTH, compress, render_run_summary, shared_pattern

ROOT = Path(__file__).resolve().parents[2]
NOCOPY = "gymnasium.SyncVectorEnv.NextStep.nocopy"
PLAIN = "gymnasium.SyncVectorEnv.NextStep"
SPECS = ("aliasing.returned_objects", "aliasing.caller_arguments", "flags.terminated")
#: the run of the last two tests: two systems, three specs, every one of which applies
RUN = ["run", "--profile", "ci", "--no-reference", "--system", NOCOPY, "--system", PLAIN]
RUN += [arg for spec in SPECS for arg in ("--spec", spec)]


def test_compress_names_few_systems_and_a_pattern_for_many() -> None:
    assert compress(["b.x", "a.x"]) == "a.x, b.x"
    ids = [f"gymnasium.AsyncVectorEnv.{mode}" for mode in ("NextStep", "SameStep", "Disabled", "NextStep.noshm")]
    assert compress(ids) == "4 systems: gymnasium.AsyncVectorEnv.*"
    nocopy = [
        f"gymnasium.{v}.{m}.nocopy" for v in ("SyncVectorEnv", "AsyncVectorEnv") for m in ("NextStep", "Disabled")
    ]
    assert compress(nocopy) == "4 systems: gymnasium.*.nocopy"
    # the star may stand for nothing: the pattern still matches every system it stands for
    dummy = ["sb3.DummyVecEnv", "sb3.VecNormalize.DummyVecEnv", "sb3.VecMonitor.DummyVecEnv"]
    assert compress(dummy) == "3 systems: sb3.*DummyVecEnv"
    for group in (dummy, nocopy, ["torchrl.GAE", "torchrl.GAE.shifted", "torchrl.GAE.shifted.x"]):
        assert all(fnmatch.fnmatchcase(i, shared_pattern(group)) for i in group), shared_pattern(group)
    # a pattern that says no more than the library names a few systems instead
    collectors = [
        "torchrl.Collector.GymWrapper",
        "torchrl.Collector.SerialEnv",
        "torchrl.MultiSyncCollector.GymWrapper",
    ]
    assert compress(collectors) == ", ".join(collectors)


def test_only_a_bundled_failure_no_row_explains_is_new() -> None:
    assert is_new("library", "fail", finding=None, excused=False)
    assert is_new("reference", "error", finding=None, excused=False)
    assert not is_new("library", "fail", finding="G7", excused=False)
    assert not is_new("library", "fail", finding=None, excused=True)  # known: documented behaviour
    assert not is_new("user", "fail", finding=None, excused=False)  # a user's failures are all the user's
    assert not is_new("library", "not_exercised", finding=None, excused=False)  # a gap, counted, not a finding
    assert not is_new("library", "pass", finding=None, excused=False)


def _document() -> Results:
    """Hand-made verdicts on real bundled systems: G7 and G1 explained, one failure of a spec no
    row names (new), a documented one (known), passes and specs that do not apply."""
    verdicts = []
    for system in (NOCOPY, PLAIN):
        verdicts += [
            Verdict(system, "aliasing.caller_arguments", "fail", "reset popped reset_mask", finding="G1"),
            Verdict(system, "flags.terminated", "pass"),
            Verdict(system, "api.shape", "not_applicable", "does not apply"),
        ]
    verdicts += [
        Verdict(NOCOPY, "aliasing.returned_objects", "fail", "the batch was overwritten", finding="G7"),
        Verdict(PLAIN, "transitions.exact", "fail", "env 0, agent step 3: a transition is missing"),
        Verdict(PLAIN, "terminal.final_obs", "fail", "documented", known="documented behaviour"),
    ]
    specs = ["aliasing.caller_arguments", "flags.terminated", "api.shape", "aliasing.returned_objects"]
    specs += ["transitions.exact", "terminal.final_obs"]
    return Results(
        profile=get_profile("ci"),
        seed=None,
        systems=[get_system(NOCOPY), get_system(PLAIN)],
        specs=[get_spec(s) for s in specs],
        verdicts=verdicts,
    )


def test_the_summary_groups_failures_by_findings_row_and_flags_the_new_ones() -> None:
    results = _document()
    document = validate(json.loads(json.dumps(results.to_json(), default=str)))
    text = render_run_summary(document, ["exit status 1: 1 new failure, no FINDINGS.md row explains"])
    lines = text.splitlines()
    assert all(len(line) <= WIDTH for line in lines), [line for line in lines if len(line) > WIDTH]
    assert (
        lines[0] == "summary: 2 systems, 9 checks: 2 passed, 4 failed, 1 known (documented) failure, 2 not applicable"
    )
    assert "  gymnasium: 2 systems checked, 2 specs passed, 4 failed (1 NEW), 1 known" in lines
    flat = " ".join(text.split())  # a line past 100 columns continues on the next
    assert f" G1 aliasing.caller_arguments: {PLAIN}, {NOCOPY} G7 " in flat
    assert f"    G7 aliasing.returned_objects: {NOCOPY}" in lines
    new = lines.index(f"    NEW transitions.exact: {PLAIN}")
    assert lines[new + 1] == "        env 0, agent step 3: a transition is missing"
    assert lines[-1].startswith("exit status 1")


def test_every_report_format_names_the_findings_row() -> None:
    data = json.loads(json.dumps(_document().to_json(), default=str))
    findings = {(r["system"], r["spec"]): r["finding"] for r in data["results"]}
    assert findings[(NOCOPY, "aliasing.returned_objects")] == "G7"
    assert findings[(PLAIN, "transitions.exact")] is None
    document = validate(data)
    for render in (render_markdown, render_html):
        text = render(document)
        assert "FINDINGS.md G7: a library defect rlconform found and documented" in text
        assert "NEW: no row of FINDINGS.md explains this failure of a bundled system" in text
    cases = {
        (case.get("classname"), case.get("name")): case
        for case in ET.fromstring(render_junit(document)).iter("testcase")
    }
    properties = {p.get("name"): p.get("value") for p in cases[(NOCOPY, "aliasing.returned_objects")].iter("property")}
    assert properties["rlconform.finding"] == "G7"
    new = {p.get("name"): p.get("value") for p in cases[(PLAIN, "transitions.exact")].iter("property")}
    assert new["rlconform.new"] == "true"
    failure = cases[(NOCOPY, "aliasing.returned_objects")].find("failure")
    assert failure is not None and "FINDINGS.md G7" in (failure.text or "")


def _run(tmp_path: Path, *prelude: str) -> subprocess.CompletedProcess[str]:
    """``rlconform run`` in a subprocess, its output piped; ``prelude``: Python run before it."""
    script = "\n".join([*prelude, "from rlconform.cli import main", "raise SystemExit(main(sys.argv[1:]))"])
    command = [sys.executable, "-c", f"import sys\n{script}", *RUN, "--junit", "out/junit.xml"]
    return subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=600)


def _check_output(stdout: str) -> list[str]:
    """What every run's output must be: no line per spec, every line within 100 columns, and the
    summary last; returns the summary's lines."""
    lines = stdout.splitlines()
    assert "not_applicable (" not in stdout and " :: " not in stdout.split("\nsummary: ")[0].split("\nFAIL ")[0]
    too_wide = [line for line in lines if len(line) > WIDTH]
    assert not too_wide, too_wide
    start = max(i for i, line in enumerate(lines) if line.startswith("summary: "))
    summary = lines[start:]
    assert summary[-1].startswith("exit status "), summary
    return summary


@pytest.mark.slow  # two bundled systems searched, in a subprocess
def test_a_run_ends_on_its_summary_and_exits_0_when_findings_explains_every_failure(tmp_path: Path) -> None:
    done = _run(tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    summary = _check_output(done.stdout)
    progress = [line for line in done.stdout.splitlines() if line.startswith("[")]
    assert len(progress) == 2 and progress[0].startswith("[1/2] ") and progress[1].startswith("[2/2] ")
    assert "G7" in done.stdout.split("\nsummary: ")[0]  # the system's line names the row
    text = " ".join("\n".join(summary).split())  # a line past 100 columns continues on the next
    assert f"G1 aliasing.caller_arguments: {PLAIN}, {NOCOPY}" in text
    assert f"G7 aliasing.returned_objects: {NOCOPY}" in text
    assert "NEW" not in text and "FAIL " not in done.stdout  # no entry: nothing new to read
    assert summary[-1] == "exit status 0: every failure is a FINDINGS.md row (3)"
    # the grid went to files, named in the summary
    for path in ("rlconform-results/results.json", "rlconform-results/results.md", "rlconform-results/results.html"):
        assert (tmp_path / path).is_file() and path in text
    assert "| system |" in (tmp_path / "rlconform-results/results.md").read_text()
    document = json.loads((tmp_path / "rlconform-results/results.json").read_text())
    found = {(r["system"], r["spec"]): r["finding"] for r in document["results"] if r["outcome"] == "fail"}
    assert found == {
        (NOCOPY, "aliasing.returned_objects"): "G7",
        (NOCOPY, "aliasing.caller_arguments"): "G1",
        (PLAIN, "aliasing.caller_arguments"): "G1",
    }
    junit = ET.parse(tmp_path / "out/junit.xml").getroot()
    assert {p.get("value") for p in junit.iter("property") if p.get("name") == "rlconform.finding"} == {"G1", "G7"}


#: the G7 row taken out of the Gymnasium vector family's findings table: the defect is now unknown
FORGET_G7 = (
    "from rlconform.libraries.gymnasium.vector_family import GymVectorFamily",
    "GymVectorFamily.findings = {k: v for k, v in GymVectorFamily.findings.items() if v != 'G7'}",
)


@pytest.mark.slow  # two bundled systems searched, in a subprocess
def test_a_failure_no_findings_row_explains_is_new_and_exits_1(tmp_path: Path) -> None:
    done = _run(tmp_path, *FORGET_G7)
    assert done.returncode == 1, done.stdout + done.stderr
    summary = _check_output(done.stdout)
    text = "\n".join(summary)
    assert f"NEW aliasing.returned_objects: {NOCOPY}" in text
    assert "G1 aliasing.caller_arguments" in text and "G7" not in text
    assert "gymnasium: 2 systems checked, 3 specs passed, 3 failed (1 NEW)" in text
    assert summary[-1] == "exit status 1: 1 new failure, no FINDINGS.md row explains"
    # its entry, before the summary, says so; the explained failures have none
    before = done.stdout.split("\nsummary: ")[0]
    heads = [line for line in before.splitlines() if line.startswith("FAIL [")]
    assert len(heads) == 1 and heads[0].endswith(f"] {NOCOPY} :: aliasing.returned_objects"), heads
    assert "    NEW: no row of FINDINGS.md explains this failure of a bundled system" in before
    assert ":: aliasing.caller_arguments" not in before
    # the system's progress line says it too
    flat = " ".join(before.split())
    assert f"{NOCOPY}: 2 fail, 1 pass (" in flat and "failed: aliasing.returned_objects NEW" in flat
