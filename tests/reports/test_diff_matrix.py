"""``rlconform diff`` and ``rlconform matrix`` over results documents built in this process.

One real document (``Results.to_json`` with hand-made verdicts of real systems and specs: nothing
is searched, so the module runs in about a second) is copied and its statuses and library
versions mutated, as releases would change them; every document is validated as the files are.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("gymnasium")

from rlconform import cli
from rlconform.core.profiles import get_profile
from rlconform.core.spec import get_spec
from rlconform.core.system import get_system
from rlconform.core.verdict import Verdict
from rlconform.reports import validate
from rlconform.reports.diff import Diff, classify
from rlconform.reports.document import SYMBOLS
from rlconform.reports.results import Results

SAME, KNOWN = "reference.gymnasium.vector.SameStep", "reference.sb3.VecNormalize"
SPECS = ("flags.terminated", "flags.truncated", "terminal.final_obs")
MARKUP = "<script>alert(1)</script> & <b>bold</b>"


@pytest.fixture(scope="module")
def base() -> dict[str, Any]:
    """Six passing results over two reference systems and three specs, as a file would hold them."""
    systems = [get_system(SAME), get_system(KNOWN)]
    verdicts = [Verdict(s.id, spec, "pass", "", profile="ci") for s in systems for spec in SPECS]
    results = Results(
        profile=get_profile("ci"), seed=None, systems=systems, specs=[get_spec(s) for s in SPECS], verdicts=verdicts
    )
    document: dict[str, Any] = json.loads(json.dumps(results.to_json(), default=str))
    document["environment"]["libraries"].update({"gymnasium": "1.0.0", "numpy": "2.1.0", "torch": "2.5.0"})
    validate(document)
    return document


def _with(base: dict[str, Any], **changes: tuple[str, str]) -> dict[str, Any]:
    """A copy with ``spec=(status, message)`` set for system SAME (``known`` status: a known failure,
    its outcome fail)."""
    document = copy.deepcopy(base)
    for result in document["results"]:
        if result["system"] == SAME and result["spec"].replace(".", "_") in changes:
            status, message = changes[result["spec"].replace(".", "_")]
            result["status"], result["message"] = status, message
            result["outcome"] = "fail" if status == "known" else status
            result["known"] = "documented upstream" if status == "known" else None
    document["summary"] = validate(document).counts()
    validate(document)
    return document


def _write(path: Path, document: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document))
    return path


def _cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = cli.main(list(argv))
    return status, out.getvalue(), err.getvalue()


# -- diff ---------------------------------------------------------------------------------------


def test_classify() -> None:
    assert classify("pass", "pass") is None
    assert [classify(old, "fail") for old in ("pass", "not_applicable", "known")] == ["regression"] * 3
    assert classify("known", "error") == classify("pass", "not_exercised") == "regression"
    assert classify("fail", "pass") == "fix"
    assert classify("fail", "known") == classify("pass", "skipped") == classify("skipped", "fail") == "changed"
    assert classify(None, "fail") == "added" and classify("pass", None) == "removed"


def test_regression_exits_1_and_is_listed_first(base: dict[str, Any], tmp_path: Path) -> None:
    old = _write(tmp_path / "old.json", _with(base, flags_truncated=("fail", "was failing")))
    new_doc = _with(base, flags_truncated=("pass", ""), terminal_final_obs=("fail", f"lost the obs {MARKUP}\nline 2"))
    new_doc["environment"]["libraries"]["gymnasium"] = "1.1.1"
    new = _write(tmp_path / "new.json", new_doc)
    markdown = tmp_path / "diff.md"
    status, out, err = _cli("diff", str(old), str(new), "--markdown", str(markdown))
    assert (status, err) == (cli.EXIT_FAIL, "")
    lines = out.splitlines()
    assert lines[0].startswith(f"old: {old} (gymnasium 1.0.0,") and lines[1].startswith(f"new: {new} (gymnasium 1.1.1,")
    assert lines[2] == "library versions differ: gymnasium 1.0.0 -> 1.1.1"
    assert lines[3] == "2 changed: 1 regression, 1 fix, 0 other changes, 0 added, 0 removed"
    changed = [line for line in lines if line.startswith("  ")]
    assert changed == [
        f"  {SAME} :: terminal.final_obs  pass -> fail: lost the obs {MARKUP}",
        f"  {SAME} :: flags.truncated  fail -> pass",
    ]
    assert out.index("Regressions (1):") < out.index("Fixes (1):")
    text = markdown.read_text()
    assert text.index("## Regressions (1)") < text.index("## Fixes (1)")
    assert "<script>" not in text and "\\<script\\>" in text and "gymnasium 1.0.0 -\\> 1.1.1" in text


def test_fix_alone_exits_0(base: dict[str, Any], tmp_path: Path) -> None:
    old = _write(tmp_path / "old.json", _with(base, flags_terminated=("error", "boom")))
    new = _write(tmp_path / "new.json", base)
    status, out, _ = _cli("diff", str(old), str(new))
    assert status == cli.EXIT_OK
    assert "same library versions" in out and "Fixes (1):" in out and "Regressions" not in out
    assert f"  {SAME} :: flags.terminated  error -> pass" in out.splitlines()


def test_no_change_and_known_failures(base: dict[str, Any], tmp_path: Path) -> None:
    path = _write(tmp_path / "same.json", base)
    status, out, _ = _cli("diff", str(path), str(path))
    assert status == cli.EXIT_OK and "No verdict changed." in out
    # a failure that became documented is a change, not a fix; a known one that now errs regresses
    known = _write(tmp_path / "known.json", _with(base, flags_terminated=("known", "documented")))
    failing = _write(tmp_path / "failing.json", _with(base, flags_terminated=("fail", "x")))
    status, out, _ = _cli("diff", str(failing), str(known))
    assert status == cli.EXIT_OK and "Other changes (1):" in out and "fail -> known" in out
    erring = _write(tmp_path / "erring.json", _with(base, flags_terminated=("error", "crash")))
    assert _cli("diff", str(known), str(erring))[0] == cli.EXIT_FAIL


def test_added_and_removed_pairs(base: dict[str, Any], tmp_path: Path) -> None:
    old_doc, new_doc = copy.deepcopy(base), copy.deepcopy(base)
    old_doc["results"] = [r for r in old_doc["results"] if r["spec"] != "terminal.final_obs"]
    new_doc["results"] = [r for r in new_doc["results"] if r["spec"] != "flags.truncated"]
    for document in (old_doc, new_doc):
        document["summary"] = validate(document).counts()
    diff = Diff("old", "new", validate(old_doc), validate(new_doc))
    assert [(c.kind, c.spec) for c in diff.changes] == [
        ("added", "terminal.final_obs"),
        ("added", "terminal.final_obs"),
        ("removed", "flags.truncated"),
        ("removed", "flags.truncated"),
    ]
    status, out, _ = _cli("diff", str(_write(tmp_path / "a.json", old_doc)), str(_write(tmp_path / "b.json", new_doc)))
    assert status == cli.EXIT_OK
    assert out.index("Added (2):") < out.index("Removed (2):")
    assert f"  {KNOWN} :: terminal.final_obs  (absent) -> pass" in out.splitlines()
    assert f"  {KNOWN} :: flags.truncated  pass -> (absent)" in out.splitlines()


@pytest.mark.parametrize(
    ("content", "reason"),
    [(None, "cannot read"), ("{not json", "is not JSON"), ('{"schema": "other"}', "not an rlconform results")],
)
def test_diff_bad_input_exits_2_with_one_line(
    base: dict[str, Any], tmp_path: Path, content: str | None, reason: str
) -> None:
    good = _write(tmp_path / "good.json", base)
    bad = tmp_path / "bad.json"
    if content is not None:
        bad.write_text(content)
    for argv in ((str(good), str(bad)), (str(bad), str(good))):
        status, out, err = _cli("diff", *argv)
        assert (status, out) == (cli.EXIT_BAD_INPUT, "")
        assert err.count("\n") == 1 and err.startswith("rlconform: error: ") and reason in err and str(bad) in err


# -- matrix -------------------------------------------------------------------------------------


@pytest.fixture
def releases(base: dict[str, Any], tmp_path: Path) -> Path:
    """Three releases (written out of order, one in a subfolder) in which two pairs change."""
    folder = tmp_path / "results"
    documents = {
        "g110/results.json": ("1.10.0", "2.5.0", _with(base, flags_truncated=("fail", f"bad {MARKUP}"))),
        "g100.json": ("1.0.0", "2.4.0", _with(base, terminal_final_obs=("known", "documented"))),
        "g29.json": ("0.29.1", "2.4.0", _with(base, terminal_final_obs=("error", "crash"))),
    }
    for name, (gymnasium, torch, document) in documents.items():
        document["environment"]["libraries"].update({"gymnasium": gymnasium, "torch": torch})
        _write(folder / name, document)
    return folder


def test_matrix_labels_columns_by_differing_versions(releases: Path) -> None:
    status, out, err = _cli("matrix", str(releases))
    assert (status, err) == (cli.EXIT_OK, "")
    labels = ["gymnasium 0.29.1, torch 2.4.0", "gymnasium 1.0.0, torch 2.4.0", "gymnasium 1.10.0, torch 2.5.0"]
    head = next(line for line in out.splitlines() if line.startswith("| system |"))
    assert head == "| system | spec | " + " | ".join(labels) + " |"
    assert "numpy" not in head
    rows = [line for line in out.splitlines() if line.startswith("| `")]
    assert rows == [
        f"| `{SAME}` | `flags.truncated` | {SYMBOLS['pass']} | {SYMBOLS['pass']} | **{SYMBOLS['fail']}** |",
        f"| `{SAME}` | `terminal.final_obs` | **{SYMBOLS['error']}** | {SYMBOLS['known']} | {SYMBOLS['pass']} |",
    ]
    assert "2 (system, spec) pairs differ across 3 documents; 4 have the same status in every one" in out


def test_matrix_labels_by_stem_when_versions_agree(base: dict[str, Any], tmp_path: Path) -> None:
    _write(tmp_path / "before.json", base)
    _write(tmp_path / "after.json", _with(base, flags_terminated=("fail", "x")))
    status, out, _ = _cli("matrix", str(tmp_path))
    assert status == cli.EXIT_OK
    assert "| system | spec | after | before |" in out


def test_matrix_html_parses_and_escapes(releases: Path, tmp_path: Path) -> None:
    page, markdown = tmp_path / "m.html", tmp_path / "m.md"
    status, out, _ = _cli("matrix", str(releases), "--html", str(page), "--markdown", str(markdown))
    assert status == cli.EXIT_OK and str(page) in out and "| system |" not in out
    text = page.read_text()
    assert "<script" not in text.lower() and "&lt;script&gt;" in text and "<link" not in text

    class Cells(HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.tags: list[str] = []
            self.cells: list[str] = []
            self.titles: list[str] = []

        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            self.tags.append(tag)
            self.titles += [v or "" for k, v in attrs if k == "title"]

        def handle_data(self, data: str) -> None:
            if self.tags and self.tags[-1] == "td":
                self.cells.append(data)

    parser = Cells()
    parser.feed(text)
    parser.close()
    assert parser.cells.count(SYMBOLS["pass"]) == 3 and SYMBOLS["error"] in parser.cells
    assert any(f"bad {MARKUP}" in title for title in parser.titles)  # unescaped by the parser: it was escaped
    assert parser.tags.count("tr") == 3 and "style" in parser.tags
    assert sum(line.startswith("| `") for line in markdown.read_text().splitlines()) == 2


@pytest.mark.parametrize("case", ["empty", "invalid", "missing"])
def test_matrix_bad_input_exits_2_naming_the_file(
    base: dict[str, Any], tmp_path: Path, releases: Path, case: str
) -> None:
    folder = {"empty": tmp_path / "empty", "invalid": releases, "missing": tmp_path / "nowhere"}[case]
    if case == "empty":
        folder.mkdir()
    if case == "invalid":
        (releases / "broken.json").write_text('{"schema": "rlconform/results", "schema_version": 1}')
    status, out, err = _cli("matrix", str(folder))
    assert (status, out) == (cli.EXIT_BAD_INPUT, "")
    assert err.count("\n") == 1 and err.startswith("rlconform: error: ")
    assert str(releases / "broken.json") in err if case == "invalid" else str(folder) in err


def test_unwritable_outputs_exit_2(base: dict[str, Any], tmp_path: Path, releases: Path) -> None:
    path = _write(tmp_path / "doc.json", base)
    (tmp_path / "blocker").write_text("a file, not a folder")
    for argv in (
        ("diff", str(path), str(path), "--markdown", str(tmp_path / "blocker" / "d.md")),
        ("matrix", str(releases), "--html", str(tmp_path / "blocker" / "m.html")),
    ):
        status, _, err = _cli(*argv)
        assert status == cli.EXIT_BAD_INPUT and err.count("\n") == 1 and "cannot write" in err


def test_gzip_documents_are_read_by_diff_and_matrix(base: dict[str, Any], tmp_path: Path) -> None:
    """Committed baselines are stored as ``.json.gz``; diff and matrix read them as they are."""
    import gzip

    folder = tmp_path / "baseline"
    folder.mkdir()
    old = folder / "gymnasium-1.0.0.json.gz"
    old.write_bytes(gzip.compress(json.dumps(_with(base, flags_truncated=("pass", ""))).encode()))
    new = _write(tmp_path / "new.json", _with(base, flags_truncated=("fail", "now failing")))
    status, out, _ = _cli("diff", str(old), str(new))
    assert status == cli.EXIT_FAIL and f"  {SAME} :: flags.truncated  pass -> fail: now failing" in out
    _write(folder / "other.json", _with(base, flags_truncated=("fail", "now failing")))
    status, out, _ = _cli("matrix", str(folder))
    assert status == cli.EXIT_OK
    assert "| system | spec | gymnasium-1.0.0 | other |" in out
    (folder / "broken.json.gz").write_bytes(b"not gzip")
    status, _, err = _cli("diff", str(folder / "broken.json.gz"), str(new))
    assert status == cli.EXIT_BAD_INPUT and err.count("\n") == 1 and "broken.json.gz" in err


def test_matrix_lists_skipped_systems_once_and_groups_rows(base: dict[str, Any], tmp_path: Path) -> None:
    """A system a release lacks is skipped there: its pairs differ only where the releases that
    ran it disagree, and it is listed once with the reason; ``--grouped`` joins the systems that
    share a spec and a pattern of statuses."""
    reason = "gymnasium 0.29.1 has no NextStep autoreset mode (its vector envs are SameStep only)"
    old = _with(base, **{spec.replace(".", "_"): ("skipped", reason) for spec in SPECS})
    old["environment"]["libraries"]["gymnasium"] = "0.29.1"
    for result in old["results"]:
        if result["system"] == KNOWN and result["spec"] == "flags.truncated":
            result.update(status="fail", outcome="fail", message="fails in 0.29.1")
    mid = _with(base, flags_truncated=("fail", "fails"))
    mid["environment"]["libraries"]["gymnasium"] = "1.1.1"
    for result in mid["results"]:
        if result["system"] == KNOWN and result["spec"] == "flags.truncated":
            result.update(status="fail", outcome="fail", message="fails in 1.1.1")
    new = copy.deepcopy(base)
    new["environment"]["libraries"]["gymnasium"] = "1.4.0"
    for name, document in {"a.json": old, "b.json": mid, "c.json": new}.items():
        document["summary"] = validate(document).counts()
        _write(tmp_path / "m" / name, document)
    status, out, _ = _cli("matrix", str(tmp_path / "m"))
    assert status == cli.EXIT_OK
    rows = [line for line in out.splitlines() if line.startswith("| `")]
    assert rows[:2] == [
        f"| `{SAME}` | `flags.truncated` | {SYMBOLS['skipped']} | **{SYMBOLS['fail']}** | {SYMBOLS['pass']} |",
        f"| `{KNOWN}` | `flags.truncated` | **{SYMBOLS['fail']}** | **{SYMBOLS['fail']}** | {SYMBOLS['pass']} |",
    ]
    assert f"| `{SAME}` | skip 1 | run | run |" in rows
    assert f"1. {reason}" in out
    assert "2 (system, spec) pairs differ across 3 documents; 4 have the same status in every one that ran it" in out
    status, out, _ = _cli("matrix", str(tmp_path / "m"), "--grouped")
    grouped = [line for line in out.splitlines() if line.startswith("| `flags")]
    assert grouped == [
        f"| `flags.truncated` | {SYMBOLS['skipped']} | **{SYMBOLS['fail']}** | {SYMBOLS['pass']} | `{SAME}` |",
        f"| `flags.truncated` | **{SYMBOLS['fail']}** | **{SYMBOLS['fail']}** | {SYMBOLS['pass']} | `{KNOWN}` |",
    ]


def test_matrix_availability_leaves_a_document_without_the_system_blank(base: dict[str, Any], tmp_path: Path) -> None:
    """A document that has no result for the system at all (an older rlconform, say) is neither
    "run" nor "skip" in the availability table."""
    skipped = _with(base, **{spec.replace(".", "_"): ("skipped", "not installed: gymnasium") for spec in SPECS})
    skipped["environment"]["libraries"]["gymnasium"] = "0.29.1"
    absent = copy.deepcopy(base)
    absent["results"] = [r for r in absent["results"] if r["system"] != SAME]
    absent["environment"]["libraries"]["gymnasium"] = "1.1.1"
    for name, document in {"a.json": skipped, "b.json": base, "c.json": absent}.items():
        document["summary"] = validate(document).counts()
        _write(tmp_path / "m" / name, document)
    status, out, _ = _cli("matrix", str(tmp_path / "m"))
    assert status == cli.EXIT_OK
    assert f"| `{SAME}` | skip 1 | run |  |" in out.splitlines()
