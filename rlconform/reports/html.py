"""One static, self-contained HTML page of a results document.

The page must open anywhere a CI artifact is opened: from a file:// URL, offline, in a viewer that
blocks scripts. So it has inline CSS only, no JavaScript and no external resource (fonts, images,
stylesheets). Every failure's reproducer is in a plain, always-visible ``<pre>``: a collapsed
block needs a click (or a script) and is easy to miss, and the reproducer is the reason to open
the page. Every string from the document goes through ``html.escape`` (after ``text.clean``):
messages quote whatever a system returned.
"""

from __future__ import annotations

import html

from rlconform.core.impact import title
from rlconform.reports.document import LABELS, STATUSES, SYMBOLS, Result, ResultsDocument, SpecInfo
from rlconform.reports.text import anchor, clean

CSS = """
:root { color-scheme: light; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 0 auto;
       max-width: 1400px; padding: 1rem 1.5rem 3rem; color: #1d1d1f; background: #fff; }
h1 { margin: 0 0 .5rem; font-size: 1.6rem; }
h2 { margin: 2rem 0 .6rem; font-size: 1.25rem; border-bottom: 1px solid #ddd; padding-bottom: .2rem; }
h3 { margin: 0 0 .4rem; font-size: 1.05rem; }
h4 { margin: .8rem 0 .2rem; font-size: .9rem; color: #444; }
code, pre { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, "DejaVu Sans Mono", monospace; font-size: 12.5px; }
pre { display: block; visibility: visible; white-space: pre-wrap; overflow-wrap: anywhere; margin: 0;
      padding: .6rem .8rem; background: #f6f8fa; border: 1px solid #d0d7de; border-radius: 4px; }
pre.reproducer { background: #0d1117; color: #e6edf3; border-color: #0d1117; }
dl.meta { display: grid; grid-template-columns: max-content 1fr; gap: .15rem 1rem; margin: 0 0 .6rem; }
dl.meta dt { font-weight: 600; }
dl.meta dd { margin: 0; }
table { border-collapse: collapse; }
table.versions td, table.versions th { padding: .1rem .7rem .1rem 0; text-align: left; }
ul.notes { margin: .3rem 0; }
ul.counts { list-style: none; display: flex; flex-wrap: wrap; gap: .5rem; padding: 0; margin: 0; }
ul.counts li { padding: .3rem .7rem; border-radius: 4px; }
ul.counts .n { font-weight: 700; font-size: 1.1rem; margin-right: .3rem; }
.scroll { overflow-x: auto; border: 1px solid #ddd; }
table.grid { font-size: 12px; }
table.grid th, table.grid td { border: 1px solid #e3e3e3; padding: 2px 4px; }
table.grid thead th { background: #fafafa; vertical-align: bottom; }
table.grid th.spec { height: 14rem; white-space: nowrap; padding: 4px 2px; }
table.grid th.spec a { writing-mode: vertical-rl; transform: rotate(180deg); color: inherit; text-decoration: none; }
table.grid tbody th { text-align: left; white-space: nowrap; font-weight: 500; background: #fafafa;
                      position: sticky; left: 0; }
table.grid td { text-align: center; min-width: 2.2rem; white-space: nowrap; }
table.grid td a { color: inherit; display: block; }
table.list th, table.list td { border: 1px solid #e3e3e3; padding: 3px 8px; text-align: left; vertical-align: top; }
table.list thead th { background: #fafafa; }
table.list tbody th { font-weight: 500; white-space: nowrap; }
table.list tbody th a, table.list td a { color: inherit; }
table.list td[class^="s-"] { white-space: nowrap; }
table.list td.n { text-align: right; color: #666; }
.legend { margin: .5rem 0; }
.legend span { display: inline-block; margin: .15rem .4rem .15rem 0; padding: 0 .4rem; border-radius: 3px; }
.s-pass { background: #d3f2d3; color: #0f4d0f; }
.s-fail { background: #f9c9c9; color: #7c0b0b; font-weight: 700; }
.s-inherited { background: #fcd9c0; color: #6b2a00; }
.s-known { background: #fbe5b2; color: #5c4000; }
.s-not_applicable { background: #f3f3f3; color: #8a8a8a; }
.s-not_exercised { background: #e6d5f7; color: #46166f; font-weight: 700; }
.s-skipped { background: #e2e2e2; color: #4a4a4a; }
.s-not_run { background: #e2e2e2; color: #7c0b0b; }
.s-error { background: #7c0b0b; color: #fff; font-weight: 700; }
article.failure { border: 1px solid #d0d7de; border-left: 6px solid #c62828; border-radius: 4px;
                  padding: .8rem 1rem; margin: 0 0 1.2rem; }
article.failure.known { border-left-color: #d49b00; }
article.failure:target { box-shadow: 0 0 0 3px #0969da55; }
.badge { padding: 0 .4rem; border-radius: 3px; }
.impact { font-size: .8rem; font-weight: normal; color: #555; }
h3 .impact { margin-left: .5rem; padding: 0 .35rem; border: 1px solid #bbb; border-radius: 3px; }
ul.also { margin: .2rem 0 .6rem; }
.statement { color: #444; font-style: italic; margin: 0 0 .3rem; }
.excuse { font-weight: 600; color: #5c4000; }
.finding { font-weight: 600; }
.stats, .back { color: #666; font-size: 12px; margin: .5rem 0 0; }
ol.violations { margin: 0; padding-left: 1.6rem; }
ol.violations li { margin: 0 0 .3rem; }
dl.specs dt { font-weight: 600; margin-top: .6rem; }
dl.specs dd { margin: .1rem 0 0 1.2rem; }
dl.specs .rationale { color: #555; }
footer { margin-top: 2rem; color: #777; font-size: 12px; }
"""


def esc(text: object) -> str:
    """Escape for element text and quoted attribute values alike."""
    return html.escape(clean(str(text)), quote=True)


def _spec_anchor(spec_id: str) -> str:
    return "spec-" + anchor(spec_id)


class _Anchors:
    """Unique fragment ids for the reported results (two ids may clean to the same text)."""

    def __init__(self, results: list[Result]) -> None:
        self.ids: dict[tuple[str, str], str] = {}
        used: set[str] = set()
        for result in results:
            base = "result-" + anchor(result.system, result.spec)
            candidate, n = base, 1
            while candidate in used:
                n += 1
                candidate = f"{base}-{n}"
            used.add(candidate)
            self.ids[(result.system, result.spec)] = candidate

    def get(self, result: Result) -> str | None:
        return self.ids.get((result.system, result.spec))


def header(document: ResultsDocument) -> str:
    environment = document.environment
    meta = [
        ("rlconform", document.rlconform_version),
        ("Python", f"{environment.get('python', '?')} on {environment.get('platform', '?')}"),
        ("profile", f"{document.profile_name} ({document.seed_text})"),
        ("created", document.created),
    ]
    rows = "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in meta)
    libraries = "".join(
        f"<tr><td>{esc(name)}</td><td>{esc(version or 'not installed')}</td></tr>"
        for name, version in document.libraries.items()
    )
    parts = [
        "<header>",
        "<h1>rlconform results</h1>",
        f'<dl class="meta">{rows}</dl>',
        f'<table class="versions"><tr><th>library</th><th>version</th></tr>{libraries}</table>' if libraries else "",
    ]
    if document.notes:
        parts.append('<ul class="notes">' + "".join(f"<li>{esc(n)}</li>" for n in document.notes) + "</ul>")
    parts.append("</header>")
    return "\n".join(p for p in parts if p)


def left_out(document: ResultsDocument) -> str:
    """What a user's factory refused, so no case used it: a pass says nothing about those kinds."""
    parts = []
    for system, gap in document.left_out():
        items = "".join(f"<li>{esc(line)}</li>" for line in gap.lines())
        parts.append(
            f"<p><code>{esc(system.id)}</code> was {esc(gap.clause(see_above=False))}:</p>"
            f'<ul class="left-out">{items}</ul>'
        )
    if not parts:
        return ""
    return '<section id="left-out"><h2>Left out by the factory probe</h2>' + "".join(parts) + "</section>"


def summary(document: ResultsDocument) -> str:
    counts = document.counts()
    items = "".join(
        f'<li class="s-{esc(status)}" title="{esc(LABELS.get(status, status))}">'
        f'<span class="n">{n}</span>{esc(status.replace("_", " "))}</li>'
        for status, n in counts.items()
    )
    return (
        '<section id="summary"><h2>Summary</h2>'
        f"<p>{len(document.results)} results over {len(document.rows())} systems and "
        f"{len(document.columns())} specs.</p>"
        f'<ul class="counts">{items}</ul></section>'
    )


def _spec_head(spec: SpecInfo) -> str:
    tooltip = f"{spec.id}: {spec.statement}" if spec.statement else spec.id
    return (
        f'<th class="spec" scope="col" title="{esc(tooltip)}">'
        f'<a href="#{esc(_spec_anchor(spec.id))}">{esc(spec.id)}</a></th>'
    )


def _cell(result: Result | None, anchors: _Anchors) -> str:
    if result is None:
        return '<td class="none"></td>'
    status = result.cell
    label = SYMBOLS.get(status, status)
    tooltip = f"{LABELS.get(status, status)}: {result.headline}" if result.headline else LABELS.get(status, status)
    if result.finding:
        tooltip = f"FINDINGS {result.finding}; {tooltip}"
    target = anchors.get(result)
    if target:
        inner = f'<a href="#{esc(target)}" title="{esc(tooltip)}">{esc(label)}</a>'
        return f'<td class="s-{esc(status)}">{inner}</td>'
    return f'<td class="s-{esc(status)}" title="{esc(tooltip)}">{esc(label)}</td>'


def grid(document: ResultsDocument, anchors: _Anchors) -> str:
    columns = document.columns()
    head = '<th class="corner" scope="col">system</th>' + "".join(_spec_head(s) for s in columns)
    body = []
    for system in document.rows():
        cells = "".join(_cell(document.result(system.id, spec.id), anchors) for spec in columns)
        title = f' title="{esc(system.title)}"' if system.title else ""
        body.append(f'<tr><th scope="row"{title}>{esc(system.id)}</th>{cells}</tr>')
    legend = "".join(f'<span class="s-{s}">{esc(SYMBOLS[s])} {esc(LABELS[s])}</span>' for s in STATUSES)
    return (
        '<section id="grid"><h2>Systems &times; specs</h2>'
        '<div class="scroll"><table class="grid">'
        f"<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table></div>"
        f'<p class="legend">{legend}</p></section>'
    )


def one_system(document: ResultsDocument, anchors: _Anchors) -> str:
    """A report of one system: a vertical list, one row per spec (its column number, spec, status,
    message), instead of a one-row grid as wide as the specs are many. It keeps the grid's anchor, which the
    failures link back to."""
    (system,) = document.rows()
    rows = []
    for number, spec in zip(document.column_numbers(), document.columns(), strict=True):
        result = document.result(system.id, spec.id)
        if result is None:
            continue
        status = result.cell
        word = esc(status.replace("_", " "))
        target = anchors.get(result)
        label = f'<a href="#{esc(target)}">{word}</a>' if target else word
        rows.append(
            f'<tr><td class="n">{number}</td>'
            f'<th scope="row"><a href="#{esc(_spec_anchor(spec.id))}">{esc(spec.id)}</a></th>'
            f'<td class="s-{esc(status)}">{label}</td><td>{esc(result.headline)}</td></tr>'
        )
    title = f'<p class="statement">{esc(system.title)}</p>' if system.title else ""
    return (
        f'<section id="grid"><h2><code>{esc(system.id)}</code></h2>{title}'
        '<div class="scroll"><table class="list">'
        '<thead><tr><th scope="col">#</th><th scope="col">spec</th><th scope="col">status</th>'
        '<th scope="col">message</th></tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div></section>"
    )


def _also(members: list[Result], document: ResultsDocument, anchors: _Anchors) -> str:
    """The specs that also fail on the group's minimal case: named, each with its headline, its
    own anchor (the grid links to it) and no reproducer of its own."""
    items = "".join(
        f'<li id="{esc(anchors.get(m) or "")}"><code>{esc(m.spec)}</code> '
        f'<span class="impact">({esc(title(document.impact_of(m)))})</span>: {esc(m.headline)}'
        + (f" <small>signature <code>{esc(m.signature)}</code></small>" if m.signature else "")
        + "</li>"
        for m in members
    )
    return f'<h4>Also fails on the same minimal case ({len(members)})</h4><ul class="also">{items}</ul>'


def failure(result: Result, document: ResultsDocument, anchors: _Anchors, also: list[Result] | None = None) -> str:
    status = result.cell
    label = status.upper()  # the word of the grid and the JSON (an expected failure is KNOWN)
    classes = "failure known" if status == "known" else "failure"
    impact = document.impact_of(result)
    parts = [
        f'<article class="{classes}" id="{esc(anchors.get(result) or "")}">',
        f'<h3><span class="badge s-{esc(status)}">{esc(label)}</span> '
        f"<code>{esc(result.system)}</code> :: <code>{esc(result.spec)}</code> "
        f'<span class="impact i-{esc(impact or "none")}">{esc(title(impact))}</span></h3>',
    ]
    statement = document.statement(result.spec)
    if statement:
        parts.append(f'<p class="statement">{esc(statement)}</p>')
    parts.append(f'<h4>Message</h4><pre class="message">{esc(result.message or "(no message)")}</pre>')
    if also:
        parts.append(_also(also, document, anchors))
    if result.signature:
        parts.append(f'<p class="signature">signature <code>{esc(result.signature)}</code></p>')
    if result.excuse:
        parts.append(f'<p class="excuse">{esc(result.excuse)}</p>')
    explanation = document.explanation(result)
    if explanation:
        parts.append(f'<p class="finding">{esc(explanation)}</p>')
    if result.violations:
        items = "".join(f"<li><pre>{esc(v)}</pre></li>" for v in result.violations)
        parts.append(f'<h4>Violations ({len(result.violations)})</h4><ol class="violations">{items}</ol>')
    if result.case:
        parts.append(f'<h4>Minimal case</h4><pre class="case">{esc(result.case)}</pre>')
    if result.reproducer:
        parts.append(
            "<h4>Reproducer <small>(save it as repro.py and run it; it exits 1 while the bug remains)</small></h4>"
            f'<pre class="reproducer"><code>{esc(result.reproducer)}</code></pre>'
        )
    seed = "derandomized" if result.seed is None else f"seed {result.seed}"
    parts.append(
        f'<p class="stats">{result.examples} examples, {result.checked} facts checked, '
        f"{result.seconds:.3f} s, {esc(seed)}</p>"
    )
    parts.append('<p class="back"><a href="#grid">back to the grid</a></p></article>')
    return "\n".join(parts)


def failures(document: ResultsDocument, anchors: _Anchors) -> str:
    reported = document.reported()
    sections = []
    for section_id, heading, results in (
        ("failures", "Failures", [r for r in reported if r.cell != "known"]),
        ("known", "Known and expected failures", [r for r in reported if r.cell == "known"]),
    ):
        if not results and section_id == "known":
            continue
        body = "\n".join(failure(group[0], document, anchors, group[1:]) for group in document.failure_groups(results))
        body = body or "<p>No failures.</p>"
        sections.append(f'<section id="{section_id}"><h2>{heading} ({len(results)})</h2>\n{body}</section>')
    return "\n".join(sections)


def specs(document: ResultsDocument) -> str:
    items = "".join(
        f'<dt id="{esc(_spec_anchor(s.id))}"><code>{esc(s.id)}</code></dt>'
        f'<dd><span class="impact">{esc(title(s.impact))}</span>: {esc(s.statement)}<br>'
        f'<span class="rationale">{esc(s.rationale)}</span></dd>'
        for s in document.columns()
    )
    return f'<section id="specs"><h2>Specs</h2><dl class="specs">{items}</dl></section>'


def page(title: str, body: list[str], *, css: str = CSS, head: tuple[str, ...] = ()) -> str:
    """A complete static page: inline CSS, no scripts, no external resources (every report page
    and the compatibility matrix share this shell)."""
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en">',
            "<head>",
            '<meta charset="utf-8">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            *head,
            f"<title>{esc(title)}</title>",
            f"<style>{css}</style>",
            "</head>",
            "<body>",
            *body,
            "</body>",
            "</html>",
            "",
        ]
    )


def render_html(document: ResultsDocument) -> str:
    anchors = _Anchors(document.reported())
    title = f"rlconform results: {document.profile_name} profile, {document.created}"
    return page(
        title,
        [
            header(document),
            "<main>",
            summary(document),
            left_out(document),
            one_system(document, anchors)
            if len(document.rows()) == 1 and document.columns()
            else grid(document, anchors),
            failures(document, anchors),
            specs(document),
            "</main>",
            "<footer>Made by <code>rlconform report</code> from a results document "
            f"(schema rlconform/results, schema_version {document.schema_version}). "
            "No scripts, no external resources.</footer>",
        ],
        head=(f'<meta name="generator" content="rlconform {esc(document.rlconform_version)}">',),
    )
