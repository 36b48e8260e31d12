"""Standalone reproducers: one shape for every family, written by :func:`write`.

A reproducer replays a failing case without Hypothesis. Whatever the ``--api``, it is a pytest test
module that imports only from :mod:`rlconform.replay`, the stable entry point (and NumPy, the
standard library, and a user's own factory): ``pytest repro.py`` fails while the violation remains,
and ``python repro.py`` prints the replay and exits with status 1 while it remains. A family gives
only its parts (:class:`ReproducerParts`: the case, what the system and case are, a user's options,
the plain calls a user's test makes); the names of :mod:`rlconform.replay` the case is written with
are read off the source, so that no family lists them and a moved module breaks no reproducer.

:func:`only_used_imports` keeps the imports this case's script reads, so that a kept reproducer
passes a linter's unused-import check (issue 25: about 9 unused imports each).
"""

from __future__ import annotations

import ast
import builtins
import dataclasses
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rlconform.core.family import get_family

if TYPE_CHECKING:
    from rlconform.core.spec import Spec
    from rlconform.core.system import System

#: the longest line of a rewritten ``from ... import (...)`` statement
IMPORT_LINE = 100

#: modules a reproducer may import besides rlconform.replay (a user's factory module aside)
STANDARD_IMPORTS = {
    "contextlib": "import contextlib",
    "copy": "import copy",
    "functools": "import functools",
    "np": "import numpy as np",
}


def reproducer_source(system: System, spec: Spec, case: Any, run: Any = None) -> str:
    return only_used_imports(get_family(system.family).reproducer(system, spec, case, run))


# ------------------------------------------------------------------------------------ the writer


@dataclass(frozen=True)
class ReproducerParts:
    """What a family says about one reproducer; :func:`write` gives every family's the same shape."""

    system: System
    spec: Spec
    #: the statements that bind ``case`` (:func:`case_lines`), written with names of rlconform.replay
    case: Sequence[str]
    #: the ``--api`` a user's factory was checked under (``replay``'s ``api=``)
    api: str | None = None
    #: what the system is and what the case does, for the module docstring
    about: str = ""
    #: ``replay``'s options for a user's factory (a bundled system carries its own): ``num_envs=``,
    #: ``stacks=``, ``intended=`` ...; None values are left out
    options: Mapping[str, Any] = field(default_factory=dict)
    #: (the expression naming the user's imported factory) -> the statements a user's test makes
    #: on it before replaying and the test's docstring; None: the test replays only
    plain: Callable[[str], tuple[Sequence[str], str]] | None = None
    #: the test's docstring when it replays only (default: the replay and the spec that must hold)
    what: str = ""


def test_name(spec: Spec) -> str:
    """The name of a reproducer's test of ``spec``: ``test_terminal_final_obs``."""
    return "test_" + re.sub(r"[^A-Za-z0-9]+", "_", spec.id).strip("_")


def importable(reference: str) -> tuple[str, str] | None:
    """(module, attribute path) of a ``MODULE:QUALNAME`` factory a test file can import; None for
    one defined in ``__main__`` or inside a function."""
    module, _, path = reference.partition(":")
    if not module or not path or module == "__main__" or "<" in path:
        return None
    if not all(part.isidentifier() for part in (*module.split("."), *path.split("."))):
        return None
    return module, path


def import_factory(reference: str, reserved: set[str]) -> tuple[str, str] | None:
    """(the import statement, the expression naming the factory) for a test file, the factory
    renamed ``factory`` where its name would shadow one the file uses; None: not importable."""
    where = importable(reference)
    if where is None:
        return None
    module, path = where
    head = path.split(".")[0]
    alias = "factory" if head in reserved else head
    statement = f"from {module} import {head}" + (f" as {alias}" if alias != head else "")
    return statement, ".".join([alias, *path.split(".")[1:]])


def case_lines(case: Any) -> list[str]:
    """The statements that rebuild ``case`` from its repr: a dataclass keyword by keyword, its env
    script (a ``script`` field) bound to ``script`` first and its plan operations one a line."""
    if not dataclasses.is_dataclass(case) or isinstance(case, type):
        return [f"case = {case!r}"]
    lines: list[str] = []
    arguments = []
    for item in dataclasses.fields(case):
        if not item.init:
            continue
        value = getattr(case, item.name)
        if item.name == "script":
            lines.append(f"script = {value!r}")
            arguments.append("script=script")
        elif isinstance(value, tuple) and value:
            rows = "".join(f"        {element!r},\n" for element in value)
            arguments.append(f"{item.name}=(\n{rows}    )")
        else:
            arguments.append(f"{item.name}={value!r}")
    name = type(case).__name__
    one_line = f"case = {name}({', '.join(arguments)})"
    if "\n" not in one_line and len(one_line) <= IMPORT_LINE:
        return [*lines, one_line]
    return [*lines, f"case = {name}(\n" + "".join(f"    {argument},\n" for argument in arguments) + ")"]


def write(parts: ReproducerParts) -> str:
    """The reproducer: a pytest test module, runnable as a script (see the module docstring)."""
    system, spec = parts.system, parts.spec
    name = test_name(spec)
    user = system.kind == "user"
    case = "\n".join(parts.case)
    sentinel = "__rlconform_factory__"
    reserved = {"case", "script", "violations", "replay", name, *STANDARD_IMPORTS, *_names(case)}
    if parts.plain is not None:
        reserved |= _names("\n".join(parts.plain(sentinel)[0])) - {sentinel}
    imported = import_factory(system.source, reserved) if user else None
    if imported is not None:
        target = imported[1]
    else:
        target = repr(system.source if user else system.id)
    options = "".join(f", {key}={value!r}" for key, value in parts.options.items() if value is not None)
    given = f", api={parts.api!r}{options}" if user else ""
    replayed = f"replay({target}, case, {spec.id!r}{given})"
    body: list[str] = []
    what = parts.what or f"Replays the minimal case on {system.source if user else system.id}: {spec.id} must hold."
    if parts.plain is not None and imported is not None:
        calls, what = parts.plain(target)
        body.extend(calls)
    body += [f"violations = {replayed}", 'assert not violations, "\\n".join(v.render() for v in violations)']
    calls = "makes the calls on your factory, then " if body[:-2] else ""
    keep = f"{name} {calls}fails while the violation remains; keep it as a regression test"
    about = f"\n{parts.about.strip()}\n" if parts.about.strip() else ""
    docstring = f'''"""rlconform reproducer: {system.id} violates {spec.id}.

{spec.statement}
{about}
Run it with pytest ({keep}), or as a script: exit status 1 while the violation remains.
"""
'''
    code = f'''{case}


def {name}() -> None:
    """{what}"""
{_indent(body)}


if __name__ == "__main__":
    violations = {replayed}
    raise SystemExit(1 if violations else 0)
'''
    replay_names = sorted(_free_names(code) - set(STANDARD_IMPORTS) - {target.split(".")[0]} | {"replay"})
    imports = [STANDARD_IMPORTS[n] for n in ("contextlib", "copy", "functools") if n in _names(code)]
    head = "\n".join(imports) + ("\n\n" if imports else "")
    head += "import numpy as np\n\n" if "np" in _names(code) else ""
    head += f"{imported[0]}\n" if imported is not None else ""
    head += f"from rlconform.replay import {', '.join(replay_names)}\n"
    return only_used_imports(docstring + head + "\n" + code)


def _indent(lines: Sequence[str]) -> str:
    return "\n".join(f"    {line}" if line else "" for line in "\n".join(lines).splitlines())


def _names(source: str) -> set[str]:
    """Every name ``source`` reads or binds (empty where Python cannot parse it)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    return {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}


def _free_names(source: str) -> set[str]:
    """The names ``source`` reads that nothing in it binds, builtins aside: the ones it imports."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    bound = set(dir(builtins)) | {"__name__"}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            bound.add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.ClassDef):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            bound |= {(alias.asname or alias.name).split(".")[0] for alias in node.names}
    read = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)}
    return read - bound


# ------------------------------------------------------------------------------------ imports


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
