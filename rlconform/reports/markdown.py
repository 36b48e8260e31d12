"""A Markdown summary, for a pull request comment or GitHub's ``$GITHUB_STEP_SUMMARY``.

GitHub-flavoured Markdown only (no raw HTML, which GitHub partly strips): a header with what the
run used, the counts, the systems x specs table with numbered spec columns (27 spec ids as column
heads would make the table unreadably wide; a column's number is its spec's, the same as in the
tables of ``rlconform run`` and ``check``), or for one system a vertical list (spec, status,
message), and then every failure with its reproducer in a
``python`` block, so that a reader can copy it and run it. The raw text is also what
``rlconform report FILE`` prints, so it stays readable in a terminal: little escaping, no markup
beyond tables, lists and code blocks.
"""

from __future__ import annotations

import re

from rlconform.core.impact import title
from rlconform.reports.document import LABELS, STATUSES, SYMBOLS, Result, ResultsDocument
from rlconform.reports.text import clean

_INLINE_SPECIAL = re.compile(r"([\\`*_\[\]<>|])")


def inline(text: str) -> str:
    """Plain text inside a Markdown paragraph or table cell: markup characters escaped."""
    return _INLINE_SPECIAL.sub(r"\\\1", " ".join(clean(text).split()))


def code(text: str) -> str:
    """An inline code span that holds any text, also inside a table (where '|' must be escaped)."""
    text = " ".join(clean(text).split()).replace("|", "\\|")
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    ticks = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def fence(text: str, language: str = "") -> str:
    """A fenced code block longer than any backtick run inside ``text``."""
    body = clean(text).rstrip("\n")
    longest = max((len(run) for run in re.findall(r"`{3,}", body)), default=0)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{language}\n{body}\n{ticks}"


def symbol(status: str) -> str:
    text = SYMBOLS.get(status, status)
    return f"**{text}**" if status in ("fail", "error", "not_exercised") else text


def seed_text(document: ResultsDocument) -> str:
    if document.profile.get("derandomize"):
        return "derandomized"
    seed = document.profile.get("seed")
    return f"seed {seed} ({code(f'RLCONFORM_SEED={seed}')} reproduces this run)" if seed is not None else "no seed"


def header(document: ResultsDocument) -> list[str]:
    environment = document.environment
    lines = [
        "# rlconform results",
        "",
        f"- rlconform {inline(document.rlconform_version)} on Python {inline(str(environment.get('python', '?')))}"
        f" ({code(str(environment.get('platform', '?')))})",
        f"- profile: {code(document.profile_name)}, {seed_text(document)}",
        f"- created: {inline(document.created)}",
        f"- libraries: {inline(document.versions_text()) or 'none recorded'}",
    ]
    lines += [f"- note: {inline(note)}" for note in document.notes]
    counts = document.counts()
    text = ", ".join(f"{n} {inline(s.replace('_', ' '))}" for s, n in counts.items())
    total = len(document.results)
    lines += ["", f"**{total} result{'' if total == 1 else 's'}:** {text or 'none'}"]
    return lines


def left_out(document: ResultsDocument) -> list[str]:
    """What a user's factory refused, so no case used it: a pass says nothing about those kinds."""
    lines = []
    for system, gap in document.left_out():
        lines += ["", f"**{code(system.id)} was {inline(gap.clause(see_above=False))}.**", ""]
        lines += [f"- {inline(line)}" for line in gap.lines()]
    return ["", "## Left out by the factory probe", *lines] if lines else []


def status_word(status: str) -> str:
    """A status as a word, in bold where it needs attention (the one-system list's column)."""
    text = status.replace("_", " ")
    return f"**{text}**" if status in ("fail", "error", "not_exercised") else text


def one_system(document: ResultsDocument) -> list[str]:
    """A report of one system: a vertical list, one row per spec (its column number in the
    tables of ``run`` and ``check``, spec, status, message), instead of a one-row table as wide as
    the specs are many."""
    (system,) = document.rows()
    lines = [f"## {code(system.id)}", ""]
    if system.title:
        lines += [inline(system.title), ""]
    lines += ["| # | spec | status | message |", "|--:|:--|:--|:--|"]
    for number, spec in zip(document.column_numbers(), document.columns(), strict=True):
        result = document.result(system.id, spec.id)
        if result is None:
            continue
        lines.append(f"| {number} | {code(spec.id)} | {status_word(result.cell)} | {inline(result.headline)} |")
    return lines


def table(document: ResultsDocument) -> list[str]:
    columns = document.columns()
    rows = document.rows()
    if not columns or not rows:
        return ["No system was checked against any spec."]
    numbers = document.column_numbers()
    lines = [
        "| system | " + " | ".join(str(n) for n in numbers) + " |",
        "|:--|" + ":-:|" * len(columns),
    ]
    for system in rows:
        cells = []
        for spec in columns:
            result = document.result(system.id, spec.id)
            cells.append(symbol(result.cell) if result else "")
        lines.append(f"| {code(system.id)} | " + " | ".join(cells) + " |")
    legend = " · ".join(f"{code(SYMBOLS[s])} {LABELS[s]}" for s in STATUSES)
    lines += ["", f"Legend: {legend}", "", "Specs:", ""]
    lines += [
        # a bullet list: an ordered list would be renumbered 1, 2, 3 by the Markdown renderer
        f"- **{n}** {code(spec.id)} ({inline(title(spec.impact))}): {inline(spec.statement)}"
        for n, spec in zip(numbers, columns, strict=True)
    ]
    return lines


def section(index: int, result: Result, document: ResultsDocument, also: list[Result] | None = None) -> list[str]:
    """One group: its head in full (one reproducer), the specs that also fail on its case by name;
    headed by its status in capitals, the word the table and the JSON show (a failure the project
    expects is KNOWN, its excuse line says why)."""
    label = result.status.upper()
    impact = title(document.impact_of(result))
    lines = [f"### {index}. {label} {code(result.system)} :: {code(result.spec)} ({inline(impact)})", ""]
    statement = document.statement(result.spec)
    if statement:
        lines += [f"Spec: {inline(statement)}", ""]
    lines += [fence(result.message or "(no message)", "text"), ""]
    if also:
        lines += ["Also fails on the same minimal case:", ""]
        lines += [
            f"- {code(m.spec)} ({inline(title(document.impact_of(m)))}): {inline(m.headline)}"
            + (f" (signature {code(m.signature)})" if m.signature else "")
            for m in also
        ]
        lines.append("")
    if result.signature:
        lines += [f"Signature: {code(result.signature)}", ""]
    if result.excuse:
        lines += [f"**{inline(result.excuse)}**", ""]
    explanation = document.explanation(result)
    if explanation:
        lines += [f"**{inline(explanation)}**", ""]
    if len(result.violations) > 1 or (result.violations and result.violations[0] != result.message):
        lines += [
            f"Violations ({len(result.violations)}):",
            "",
            fence("\n".join(f"- {v}" for v in result.violations), "text"),
            "",
        ]
    if result.case:
        lines += ["Minimal case:", "", fence(result.case, "python"), ""]
    if result.reproducer:
        lines += ["Reproducer (save it as `repro.py` and run it; it exits 1 while the bug remains):", ""]
        lines += [fence(result.reproducer, "python"), ""]
    return lines


def render_markdown(document: ResultsDocument) -> str:
    lines = header(document)
    lines += left_out(document)
    if len(document.rows()) == 1 and document.columns():
        lines += ["", *one_system(document)]
    else:
        lines += ["", "## Systems x specs", "", *table(document)]
    reported = document.reported()
    failures = [r for r in reported if r.cell != "known"]
    known = [r for r in reported if r.cell == "known"]
    if not failures:
        lines += ["", "No failures."]
    for heading, results in (("Failures", failures), ("Known and expected failures", known)):
        if not results:
            continue
        lines += ["", f"## {heading} ({len(results)})", ""]
        for index, group in enumerate(document.failure_groups(results), 1):
            lines += section(index, group[0], document, group[1:])
    return "\n".join(lines).rstrip("\n") + "\n"
