"""A compatibility matrix: one column per results document (a release, an environment).

Each tox environment or CI job writes one results document; the question across them is which
verdicts depend on the release. So the matrix keeps only the (system, spec) rows whose status is not
the same in every document and counts the rest: a full systems x specs x releases grid would bury
the few rows that change. A column is labelled by what distinguishes its document: its Gymnasium
version and any other library whose version differs between the documents (the file stem when
they all agree, or when two documents would get the same label).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from rlconform.reports.document import LABELS, STATUSES, SYMBOLS, ResultsDocument
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


def _natural(text: str) -> tuple[tuple[int, int | str], ...]:
    """A sort key under which 1.10.0 comes after 1.9.0."""
    return tuple((0, int(part)) if part.isdigit() else (1, part) for part in re.findall(r"\d+|[^\d]+", text))


def load_directory(directory: str | Path) -> list[tuple[Path, ResultsDocument]]:
    """Every ``*.json`` under ``directory`` (recursively: CI artifacts come one per folder), validated."""
    root = Path(directory)
    if not root.is_dir():
        raise ResultsError(f"{root} is not a directory")
    paths = sorted(root.rglob("*.json"))
    if not paths:
        raise ResultsError(f"{root} holds no *.json results document")
    return [(path, load_results(path)) for path in paths]


def _labels(documents: list[tuple[Path, ResultsDocument]]) -> list[str]:
    libraries = [doc.libraries for _, doc in documents]
    names = list(dict.fromkeys(name for libs in libraries for name in libs))
    differing = [n for n in names if n != PRIMARY and len({libs.get(n) for libs in libraries}) > 1]
    if not differing and len({libs.get(PRIMARY) for libs in libraries}) == 1:
        return [path.stem for path, _ in documents]
    shown = [PRIMARY, *differing]
    labels = [", ".join(f"{n} {libs.get(n) or 'not installed'}" for n in shown) for libs in libraries]
    return [
        f"{label} ({path.stem})" if labels.count(label) > 1 else label
        for label, (path, _) in zip(labels, documents, strict=True)
    ]


@dataclass
class Matrix:
    columns: list[Column]
    rows: list[Row]
    #: (system, spec) pairs with the same status in every document
    unchanged: int

    @classmethod
    def build(cls, documents: list[tuple[Path, ResultsDocument]]) -> Matrix:
        """Columns ordered by Gymnasium version (then file name); rows in first-seen document order."""
        documents = sorted(
            documents, key=lambda item: (_natural(item[1].libraries.get(PRIMARY) or "~"), _natural(str(item[0])))
        )
        columns = [Column(path, label, doc) for (path, doc), label in zip(documents, _labels(documents), strict=True)]
        pairs = dict.fromkeys((r.system, r.spec) for _, doc in documents for r in doc.results)
        rows, unchanged = [], 0
        for system, spec in pairs:
            results = [doc.result(system, spec) for _, doc in documents]
            cells = tuple(r.cell if r else None for r in results)
            if len(set(cells)) == 1:
                unchanged += 1
            else:
                rows.append(Row(system, spec, cells))
        return cls(columns, rows, unchanged)

    def summary_text(self) -> str:
        n = len(self.columns)
        return (
            f"{len(self.rows)} (system, spec) {'pair differs' if len(self.rows) == 1 else 'pairs differ'} across "
            f"{n} document{'' if n == 1 else 's'}; {self.unchanged} {'has' if self.unchanged == 1 else 'have'} "
            "the same status in every one"
        )


def render_markdown(matrix: Matrix) -> str:
    lines = ["# rlconform compatibility matrix", "", inline(matrix.summary_text()) + ".", "", "Columns:", ""]
    lines += [f"{i}. {inline(c.label)}: {code(str(c.path))}" for i, c in enumerate(matrix.columns, 1)]
    lines.append("")
    if matrix.rows:
        lines += [
            "| system | spec | " + " | ".join(inline(c.label) for c in matrix.columns) + " |",
            "|:--|:--|" + ":-:|" * len(matrix.columns),
        ]
        for row in matrix.rows:
            cells = " | ".join(symbol(cell) if cell else "" for cell in row.cells)
            lines.append(f"| {code(row.system)} | {code(row.spec)} | {cells} |")
        legend = " · ".join(f"{code(SYMBOLS[s])} {LABELS[s]}" for s in STATUSES)
        lines += ["", f"Legend: {legend} · blank: not in that document"]
    else:
        lines.append("Every (system, spec) pair has the same status in every document.")
    return "\n".join(lines) + "\n"


MATRIX_CSS = """
table.grid td.none { background: #fff; }
table.grid thead th.release { white-space: normal; min-width: 7rem; font-weight: 600; }
"""


def _html_cell(cell: str | None, column: Column, row: Row) -> str:
    if cell is None:
        return '<td class="none" title="not in this document"></td>'
    result = column.document.result(row.system, row.spec)
    headline = result.headline if result else ""
    tooltip = f"{LABELS.get(cell, cell)}: {headline}" if headline else LABELS.get(cell, cell)
    return f'<td class="s-{esc(cell)}" title="{esc(tooltip)}">{esc(SYMBOLS.get(cell, cell))}</td>'


def render_html(matrix: Matrix) -> str:
    """One static page (inline CSS, no scripts, every string escaped), styled as the report page."""
    heads = "".join(
        f'<th class="release" scope="col" title="{esc(c.path)}">{esc(c.label)}</th>' for c in matrix.columns
    )
    body = "".join(
        f'<tr><th scope="row">{esc(row.system)}</th><th scope="row">{esc(row.spec)}</th>'
        + "".join(_html_cell(cell, column, row) for cell, column in zip(row.cells, matrix.columns, strict=True))
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
        else "<p>Every (system, spec) pair has the same status in every document.</p>"
    )
    sources = "".join(f"<li>{esc(c.label)}: <code>{esc(c.path)}</code></li>" for c in matrix.columns)
    return page(
        "rlconform compatibility matrix",
        [
            "<header><h1>rlconform compatibility matrix</h1>",
            f"<p>{esc(matrix.summary_text())}.</p>",
            f'<ul class="notes">{sources}</ul></header>',
            f'<main><section id="grid"><h2>Changing verdicts</h2>{table}</section></main>',
            "<footer>Made by <code>rlconform matrix</code> from results documents "
            "(schema rlconform/results, schema_version 1). No scripts, no external resources.</footer>",
        ],
        css=CSS + MATRIX_CSS,
    )
