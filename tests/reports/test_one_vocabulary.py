"""One status vocabulary in every report (issue 34): a verdict shows the same status in the JSON,
the text of ``run``/``check``, JUnit XML, Markdown and HTML, and old (schema_version 1) documents
read as the same statuses.

The verdicts are hand-made, one of each outcome a report must tell apart (a plain failure, a known
one, one the project expects, an inherited one, an expected error, a pass, not applicable, not
exercised, an error), on a real reference system and real specs: nothing is searched, so the
module runs in about a second.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("gymnasium")

from rlconform import cli
from rlconform.core.profiles import get_profile
from rlconform.core.spec import get_spec
from rlconform.core.system import get_system
from rlconform.core.verdict import Verdict, cell_status
from rlconform.reports import render_html, render_junit, render_markdown, validate
from rlconform.reports.diff import Diff
from rlconform.reports.document import SYMBOLS, ResultsDocument
from rlconform.reports.matrix import Matrix
from rlconform.reports.results import Results, render_failures, render_table

SYSTEM = "reference.gymnasium.vector.SameStep"
#: the second system of the grid layout (several systems: a table instead of a vertical list)
OTHER = "reference.gymnasium.vector.NextStep"
INHERITED = "gymnasium.SyncVectorEnv.SameStep fails it the same way on its own (FINDINGS G1)"
EXPECTED = "our wrapper drops final_obs; fix in review (#42) (expected.txt:1)"

#: spec -> (outcome, what excuses or explains it, the status every report must show)
CASES: dict[str, tuple[str, dict[str, str], str]] = {
    "transitions.exact": ("fail", {}, "fail"),
    "terminal.final_obs": ("fail", {"known": "documented upstream (FINDINGS G2)"}, "known"),
    "flags.terminated": ("fail", {"expected": EXPECTED}, "known"),
    "flags.truncated": ("fail", {"inherited": INHERITED}, "inherited"),
    "counts.env_steps": ("error", {"expected": EXPECTED}, "known"),
    "api.shape": ("pass", {}, "pass"),
    "seeding.seed_plus_i": ("not_applicable", {}, "not_applicable"),
    "infos.aligned": ("not_exercised", {}, "not_exercised"),
    "reset_step.neutral": ("error", {}, "error"),
}
SHOWN = {spec: shown for spec, (_, _, shown) in CASES.items()}
#: the statuses whose results have a section of their own (failures, errors, unexercised specs)
LISTED = {spec for spec, (outcome, _, _) in CASES.items() if outcome in ("fail", "not_exercised", "error")}


def _verdicts(system_id: str) -> list[Verdict]:
    found = []
    for spec, (outcome, facts, _) in CASES.items():
        failed = outcome == "fail"
        found.append(
            Verdict(
                system_id,
                spec,
                outcome,  # type: ignore[arg-type]
                f"{spec} {outcome}: first line\nsecond line",
                reproducer=f"print({spec!r})\n" if failed else None,
                violations=[f"{spec} violated"] if failed else [],
                examples=3,
                profile="ci",
                signature=f"{spec}#0123abcd" if failed else None,
                violation_kinds=[f"{spec} violated"] if failed else [],
                **facts,
            )
        )
    return found


def _results(*system_ids: str) -> Results:
    return Results(
        profile=get_profile("ci"),
        seed=None,
        systems=[get_system(s) for s in system_ids],
        specs=[get_spec(spec) for spec in CASES],
        verdicts=[v for s in system_ids for v in _verdicts(s)],
    )


def _document(results: Results) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(json.dumps(results.to_json(), default=str))
    return loaded


def _as_v1(document: dict[str, Any]) -> dict[str, Any]:
    """The same verdicts as rlconform wrote them before schema_version 2: the outcome as status."""
    old = copy.deepcopy(document)
    old["schema_version"] = 1
    for result in old["results"]:
        result["status"] = result.pop("outcome")
    return old


# -- what each format shows ------------------------------------------------------------------------


def _json_statuses(document: dict[str, Any], system: str) -> dict[str, str]:
    return {r["spec"]: r["status"] for r in document["results"] if r["system"] == system}


def _text_grid(results: Results, system: str) -> dict[str, str]:
    """The run table's row of ``system``: one symbol per spec, read back as its status."""
    by_symbol = {symbol: status for status, symbol in SYMBOLS.items()}
    row = next(line for line in render_table(results).splitlines() if line.startswith(f"{system} "))
    symbols = row.split()[1:]
    return {spec: by_symbol[symbol] for spec, symbol in zip(CASES, symbols, strict=True)}


def _text_listing(results: Results, system: str) -> dict[str, str]:
    """The listing of failures (``run``, ``check``): the label heading each group."""
    heads = re.findall(r"^(\S+) \[[^\]]+\] (\S+) :: (\S+)$", render_failures(results.verdicts), re.MULTILINE)
    return {spec: label.lower() for label, sid, spec in heads if sid == system}


def _text_per_spec(results: Results, system: str) -> dict[str, str]:
    """``check``'s per-spec list: one line per spec, its label first."""
    lines = cli._verdict_lines([v for v in results.verdicts if v.system_id == system], several_systems=False)
    found = (re.match(r"^  (\S+)\s+(\S+): ", line) for line in lines)
    return {m.group(2): m.group(1).lower() for m in found if m}


def _junit(document: ResultsDocument, system: str) -> dict[str, str]:
    """Each testcase's status: the ``type`` of its failure, error or skipped element; pass if none."""
    root = ET.fromstring(render_junit(document).encode("utf-8"))
    shown = {}
    for case in root.iterfind(f"testsuite/testcase[@classname='{system}']"):
        outcome = next((child for child in case if child.tag in ("failure", "error", "skipped")), None)
        shown[case.attrib["name"]] = "pass" if outcome is None else outcome.attrib["type"]
    return shown


def _junit_kinds(document: ResultsDocument, system: str) -> dict[str, str]:
    root = ET.fromstring(render_junit(document).encode("utf-8"))
    return {
        case.attrib["name"]: next((c.tag for c in case if c.tag in ("failure", "error", "skipped")), "passed")
        for case in root.iterfind(f"testsuite/testcase[@classname='{system}']")
    }


def _markdown(document: ResultsDocument, system: str) -> dict[str, str]:
    """The status column of the one-system list, or the grid row's symbols for several systems."""
    text = render_markdown(document)
    if len(document.rows()) == 1:
        rows = re.findall(r"^\| \d+ \| `([^`]+)` \| (\S+(?: \S+)?) \| ", text, re.MULTILINE)
        return {spec: word.strip("*").replace(" ", "_") for spec, word in rows}
    by_symbol = {symbol: status for status, symbol in SYMBOLS.items()}
    row = next(line for line in text.splitlines() if line.startswith(f"| `{system}` |"))
    cells = [cell.strip().strip("*") for cell in row.strip("|").split("|")[1:]]
    return {spec: by_symbol[cell] for spec, cell in zip(CASES, cells, strict=True)}


def _markdown_sections(document: ResultsDocument, system: str) -> dict[str, str]:
    heads = re.findall(r"^### \d+\. (\S+) `([^`]+)` :: `([^`]+)`", render_markdown(document), re.MULTILINE)
    return {spec: label.lower() for label, sid, spec in heads if sid == system}


def _html(document: ResultsDocument, system: str) -> dict[str, str]:
    """The class (s-STATUS) of each spec's cell: the one-system list's rows, or the grid's row."""
    text = render_html(document)
    if len(document.rows()) == 1:
        rows = re.findall(r'<th scope="row"><a href="#[^"]*">([^<]+)</a></th><td class="s-(\w+)">', text)
        return dict(rows)
    row = next(r for r in text.split("<tr>") if r.startswith(f'<th scope="row" title="{get_system(system).title}">'))
    classes = re.findall(r'<td class="s-(\w+)"', row)
    return dict(zip(CASES, classes, strict=True))


def _html_sections(document: ResultsDocument, system: str) -> dict[str, str]:
    heads = re.findall(
        r'<h3><span class="badge s-(\w+)">([^<]+)</span> <code>([^<]+)</code> :: <code>([^<]+)</code>',
        render_html(document),
    )
    found = {}
    for status, label, sid, spec in heads:
        if sid == system:
            assert label == status.upper(), (spec, label, status)
            found[spec] = status
    return found


@pytest.mark.parametrize("systems", [(SYSTEM,), (SYSTEM, OTHER)], ids=["one-system", "grid"])
def test_every_format_shows_one_status_per_verdict(systems: tuple[str, ...]) -> None:
    """Each verdict's status is the same word in the JSON, the text table, the listing of
    failures, check's per-spec list, JUnit, Markdown and HTML: a known, expected or inherited
    failure included (issue 34)."""
    results = _results(*systems)
    assert {v.spec_id: cell_status(v) for v in results.verdicts if v.system_id == SYSTEM} == SHOWN
    document = _document(results)
    loaded = validate(document)
    for system in systems:
        shown = {
            "json": _json_statuses(document, system),
            "text table": _text_grid(results, system),
            "junit": _junit(loaded, system),
            "markdown": _markdown(loaded, system),
            "html": _html(loaded, system),
            "check per-spec list": _text_per_spec(results, system),
        }
        for name, statuses in shown.items():
            assert statuses == SHOWN, name
        listed = {spec: status for spec, status in SHOWN.items() if spec in LISTED}
        sections = {
            "text listing": _text_listing(results, system),
            "markdown sections": _markdown_sections(loaded, system),
            "html sections": _html_sections(loaded, system),
        }
        for name, statuses in sections.items():
            assert statuses == listed, name
    # the JSON keeps the outcome and the facts behind the status: nothing is lost
    for result in document["results"]:
        outcome, facts, _ = CASES[result["spec"]]
        assert result["outcome"] == outcome
        assert {key: result[key] for key in ("known", "expected", "inherited") if result[key]} == facts
    per_system = {"pass": 1, "fail": 1, "inherited": 1, "known": 3, "not_applicable": 1, "not_exercised": 1, "error": 1}
    assert document["summary"] == loaded.counts() == {status: n * len(systems) for status, n in per_system.items()}


def test_junit_keeps_its_outcomes_for_the_new_statuses() -> None:
    """The JUnit outcome of each status is what it was: a known failure (documented or expected)
    and an inherited one are skipped with their reason, a plain failure and an unexercised spec
    are failures, an error is an error (issue 34 changed the words, not what counts)."""
    kinds = _junit_kinds(validate(_document(_results(SYSTEM))), SYSTEM)
    assert kinds == {
        "transitions.exact": "failure",
        "terminal.final_obs": "skipped",
        "flags.terminated": "skipped",
        "flags.truncated": "skipped",
        "counts.env_steps": "skipped",
        "api.shape": "passed",
        "seeding.seed_plus_i": "skipped",
        "infos.aligned": "failure",
        "reset_step.neutral": "error",
    }
    root = ET.fromstring(render_junit(validate(_document(_results(SYSTEM)))).encode("utf-8"))
    inherited = root.find("testsuite/testcase[@name='flags.truncated']/skipped")
    assert inherited is not None and inherited.attrib["message"] == f"inherited: {INHERITED}"


def test_exit_status_counts_outcomes_as_before() -> None:
    """A known or expected failure never fails a run; an inherited one does unless --fail-on own; a
    plain failure does (cli.counts_against reads the verdict's outcome and facts, not the word)."""
    verdicts = {v.spec_id: v for v in _verdicts(SYSTEM)}
    counted = {spec for spec, v in verdicts.items() if cli.counts_against(v, None)}
    assert {"transitions.exact", "flags.truncated", "infos.aligned", "reset_step.neutral"} <= counted
    assert not counted & {"terminal.final_obs", "flags.terminated", "counts.env_steps", "api.shape"}
    assert not cli.counts_against(verdicts["flags.truncated"], "own")
    assert cli.counts_against(verdicts["transitions.exact"], "own")


# -- schema_version 1 --------------------------------------------------------------------------------


def test_a_v1_document_loads_with_the_mapped_statuses() -> None:
    """A document written before schema_version 2 (a known, expected or inherited failure written
    as "fail") is read with the statuses of today: known, known, inherited; its outcome is kept."""
    current = _document(_results(SYSTEM, OTHER))
    old = _as_v1(current)
    assert {r["status"] for r in old["results"]} == {"pass", "fail", "not_applicable", "not_exercised", "error"}
    loaded = validate(old)
    assert loaded.schema_version == 1
    assert {r.spec: r.status for r in loaded.results if r.system == SYSTEM} == SHOWN
    assert {r.spec: r.outcome for r in loaded.results if r.system == SYSTEM} == {s: c[0] for s, c in CASES.items()}
    assert loaded.counts() == validate(current).counts() == current["summary"]
    # the same groups and the same listed results, whatever the version
    now = validate(current)
    assert loaded.group_heads == now.group_heads
    assert [(r.system, r.spec) for r in loaded.reported()] == [(r.system, r.spec) for r in now.reported()]
    # each version is validated by its own schema: v1 never had the new words
    wrong = copy.deepcopy(old)
    wrong["results"][0]["status"] = "known"
    with pytest.raises(ValueError, match=r"v1 schema: \$\.results\[0\]\.status: 'known' is not one of"):
        validate(wrong)


def test_reports_of_a_v1_and_a_v2_document_are_the_same() -> None:
    """Markdown and JUnit of the same verdicts are identical whichever version wrote the document
    (HTML differs only in the footer naming the schema version)."""
    current = _document(_results(SYSTEM, OTHER))
    old, new = validate(_as_v1(current)), validate(current)
    assert render_markdown(old) == render_markdown(new)
    assert render_junit(old) == render_junit(new)
    assert render_html(old).replace("schema_version 1", "schema_version 2") == render_html(new)


def _cli(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        status = cli.main(list(argv))
    return status, out.getvalue()


def test_diff_of_a_v1_and_a_v2_document_of_the_same_verdicts_shows_no_change(tmp_path: Path) -> None:
    """An old baseline compared with a new run of the same verdicts: no change, in either
    direction, and none in the matrix; a real change across versions is still one."""
    current = _document(_results(SYSTEM, OTHER))
    old = _as_v1(current)
    assert Diff("old", "new", validate(old), validate(current)).changes == []
    assert Diff("new", "old", validate(current), validate(old)).changes == []
    assert Matrix.build([(Path("old.json"), validate(old)), (Path("new.json"), validate(current))]).rows == []
    (tmp_path / "old.json").write_text(json.dumps(old))
    (tmp_path / "new.json").write_text(json.dumps(current))
    status, out = _cli("diff", str(tmp_path / "old.json"), str(tmp_path / "new.json"))
    assert status == cli.EXIT_OK and "0 regressions" in out and "No verdict changed." in out
    # the known failure lost its documentation in the new run: a regression, across versions
    changed = copy.deepcopy(current)
    for result in changed["results"]:
        if result["system"] == SYSTEM and result["spec"] == "terminal.final_obs":
            result.update(status="fail", known=None)
    changed["summary"] = validate(changed).counts()
    (tmp_path / "changed.json").write_text(json.dumps(changed))
    status, out = _cli("diff", str(tmp_path / "old.json"), str(tmp_path / "changed.json"))
    assert status == cli.EXIT_FAIL
    assert f"  {SYSTEM} :: terminal.final_obs  known -> fail: terminal.final_obs fail: first line" in out


def test_a_v1_document_is_read_with_the_families_named_by_their_api() -> None:
    """Issue 34, one name per family: a v1 document's old family names are read as the names the
    families have now (two old names now name other families: the schema version decides)."""
    from rlconform.core.catalog import current
    from rlconform.reports.document import V1_FAMILY_NAMES, ResultsDocument, family_name

    assert set(V1_FAMILY_NAMES.values()) <= set(current().families())
    assert family_name("user.env", 1) == "gymnasium.Env" and family_name("gymnasium.Env", 1) == "gymnasium.Wrapper"
    assert family_name("gymnasium.Env", 2) == "gymnasium.Env" and family_name("isaaclab", 1) == "isaaclab.DirectRLEnv"
    document = {
        "schema_version": 1,
        "rlconform_version": "0.1.0",
        "created": "2026-11-01T00:00:00+00:00",
        "profile": {},
        "environment": {},
        "notes": [],
        "specs": [{"id": "env.api_shape", "statement": "", "rationale": "", "families": ["user.env"]}],
        "systems": [
            {"id": "user:m:make_env", "family": "user.env", "title": "", "kind": "user"},
            {"id": "gymnasium.TimeLimit", "family": "gymnasium.Env", "title": "", "kind": "library"},
        ],
        "results": [],
        "summary": {},
    }
    loaded = ResultsDocument.from_json(document)
    assert [s.family for s in loaded.systems] == ["gymnasium.Env", "gymnasium.Wrapper"]
    assert loaded.specs[0].families == ("gymnasium.Env",)
