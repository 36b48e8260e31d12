"""Reports made from a results JSON document: JUnit XML, Markdown and one static HTML page.

Every format is rendered from the validated document (``load.load_results`` or ``load.validate``),
never from a live run, so that ``rlconform report`` can turn any saved results file into any
format, and ``rlconform run``/``check`` write exactly what ``rlconform report`` would.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path

from rlconform.reports.document import ResultsDocument
from rlconform.reports.html import render_html
from rlconform.reports.junit import render_junit
from rlconform.reports.load import ResultsError, load_results, validate
from rlconform.reports.markdown import render_markdown

#: format name (as in the CLI options) -> renderer
FORMATS: dict[str, Callable[[ResultsDocument], str]] = {
    "html": render_html,
    "junit": render_junit,
    "markdown": render_markdown,
}

__all__ = [
    "FORMATS",
    "ResultsDocument",
    "ResultsError",
    "load_results",
    "render_html",
    "render_junit",
    "render_markdown",
    "validate",
    "write_reports",
]


def write_reports(document: ResultsDocument, outputs: Mapping[str, str | os.PathLike[str] | None]) -> list[str]:
    """Write each requested format (``{"html": path, ...}``; None: not requested); returns the paths.

    An unwritable path raises ``ResultsError`` with a one-line reason, like an unreadable input.
    """
    written = []
    for name, path in outputs.items():
        if path is None:
            continue
        text = FORMATS[name](document)
        try:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            with open(path, "w", encoding="utf-8", newline="\n") as handle:
                handle.write(text)
        except OSError as exc:
            raise ResultsError(f"cannot write the {name} report to {path}: {exc.strerror or exc}") from None
        written.append(str(path))
    return written
