"""A compatibility matrix: one column per results document (a release, an environment).

Each tox environment or CI job writes one results document; the question across them is which
verdicts depend on the release. So the matrix keeps only the (system, spec) rows whose status is not
the same in every document and counts the rest: a full systems x specs x releases grid would bury
the few rows that change. A column is labelled by what distinguishes its document: its Gymnasium
version and any other library whose version differs between the documents (the file stem when
they all agree, or when two documents would get the same label).

Each document is read through its schema version (``ResultsDocument.from_json``), so documents
written before and after a change of vocabulary (schema_version 1 wrote a known or inherited
failure as "fail") show the same status for the same verdict: a row differs only where the
verdict does.

A failure also shows its signature's hash (``rlconform.core.signature``), and a row whose status is the
same everywhere is still kept when its failures' signatures differ: two releases that fail one
spec in different ways differ in the matrix. A document written before signatures has none there,
and a missing signature never makes a row differ.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from rlconform.core.signature import short
from rlconform.reports.document import LABELS, STATUSES, SYMBOLS, Result, ResultsDocument
from rlconform.reports.html import CSS, esc, page
from rlconform.reports.load import ResultsError, load_results
from rlconform.reports.markdown import code, inline, symbol

#: the library every column names, whether or not its version differs
PRIMARY = "gymnasium"


@dataclass(frozen=True)
class Column:
    path: Path
    label: str
    document: ResultsDocument


@dataclass(frozen=True)
class Row:
    system: str
    spec: str
    #: the table status in each column; None where that document has no such result
    cells: tuple[str | None, ...]
    #: the failure signature in each column; None where it did not fail or recorded none
    signatures: tuple[str | None, ...] = ()

    def signature(self, column: int) -> str | None:
        return self.signatures[column] if column < len(self.signatures) else None


def signatures_differ(results: list[Result | None]) -> bool:
    """Failures in several documents whose recorded signatures are not all the same."""
    found = {r.signature for r in results if r is not None and r.failed and r.signature is not None}
    return len(found) > 1


def _shown(cell: str | None, signature_text: str | None) -> str:
    """A Markdown cell: the status symbol, and a failure's signature hash after it."""
    if cell is None:
        return ""
    return symbol(cell) + (f" {code(short(signature_text))}" if signature_text else "")


def _natural(text: str) -> tuple[tuple[int, int | str], ...]:
    """A sort key under which 1.10.0 comes after 1.9.0."""
    return tuple((0, int(part)) if part.isdigit() else (1, part) for part in re.findall(r"\d+|[^\d]+", text))


def _stem(path: Path) -> str:
    """The file name without ``.json`` or ``.json.gz``."""
    return path.name.removesuffix(".gz").removesuffix(".json")


def load_directory(directory: str | Path) -> list[tuple[Path, ResultsDocument]]:
    """Every ``*.json`` and ``*.json.gz`` under ``directory`` (recursively: CI artifacts come one
    per folder), validated."""
    root = Path(directory)
    if not root.is_dir():
        raise ResultsError(f"{root} is not a directory")
    paths = sorted([*root.rglob("*.json"), *root.rglob("*.json.gz")])
    if not paths:
        raise ResultsError(f"{root} holds no *.json results document")
    return [(path, load_results(path)) for path in paths]


def _labels(documents: list[tuple[Path, ResultsDocument]]) -> list[str]:
    libraries = [doc.libraries for _, doc in documents]
    names = list(dict.fromkeys(name for libs in libraries for name in libs))
    differing = [n for n in names if n != PRIMARY and len({libs.get(n) for libs in libraries}) > 1]
    if not differing and len({libs.get(PRIMARY) for libs in libraries}) == 1:
        return [_stem(path) for path, _ in documents]
    shown = [PRIMARY, *differing]
    labels = [", ".join(f"{n} {libs.get(n) or 'not installed'}" for n in shown) for libs in libraries]
    return [
        f"{label} ({_stem(path)})" if labels.count(label) > 1 else label
        for label, (path, _) in zip(labels, documents, strict=True)
    ]


@dataclass(frozen=True)
class Availability:
    """A system skipped in some documents: per column, the skip reason (None where it ran)."""

    system: str
    reasons: tuple[str | None, ...]
    #: per column, whether the document has any result for the system at all
    present: tuple[bool, ...] = ()

    def mark(self, column: int, notes: list[str]) -> str:
        """``run``, ``skip N`` (reason N of ``notes``) or blank (not in that document)."""
        reason = self.reasons[column]
        if reason is not None:
            return f"skip {notes.index(reason) + 1}"
        return "run" if not self.present or self.present[column] else ""


@dataclass
class Matrix:
    columns: list[Column]
    rows: list[Row]
    #: (system, spec) pairs with the same status in every document that ran the system
    unchanged: int
    #: systems not run in every document (not in that release, or its library not installed)
    availability: list[Availability] = field(default_factory=list)

    @classmethod
    def build(cls, documents: list[tuple[Path, ResultsDocument]]) -> Matrix:
        """Columns ordered by Gymnasium version (then file name); rows in first-seen document order."""
        documents = sorted(
            documents, key=lambda item: (_natural(item[1].libraries.get(PRIMARY) or "~"), _natural(str(item[0])))
        )
        columns = [Column(path, label, doc) for (path, doc), label in zip(documents, _labels(documents), strict=True)]
        pairs = dict.fromkeys((r.system, r.spec) for _, doc in documents for r in doc.results)
        rows, unchanged = [], 0
        skipped: dict[str, list[str | None]] = {}
        for system, spec in pairs:
            results = [doc.result(system, spec) for _, doc in documents]
            cells = tuple(r.cell if r else None for r in results)
            signatures = tuple(r.signature if r is not None and r.failed else None for r in results)
            for i, result in enumerate(results):
                if result is not None and result.cell == "skipped":
                    skipped.setdefault(system, [None] * len(documents))[i] = result.headline or "skipped"
            # a system that a release lacks (or whose library is missing there) is listed once under
            # availability; its pairs differ only where the releases that ran it disagree
            if len({cell for cell in cells if cell not in (None, "skipped")}) > 1 or signatures_differ(results):
                rows.append(Row(system, spec, cells, signatures))
            else:
                unchanged += 1
        systems_in = [{r.system for r in doc.results} for _, doc in documents]
        availability = [
            Availability(system, tuple(reasons), tuple(system in names for names in systems_in))
            for system, reasons in skipped.items()
        ]
        return cls(columns, rows, unchanged, availability)

    def summary_text(self) -> str:
        n = len(self.columns)
        text = (
            f"{len(self.rows)} (system, spec) {'pair differs' if len(self.rows) == 1 else 'pairs differ'} across "
            f"{n} document{'' if n == 1 else 's'}; {self.unchanged} {'has' if self.unchanged == 1 else 'have'} "
            "the same status in every one"
        )
        if self.availability:
            count = len(self.availability)
            text += f" that ran it; {count} system{' is' if count == 1 else 's are'} not run in every one"
        return text

    def skip_notes(self) -> list[str]:
        """Each distinct skip reason once, numbered in first-seen order (the availability table's
        cells refer to them)."""
        return list(dict.fromkeys(r for a in self.availability for r in a.reasons if r is not None))


def grouped_rows(matrix: Matrix) -> list[tuple[str, tuple[str, ...], list[str]]]:
    """(spec, Markdown cells per column, systems): the rows that share a spec and a pattern of
    statuses and signatures, in first-seen order. A change a release brought to many systems at
    once reads as one line."""
    groups: dict[tuple[str, tuple[str, ...]], list[str]] = {}
    for row in matrix.rows:
        shown = tuple(_shown(cell, row.signature(i)) for i, cell in enumerate(row.cells))
        groups.setdefault((row.spec, shown), []).append(row.system)
    return [(spec, cells, systems) for (spec, cells), systems in groups.items()]


def render_markdown(matrix: Matrix, *, grouped: bool = False) -> str:
    """The matrix as Markdown; ``grouped``: one row per (spec, pattern of statuses) with the
    systems that share it, instead of one row per (system, spec)."""
    lines = ["# rlconform compatibility matrix", "", inline(matrix.summary_text()) + ".", "", "Columns:", ""]
    lines += [f"{i}. {inline(c.label)}: {code(str(c.path))}" for i, c in enumerate(matrix.columns, 1)]
    lines.append("")
    if matrix.rows and grouped:
        lines += [
            "| spec | " + " | ".join(inline(c.label) for c in matrix.columns) + " | systems |",
            "|:--|" + ":-:|" * len(matrix.columns) + ":--|",
        ]
        for spec, cells, systems in grouped_rows(matrix):
            statuses = " | ".join(cells)
            lines.append(f"| {code(spec)} | {statuses} | {', '.join(code(s) for s in systems)} |")
    elif matrix.rows:
        lines += [
            "| system | spec | " + " | ".join(inline(c.label) for c in matrix.columns) + " |",
            "|:--|:--|" + ":-:|" * len(matrix.columns),
        ]
        for row in matrix.rows:
            shown = " | ".join(_shown(cell, row.signature(i)) for i, cell in enumerate(row.cells))
            lines.append(f"| {code(row.system)} | {code(row.spec)} | {shown} |")
    if matrix.rows:
        legend = " · ".join(f"{code(SYMBOLS[s])} {LABELS[s]}" for s in STATUSES)
        lines += [
            "",
            f"Legend: {legend} · blank: not in that document · after a failure: its signature's hash (the same "
            "hash: failing the same way)",
        ]
    if not matrix.rows:
        lines.append("Every (system, spec) pair has the same status in every document that ran it.")
    if matrix.availability:
        notes = matrix.skip_notes()
        lines += ["", "Systems not run in every document (`run`: checked; `skip N`: skipped, reason N below):", ""]
        lines += ["| system | " + " | ".join(inline(c.label) for c in matrix.columns) + " |"]
        lines += ["|:--|" + ":-:|" * len(matrix.columns)]
        for item in matrix.availability:
            marks = " | ".join(item.mark(i, notes) for i in range(len(item.reasons)))
            lines.append(f"| {code(item.system)} | {marks} |")
        lines += ["", *(f"{i}. {inline(note)}" for i, note in enumerate(notes, 1))]
    return "\n".join(lines) + "\n"


MATRIX_CSS = """
table.grid td.none { background: #fff; }
table.grid thead th.release { white-space: normal; min-width: 7rem; font-weight: 600; }
"""


def _html_cell(cell: str | None, column: Column, row: Row, index: int) -> str:
    if cell is None:
        return '<td class="none" title="not in this document"></td>'
    result = column.document.result(row.system, row.spec)
    headline = result.headline if result else ""
    tooltip = f"{LABELS.get(cell, cell)}: {headline}" if headline else LABELS.get(cell, cell)
    signature_text = row.signature(index)
    if signature_text:
        tooltip += f" (signature {signature_text})"
        text = f"{esc(SYMBOLS.get(cell, cell))} <small>{esc(short(signature_text))}</small>"
    else:
        text = esc(SYMBOLS.get(cell, cell))
    return f'<td class="s-{esc(cell)}" title="{esc(tooltip)}">{text}</td>'


def render_html(matrix: Matrix) -> str:
    """One static page (inline CSS, no scripts, every string escaped), styled as the report page."""
    heads = "".join(
        f'<th class="release" scope="col" title="{esc(c.path)}">{esc(c.label)}</th>' for c in matrix.columns
    )
    body = "".join(
        f'<tr><th scope="row">{esc(row.system)}</th><th scope="row">{esc(row.spec)}</th>'
        + "".join(
            _html_cell(cell, column, row, i)
            for i, (cell, column) in enumerate(zip(row.cells, matrix.columns, strict=True))
        )
        + "</tr>"
        for row in matrix.rows
    )
    legend = "".join(f'<span class="s-{s}">{esc(SYMBOLS[s])} {esc(LABELS[s])}</span>' for s in STATUSES)
    table = (
        '<div class="scroll"><table class="grid">'
        f'<thead><tr><th scope="col">system</th><th scope="col">spec</th>{heads}</tr></thead>'
        f"<tbody>{body}</tbody></table></div>"
        f'<p class="legend">{legend} (blank: not in that document)</p>'
        if matrix.rows
        else "<p>Every (system, spec) pair has the same status in every document that ran it.</p>"
    )
    sources = "".join(f"<li>{esc(c.label)}: <code>{esc(c.path)}</code></li>" for c in matrix.columns)
    availability = ""
    if matrix.availability:
        notes = matrix.skip_notes()
        avail_rows = "".join(
            f'<tr><th scope="row">{esc(item.system)}</th>'
            + "".join(
                f'<td class="s-skipped" title="{esc(r)}">{esc(item.mark(i, notes))}</td>'
                if r is not None
                else f'<td class="{"s-pass" if item.mark(i, notes) else "none"}">{item.mark(i, notes)}</td>'
                for i, r in enumerate(item.reasons)
            )
            + "</tr>"
            for item in matrix.availability
        )
        availability = (
            '<section id="availability"><h2>Systems not run in every document</h2>'
            '<div class="scroll"><table class="grid">'
            f'<thead><tr><th scope="col">system</th>{heads}</tr></thead><tbody>{avail_rows}</tbody></table></div>'
            "<ol>" + "".join(f"<li>{esc(note)}</li>" for note in notes) + "</ol></section>"
        )
    versions = " and ".join(str(v) for v in sorted({column.document.schema_version for column in matrix.columns}))
    return page(
        "rlconform compatibility matrix",
        [
            "<header><h1>rlconform compatibility matrix</h1>",
            f"<p>{esc(matrix.summary_text())}.</p>",
            f'<ul class="notes">{sources}</ul></header>',
            f'<main><section id="grid"><h2>Changing verdicts</h2>{table}</section>{availability}</main>',
            "<footer>Made by <code>rlconform matrix</code> from results documents "
            f"(schema rlconform/results, schema_version {versions}, each read through its own). "
            "No scripts, no external resources.</footer>",
        ],
        css=CSS + MATRIX_CSS,
    )
