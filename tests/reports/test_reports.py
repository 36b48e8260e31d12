"""Reports made from results documents: the schema, the loader, JUnit XML, Markdown and HTML.

The documents are real: one written by ``rlconform run`` (in this process, through ``cli.main``),
one by the pytest plugin (pytester), and one built from real verdicts of a planted bug, a known
violation of a reference model and a passing reference model, plus verdicts of the remaining
statuses whose messages hold everything a renderer must escape. Each search is one spec on one
small system under the derandomized ci profile, so the module runs in seconds.
"""

from __future__ import annotations

import contextlib
import copy
import html
import io
import json
import os
import re
import shutil
import subprocess
import typing
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("gymnasium")

from rlconform import cli
from rlconform.core.profiles import get_profile
from rlconform.core.search import check_spec
from rlconform.core.spec import all_specs, get_spec
from rlconform.core.system import SystemKind, get_system
from rlconform.core.verdict import ReportStatus, Status, Verdict
from rlconform.reports import (
    ResultsDocument,
    ResultsError,
    load_results,
    render_html,
    render_junit,
    render_markdown,
    validate,
)
from rlconform.reports.document import STATUSES
from rlconform.reports.load import schema
from rlconform.reports.results import SYMBOLS, Results, spec_column
from rlconform.reports.validate import SchemaError, Validator

#: text a message may quote from a system: markup, XML's CDATA end, Markdown table and code
#: syntax, control characters XML forbids, a lone surrogate, non-ASCII
HOSTILE = "a <script>alert(1)</script> & ]]> | `tick` ```fence``` \x00\x01\x1b[31m \ud800 \ufffe é 🙂"

PLANTED, PLANTED_SPEC = "planted.shifted_reward", "transitions.exact"
KNOWN_SYSTEM, KNOWN_SPEC = "reference.sb3.VecNormalize", "terminal.final_obs"
PASSING_SYSTEM, PASSING_SPEC = "reference.gymnasium.vector.SameStep", "flags.terminated"


def _roundtrip(document: dict[str, Any]) -> dict[str, Any]:
    """What a reader of the file gets: json.dump(default=str) then json.load, as write_json does."""
    loaded: dict[str, Any] = json.loads(json.dumps(document, default=str))
    return loaded


@pytest.fixture(scope="module")
def cli_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``rlconform run`` on one reference system and two specs, with every report option."""
    out = tmp_path_factory.mktemp("cli-run")
    argv = ["run", "--profile", "ci", "--system", PASSING_SYSTEM, "--spec", PASSING_SPEC, "--spec", "flags.truncated"]
    argv += ["--json", str(out / "results.json"), "--html", str(out / "r.html")]
    argv += ["--junit", str(out / "r.xml"), "--markdown", str(out / "r.md")]
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout):
        status = cli.main(argv)
    assert status == cli.EXIT_OK, stdout.getvalue()
    (out / "stdout.txt").write_text(stdout.getvalue())
    return out


@pytest.fixture(scope="module")
def cli_document(cli_run: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((cli_run / "results.json").read_text())
    return loaded


@pytest.fixture(scope="module")
def planted_document() -> dict[str, Any]:
    """Real verdicts (a planted bug, a known violation, a pass) and one verdict of every other status."""
    profile = get_profile("ci")
    planted, known, passing = get_system(PLANTED), get_system(KNOWN_SYSTEM), get_system(PASSING_SYSTEM)
    specs = [get_spec(PLANTED_SPEC), get_spec(KNOWN_SPEC), get_spec(PASSING_SPEC)]
    verdicts = [
        check_spec(planted, get_spec(PLANTED_SPEC), profile),
        check_spec(known, get_spec(KNOWN_SPEC), profile),
        check_spec(passing, get_spec(PASSING_SPEC), profile),
        Verdict(PASSING_SYSTEM, PLANTED_SPEC, "error", f"RuntimeError: {HOSTILE}\nTraceback line 2", profile="ci"),
        Verdict(PASSING_SYSTEM, KNOWN_SPEC, "not_exercised", f"no example checked anything: {HOSTILE}"),
        Verdict(KNOWN_SYSTEM, PASSING_SPEC, "not_applicable", "the family has no such flag | <b>"),
        Verdict(PLANTED, KNOWN_SPEC, "skipped", "not installed: somelib"),
        Verdict(KNOWN_SYSTEM, PLANTED_SPEC, "not_run", f"not run: system hung ({HOSTILE}; see lifecycle.responsive)"),
        Verdict(
            PLANTED,
            PASSING_SPEC,
            "fail",
            f"{HOSTILE} (+1 more)",
            reproducer=f"print({HOSTILE!r})\n",
            violations=[HOSTILE, "second violation"],
        ),
    ]
    assert [v.status for v in verdicts[:3]] == ["fail", "fail", "pass"], [v.message for v in verdicts[:3]]
    assert verdicts[1].known and not verdicts[0].known
    results = Results(profile=profile, seed=None, systems=[planted, known, passing], specs=specs, verdicts=verdicts)
    results.notes.append(f"a note: {HOSTILE}")
    return _roundtrip(results.to_json())


@pytest.fixture(scope="module")
def planted(planted_document: dict[str, Any]) -> ResultsDocument:
    return validate(planted_document)


def _verdict(document: dict[str, Any], system: str, spec: str) -> dict[str, Any]:
    return next(r for r in document["results"] if r["system"] == system and r["spec"] == spec)


# -- schema and loader --------------------------------------------------------------------------


def test_schema_uses_only_what_the_runtime_validator_implements() -> None:
    for version in (1, 2):
        shipped = schema(version)
        assert shipped["$schema"] == "https://json-schema.org/draft/2020-12/schema"
        Validator(shipped)  # raises SchemaError for any keyword it would otherwise ignore
    with pytest.raises(SchemaError, match="unsupported keywords"):
        Validator({"type": "object", "patternProperties": {}})


def test_schema_enums_match_the_code() -> None:
    defs = schema()["$defs"]
    # a result's status is the one every report shows; its outcome is the verdict's own
    assert defs["result"]["properties"]["status"]["enum"] == list(typing.get_args(ReportStatus)) == list(STATUSES)
    assert set(defs["result"]["properties"]["outcome"]["enum"]) == set(typing.get_args(Status))
    assert set(defs["system"]["properties"]["kind"]["enum"]) == set(typing.get_args(SystemKind))
    assert set(STATUSES) == set(SYMBOLS)
    # schema_version 1 wrote the outcome as the status
    assert set(schema(1)["$defs"]["result"]["properties"]["status"]["enum"]) == set(typing.get_args(Status))


def _undescribed(document: dict[str, Any]) -> list[str]:
    """Fields the producer writes that the schema does not describe (it must describe them all)."""
    shipped = schema()
    defs = shipped["$defs"]
    checks: list[tuple[str, dict[str, Any], dict[str, Any]]] = [("$", document, shipped)]
    checks += [
        ("$.profile", document["profile"], defs["profile"]),
        ("$.environment", document["environment"], defs["environment"]),
    ]
    checks += [(f"$.specs[{i}]", s, defs["spec"]) for i, s in enumerate(document["specs"])]
    checks += [(f"$.systems[{i}]", s, defs["system"]) for i, s in enumerate(document["systems"])]
    checks += [(f"$.results[{i}]", r, defs["result"]) for i, r in enumerate(document["results"])]
    return [f"{path}.{key}" for path, obj, sub in checks for key in obj if key not in sub["properties"]]


def _check_document(document: dict[str, Any]) -> None:
    assert document["schema_version"] == 2
    assert Validator(schema()).first_error(document) is None
    assert not _undescribed(document)
    # the table statuses the reports count are the document's own summary
    assert validate(document).counts() == document["summary"]


def test_schema_validates_a_cli_document(cli_document: dict[str, Any]) -> None:
    assert [r["status"] for r in cli_document["results"]] == ["pass", "pass"]
    _check_document(cli_document)


def test_schema_validates_a_document_with_every_status(planted_document: dict[str, Any]) -> None:
    outcomes = {r["outcome"] for r in planted_document["results"]}
    assert outcomes == set(typing.get_args(Status))
    # every status but inherited (a user's system only: tests/reports/test_one_vocabulary.py)
    statuses = {r["status"] for r in planted_document["results"]}
    assert statuses == set(typing.get_args(ReportStatus)) - {"inherited"}
    known = _verdict(planted_document, KNOWN_SYSTEM, KNOWN_SPEC)
    assert (known["status"], known["outcome"]) == ("known", "fail") and known["known"]
    _check_document(planted_document)


def test_schema_validates_a_plugin_document(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest(
        "-p",
        "no:xdist",
        *("--rlconform-systems", KNOWN_SYSTEM),
        *("--rlconform-specs", KNOWN_SPEC, "--rlconform-specs", PASSING_SPEC),
        *("--rlconform-profile", "ci", "--rlconform-json", "plugin.json"),
    )
    result.assert_outcomes(passed=1, xfailed=1)
    document: dict[str, Any] = json.loads((pytester.path / "plugin.json").read_text())
    assert document["notes"] and document["summary"] == {"pass": 1, "known": 1}
    _check_document(document)


def _drop(path: str) -> Any:
    def mutate(document: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node: Any = document
        for part in parents:
            node = node[int(part)] if part.isdigit() else node[part]
        del node[last]

    return mutate


def _set(key: str, value: Any) -> Any:
    return lambda document: document.__setitem__(key, value)


def _set_result(key: str, value: Any) -> Any:
    return lambda document: document["results"][0].__setitem__(key, value)


@pytest.mark.parametrize(
    ("mutate", "reason"),
    [
        pytest.param(
            _set("schema", "other/tool"), "is not an rlconform results document: schema 'other/tool'", id="schema"
        ),
        pytest.param(_drop("schema"), "is not an rlconform results document: no 'schema' field", id="no-schema"),
        pytest.param(
            _set("schema_version", 3),
            "has schema_version 3; this rlconform reads schema_version 1 and 2",
            id="version",
        ),
        pytest.param(_set("schema_version", True), "has schema_version True", id="version-bool"),
        pytest.param(_drop("results"), "$: required field 'results' is missing", id="no-results"),
        pytest.param(_drop("results.0.status"), "$.results[0]: required field 'status' is missing", id="no-status"),
        pytest.param(_drop("results.0.outcome"), "$.results[0]: required field 'outcome' is missing", id="no-outcome"),
        pytest.param(_set_result("outcome", "known"), "$.results[0].outcome: 'known' is not one of", id="outcome"),
        pytest.param(_set_result("status", "passed"), "$.results[0].status: 'passed' is not one of", id="status"),
        pytest.param(_set_result("examples", "3"), "$.results[0].examples: expected integer, got string", id="type"),
        pytest.param(_set_result("checked", -1), "$.results[0].checked: -1 is less than the minimum 0", id="minimum"),
        pytest.param(_set_result("known", True), "$.results[0].known: expected string or null", id="bool"),
        pytest.param(_set("summary", {"pass": 1.5}), "$.summary.pass: expected integer, got number", id="summary"),
    ],
)
def test_invalid_documents_are_refused_with_a_one_line_reason(
    planted_document: dict[str, Any], mutate: Any, reason: str
) -> None:
    document = copy.deepcopy(planted_document)
    mutate(document)
    with pytest.raises(ResultsError) as excinfo:
        validate(document, "results.json")
    message = str(excinfo.value)
    assert reason in message
    assert "\n" not in message


def test_documents_may_gain_fields(planted_document: dict[str, Any]) -> None:
    # the schema is open: a field added later (within schema_version 2) does not break old readers
    document = copy.deepcopy(planted_document)
    document["new_top_level"] = {"anything": [1]}
    document["results"][0]["new_field"] = 1
    document["results"][0]["expected"] = "a reason from the project's expected-failures file"
    assert validate(document).results[0].cell == "known"


# -- JUnit XML ----------------------------------------------------------------------------------


def test_junit_parses_and_counts_match_the_summary(planted: ResultsDocument, planted_document: dict[str, Any]) -> None:
    text = render_junit(planted)
    root = ET.fromstring(text.encode("utf-8"))
    summary = planted_document["summary"]
    expected = {
        "tests": len(planted_document["results"]),
        "failures": summary.get("fail", 0) + summary.get("not_exercised", 0),
        "errors": summary.get("error", 0),
        "skipped": summary.get("known", 0)
        + summary.get("not_applicable", 0)
        + summary.get("skipped", 0)
        + summary.get("not_run", 0),
    }
    assert {key: int(root.attrib[key]) for key in expected} == expected
    suites = root.findall("testsuite")
    assert [s.attrib["name"] for s in suites] == [PLANTED, KNOWN_SYSTEM, PASSING_SYSTEM]
    for suite in suites:
        cases = suite.findall("testcase")
        assert next(iter(suite)).tag == "properties"  # JUnit consumers expect properties first
        counted = {
            "tests": len(cases),
            "failures": sum(c.find("failure") is not None for c in cases),
            "errors": sum(c.find("error") is not None for c in cases),
            "skipped": sum(c.find("skipped") is not None for c in cases),
        }
        assert {key: int(suite.attrib[key]) for key in counted} == counted
        assert {c.attrib["classname"] for c in cases} == {suite.attrib["name"]}
        properties = {p.attrib["name"]: p.attrib["value"] for p in suite.iter("property")}
        assert properties["library.gymnasium"] == planted_document["environment"]["libraries"]["gymnasium"]
        assert properties["rlconform.profile"] == "ci"


def _case(root: ET.Element, system: str, spec: str) -> ET.Element:
    found = root.find(f"testsuite/testcase[@classname='{system}'][@name='{spec}']")
    assert found is not None, (system, spec)
    return found


def test_junit_outcomes_carry_message_violations_and_reproducer(
    planted: ResultsDocument, planted_document: dict[str, Any]
) -> None:
    root = ET.fromstring(render_junit(planted).encode("utf-8"))
    fail = _verdict(planted_document, PLANTED, PLANTED_SPEC)
    failure = _case(root, PLANTED, PLANTED_SPEC).find("failure")
    assert failure is not None and failure.text is not None
    assert failure.attrib["message"] == fail["message"].splitlines()[0]
    assert fail["reproducer"].strip() in failure.text
    assert all(v in failure.text for v in fail["violations"])

    known = _case(root, KNOWN_SYSTEM, KNOWN_SPEC).find("skipped")
    assert known is not None and known.attrib["message"].startswith("known violation: ")
    assert _case(root, KNOWN_SYSTEM, PASSING_SPEC).find("skipped") is not None
    assert _case(root, PLANTED, KNOWN_SPEC).find("skipped") is not None
    assert _case(root, PASSING_SYSTEM, PLANTED_SPEC).find("error") is not None
    assert _case(root, PASSING_SYSTEM, KNOWN_SPEC).find("failure") is not None
    assert list(_case(root, PASSING_SYSTEM, PASSING_SPEC)) == []


def test_junit_holds_no_character_xml_forbids(planted: ResultsDocument) -> None:
    text = render_junit(planted)
    assert not re.search("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]", text)
    hostile = _case(ET.fromstring(text.encode("utf-8")), PLANTED, PASSING_SPEC).find("failure")
    assert hostile is not None and hostile.text is not None
    # replaced visibly, never dropped; markup survives as text
    assert "\\x00\\x01\\x1b[31m \\ud800 \\ufffe é 🙂" in hostile.text
    assert "<script>alert(1)</script> & ]]>" in hostile.text


# -- Markdown -----------------------------------------------------------------------------------


def _fenced_blocks(text: str) -> list[tuple[str, str]]:
    """(language, body) of every fenced block, honouring fence lengths as CommonMark does."""
    blocks, lines, i = [], text.splitlines(), 0
    while i < len(lines):
        opening = re.match(r"^(`{3,})(\w*)$", lines[i])
        if not opening:
            i += 1
            continue
        fence, body, i = opening.group(1), [], i + 1
        while i < len(lines) and not re.match(rf"^`{{{len(fence)},}}$", lines[i]):
            body.append(lines[i])
            i += 1
        blocks.append((opening.group(2), "\n".join(body)))
        i += 1
    return blocks


def test_markdown_has_header_table_legend_and_reproducers(
    planted: ResultsDocument, planted_document: dict[str, Any]
) -> None:
    text = render_markdown(planted)
    libraries = planted_document["environment"]["libraries"]
    assert text.startswith("# rlconform results\n")
    assert f"gymnasium {libraries['gymnasium']}" in text and "profile: `ci`, derandomized" in text
    # columns are numbered by the specs' catalog numbers, as in the tables of run and check
    numbers = [spec_column(spec) for spec in (PLANTED_SPEC, KNOWN_SPEC, PASSING_SPEC)]
    assert f"| system | {' | '.join(map(str, numbers))} |\n|:--|:-:|:-:|:-:|\n" in text
    assert f"| `{PLANTED}` | **FAIL** | skip | **FAIL** |" in text
    assert f"| `{KNOWN_SYSTEM}` | n/r | known | . |" in text
    assert "Legend: `ok` pass" in text
    # the spec list names each spec's impact class (rlconform.core.impact) before its statement
    assert f"- **{numbers[0]}** `{PLANTED_SPEC}` (corrupts training data): " in text
    blocks = _fenced_blocks(text)
    fail = _verdict(planted_document, PLANTED, PLANTED_SPEC)
    assert ("python", fail["reproducer"].rstrip("\n")) in blocks
    assert ("text", fail["message"]) in blocks
    # a message holding ``` stays inside its own (longer) fence
    assert any(lang == "text" and "```fence```" in body for lang, body in blocks)
    assert "## Failures (4)" in text and "## Known and expected failures (1)" in text


# -- HTML ---------------------------------------------------------------------------------------


class _Page(HTMLParser):
    """Collects what the tests check: tags, ids, links, titles and the text of each <pre>."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.pres: list[tuple[str, str]] = []  # (class, text)
        self._pre: list[str] | None = None
        self._pre_class = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag == "pre":
            self._pre, self._pre_class = [], dict(attrs).get("class") or ""

    def handle_endtag(self, tag: str) -> None:
        if tag == "pre" and self._pre is not None:
            self.pres.append((self._pre_class, "".join(self._pre)))
            self._pre = None

    def handle_data(self, data: str) -> None:
        if self._pre is not None:
            self._pre.append(data)

    def attrs(self, tag: str) -> list[dict[str, str | None]]:
        return [a for t, a in self.tags if t == tag]


def _parse(text: str) -> _Page:
    page = _Page()
    page.feed(text)
    page.close()
    return page


def test_html_is_self_contained_escaped_and_links_resolve(
    planted: ResultsDocument, planted_document: dict[str, Any]
) -> None:
    text = render_html(planted)
    page = _parse(text)
    tags = {tag for tag, _ in page.tags}
    assert "script" not in tags and not {"link", "img", "iframe", "object"} & tags
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", text) and "@import" not in text
    ids = {a["id"] for _, a in page.tags if a.get("id")}
    hrefs = [a["href"] for a in page.attrs("a") if a.get("href")]
    assert hrefs and all(h and h.startswith("#") and h[1:] in ids for h in hrefs)
    # every reported result is linked from its grid cell
    cell_links = [a for a in page.attrs("a") if (a.get("href") or "").startswith("#result-")]
    assert len(cell_links) == len(planted.reported())
    # spec columns carry their statement as tooltip
    titles = [a.get("title") for a in page.attrs("th") if a.get("class") == "spec"]
    assert titles == [f"{s['id']}: {s['statement']}" for s in planted_document["specs"]]
    # the reproducer is shown verbatim in a visible <pre>, and hostile text is only text
    fail = _verdict(planted_document, PLANTED, PLANTED_SPEC)
    assert ("reproducer", fail["reproducer"]) in page.pres
    assert any("<script>alert(1)</script> & ]]>" in body for _, body in page.pres)
    assert "<details" not in text and "display:none" not in text.replace(" ", "")
    assert "\x00" not in text and "\ud800" not in text


@pytest.fixture(scope="module")
def one_system(planted_document: dict[str, Any]) -> ResultsDocument:
    """The planted document cut to one system: what ``rlconform check`` of one factory writes."""
    document = {**planted_document}
    document["systems"] = [s for s in planted_document["systems"] if s["id"] == PLANTED]
    document["results"] = [r for r in planted_document["results"] if r["system"] == PLANTED]
    return validate(_roundtrip(document))


def test_one_system_is_a_vertical_list_in_markdown(one_system: ResultsDocument) -> None:
    """Issue 25: one system is one row; a table with a column per spec would be one wide row.
    Each spec gets a row of its own: its number, its id, its status, the first line of its message."""
    text = render_markdown(one_system)
    assert "## Systems x specs" not in text and "| system |" not in text
    assert f"## `{PLANTED}`" in text
    assert "| # | spec | status | message |\n|--:|:--|:--|:--|\n" in text
    rows = [line for line in text.splitlines() if re.match(r"^\| \d+ \| `", line)]
    assert len(rows) == len(one_system.results) == 3
    fail = next(r for r in one_system.results if r.spec == PLANTED_SPEC)
    assert f"| {spec_column(PLANTED_SPEC)} | `{PLANTED_SPEC}` | **fail** | " in text
    assert fail.headline.split()[0] in next(row for row in rows if f"`{PLANTED_SPEC}`" in row)
    assert f"| {spec_column(KNOWN_SPEC)} | `{KNOWN_SPEC}` | skipped | not installed: somelib |" in text
    assert "\\<script\\>" in text and "<script>" not in text.split("## Failures", 1)[0]  # hostile text escaped
    assert "## Failures (" in text  # the failures follow as for several systems


def test_one_system_is_a_vertical_list_in_html(one_system: ResultsDocument, planted: ResultsDocument) -> None:
    text = render_html(one_system)
    page = _parse(text)
    assert 'class="grid"' not in text and '<table class="list">' in text
    rows = [body for body in text.split("<tbody>", 1)[1].split("</tbody>", 1)[0].split("<tr>") if body]
    assert len(rows) == len(one_system.results) == 3
    fail_row = next(row for row in rows if f">{PLANTED_SPEC}</a></th>" in row)
    assert '<td class="s-fail"><a href="#result-' in fail_row
    assert "&lt;script&gt;" in text and "<script>" not in text
    ids = {a["id"] for _, a in page.tags if a.get("id")}
    hrefs = [a["href"] for a in page.attrs("a") if a.get("href")]
    assert "grid" in ids and all(h and h.startswith("#") and h[1:] in ids for h in hrefs)
    # several systems keep the grid
    assert 'class="grid"' in render_html(planted) and "## Systems x specs" in render_markdown(planted)


# -- CLI ----------------------------------------------------------------------------------------


def test_run_writes_every_report_from_its_json(cli_run: Path, cli_document: dict[str, Any]) -> None:
    stdout = (cli_run / "stdout.txt").read_text()
    for name in ("r.html", "r.xml", "r.md"):
        assert f"report written to {cli_run / name}" in stdout
    document = load_results(cli_run / "results.json")
    assert (cli_run / "r.md").read_text() == render_markdown(document)
    assert (cli_run / "r.xml").read_text() == render_junit(document)
    assert ET.parse(cli_run / "r.xml").getroot().attrib["tests"] == str(len(cli_document["results"]))
    assert PASSING_SYSTEM in (cli_run / "r.html").read_text()


def test_columns_are_named_alike_in_run_check_and_report(cli_run: Path, cli_document: dict[str, Any]) -> None:
    """A spec's column has one number in every table (its catalog number), whatever the run
    selected: column N of ``run``'s table (in its Markdown report, issue 37: the table is no
    longer printed) is column N of ``check`` and of ``report``."""
    markdown = (cli_run / "r.md").read_text()
    # one system: a vertical list, whose rows carry the numbers
    shown = dict(re.findall(r"^\| (\d+) \| `(\S+)` \| ", markdown, re.MULTILINE))
    assert {spec: int(n) for n, spec in shown.items()} == {
        PASSING_SPEC: spec_column(PASSING_SPEC),
        "flags.truncated": spec_column("flags.truncated"),
    }
    assert {s["id"]: s["column"] for s in cli_document["specs"]} == {spec: int(n) for n, spec in shown.items()}
    assert "specs: " not in (cli_run / "stdout.txt").read_text()  # no wide table on the screen
    # a check selects other specs than a run: the numbers stay those of the catalog
    assert spec_column(PASSING_SPEC) == 1 + [s.id for s in all_specs()].index(PASSING_SPEC)


def test_report_prints_markdown_by_default(
    cli_run: Path, cli_document: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["report", str(cli_run / "results.json")]) == cli.EXIT_OK
    captured = capsys.readouterr()
    assert captured.out == render_markdown(validate(cli_document))
    assert captured.err == ""


def test_report_writes_the_requested_formats(
    tmp_path: Path, planted_document: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "results.json"
    source.write_text(json.dumps(planted_document))
    outputs = {"html": tmp_path / "out" / "page.html", "junit": tmp_path / "junit.xml", "markdown": tmp_path / "s.md"}
    argv = ["report", str(source)] + [arg for name, path in outputs.items() for arg in (f"--{name}", str(path))]
    assert cli.main(argv) == cli.EXIT_OK
    captured = capsys.readouterr()
    assert captured.out.splitlines() == [f"report written to {path}" for path in outputs.values()]
    assert all(path.is_file() for path in outputs.values())
    ET.parse(outputs["junit"])
    _parse(outputs["html"].read_text(encoding="utf-8"))


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        pytest.param(None, "cannot read {path}: No such file or directory", id="missing"),
        pytest.param("{not json", "{path} is not JSON: Expecting property name", id="not-json"),
        pytest.param(b"\xff\xfe{}", "{path} is not UTF-8 text", id="not-utf8"),
        pytest.param("[1, 2]", "{path} is not an rlconform results document: it holds an array", id="array"),
        pytest.param('{"schema": "x"}', "{path} is not an rlconform results document: schema 'x'", id="schema"),
        pytest.param(
            '{"schema": "rlconform/results", "schema_version": 9}', "{path} has schema_version 9", id="version"
        ),
        pytest.param(
            '{"schema": "rlconform/results", "schema_version": 1}',
            "{path} does not match the rlconform/results v1 schema: $: required field",
            id="fields",
        ),
    ],
)
def test_report_bad_input_exits_2_with_one_line_reason(
    tmp_path: Path, content: str | bytes | None, reason: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "results.json"
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        path.write_text(content)
    assert cli.main(["report", str(path), "--html", str(tmp_path / "page.html")]) == cli.EXIT_BAD_INPUT
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err
    assert lines[0].startswith("rlconform: error: " + reason.format(path=path)), lines[0]
    assert captured.out == "" and not (tmp_path / "page.html").exists()


def test_report_unwritable_output_exits_2(
    tmp_path: Path, planted_document: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "results.json"
    source.write_text(json.dumps(planted_document))
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert cli.main(["report", str(source), "--junit", str(blocker / "junit.xml")]) == cli.EXIT_BAD_INPUT
    assert capsys.readouterr().err.startswith(f"rlconform: error: cannot write the junit report to {blocker}")


# -- a real browser -----------------------------------------------------------------------------

CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)

#: appended to a copy of the page (never to the product page, which has no script): measures how
#: the browser laid out the reproducers and the grid, and writes it into the DOM it dumps
PROBE = """<script>
const pres = Array.from(document.querySelectorAll("pre.reproducer")).map((pre) => {
  const style = getComputedStyle(pre), box = pre.getBoundingClientRect();
  return {display: style.display, visibility: style.visibility, opacity: style.opacity,
          width: box.width, height: box.height, text: pre.innerText};
});
const grid = document.querySelector("table.grid");
document.body.setAttribute("data-probe", JSON.stringify(
  {pres: pres, rows: grid.rows.length, cells: grid.querySelectorAll("td").length,
   width: grid.getBoundingClientRect().width}));
</script>"""


def _chromium() -> str:
    if os.environ.get("RLCONFORM_SKIP_BROWSER") == "1":
        pytest.skip("RLCONFORM_SKIP_BROWSER=1: the headless-browser test is skipped on request")
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        pytest.fail(
            "chromium is not installed: install it (Debian: apt-get install -y chromium) "
            "or set RLCONFORM_SKIP_BROWSER=1 to skip the headless-browser test",
            pytrace=False,
        )
    return browser


def _browse(browser: str, profile: Path, *args: str) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [browser, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, f"chromium exited {result.returncode}: {result.stderr[-2000:]}"
    return result


@pytest.mark.browser
def test_html_renders_in_headless_chromium(
    tmp_path: Path, planted: ResultsDocument, planted_document: dict[str, Any]
) -> None:
    browser = _chromium()
    text = render_html(planted)
    page = tmp_path / "report.html"
    page.write_text(text, encoding="utf-8")
    fail = _verdict(planted_document, PLANTED, PLANTED_SPEC)
    reproducer_line = next(line for line in fail["reproducer"].splitlines() if "replay(" in line)

    # the product page itself, as the browser built it
    dom = _browse(browser, tmp_path / "profile", "--dump-dom", page.as_uri()).stdout
    rendered = _parse(dom)
    assert ("reproducer", fail["reproducer"]) in rendered.pres
    assert html.escape(reproducer_line, quote=False) in dom
    grid = [a for a in rendered.attrs("table") if a.get("class") == "grid"]
    assert grid, "the grid table is missing from the rendered DOM"
    cells = [a for a in rendered.attrs("td") if a.get("class")]  # grid cells; the versions table has none
    assert len(cells) == len(planted.rows()) * len(planted.columns())

    # a measured copy: every reproducer is laid out, visible, and reads back verbatim
    probe = tmp_path / "probe.html"
    probe.write_text(text.replace("</body>", PROBE + "\n</body>"), encoding="utf-8")
    measured = _parse(_browse(browser, tmp_path / "profile", "--dump-dom", probe.as_uri()).stdout)
    report = json.loads(next(a["data-probe"] for t, a in measured.tags if t == "body" and a.get("data-probe")) or "{}")
    # one reproducer per group of failures sharing a minimal case, in the page's order: the failures
    # that count, then the known and expected ones (rlconform.reports.html)
    reported = planted.reported()
    sections = ([r for r in reported if r.cell != "known"], [r for r in reported if r.cell == "known"])
    heads = [group[0] for results in sections for group in planted.failure_groups(results)]
    reproducers = [r for r in heads if r.reproducer]
    assert len(report["pres"]) == len(reproducers)
    for box, result in zip(report["pres"], reproducers, strict=True):
        assert box["display"] == "block" and box["visibility"] == "visible" and box["opacity"] == "1", box
        assert box["width"] > 200 and box["height"] > 14, box
        # innerText leaves out what CSS hides: the whole reproducer is rendered
        assert box["text"].rstrip("\n") == (result.reproducer or "").rstrip("\n").replace("\ud800", "\\ud800")
    assert report["rows"] == len(planted.rows()) + 1 and report["width"] > 300

    # and a screenshot that is not blank
    shot = tmp_path / "page.png"
    _browse(browser, tmp_path / "profile", "--window-size=1280,1600", f"--screenshot={shot}", page.as_uri())
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert int.from_bytes(data[16:20], "big") == 1280
    assert len(data) > 30_000, f"the screenshot is {len(data)} bytes: the page rendered (nearly) blank"
