"""The catalog: one explicit list of libraries, loaded when asked, with nothing registered by import.

- a catalog of one library holds that library's families, systems and specs, and nothing else;
- importing a library's modules registers nothing anywhere: only a catalog that lists them reads them;
- with gymnasium, torch, tensordict, torchrl, stable-baselines3 and isaaclab uninstalled (their
  imports fail and their distributions are unknown), ``rlconform list`` and ``rlconform run`` give
  every row with its reason, never a traceback;
- a new library is one package and one line: a package written here from scratch joins a catalog;
- every module of rlconform that defines a spec (an ``@spec`` function or a ``SPECS`` table) is read
  by the default catalog: a spec module nobody lists would be silently left out of every run.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path

import pytest

from rlconform.catalog import LIBRARIES, SPEC_MODULES, default_catalog
from rlconform.core.catalog import Catalog, Library, current, load_library, use

ROOT = Path(__file__).resolve().parents[2]


def _library(name: str) -> Library:
    return next(library for library in LIBRARIES if library.name == name)


def test_the_list_names_each_library_package_once() -> None:
    names = [library.name for library in LIBRARIES]
    assert sorted(names) == ["envauthor", "gymnasium", "isaaclab", "rsl_rl", "sb3", "skrl", "torchrl"]
    for library in LIBRARIES:
        for module in library.modules:
            assert module.startswith(f"rlconform.libraries.{library.name}."), (library.name, module)


def test_a_catalog_of_one_library_holds_only_that_library() -> None:
    pytest.importorskip("stable_baselines3")
    sb3_only = Catalog([_library("sb3")])
    assert set(sb3_only.families()) == {"sb3.VecEnv", "sb3.Algorithm"}
    systems = sb3_only.systems()
    assert systems and {s.family for s in systems} == {"sb3.VecEnv", "sb3.Algorithm"}
    assert {s.kind for s in systems} == {"library", "reference", "planted"}
    # no cross-family spec modules were given: only the specs of SB3's own package (sb3.Algorithm)
    assert {s.id.split(".")[0] for s in sb3_only.specs()} <= {"algorithm"}
    with_specs = Catalog([_library("sb3")], SPEC_MODULES)
    assert "transitions.exact" in {s.id for s in with_specs.specs()}
    assert "env.stack_equivalence" not in {s.id for s in with_specs.specs()}
    assert set(with_specs.must_fail()) == {s.id for s in systems if s.kind == "planted"}


def test_importing_a_library_module_registers_nothing() -> None:
    empty = Catalog([])
    import rlconform.libraries.gymnasium.vector_family
    import rlconform.libraries.torchrl.collectors  # noqa: F401

    assert empty.systems() == [] and empty.families() == {} and empty.specs() == []
    previous = use(empty)
    try:
        assert current() is empty
    finally:
        use(previous)
    assert current() is not empty


def test_every_system_spec_and_family_comes_from_exactly_one_library() -> None:
    catalog = default_catalog()
    contributions = catalog.contributions()
    systems = [s.id for c in contributions for s in c.systems]
    assert len(systems) == len(set(systems)) == len(catalog.systems())
    specs = [s.id for c in contributions for s in c.specs]
    assert len(specs) == len(set(specs)) == len(catalog.specs())
    families = catalog.families()
    for system in catalog.systems():
        assert system.family in families, (system.id, system.family)
    checked = {system.family for system in catalog.systems()}
    for contribution in contributions:
        for name, family in contribution.families.items():
            # a family is checked through a bundled system or a user's factory (--api): one with
            # neither is never run
            assert name in checked or family.api is not None, (contribution.library.name, name)


def _decorated_with_spec(node: ast.AST) -> bool:
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    for decorator in node.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        if (isinstance(target, ast.Name) and target.id == "spec") or (
            isinstance(target, ast.Attribute) and target.attr == "spec"
        ):
            return True
    return False


def _assigns_specs(node: ast.AST) -> bool:
    targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
    return any(isinstance(target, ast.Name) and target.id == "SPECS" for target in targets)


def spec_modules_under(root: Path, package: str) -> list[str]:
    """The modules of ``package`` (its source folder ``root``) that define specs, read from the
    source: a function decorated with ``spec`` (``@spec(...)``, ``@core.spec(...)``) anywhere in
    the module, or a module-level ``SPECS`` table; nothing is imported."""
    found = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        if any(_decorated_with_spec(node) for node in ast.walk(tree)) or any(_assigns_specs(n) for n in tree.body):
            parts = [package, *path.relative_to(root).with_suffix("").parts]
            found.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return found


def listed_modules(libraries: Sequence[Library], spec_modules: Sequence[str]) -> set[str]:
    """Every module a catalog of ``libraries`` and ``spec_modules`` may import."""
    listed = set(spec_modules)
    for library in libraries:
        listed.update(library.modules)
        for extra in library.modules_when_importable.values():
            listed.update(extra)
    return listed


def unlisted_spec_modules(root: Path, package: str, listed: set[str]) -> list[str]:
    return [module for module in spec_modules_under(root, package) if module not in listed]


def test_every_module_that_defines_a_spec_is_read_by_the_default_catalog() -> None:
    """A new ``@spec`` module joins the runs only once it is listed: in ``SPEC_MODULES``
    (rlconform/catalog.py) for a cross-family spec, in its library's ``modules`` otherwise."""
    found = spec_modules_under(ROOT / "rlconform", "rlconform")
    assert "rlconform.specs.transitions" in found and "rlconform.libraries.torchrl.collectors" in found
    assert unlisted_spec_modules(ROOT / "rlconform", "rlconform", listed_modules(LIBRARIES, SPEC_MODULES)) == []


def test_a_spec_module_nobody_lists_is_reported(tmp_path: Path) -> None:
    """The finder of the test above on a tree of its own: a decorated function (bare, called, or
    through a module attribute), a ``SPECS`` table and a listed module; the unlisted ones are named."""
    specs = tmp_path / "specs"
    specs.mkdir()
    (tmp_path / "__init__.py").write_text("")
    (specs / "__init__.py").write_text("")
    (specs / "listed.py").write_text(
        "from rlconform.core.spec import spec\n\n@spec('a.b', statement='s')\ndef f(run): ...\n"
    )
    (specs / "forgotten.py").write_text("from rlconform.core import spec as s\n\n@s.spec('c.d')\ndef g(run): ...\n")
    (specs / "table.py").write_text("SPECS = [make(i) for i in range(3)]\n")
    (specs / "bare.py").write_text("class K:\n    @spec\n    def h(self): ...\n")
    (specs / "helpers.py").write_text("def spec(): ...\n\nx = spec()\n")  # defines spec, decorates nothing
    found = spec_modules_under(tmp_path, "pkg")
    assert found == ["pkg.specs.bare", "pkg.specs.forgotten", "pkg.specs.listed", "pkg.specs.table"]
    unlisted = unlisted_spec_modules(tmp_path, "pkg", listed_modules([], ["pkg.specs.listed"]))
    assert unlisted == ["pkg.specs.bare", "pkg.specs.forgotten", "pkg.specs.table"]
    library = Library("pkg", "a library", ("pkg.specs.bare",), {"somelib": ("pkg.specs.table",)})
    assert unlisted_spec_modules(tmp_path, "pkg", listed_modules([library], ["pkg.specs.listed"])) == [
        "pkg.specs.forgotten"
    ]


UNINSTALLED = textwrap.dedent(
    """
    import importlib, importlib.abc, importlib.metadata, importlib.util, sys

    TOP = {"gymnasium", "gym", "torch", "tensordict", "torchrl", "stable_baselines3", "isaaclab", "rsl_rl"}
    DISTS = {"gymnasium", "torch", "tensordict", "torchrl", "stable-baselines3", "isaaclab", "rsl-rl-lib"}

    def blocked(name):
        top = name.partition(".")[0]
        return top in TOP or top.startswith("isaaclab_")

    class Uninstalled(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if blocked(name):
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None

    sys.meta_path.insert(0, Uninstalled())
    find_spec = importlib.util.find_spec
    importlib.util.find_spec = lambda name, package=None: None if blocked(name) else find_spec(name, package)
    version = importlib.metadata.version

    def uninstalled_version(dist):
        if dist in DISTS:
            raise importlib.metadata.PackageNotFoundError(dist)
        return version(dist)

    importlib.metadata.version = uninstalled_version
    from rlconform.cli import main

    code = main(sys.argv[1:])
    leaked = sorted(name for name in sys.modules if blocked(name))
    print("LEAKED", leaked)
    sys.exit(code)
    """
)


def _uninstalled(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run(
        [sys.executable, "-c", UNINSTALLED, *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_list_without_any_optional_library_gives_every_row_with_its_reason(tmp_path: Path) -> None:
    result = _uninstalled(tmp_path, "list")
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "Traceback" not in output
    assert "LEAKED []" in result.stdout
    systems_section = result.stdout.split("\n\n")[0]  # the systems, then a blank line, then the specs
    rows = [line for line in systems_section.splitlines() if line.startswith(("gymnasium.", "sb3.", "torchrl."))]
    assert len(rows) > 50
    for row in rows:
        assert "[not installed: " in row, row
    assert "transitions.exact" in result.stdout and "env.stack_equivalence" in result.stdout


def test_run_without_any_optional_library_skips_every_system_with_its_reason(tmp_path: Path) -> None:
    result = _uninstalled(
        tmp_path,
        "run",
        "--system",
        "gymnasium.SyncVectorEnv.SameStep",
        "--system",
        "sb3.DummyVecEnv",
        "--system",
        "torchrl.GymWrapper",
        "--in-process",
        "--json",
        str(tmp_path / "results.json"),
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "Traceback" not in output
    assert "LEAKED []" in result.stdout
    assert "SKIPPED gymnasium.SyncVectorEnv.SameStep: not installed: gymnasium" in result.stdout
    assert "SKIPPED sb3.DummyVecEnv: not installed: stable-baselines3" in result.stdout
    assert "SKIPPED torchrl.GymWrapper: not installed: torchrl" in result.stdout


NEW_LIBRARY = '''
"""A library package written from scratch: SB3's VecEnv family driven around a vectorizer of
its own (here: SB3's DummyVecEnv under another name, the smallest real system there is)."""

from rlconform.core.catalog import Library

LIBRARY = Library(name="myvec", title="my vectorizer", modules=("myvec_rlconform.systems",))
'''

NEW_SYSTEMS = """
from rlconform.core.system import Capabilities, System, SystemTable
from rlconform.specs.families import SB3_VECENV

SYSTEMS = SystemTable()


def build(env_fns):
    from stable_baselines3.common.vec_env import DummyVecEnv

    return DummyVecEnv(list(env_fns))


SYSTEMS.add(
    System(
        id="myvec.DummyVecEnv",
        family=SB3_VECENV,
        title="DummyVecEnv, as a new library would add it",
        build=build,
        source="DummyVecEnv(env_fns)",
        requires=("stable-baselines3",),
        capabilities=Capabilities(partial_reset=False),
        model="reference.sb3.VecEnv",
    )
)
"""


def test_a_new_library_is_one_package_and_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """ARCHITECTURE.md, "Adding a library": the package below plus one entry in the list."""
    pytest.importorskip("stable_baselines3")
    package = tmp_path / "myvec_rlconform"
    package.mkdir()
    (package / "__init__.py").write_text(NEW_LIBRARY)
    (package / "systems.py").write_text(NEW_SYSTEMS)
    monkeypatch.syspath_prepend(str(tmp_path))
    import myvec_rlconform

    catalog = Catalog([*LIBRARIES, myvec_rlconform.LIBRARY], SPEC_MODULES)  # the one line
    assert load_library(myvec_rlconform.LIBRARY).error is None
    system = catalog.system("myvec.DummyVecEnv")
    assert system.family == "sb3.VecEnv"
    from rlconform.core.profiles import Profile
    from rlconform.core.runner import RunCache
    from rlconform.core.search import check_spec

    previous = use(catalog)
    try:
        verdict = check_spec(
            system, catalog.spec("transitions.exact"), Profile("tiny", 5, 2, True, "", 20, 5, 10.0), cache=RunCache()
        )
    finally:
        use(previous)
    assert verdict.status == "pass", verdict.message
    assert verdict.checked > 0


def test_every_family_implements_the_protocol_and_api_names_are_unique() -> None:
    from rlconform.core.family import Family

    families = default_catalog().families()
    assert {"gymnasium.vector", "sb3.VecEnv", "torchrl.EnvBase", "gymnasium.Env", "isaaclab"} <= set(families)
    for name, family in families.items():
        assert isinstance(family, Family), name
        assert family.name == name
    # one name per family: a family a user checks a factory with is named by its --api
    assert [name for name, family in families.items() if family.api is not None and family.api != name] == []
    apis = [family.api for family in families.values() if family.api is not None]
    assert sorted(apis) == [
        "gymnasium.Env",
        "gymnasium.VectorEnv",
        "gymnasium.Wrapper",
        "gymnasium.vector",
        "isaaclab",
        "rsl_rl.Runner",
        "sb3.Algorithm",
        "sb3.VecEnv",
        "skrl.Agent",
        "torchrl.EnvBase",
        "torchrl.ReplayBuffer",
        "torchrl.ValueEstimator",
    ]
