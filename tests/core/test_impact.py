"""One defect, one story, ranked by impact.

Every spec declares an impact class; failures that share a minimal case are printed once, under
their most specific spec, with one reproducer; ``--fail-on CLASS`` gates on the classes a CI
cares about; each failure has a value-free signature that ``rlconform diff`` and ``rlconform
matrix`` compare. Every search here runs a real planted bug (rlconform.libraries.gymnasium.planted) through
the real Gymnasium stack, under the fast profile with the seed conftest pins.
"""

from __future__ import annotations

import copy
import gzip
import json
import re
import sys
from importlib import import_module
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("gymnasium")

from rlconform import cli
from rlconform.core.impact import IMPACTS, at_least, check_impact
from rlconform.core.profiles import get_profile
from rlconform.core.search import Verdict, check_spec
from rlconform.core.signature import violation_kind
from rlconform.core.spec import all_specs, get_spec, spec
from rlconform.core.system import get_system
from rlconform.reports import load_results, render_html, render_junit, render_markdown, validate
from rlconform.reports.diff import Diff, render_text
from rlconform.reports.matrix import Matrix, load_directory
from rlconform.reports.matrix import render_markdown as matrix_markdown
from rlconform.reports.results import Results, header_lines, render_failures

# the plugin's report header imports torch; importing it again after pytester's sys.modules
# snapshot dropped it crashes the interpreter, so it is imported once here (as test_plugin does)
header_lines(get_profile("ci"), None)

ROOT = Path(__file__).resolve().parents[2]
BASELINES = sorted((ROOT / "matrix" / "baseline").glob("*.json.gz"))

PLANTS = """
from rlconform.libraries.gymnasium.planted import DoubleStep, TruncatesBatch


def double_step(env_fns, **kwargs):
    return DoubleStep(list(env_fns), "SameStep")


def truncates_batch(env_fns, **kwargs):
    return TruncatesBatch(list(env_fns), "SameStep")
"""

#: specs the planted DoubleStep bug breaks on one shared two-call case (counts.env_steps names the
#: defect; the others list its consequences), and one it breaks on a case of its own (robustness)
DOUBLE_STEP_SPECS = ("transitions.exact", "terminal.final_obs", "counts.env_steps", "api.failed_call_no_side_effect")


@pytest.fixture
def plants(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "impact_plants.py").write_text(PLANTS)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "impact_plants", raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def check(*args: str) -> list[str]:
    return ["check", *args, "--api", "gymnasium.vector", "--profile", "fast", "--in-process"]


def spec_args(*ids: str) -> list[str]:
    return [arg for spec_id in ids for arg in ("--spec", spec_id)]


# -- every spec has a class -----------------------------------------------------------------------


def test_every_registered_spec_declares_an_impact_class() -> None:
    specs = all_specs()
    assert len(specs) >= 37
    assert all(s.impact in IMPACTS for s in specs), [s.id for s in specs if s.impact not in IMPACTS]
    # the classes are used, each at least once, and in the declared order of severity
    assert {s.impact for s in specs} == set(IMPACTS)
    assert IMPACTS == ("training-data", "reproducibility", "api-contract", "robustness")
    assert get_spec("transitions.exact").impact == "training-data"
    assert get_spec("seeding.reset_determinism").impact == "reproducibility"
    assert get_spec("dtype.observations").impact == "api-contract"
    assert get_spec("lifecycle.responsive").impact == "robustness"


def test_isaaclab_specs_declare_impact_classes_too() -> None:
    """The Isaac Lab specs are in the catalog only where torch is installed; their modules import
    without Isaac Lab, and a catalog reading them (whatever is installed) gives each its impact class."""
    from rlconform.core.catalog import specs_of

    specs = [
        s
        for name in ("torch_specs", "device_specs")
        for s in specs_of(import_module(f"rlconform.libraries.isaaclab.{name}"))
    ]
    impacts = {s.id: s.impact for s in specs}
    assert len(impacts) == 16 and set(impacts.values()) <= set(IMPACTS)
    assert impacts["isaaclab.final_obs"] == "training-data" and impacts["isaaclab.api"] == "api-contract"


def test_a_spec_without_a_valid_impact_class_cannot_be_registered() -> None:
    def never(run: Any) -> Any:
        raise AssertionError("not called")

    with pytest.raises(TypeError, match="impact"):
        spec("impact.test.missing", statement="s", rationale="r", families=frozenset())(never)  # type: ignore[call-arg]
    with pytest.raises(ValueError, match="impact must be one of"):
        spec("impact.test.bad", statement="s", rationale="r", impact="cosmetic", families=frozenset())(never)  # type: ignore[arg-type]
    assert all(s.id.startswith("impact.test") is False for s in all_specs())


def test_fail_on_threshold_counts_that_class_and_the_more_severe_ones() -> None:
    assert at_least("training-data", "api-contract") and at_least("api-contract", "api-contract")
    assert not at_least("robustness", "api-contract") and not at_least("api-contract", "training-data")
    assert all(at_least(impact, None) for impact in IMPACTS)
    with pytest.raises(ValueError, match="unknown impact class 'severe'"):
        check_impact("severe")


# -- signatures -------------------------------------------------------------------------------------


def test_violation_kind_drops_values_and_keeps_what_was_wrong() -> None:
    a = "next_obs is episode 2 step 1 (the terminal observation); expected episode 1 step 1 (the terminal observation)"
    b = "next_obs is episode 7 step 3 (the terminal observation); expected episode 6 step 3 (the terminal observation)"
    c = "next_obs is episode 2 step 0 (a reset observation); expected episode 1 step 1 (the terminal observation)"
    assert violation_kind(a) == violation_kind(b)
    assert violation_kind(a) != violation_kind(c)
    # names keep their digits; an array's length is a value
    assert violation_kind("dtype float64 at [0.5 1. 2.]") == violation_kind("dtype float64 at [3.]")
    assert violation_kind("dtype float64") != violation_kind("dtype float32")


def test_signature_is_stable_across_seeds_and_differs_between_defects(monkeypatch: pytest.MonkeyPatch) -> None:
    final_obs = get_spec("terminal.final_obs")
    found = []
    for seed in ("1", "2"):
        monkeypatch.setenv("RLCONFORM_SEED", seed)
        found.append(check_spec(get_system("planted.double_step"), final_obs, "fast"))
    assert [v.status for v in found] == ["fail", "fail"]
    assert found[0].signature == found[1].signature
    assert found[0].signature is not None and found[0].signature.startswith("terminal.final_obs#")
    other = check_spec(get_system("planted.wrong_final_obs"), final_obs, "fast")
    assert other.status == "fail" and other.signature != found[0].signature
    assert other.violation_kinds != found[0].violation_kinds


# -- one defect, one story ---------------------------------------------------------------------------


def test_check_prints_one_group_with_one_reproducer_ranked_by_impact(
    plants: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = cli.main(check("impact_plants:double_step", *spec_args(*DOUBLE_STEP_SPECS), "--json", "out.json"))
    out = capsys.readouterr().out
    assert code == cli.EXIT_FAIL
    listing = out[out.index("\nFAIL ") + 1 :]
    heads = re.findall(r"^(FAIL|KNOWN|ERROR|NOT_EXERCISED) \[([^\]]+)\] \S+ :: (\S+)$", listing, re.MULTILINE)
    # the three specs failing on one two-call case are one group headed by the one naming the
    # defect (fewest violations among the training-data ones); the robustness failure comes after
    assert heads == [
        ("FAIL", "corrupts training data", "counts.env_steps"),
        ("FAIL", "robustness", "api.failed_call_no_side_effect"),
    ]
    assert "    also fails on the same minimal case: terminal.final_obs (training-data), transitions.exact" in listing
    assert listing.count("    reproducer:") == 2
    assert listing.count('"""rlconform reproducer') == 2
    assert re.search(r"^    signature: counts\.env_steps#[0-9a-f]{8}$", listing, re.MULTILINE)
    # the JSON keeps every verdict, each failure naming its group's head
    document = json.loads((plants / "out.json").read_text())
    groups = {r["spec"]: r["group"] for r in document["results"] if r["status"] == "fail"}
    assert groups == {
        "transitions.exact": "counts.env_steps",
        "terminal.final_obs": "counts.env_steps",
        "counts.env_steps": "counts.env_steps",
        "api.failed_call_no_side_effect": "api.failed_call_no_side_effect",
    }
    assert all(r["reproducer"] for r in document["results"] if r["status"] == "fail")
    impacts = {s["id"]: s["impact"] for s in document["specs"]}
    assert impacts["counts.env_steps"] == "training-data" and impacts["api.failed_call_no_side_effect"] == "robustness"
    loaded = validate(document, "out.json")
    # Markdown, HTML and JUnit show the groups and classes from the same document
    markdown = render_markdown(loaded)
    assert markdown.count("Reproducer (save it as `repro.py`") == 2
    assert "`counts.env_steps` (corrupts training data)" in markdown
    assert "Also fails on the same minimal case:" in markdown
    assert markdown.index("(corrupts training data)\n") < markdown.index("(robustness)\n")
    html = render_html(loaded)
    assert html.count('<pre class="reproducer">') == 2 and "corrupts training data</span>" in html
    junit = render_junit(loaded)
    assert '<property name="rlconform.core.impact" value="training-data" />' in junit
    assert '<property name="rlconform.group" value="counts.env_steps" />' in junit


def test_grouping_cuts_the_listing_of_a_planted_bug() -> None:
    """The issue's count: a planted bug's failures, each with its reproducer, against the grouped
    listing (one reproducer per minimal case)."""
    system = get_system("planted.double_step")
    specs = [get_spec(s) for s in DOUBLE_STEP_SPECS]
    verdicts = [check_spec(system, s, "fast") for s in specs]
    assert all(v.status == "fail" for v in verdicts)
    grouped = render_failures(verdicts, with_reproducers=True, specs=specs)
    ungrouped = "\n".join(render_failures([v], with_reproducers=True) for v in verdicts)
    assert grouped.count("    reproducer:") == 2 and ungrouped.count("    reproducer:") == 4
    assert len(grouped.splitlines()) < len(ungrouped.splitlines()) * 0.7


# -- --fail-on --------------------------------------------------------------------------------------


def test_fail_on_gates_on_the_class(plants: Path, capsys: pytest.CaptureFixture[str]) -> None:
    robustness_only = check("impact_plants:truncates_batch", *spec_args("api.wrong_size_batch_rejected"))
    assert cli.main(robustness_only) == cli.EXIT_FAIL  # today's behaviour: any failure
    assert cli.main([*robustness_only, "--fail-on", "robustness"]) == cli.EXIT_FAIL
    assert cli.main([*robustness_only, "--fail-on", "api-contract"]) == cli.EXIT_OK
    assert cli.main([*robustness_only, "--fail-on", "training-data"]) == cli.EXIT_OK
    training = check("impact_plants:double_step", *spec_args("counts.env_steps"))
    assert cli.main([*training, "--fail-on", "training-data"]) == cli.EXIT_FAIL
    capsys.readouterr()
    assert cli.main([*robustness_only, "--fail-on", "severe"]) == cli.EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert err.strip().count("\n") == 0 and "--fail-on: unknown impact class 'severe'" in err


def test_run_fail_on_gates_library_failures_at_that_class(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``run`` exits 0 on library failures unless --strict; --fail-on gates it at a class. The
    bundled Gymnasium SyncVectorEnv (NextStep) steps its sub-envs before it rejects a wrong-size
    batch: a real robustness failure (``api.failed_call_no_side_effect``; planted systems are not
    run by ``run``)."""
    monkeypatch.chdir(tmp_path)
    args = ["run", "--profile", "fast", "--in-process", "--json", "out.json", "--no-reference"]
    args += ["--system", "gymnasium.SyncVectorEnv.NextStep", "--spec", "api.failed_call_no_side_effect"]
    assert cli.main(args) == cli.EXIT_OK
    document = json.loads((tmp_path / "out.json").read_text())
    assert [(r["status"], r["known"], r["impact"]) for r in document["results"]] == [("fail", None, "robustness")]
    assert cli.main([*args, "--strict"]) == cli.EXIT_FAIL
    assert cli.main([*args, "--fail-on", "robustness"]) == cli.EXIT_FAIL
    assert cli.main([*args, "--fail-on", "api-contract"]) == cli.EXIT_OK
    assert cli.main([*args, "--strict", "--fail-on", "reproducibility"]) == cli.EXIT_OK
    capsys.readouterr()
    assert cli.main([*args, "--fail-on", "nope"]) == cli.EXIT_BAD_INPUT
    assert "--fail-on: unknown impact class 'nope'" in capsys.readouterr().err


# -- diff and matrix ---------------------------------------------------------------------------------


def _document(verdicts: list[Verdict], system_id: str) -> dict[str, Any]:
    """A results document of ``verdicts`` relabelled as ``system_id``'s (one system, two releases)."""
    relabelled = [copy.copy(v) for v in verdicts]
    for verdict in relabelled:
        verdict.system_id = system_id
    specs = [get_spec(v.spec_id) for v in verdicts]
    results = Results(profile=get_profile("fast"), seed=1, systems=[], specs=specs, verdicts=relabelled)
    return json.loads(json.dumps(results.to_json(), default=str))


def test_diff_and_matrix_show_a_spec_failing_another_way(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    final_obs = get_spec("terminal.final_obs")
    before = check_spec(get_system("planted.double_step"), final_obs, "fast")
    after = check_spec(get_system("planted.wrong_final_obs"), final_obs, "fast")
    assert before.status == after.status == "fail" and before.signature != after.signature
    old, new = _document([before], "user:vec:make"), _document([after], "user:vec:make")
    (tmp_path / "old.json").write_text(json.dumps(old))
    (tmp_path / "new.json").write_text(json.dumps(new))

    diff = Diff("old.json", "new.json", validate(old), validate(new))
    assert [(c.kind, c.spec) for c in diff.changes] == [("signature", "terminal.final_obs")]
    assert not diff.regressions
    text = render_text(diff)
    assert "Failing differently (same status, another kind of violation) (1):" in text
    assert f"user:vec:make :: terminal.final_obs  fail {before.signature} -> fail {after.signature}" in text
    # visible, but not a regression: the check already failed in the baseline
    assert cli.main(["diff", str(tmp_path / "old.json"), str(tmp_path / "new.json")]) == cli.EXIT_OK
    assert "Failing differently" in capsys.readouterr().out
    same = Diff("a", "b", validate(old), validate(copy.deepcopy(old)))
    assert same.changes == []

    matrix = Matrix.build(load_directory(tmp_path))
    assert [(r.system, r.spec, r.cells) for r in matrix.rows] == [
        ("user:vec:make", "terminal.final_obs", ("fail",) * 2)
    ]
    shown = matrix_markdown(matrix)
    assert before.signature.split("#")[1] in shown and after.signature.split("#")[1] in shown


@pytest.mark.skipif(not BASELINES, reason="no committed baseline")
def test_committed_baselines_load_and_diff_clean(tmp_path: Path) -> None:
    """Baselines written before impact classes and signatures still load, diff clean against
    themselves, and against a newer document of the same verdicts with those fields added."""
    for path in BASELINES:
        document = load_results(path)
        assert document.results
        assert Diff(path.name, path.name, document, load_results(path)).changes == []
        data = json.loads(gzip.decompress(path.read_bytes()))
        # the same verdicts as a document written before impact classes and signatures existed
        older = copy.deepcopy(data)
        for entry in [*older["results"], *older["specs"]]:
            for key in ("impact", "signature", "violation_kinds", "group"):
                entry.pop(key, None)
        newer = copy.deepcopy(data)
        for result in newer["results"]:
            result.setdefault("impact", "training-data")
            if result["status"] == "fail":
                result.setdefault("signature", f"{result['spec']}#00000000")
                result.setdefault("violation_kinds", ["something"])
                result.setdefault("group", result["spec"])
        for entry in newer["specs"]:
            entry.setdefault("impact", "api-contract")
        assert Diff("old", "new", validate(older), validate(newer)).changes == []
        render_markdown(document)  # an old document renders, its failures unclassified but grouped
    matrix = Matrix.build(load_directory(BASELINES[0].parent))
    assert matrix.columns and "Changing verdicts" in __import__("rlconform.reports.matrix").reports.matrix.render_html(
        matrix
    )


# -- the pytest plugin --------------------------------------------------------------------------------


def test_plugin_fail_on_turns_failures_below_the_class_into_xfail(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RLCONFORM_PROFILE", "fast")
    pytester.makepyfile(impact_plants=PLANTS)
    args = ["--rlconform-api", "gymnasium.vector"]
    args += ["--rlconform-check", "impact_plants:truncates_batch", "--rlconform-specs", "api.wrong_size_batch_rejected"]
    result = pytester.runpytest(*args, "--rlconform-json=out.json")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["impact: robustness (robustness)", "signature: api.wrong_size_batch_rejected#*"])
    result.stdout.fnmatch_lines(["rlconform failures by impact: 1 robustness (1 group of one minimal case)"])
    document = json.loads((pytester.path / "out.json").read_text())
    assert [(r["status"], r["impact"], r["group"]) for r in document["results"]] == [
        ("fail", "robustness", "api.wrong_size_batch_rejected")
    ]
    gated = pytester.runpytest(*args, "--rlconform-fail-on", "api-contract")
    gated.assert_outcomes(xfailed=1)
    assert gated.ret == pytest.ExitCode.OK
    bad = pytester.runpytest(*args, "--rlconform-fail-on", "nope")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines(["*--rlconform-fail-on: unknown impact class 'nope'*"])
