"""The documentation, built and checked: README.md and the pages of docs/ (plain Markdown, read on
GitHub or by any Markdown renderer; this test is their build).

- README.md opens with the two commands a fresh machine runs: the main job, then the tests (the
  line CI extracts, as ``.ci/run`` does);
- every relative link resolves to a file, and a link's anchor to a heading of its page (GitHub's
  anchors);
- every ``rlconform ...`` command shown in a code block parses with the real command-line parser,
  every ``--rlconform-*`` option named is one the pytest plugin defines, and every pip extra
  named is one pyproject.toml declares;
- every page of docs/ is linked from the index, docs/README.md, and the index from README.md.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
PAGES = [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]

_FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})")
_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
_SHELL_OPERATORS = {"&&", "||", ";", "|", "&", ">", ">>", "<", "2>"}


def _id(path: Path) -> str:
    return str(path.relative_to(ROOT))


def split_code(text: str) -> tuple[list[str], list[str]]:
    """(prose lines, code lines) of a Markdown page: code is fenced blocks and blocks indented by
    four spaces after a blank line (these pages indent list items' continuation lines less)."""
    prose: list[str] = []
    code: list[str] = []
    fence: str | None = None
    previous_blank = True
    in_indented = False
    for line in text.splitlines():
        if fence is not None:
            if line.strip().startswith(fence):
                fence = None
            else:
                code.append(line)
            continue
        opening = _FENCE.match(line)
        if opening:
            fence = opening.group(2)
            in_indented = False
            continue
        indented = line.startswith("    ") and line.strip()
        if indented and (previous_blank or in_indented):
            code.append(line[4:])
            in_indented = True
        else:
            if line.strip():
                in_indented = False
            prose.append(line)
        previous_blank = not line.strip()
    return prose, code


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    prose, _ = split_code(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for line in prose:
        match = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if match:
            base = slug(match.group(1))
            name, n = base, 1
            while name in found:  # GitHub numbers repeated headings: name, name-1, name-2
                name = f"{base}-{n}"
                n += 1
            found.add(name)
    return found


def links(path: Path) -> list[str]:
    prose, _ = split_code(path.read_text(encoding="utf-8"))
    text = re.sub(r"`[^`]*`", "", "\n".join(prose))  # links inside inline code are text
    return _LINK.findall(text)


def commands(path: Path, program: str) -> list[list[str]]:
    """Every invocation of ``program`` in the page's code blocks, as argument lists (a line may
    hold several commands joined by shell operators; comments are dropped)."""
    _, code = split_code(path.read_text(encoding="utf-8"))
    found = []
    for line in code:
        if program not in line:
            continue
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        try:
            tokens = list(lexer)
        except ValueError:
            continue  # not shell (a Python line with an odd quote, say)
        segment: list[str] = []
        for token in [*tokens, ";"]:
            if token in _SHELL_OPERATORS or set(token) <= set("&|;<>"):
                if segment and Path(segment[0]).name == program:
                    found.append(segment)
                segment = []
            else:
                segment.append(token)
    return found


def test_there_are_pages() -> None:
    names = {path.name for path in DOCS.glob("*.md")}
    assert {"README.md", "cli.md", "plugin.md", "families.md", "isaaclab.md", "matrix.md", "findings.md"} <= names


def test_readme_opens_with_the_main_job_then_the_tests() -> None:
    """The first indented line runs the main job; the first indented line after the line starting
    "Run the tests" is the test command, the one ``.ci/run`` extracts; both come before any
    section."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    lines = text.splitlines()
    first_section = next(i for i, line in enumerate(lines) if line.startswith("## "))
    indented = [i for i, line in enumerate(lines) if line.startswith("    ") and line.strip()]
    main_job = lines[indented[0]]
    assert main_job.startswith(
        '    python3 -m venv .venv && .venv/bin/pip install -c constraints.txt -e ".[all,envpool,dev]"'
    )
    assert ".venv/bin/rlconform run -j 2" in main_job
    run_the_tests = next(i for i, line in enumerate(lines) if line.startswith("Run the tests"))
    test_command = next(lines[i] for i in indented if i > run_the_tests)  # as .ci/run's awk reads it
    assert ".venv/bin/python -m pytest -n 2" in test_command
    assert indented[0] < run_the_tests < first_section
    assert indented.index(lines.index(test_command)) == 1, "the test command is the second command of the README"


@pytest.mark.parametrize("page", PAGES, ids=_id)
def test_relative_links_resolve(page: Path) -> None:
    broken = []
    for target in links(page):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
            continue
        path_part, _, anchor = target.partition("#")
        resolved = (page.parent / path_part).resolve() if path_part else page
        if not resolved.exists():
            broken.append(f"{target}: no such file")
        elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
            broken.append(f"{target}: no heading with anchor #{anchor} in {_id(resolved)}")
    assert not broken, broken


def test_the_index_links_every_page() -> None:
    index = {(DOCS / target.partition("#")[0]).resolve() for target in links(DOCS / "README.md")}
    missing = [_id(page) for page in DOCS.glob("*.md") if page.name != "README.md" and page.resolve() not in index]
    assert not missing, f"docs/README.md does not link {missing}"
    readme = {target.partition("#")[0] for target in links(ROOT / "README.md")}
    assert "docs/README.md" in readme


@pytest.mark.parametrize("page", PAGES, ids=_id)
def test_rlconform_commands_parse(page: Path) -> None:
    from rlconform.cli import build_parser

    shown = commands(page, "rlconform")
    if page.name == "README.md" and page.parent == ROOT:
        assert len(shown) >= 8, shown  # the main job, the quickstarts
    bad = []
    for argv in shown:
        try:
            build_parser().parse_args(argv[1:])
        except SystemExit as exc:
            if exc.code not in (0, None):  # --help and --version exit 0
                bad.append(shlex.join(argv))
    assert not bad, f"{_id(page)} shows commands the parser refuses: {bad}"


def test_commands_are_read_from_code_blocks_only(tmp_path: Path) -> None:
    """The reader of this test: prose and inline code are not commands; a code line may hold
    several, joined by shell operators, after a comment is dropped."""
    page = tmp_path / "sample.md"
    page.write_text(
        "Run `rlconform check x` in prose.\n\n"
        "    rlconform check m:f --api gymnasium.vector && .venv/bin/rlconform list  # a comment\n\n"
        "```sh\nrlconform diff a.json b.json || true\n```\n\n## A heading, `code` & all\n"
    )
    assert commands(page, "rlconform") == [
        ["rlconform", "check", "m:f", "--api", "gymnasium.vector"],
        [".venv/bin/rlconform", "list"],
        ["rlconform", "diff", "a.json", "b.json"],
    ]
    assert anchors(page) == {"a-heading-code--all"}


class _Options:
    """Records the option names a pytest plugin adds (``pytest_addoption``)."""

    def __init__(self) -> None:
        self.names: set[str] = set()

    def getgroup(self, *args: Any, **kwargs: Any) -> _Options:
        return self

    def addoption(self, *names: str, **kwargs: Any) -> None:
        self.names.update(names)

    def addini(self, *args: Any, **kwargs: Any) -> None:
        pass


def test_plugin_options_shown_exist() -> None:
    from rlconform import plugin

    options = _Options()
    plugin.pytest_addoption(options)  # type: ignore[arg-type]
    shown = {name for page in PAGES for name in re.findall(r"--rlconform-[a-z][a-z-]*", page.read_text("utf-8"))}
    assert shown, "the pages name no plugin option"
    assert shown <= options.names, sorted(shown - options.names)


def test_pip_extras_shown_exist() -> None:
    # the keys of [project.optional-dependencies] (tomllib is Python 3.11+; rlconform runs on 3.10)
    pyproject = (ROOT / "pyproject.toml").read_text("utf-8")
    section = pyproject.split("[project.optional-dependencies]", 1)[1].split("\n[", 1)[0]
    declared = set(re.findall(r"^([a-z0-9_-]+) = \[", section, re.MULTILINE))
    assert {"gymnasium", "all", "dev"} <= declared
    shown = set()
    for page in PAGES:
        for group in re.findall(r"(?:rlconform|\")\.?\[([a-z0-9_,-]+)\]", page.read_text("utf-8")):
            shown.update(group.split(","))
    assert {"gymnasium", "sb3", "torchrl", "all"} <= shown
    assert shown <= declared, sorted(shown - declared)


def test_readme_says_how_to_install_honestly() -> None:
    """The package index line comes with the install from a checkout, and the README does not
    claim a release that has not happened."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert 'pip install "rlconform[gymnasium]"' in text
    assert 'pip install -e ".[gymnasium]"' in text
    assert "not on PyPI yet" in text


def test_the_family_options_table_is_the_declaration() -> None:
    """docs/cli.md lists every family option as the families declare it (rlconform.core.options):
    regenerate the block between its markers from ``markdown_table`` when a declaration changes."""
    from rlconform.core.catalog import current
    from rlconform.core.options import markdown_table

    text = (DOCS / "cli.md").read_text(encoding="utf-8")
    start, end = "<!-- family-options: start -->\n", "\n<!-- family-options: end -->"
    shown = text[text.index(start) + len(start) : text.index(end)]
    assert shown == markdown_table(current().libraries)
