"""Standalone reproducers: a Python script that replays a failing case without Hypothesis.

Each family writes its own (:meth:`rlconform.core.family.Family.reproducer`); every one imports
only from :mod:`rlconform.replay`, the stable entry point, so that rlconform's internals can move
without breaking the reproducers users keep. A family's template imports every name a case of its
kind may need; :func:`only_used_imports` keeps those this case's script reads, so that a kept
reproducer passes a linter's unused-import check (issue 25: about 9 unused imports each).
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

from rlconform.core.family import get_family

if TYPE_CHECKING:
    from rlconform.core.spec import Spec
    from rlconform.core.system import System

#: the longest line of a rewritten ``from ... import (...)`` statement
IMPORT_LINE = 100


def reproducer_source(system: System, spec: Spec, case: Any, run: Any = None) -> str:
    return only_used_imports(get_family(system.family).reproducer(system, spec, case, run))


def only_used_imports(source: str) -> str:
    """``source`` with its module-level imports cut to the names the rest of the script reads;
    an import statement left with none goes, with the blank line after it. A script Python
    cannot parse is returned as it is (its reproducer is still worth showing)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source
    imports = [node for node in tree.body if isinstance(node, ast.Import | ast.ImportFrom)]
    if not imports:
        return source
    used = _names_read(tree, imports)
    lines = source.splitlines(keepends=True)
    for node in reversed(imports):  # from the end, so that earlier line numbers stay valid
        assert node.end_lineno is not None
        start, end = node.lineno - 1, node.end_lineno
        kept = [alias for alias in node.names if _bound_name(alias) in used]
        if len(kept) == len(node.names) and not _has_noqa(lines[start:end]):
            continue
        if kept:
            lines[start:end] = [_import_statement(node, kept)]
            continue
        if end < len(lines) and not lines[end].strip() and (start == 0 or not lines[start - 1].strip()):
            end += 1  # the blank line that separated it from the next statement
        del lines[start:end]
    return "".join(lines)


def _names_read(tree: ast.Module, imports: list[ast.Import | ast.ImportFrom]) -> set[str]:
    skip = {id(node) for node in imports}
    names: set[str] = set()
    for statement in tree.body:
        if id(statement) in skip:
            continue
        names |= {node.id for node in ast.walk(statement) if isinstance(node, ast.Name)}
    return names


def _bound_name(alias: ast.alias) -> str:
    """The name an import binds: ``import a.b`` binds ``a``."""
    return alias.asname or alias.name.split(".")[0]


def _has_noqa(lines: list[str]) -> bool:
    """A ``# noqa`` for an import that may be unused: the import is used, the comment is stale."""
    return any("# noqa" in line for line in lines)


def _import_statement(node: ast.Import | ast.ImportFrom, names: list[ast.alias]) -> str:
    """The statement importing only ``names``; a long ``from`` import wrapped in parentheses."""
    parts = [alias.name + (f" as {alias.asname}" if alias.asname else "") for alias in names]
    if isinstance(node, ast.Import):
        return "".join(f"import {part}\n" for part in parts)
    module = "." * node.level + (node.module or "")
    line = f"from {module} import {', '.join(parts)}\n"
    if len(line) <= IMPORT_LINE + 1:
        return line
    rows, row = [], "   "
    for part in parts:
        if len(row) + len(part) + 2 > IMPORT_LINE:
            rows.append(row.rstrip())
            row = "   "
        row += f" {part},"
    rows.append(row.rstrip())
    return f"from {module} import (\n" + "\n".join(rows) + "\n)\n"
