"""The dependency rule: the layers of rlconform, in order, and a module lives with the library
whose absence would skip it.

Every module of the package is parsed (nothing is imported) and every import it makes is read:
module-level and inside functions, ``import x``, ``from x import y`` (``from rlconform.pkg import
module`` resolved to the module), relative imports, ``importlib.import_module("x")``, and imports
under ``TYPE_CHECKING`` (a type a layer names is a dependency of that layer too). Then:

(layers) a module imports its own layer and the layers below it, never one above: core, then the
    reference envs, then the cross-family specs, then the library packages, then the front ends
    (``cli``, ``plugin``, ``testing``, ``replay`` and the composition root ``rlconform.catalog``).
    The reports sit beside them: they read core only, and only front ends read them. The one
    import that runs back up is declared, with its reason, in ``BACK_EDGES``;
(cycles) no rlconform modules import each other in a cycle at import time (module level, outside
    ``TYPE_CHECKING``): which one finishes first would depend on which one a caller imports first;
(functions) rlconform's own modules are imported at module level, so that the graph above is
    what runs; an import made inside a function is declared, with its reason, in
    ``FUNCTION_LEVEL`` (an optional library the imported module needs, a cycle the late import
    breaks);
(a) ``rlconform/core`` imports no package of ``rlconform.libraries`` and no optional library;
(b) ``rlconform/envs``, ``rlconform/specs`` and ``rlconform/reports`` import no package of
    ``rlconform.libraries`` (they may use an optional library themselves);
(c) a package of ``rlconform.libraries`` imports another one only along an edge declared, with its
    reason, in ``ALLOWED``; an edge the code no longer uses must leave the table.

Last, a fresh interpreter in which every optional library is unimportable imports every module of
``rlconform/core``: the rule holds for what actually runs, transitive imports included.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import textwrap
from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "rlconform"

#: the optional libraries (top-level import names); Isaac Lab's own packages (isaaclab_rl,
#: isaaclab_tasks, ...) count as isaaclab
OPTIONAL = ("gymnasium", "gym", "torch", "tensordict", "torchrl", "stable_baselines3", "isaaclab", "rsl_rl", "skrl")

#: layers that must not import a package of rlconform.libraries (rule b; core is rule a)
LIBRARY_FREE = ("envs", "specs", "reports")

#: (importing library package, imported library package): why the first needs the second. Every
#: edge here is one the code uses today (test_every_allowed_edge_is_used); remove one once unused.
ALLOWED: dict[tuple[str, str], str] = {
    ("sb3", "gymnasium"): (
        "SB3 requires Gymnasium: the SB3 VecEnv models reuse the Gymnasium vector model's rows and "
        "running statistics (sb3/model.py) and its model selection (sb3/vecenv_family.py)"
    ),
    ("torchrl", "gymnasium"): (
        "TorchRL's GymWrapper and GymEnv wrap Gymnasium envs and vector envs: the TorchRL env family "
        "reads the Gymnasium families' autoreset modes and action rendering (torchrl/env_family.py, env_systems.py)"
    ),
    ("envauthor", "gymnasium"): (
        "env-author mode's sample envs put the counter env under the Gymnasium package's sample user "
        "wrappers, the ones --api gymnasium.Wrapper is shown on (envauthor/sample_envs.py)"
    ),
    ("envauthor", "torchrl"): (
        "env-author mode runs the user's env through every installed stack, TorchRL's among them "
        "(GymWrapper, torch-native stacks, TorchRL's unsupported spaces: envauthor/stacks.py)"
    ),
    ("rsl_rl", "isaaclab"): (
        "RSL-RL's runner is checked over Isaac Lab's own RslRlVecEnvWrapper around the Isaac Lab "
        "package's reference DirectRLEnv and its real Cartpole tasks (isaaclab/learner_envs.py, "
        "rsl_rl/runner_run.py, runner_systems.py)"
    ),
    ("skrl", "isaaclab"): (
        "skrl's agents are checked over Isaac Lab's real Cartpole tasks through skrl's Isaac Lab "
        "wrapper (isaaclab/learner_envs.py, skrl/agent_run.py, agent_systems.py)"
    ),
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES: dict[str, Path] = {_module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


@dataclass(frozen=True)
class Import:
    """One import a module makes: ``target`` is the module it imports, resolved."""

    module: str
    line: int
    target: str
    statement: str
    where: str

    def __str__(self) -> str:
        path = MODULES[self.module].relative_to(ROOT) if self.module in MODULES else self.module
        return f"{path}:{self.line}: {self.statement}  ({self.where})"


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


class _Collector(ast.NodeVisitor):
    def __init__(self, module: str, is_package: bool, known: dict[str, Path]) -> None:
        self.module = module
        self.package = module if is_package else module.rpartition(".")[0]
        self.known = known
        self.scope: list[str] = []
        self.functions = 0
        self.type_checking = 0
        self.found: list[Import] = []

    def _where(self) -> str:
        where = f"in {'.'.join(self.scope)}()" if self.functions else "module level"
        return where + (", under TYPE_CHECKING" if self.type_checking else "")

    def _add(self, node: ast.AST, target: str, statement: str) -> None:
        self.found.append(Import(self.module, getattr(node, "lineno", 0), target, statement, self._where()))

    def _scoped(self, node: ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef, function: bool) -> None:
        self.scope.append(node.name)
        self.functions += function
        self.generic_visit(node)
        self.functions -= function
        self.scope.pop()

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self._scoped(node, function=False)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self._scoped(node, function=True)

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        self._scoped(node, function=True)

    def visit_If(self, node: ast.If) -> None:
        if not _is_type_checking(node.test):
            self.generic_visit(node)
            return
        self.visit(node.test)
        self.type_checking += 1
        for child in node.body:
            self.visit(child)
        self.type_checking -= 1
        for child in node.orelse:
            self.visit(child)

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._add(node, alias.name, f"import {alias.name}")

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            base = self.package.split(".")
            base = base[: len(base) - (node.level - 1)]
            source = ".".join([*base, *([node.module] if node.module else [])])
        else:
            source = node.module or ""
        written = "." * node.level + (node.module or "")
        for alias in node.names:
            submodule = f"{source}.{alias.name}"
            # `from rlconform.pkg import module` imports the module; `from pkg import name` the package
            target = submodule if submodule in self.known else source
            self._add(node, target, f"from {written} import {alias.name}")

    def visit_Call(self, node: ast.Call) -> None:
        function = node.func
        name = function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", None)
        if name in ("import_module", "__import__") and node.args:
            first = node.args[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                self._add(node, first.value, ast.unparse(node))
        self.generic_visit(node)


def imports_of(module: str, source: str, is_package: bool = False, known: dict[str, Path] = MODULES) -> list[Import]:
    """Every import ``source`` (the text of ``module``) makes, wherever it makes it."""
    collector = _Collector(module, is_package, known)
    collector.visit(ast.parse(source, filename=module))
    return collector.found


def all_imports() -> Iterator[Import]:
    for module, path in MODULES.items():
        yield from imports_of(module, path.read_text(encoding="utf-8"), path.name == "__init__.py")


def layer(module: str) -> str:
    """core, envs, specs, reports, cli, ... for a module of rlconform; "libraries.NAME" for a
    library package; "" for anything outside rlconform."""
    parts = module.split(".")
    if parts[0] != "rlconform":
        return ""
    if len(parts) >= 3 and parts[1] == "libraries":
        return f"libraries.{parts[2]}"
    return parts[1] if len(parts) > 1 else "rlconform"


def optional_library(target: str) -> str | None:
    top = target.partition(".")[0]
    if top in OPTIONAL:
        return top
    return "isaaclab" if top.startswith("isaaclab_") else None


def imports_library_package(target: str) -> bool:
    return target == "rlconform.libraries" or target.startswith("rlconform.libraries.")


def _report(title: str, offending: list[Import]) -> str:
    return f"{title} ({len(offending)}):\n" + "\n".join(f"  {imp}  -> {imp.target}" for imp in offending)


#: the layers from the bottom up: a module may import its own layer and those before it
LAYERS = ("core", "envs", "specs", "libraries", "front ends")
#: the top-level modules that are front ends: they put the layers together for a user
FRONT_ENDS = ("cli", "plugin", "testing", "replay", "catalog")
#: what the reports may import (besides themselves): they render a results document, which core
#: defines; envs, specs and the library packages never import them (only front ends do)
REPORTS_READ = ("core",)

#: (importing module, imported module): why this import runs against the layers. Each is made
#: inside a function, never at import time (test_back_edges_are_declared_and_late).
BACK_EDGES: dict[tuple[str, str], str] = {
    ("rlconform.core.catalog", "rlconform.catalog"): (
        "the composition root: the catalog core asks for (core.catalog.current) is the one "
        "rlconform.catalog puts together from the library packages; core imports it when first "
        "asked, so that core names no library and a test can install another catalog instead"
    ),
}

#: front ends whose imports inside functions are not held to FUNCTION_LEVEL (none: the CLI, the
#: plugin and the testing API share rlconform.core.session, and their late imports are declared)
FUNCTION_LEVEL_EXEMPT: tuple[str, ...] = ()


def layer_group(name: str) -> str:
    """The layer of ``layer(module)``: "libraries" for any library package, "front ends" for a
    front end, "package" for rlconform/__init__.py (its version only, below every layer)."""
    if name == "rlconform":
        return "package"
    if name == "libraries" or name.startswith("libraries."):
        return "libraries"
    if name in FRONT_ENDS:
        return "front ends"
    return name


def may_import(importer: str, imported: str) -> bool:
    """Whether a module of layer group ``importer`` may import one of ``imported``."""
    if imported in (importer, "package"):
        return True
    if importer == "reports":
        return imported in REPORTS_READ
    if imported == "reports":
        return importer == "front ends"
    return LAYERS.index(imported) <= LAYERS.index(importer)


def upward_imports(imports: Iterable[Import]) -> list[Import]:
    """The imports that run against the layers and are not a declared back edge."""
    return [
        imp
        for imp in imports
        if layer(imp.target)
        and not may_import(layer_group(layer(imp.module)), layer_group(layer(imp.target)))
        and (imp.module, imp.target) not in BACK_EDGES
    ]


def _runs_at_import(imp: Import) -> bool:
    return imp.where == "module level"


def _imported_modules(target: str, known: Collection[str]) -> list[str]:
    """The modules of rlconform that importing ``target`` runs: it and its packages."""
    parts = target.split(".")
    return [name for k in range(1, len(parts) + 1) if (name := ".".join(parts[:k])) in known]


def _cycle_through(start: str, edges: dict[str, dict[str, Import]]) -> list[Import] | None:
    """The imports of a path from ``start`` back to itself (depth first), or None."""
    path: list[Import] = []
    seen: set[str] = set()

    def visit(node: str) -> bool:
        for target, imp in sorted(edges.get(node, {}).items()):
            path.append(imp)
            if target == start:
                return True
            if target not in seen:
                seen.add(target)
                if visit(target):
                    return True
            path.pop()
        return False

    return path if visit(start) else None


def import_cycles(imports: Iterable[Import], known: Collection[str] = MODULES) -> list[list[Import]]:
    """Cycles of rlconform modules that import each other at import time, each as the imports
    that close it (one cycle per strongly connected group of modules)."""
    edges: dict[str, dict[str, Import]] = {}
    for imp in imports:
        if _runs_at_import(imp):
            for target in _imported_modules(imp.target, known):
                if target != imp.module and not imp.module.startswith(target + "."):
                    edges.setdefault(imp.module, {}).setdefault(target, imp)
    cycles: list[list[Import]] = []
    done: set[str] = set()
    for start in sorted(edges):
        if start not in done and (cycle := _cycle_through(start, edges)):
            cycles.append(cycle)
            done.update(imp.module for imp in cycle)
    return cycles


def _optional(libraries: str) -> str:
    return (
        f"the imported module imports {libraries} at module level, and the importing one is loaded "
        "without it (the catalog reads every library package's systems for `rlconform list`)"
    )


_GYMNASIUM = _optional("Gymnasium (the reference env is a gymnasium.Env)")
_TORCH = _optional("torch")

_INERT_PLUGIN = (
    "pytest loads the plugin (its pytest11 entry point) in every run of every project where "
    "rlconform is installed; it stays inert and cheap until an rlconform option is given, so what "
    "pulls Hypothesis, NumPy or the results document is imported when an option asks for it"
)

#: (importing module, imported module): why this rlconform import is made inside a function
#: rather than at module level. Every entry is used (test_every_function_level_entry_is_used).
FUNCTION_LEVEL: dict[tuple[str, str], str] = {
    ("rlconform.core.catalog", "rlconform.catalog"): "the composition root (BACK_EDGES)",
    ("rlconform.core.config", "rlconform.core.profiles"): (
        "profiles imports Hypothesis and reads RLCONFORM_PROFILE through config; config reads the "
        "profiles only when a profile is named, so that a reproducer (rlconform.replay, which loads "
        "config through core.user) runs where Hypothesis is not installed"
    ),
    ("rlconform.envs.driver", "rlconform.envs.factory_probe"): (
        "the factory probe drives its trial builds through the driver's LiveRun, so it imports the "
        "driver; probe_factory imports the probe when called, so that the two do not import each other"
    ),
    ("rlconform.envs.driver", "rlconform.envs.reference_env"): _GYMNASIUM,
    ("rlconform.plugin", "rlconform.core.config"): _INERT_PLUGIN,
    ("rlconform.plugin", "rlconform.core.profiles"): _INERT_PLUGIN,
    ("rlconform.plugin", "rlconform.core.runner"): _INERT_PLUGIN,
    ("rlconform.plugin", "rlconform.core.session"): _INERT_PLUGIN,
    ("rlconform.plugin", "rlconform.core.user"): _INERT_PLUGIN,
    ("rlconform.plugin", "rlconform.reports.left_out"): _INERT_PLUGIN,
    ("rlconform.plugin", "rlconform.reports.results"): _INERT_PLUGIN,
    ("rlconform.envs.driver", "rlconform.envs.strategies"): (
        "the strategies import Hypothesis; a reproducer (rlconform.replay) drives the driver and "
        "runs where Hypothesis is not installed (tests/frontends/test_cli.py shows it)"
    ),
    ("rlconform.envs.factory_probe", "rlconform.envs.reference_env"): _GYMNASIUM,
    ("rlconform.envs.tap", "rlconform.envs.reference_env"): _GYMNASIUM,
    ("rlconform.libraries.envauthor.planted", "rlconform.libraries.envauthor.sample_envs"): _optional("Gymnasium"),
    ("rlconform.libraries.gymnasium.env_family", "rlconform.envs.reference_env"): _GYMNASIUM,
    ("rlconform.libraries.isaaclab.bundled", "rlconform.libraries.isaaclab.batch_env"): _optional("Isaac Lab"),
    ("rlconform.libraries.isaaclab.direct_family", "rlconform.libraries.isaaclab.reference_env"): _optional(
        "Isaac Lab and torch"
    ),
    ("rlconform.libraries.isaaclab.rsl_rl_family", "rlconform.libraries.isaaclab.reference_env"): _optional(
        "Isaac Lab and torch"
    ),
    ("rlconform.libraries.isaaclab.wrapper_systems", "rlconform.libraries.isaaclab.reference_env"): _optional(
        "Isaac Lab and torch"
    ),
    ("rlconform.libraries.isaaclab.torch_tier", "rlconform.libraries.isaaclab.wrappers"): _TORCH,
    ("rlconform.libraries.isaaclab.torch_tier", "rlconform.libraries.isaaclab.torch_specs"): _TORCH,
    ("rlconform.libraries.isaaclab.torch_tier", "rlconform.libraries.isaaclab.torch_run"): _TORCH,
    ("rlconform.libraries.isaaclab.user", "rlconform.libraries.isaaclab.torch_specs"): _TORCH,
    ("rlconform.libraries.isaaclab.user", "rlconform.libraries.isaaclab.torch_run"): _TORCH,
    ("rlconform.libraries.torchrl.collectors", "rlconform.libraries.torchrl.policies"): _optional(
        "torch and tensordict"
    ),
    ("rlconform.libraries.torchrl.env_objects", "rlconform.libraries.torchrl.declared_space"): _optional("Gymnasium"),
    ("rlconform.libraries.torchrl.env_systems", "rlconform.envs.reference_env"): _GYMNASIUM,
    ("rlconform.libraries.torchrl.env_user", "rlconform.envs.reference_env"): _GYMNASIUM,
    ("rlconform.libraries.sb3.algorithm_harness", "rlconform.envs.reference_env"): _GYMNASIUM,
    ("rlconform.libraries.sb3.algorithm_planted", "rlconform.libraries.sb3.algorithm_buffers"): _optional(
        "Stable-Baselines3 (its buffers subclass SB3's)"
    ),
    ("rlconform.libraries.torchrl.native", "rlconform.envs.torch_reference_env"): _GYMNASIUM,
    ("rlconform.libraries.torchrl.native", "rlconform.libraries.torchrl.planted_native"): _optional("Gymnasium"),
    ("rlconform.libraries.torchrl.value_family", "rlconform.libraries.torchrl.value_torch"): _optional(
        "torch, tensordict and TorchRL"
    ),
    ("rlconform.libraries.torchrl.replay_harness", "rlconform.libraries.torchrl.value_torch"): _optional(
        "torch, tensordict and TorchRL"
    ),
    ("rlconform.libraries.torchrl.replay_family", "rlconform.libraries.torchrl.replay_torch"): _optional(
        "torch, tensordict and TorchRL"
    ),
    ("rlconform.envs.learner_run", "rlconform.envs.torch_stamp"): _TORCH,
    ("rlconform.libraries.rsl_rl.runner_family", "rlconform.libraries.rsl_rl.runner_run"): _optional(
        "torch and tensordict"
    ),
    ("rlconform.libraries.rsl_rl.runner_family", "rlconform.envs.torch_stamp"): _TORCH,
    ("rlconform.libraries.isaaclab.learner_envs", "rlconform.libraries.isaaclab.batch_env"): _optional(
        "Isaac Lab (the reference DirectRLEnv subclasses its DirectRLEnv)"
    ),
    ("rlconform.libraries.isaaclab.learner_envs", "rlconform.libraries.isaaclab.cartpole"): _optional(
        "Isaac Lab (the real Cartpole tasks; learner_envs is imported by the learner families' system tables "
        "where Isaac Lab is not installed)"
    ),
    ("rlconform.libraries.isaaclab.learner_envs", "rlconform.envs.torch_stamp"): _optional(
        "torch (the step recorder; learner_envs is imported by the learner families' system tables, which import "
        "no torch)"
    ),
    ("rlconform.libraries.rsl_rl.runner_systems", "rlconform.libraries.rsl_rl.runner_planted"): _optional(
        "RSL-RL (its planted PPO subclasses RSL-RL's)"
    ),
    ("rlconform.libraries.skrl.agent_family", "rlconform.libraries.skrl.agent_run"): _optional("torch and skrl"),
    ("rlconform.libraries.skrl.agent_systems", "rlconform.libraries.skrl.agent_planted"): _optional(
        "skrl (its planted PPO subclasses skrl's)"
    ),
}


def function_level_imports(imports: Iterable[Import]) -> list[Import]:
    """rlconform imports made inside a function that FUNCTION_LEVEL does not declare."""
    return [
        imp
        for imp in imports
        if imp.where.startswith("in ")
        and layer(imp.target)
        and layer(imp.module) not in FUNCTION_LEVEL_EXEMPT
        and (imp.module, imp.target) not in FUNCTION_LEVEL
    ]


def test_the_package_is_read_whole() -> None:
    layers = {layer(module) for module in MODULES}
    assert {"core", "envs", "specs", "reports"} <= layers, layers
    libraries = {name for name in layers if name.startswith("libraries.")}
    assert {f"libraries.{name}" for name in ("gymnasium", "sb3", "torchrl", "isaaclab", "envauthor")} <= libraries


def test_the_collector_sees_every_import_form() -> None:
    known = {name: Path() for name in ("rlconform.core.x", "rlconform.libraries.gymnasium", "rlconform.core.plan")}
    source = textwrap.dedent(
        """
        import torch.nn as nn
        from typing import TYPE_CHECKING
        from rlconform.libraries import gymnasium
        from . import plan
        from .plan import Case
        if TYPE_CHECKING:
            from tensordict import TensorDict
        class C:
            def f(self):
                import stable_baselines3
                importlib.import_module("isaaclab_rl.rsl_rl")
        """
    )
    found = [(imp.line, imp.target, imp.where) for imp in imports_of("rlconform.core.x", source, known=known)]
    assert found == [
        (2, "torch.nn", "module level"),
        (3, "typing", "module level"),
        (4, "rlconform.libraries.gymnasium", "module level"),
        (5, "rlconform.core.plan", "module level"),
        (6, "rlconform.core.plan", "module level"),
        (8, "tensordict", "module level, under TYPE_CHECKING"),
        (11, "stable_baselines3", "in C.f()"),
        (12, "isaaclab_rl.rsl_rl", "in C.f()"),
    ]
    assert [optional_library(target) for _, target, _ in found] == [
        "torch",
        None,
        None,
        None,
        None,
        "tensordict",
        "stable_baselines3",
        "isaaclab",
    ]


def test_core_imports_no_library_package_and_no_optional_library() -> None:
    """Rule (a): rlconform/core is library-agnostic."""
    offending = [
        imp
        for imp in all_imports()
        if layer(imp.module) == "core" and (imports_library_package(imp.target) or optional_library(imp.target))
    ]
    assert not offending, _report("rlconform/core imports a library package or an optional library", offending)


def test_envs_specs_and_reports_import_no_library_package() -> None:
    """Rule (b): the reference envs, the cross-family specs and the reports know no library package."""
    offending = [
        imp for imp in all_imports() if layer(imp.module) in LIBRARY_FREE and imports_library_package(imp.target)
    ]
    assert not offending, _report(f"rlconform/{{{','.join(LIBRARY_FREE)}}} import a library package", offending)


def _library_edges() -> Iterator[tuple[tuple[str, str], Import]]:
    for imp in all_imports():
        importer, imported = layer(imp.module), layer(imp.target)
        if importer.startswith("libraries.") and imported.startswith("libraries.") and importer != imported:
            yield (importer.removeprefix("libraries."), imported.removeprefix("libraries.")), imp


def test_library_packages_import_each_other_only_as_declared() -> None:
    """Rule (c): an edge between two library packages is declared in ALLOWED with its reason."""
    offending = [imp for edge, imp in _library_edges() if edge not in ALLOWED]
    assert not offending, _report(
        "a library package imports another one along an edge ALLOWED does not declare", offending
    )


def test_every_allowed_edge_is_used() -> None:
    """ALLOWED says what the code does: an edge no import uses any more leaves the table."""
    used = {edge for edge, _ in _library_edges()}
    assert not set(ALLOWED) - used, f"declared but unused (remove from ALLOWED): {sorted(set(ALLOWED) - used)}"


def test_no_module_imports_a_layer_above_its_own() -> None:
    """The layers: core, envs, specs, library packages, front ends; reports beside, reading core."""
    offending = upward_imports(all_imports())
    assert not offending, _report("an import runs against the layers (declare it in BACK_EDGES or move it)", offending)


def test_back_edges_are_declared_and_late() -> None:
    """Each declared back edge is still made, and only inside a function: importing the lower
    layer never imports the higher one."""
    made = [imp for imp in all_imports() if (imp.module, imp.target) in BACK_EDGES]
    assert {(imp.module, imp.target) for imp in made} == set(BACK_EDGES), "a declared back edge is no longer made"
    at_import = [imp for imp in made if not imp.where.startswith("in ")]
    assert not at_import, _report("a back edge is made at import time", at_import)


def test_no_import_cycle_at_import_time() -> None:
    cycles = import_cycles(all_imports())
    assert not cycles, "\n".join(_report("modules that import each other at import time", c) for c in cycles)


def test_rlconform_imports_are_made_at_module_level() -> None:
    """An rlconform import inside a function hides a dependency from the graph above; the few
    that must wait for a call are declared in FUNCTION_LEVEL with the reason."""
    offending = function_level_imports(all_imports())
    assert not offending, _report("rlconform imports made inside a function (hoist, or declare why)", offending)


def test_every_function_level_entry_is_used() -> None:
    made = {(imp.module, imp.target) for imp in all_imports() if imp.where.startswith("in ")}
    unused = sorted(set(FUNCTION_LEVEL) - made)
    assert not unused, f"declared but no longer made inside a function (remove from FUNCTION_LEVEL): {unused}"


def _optional_at_import(module: str, imports: list[Import]) -> set[str]:
    """The optional libraries importing ``module`` imports, through rlconform modules imported at
    module level."""
    by_module: dict[str, list[Import]] = {}
    for imp in imports:
        by_module.setdefault(imp.module, []).append(imp)
    seen, todo, found = {module}, [module], set()
    while todo:
        for imp in by_module.get(todo.pop(), []):
            if not _runs_at_import(imp):
                continue
            if library := optional_library(imp.target):
                found.add(library)
            for target in _imported_modules(imp.target, MODULES):
                if target not in seen:
                    seen.add(target)
                    todo.append(target)
    return found


def test_function_level_entries_for_an_optional_library_are_true() -> None:
    """An entry that gives an optional library as its reason names a module that imports one the
    importing module does not already import: else the import can move to module level."""
    imports = list(all_imports())
    wrong = [
        (importer, imported)
        for (importer, imported), reason in FUNCTION_LEVEL.items()
        if reason.startswith("the imported module imports")
        and not _optional_at_import(imported, imports) - _optional_at_import(importer, imports)
    ]
    assert not wrong, f"these imports need no optional library the importer lacks (hoist them): {wrong}"


def test_the_rules_catch_planted_offences() -> None:
    """Each rule reports an offence planted in a synthetic module: a back edge (at module level,
    inside a function, under TYPE_CHECKING), a cycle, and an undeclared import in a function."""
    known = {name: Path() for name in ("rlconform.core.x", "rlconform.core.y", "rlconform.specs.helpers")}
    core = textwrap.dedent(
        """
        from typing import TYPE_CHECKING
        from rlconform.specs.helpers import decode
        from rlconform.core import y
        if TYPE_CHECKING:
            from rlconform.specs import helpers
        def f():
            from rlconform.specs.helpers import decode
        """
    )
    planted = imports_of("rlconform.core.x", core, known=known)
    upward = [(imp.line, imp.target, imp.where) for imp in upward_imports(planted)]
    assert upward == [
        (3, "rlconform.specs.helpers", "module level"),
        (6, "rlconform.specs.helpers", "module level, under TYPE_CHECKING"),
        (8, "rlconform.specs.helpers", "in f()"),
    ]
    back = imports_of("rlconform.core.y", "from rlconform.core.x import g\n", known=known)
    cycles = import_cycles([*planted, *back], known=known)
    assert [[(imp.module, imp.target) for imp in cycle] for cycle in cycles] == [
        [("rlconform.core.x", "rlconform.core.y"), ("rlconform.core.y", "rlconform.core.x")]
    ]
    assert not import_cycles(planted, known=known)
    assert [(imp.line, imp.target) for imp in function_level_imports(planted)] == [(8, "rlconform.specs.helpers")]
    # the declared composition root passes; the same import from another core module does not
    root = "def current():\n    from rlconform.catalog import default_catalog\n"
    assert not upward_imports(imports_of("rlconform.core.catalog", root))
    assert upward_imports(imports_of("rlconform.core.spec", root))
    assert not function_level_imports(imports_of("rlconform.core.catalog", root))


UNIMPORTABLE = textwrap.dedent(
    """
    import importlib, importlib.abc, os, sys, traceback

    BLOCKED = set(sys.argv[1].split(","))

    def blocked(name):
        top = name.partition(".")[0]
        return top in BLOCKED or top.startswith("isaaclab_")

    class Unimportable(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if blocked(name):
                raise ModuleNotFoundError(f"No module named {name!r} (unimportable in this test)", name=name)
            return None

    already = sorted(name for name in sys.modules if blocked(name))
    if already:
        sys.exit(f"imported before the test could block them: {already}")
    sys.meta_path.insert(0, Unimportable())
    for name in BLOCKED:
        try:
            importlib.import_module(name)
        except ModuleNotFoundError:
            pass
        else:
            sys.exit(f"{name} could still be imported")
    import rlconform

    if not os.path.realpath(rlconform.__file__).startswith(sys.argv[2]):
        sys.exit(f"rlconform imported from {rlconform.__file__}, not from {sys.argv[2]}")
    failures = []
    for module in sys.argv[3:]:
        try:
            importlib.import_module(module)
        except BaseException as error:
            failures.append(f"{module}: {type(error).__name__}: {error}\\n" + traceback.format_exc(limit=-6))
    leaked = sorted(name for name in sys.modules if blocked(name))
    if leaked:
        failures.append(f"optional libraries in sys.modules after the imports: {leaked}")
    if failures:
        sys.exit("\\n".join(failures))
    print(f"imported {len(sys.argv) - 3} modules")
    """
)


def _fresh_python(cwd: Path, *args: str, timeout: int) -> subprocess.CompletedProcess[str]:
    """``python *args`` in a fresh interpreter that imports rlconform from this checkout."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def test_every_core_module_imports_without_any_optional_library(tmp_path: Path) -> None:
    """A fresh interpreter where every optional library raises ModuleNotFoundError imports all of
    rlconform/core (and rlconform/__init__.py with it)."""
    core = [module for module in MODULES if layer(module) == "core"]
    assert "rlconform.core" in core and len(core) > 1, core
    result = _fresh_python(tmp_path, "-c", UNIMPORTABLE, ",".join(OPTIONAL), str(PACKAGE), *core, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"imported {len(core)} modules" in result.stdout


def test_the_plugin_imports_nothing_heavy_until_asked(tmp_path: Path) -> None:
    """What ``_INERT_PLUGIN`` claims: importing the plugin (as pytest does in every run of a project
    where rlconform is installed) loads neither Hypothesis, NumPy nor any optional library."""
    probe = (
        "import sys, rlconform.plugin; "
        "print(sorted(n for n in ('hypothesis', 'numpy', *sys.argv[1].split(',')) if n in sys.modules))"
    )
    result = _fresh_python(tmp_path, "-c", probe, ",".join(OPTIONAL), timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]", result.stdout
