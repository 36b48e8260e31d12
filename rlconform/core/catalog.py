"""The catalog: every family, system, spec and planted bug rlconform knows, from one explicit list.

Nothing registers itself by being imported. A library package (``rlconform.libraries.<name>``)
describes itself with a :class:`Library`: the modules holding its families, systems and specs.
When the catalog is first asked, it imports those modules and reads from each:

- ``FAMILY``: the module's family object (:class:`~rlconform.core.family.Family`), if it has one;
- ``SYSTEMS``: its table of systems (:class:`~rlconform.core.system.SystemTable`);
- ``SPECS``: specs built as data, plus every function of the module decorated with ``@spec``;
- ``MUST_FAIL``: for its planted bugs, the exact specs each must fail.

A library whose modules cannot be imported here (an optional dependency missing, or broken) is
listed in :meth:`Catalog.unavailable` with the reason; every other library still loads. The list
of libraries is :data:`rlconform.catalog.LIBRARIES`, the one place that names them all; a test can
build a catalog of one library with ``Catalog([library])``.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rlconform.core.family import Family
    from rlconform.core.options import FamilyOption
    from rlconform.core.spec import Spec
    from rlconform.core.system import System

#: the attribute ``@spec`` puts on a spec function
SPEC_ATTRIBUTE = "__rlconform_spec__"


@dataclass(frozen=True)
class Library:
    """One library package as the catalog sees it."""

    #: short name, as in ``rlconform list`` ("gymnasium", "sb3", ...)
    name: str
    #: what it checks, one line
    title: str
    #: modules holding its families, systems and specs, in catalog order
    modules: tuple[str, ...]
    #: modules loaded only where a top-level module is importable ({"isaaclab": (...)}): their
    #: systems cannot even be described without it (they subclass its classes)
    modules_when_importable: dict[str, tuple[str, ...]] = field(default_factory=dict)
    #: the options of its families' user APIs, by ``--api`` name (rlconform.core.options): listed
    #: here, from a light module, so that the front ends render them without loading a family
    options: dict[str, tuple[FamilyOption, ...]] = field(default_factory=dict)


@dataclass
class Contribution:
    """What one library contributed, or why it could not."""

    library: Library
    families: dict[str, Family] = field(default_factory=dict)
    systems: list[System] = field(default_factory=list)
    specs: list[Spec] = field(default_factory=list)
    must_fail: dict[str, frozenset[str]] = field(default_factory=dict)
    #: modules not loaded because a top-level module they need is missing: (module, missing)
    not_loaded: list[tuple[str, str]] = field(default_factory=list)
    #: why the library could not be loaded at all (None: it was)
    error: str | None = None


def specs_of(module: ModuleType) -> list[Spec]:
    """A module's specs in the order the module defines them: its ``@spec`` functions, and its
    ``SPECS`` table (specs built in a loop) where the module assigns it."""
    found: list[Spec] = []
    for name, value in vars(module).items():
        if name == "SPECS":
            found.extend(value)
            continue
        spec = getattr(value, SPEC_ATTRIBUTE, None)
        if spec is not None and getattr(value, "__module__", None) == module.__name__:
            found.append(spec)
    return found


def _contribute(contribution: Contribution, module: ModuleType) -> None:
    family = getattr(module, "FAMILY", None)
    if family is not None:
        contribution.families[family.name] = family
    contribution.systems.extend(getattr(module, "SYSTEMS", ()))
    contribution.specs.extend(specs_of(module))
    contribution.must_fail.update(getattr(module, "MUST_FAIL", {}))


def load_library(library: Library, importer: Callable[[str], ModuleType] = importlib.import_module) -> Contribution:
    contribution = Contribution(library)
    modules = list(library.modules)
    for needed, extra in library.modules_when_importable.items():
        if importlib.util.find_spec(needed) is not None:
            modules.extend(extra)
        else:
            contribution.not_loaded.extend((name, needed) for name in extra)
    try:
        for name in modules:
            _contribute(contribution, importer(name))
    except ImportError as exc:
        missing = getattr(exc, "name", None)
        reason = f"not installed: {missing}" if isinstance(exc, ModuleNotFoundError) and missing else str(exc)
        return Contribution(library, error=f"cannot load {library.name} ({reason})")
    return contribution


class Catalog:
    """The families, systems, specs and planted bugs of a list of libraries (plus the
    cross-family spec modules), loaded on first use and then fixed."""

    def __init__(self, libraries: Sequence[Library], spec_modules: Sequence[str] = ()) -> None:
        self.libraries = tuple(libraries)
        self.spec_modules = tuple(spec_modules)
        self._contributions: list[Contribution] | None = None
        self._families: dict[str, Family] = {}
        self._systems: dict[str, System] = {}
        self._specs: dict[str, Spec] = {}
        self._must_fail: dict[str, frozenset[str]] = {}

    def _load(self) -> list[Contribution]:
        if self._contributions is not None:
            return self._contributions
        core = Contribution(Library("specs", "cross-family specs", self.spec_modules))
        for name in self.spec_modules:
            core.specs.extend(specs_of(importlib.import_module(name)))
        contributions = [core] + [load_library(library) for library in self.libraries]
        for contribution in contributions:
            self._add(contribution)
        self._contributions = contributions
        return contributions

    def _add(self, contribution: Contribution) -> None:
        where = contribution.library.name
        for name, family in contribution.families.items():
            if name in self._families:
                raise ValueError(f"duplicate family {name!r} (library {where})")
            self._families[name] = family
        for system in contribution.systems:
            if system.id in self._systems:
                raise ValueError(f"duplicate system id {system.id!r} (library {where})")
            self._systems[system.id] = system
        for spec in contribution.specs:
            if spec.id in self._specs:
                raise ValueError(f"duplicate spec id {spec.id!r} (library {where})")
            self._specs[spec.id] = spec
        self._must_fail.update(contribution.must_fail)

    @property
    def loaded(self) -> bool:
        return self._contributions is not None

    def contributions(self) -> list[Contribution]:
        return list(self._load())

    def unavailable(self) -> list[tuple[str, str]]:
        """(library, reason) for every library that could not be loaded."""
        return [(c.library.name, c.error) for c in self._load() if c.error is not None]

    def families(self) -> dict[str, Family]:
        self._load()
        return dict(self._families)

    def family(self, name: str) -> Family:
        self._load()
        try:
            return self._families[name]
        except KeyError:
            raise KeyError(f"unknown API family {name!r}; known: {sorted(self._families)}") from None

    def family_for_api(self, api: str) -> Family | None:
        """The family a user names with ``--api`` (None: no family answers to that name)."""
        for family in self.families().values():
            if family.api == api:
                return family
        return None

    def systems(self) -> list[System]:
        self._load()
        return list(self._systems.values())

    def system(self, system_id: str) -> System:
        self._load()
        return self._systems[system_id]

    def specs(self) -> list[Spec]:
        self._load()
        return list(self._specs.values())

    def spec(self, spec_id: str) -> Spec:
        self._load()
        try:
            return self._specs[spec_id]
        except KeyError:
            raise KeyError(f"unknown spec {spec_id!r}; known: {sorted(self._specs)}") from None

    def spec_if_loaded(self, spec_id: str) -> Spec | None:
        """The spec ``spec_id`` if the catalog is loaded already (never loads it)."""
        return self._specs.get(spec_id) if self._contributions is not None else None

    def must_fail(self) -> dict[str, frozenset[str]]:
        """For every planted bug, the exact set of specs it fails (tests/specs/test_specificity.py)."""
        self._load()
        return dict(self._must_fail)


_CURRENT: Catalog | None = None


def current() -> Catalog:
    """The catalog in use: the default one of :mod:`rlconform.catalog` unless :func:`use` set
    another. The composition root is imported here, late, so that the core never names a library."""
    global _CURRENT
    if _CURRENT is None:
        from rlconform.catalog import default_catalog

        _CURRENT = default_catalog()
    return _CURRENT


def use(catalog: Catalog | None) -> Catalog | None:
    """Make ``catalog`` the one in use (None: back to the default); returns the previous one."""
    global _CURRENT
    previous, _CURRENT = _CURRENT, catalog
    return previous


def names(items: Iterable[Any]) -> list[str]:
    return [getattr(item, "id", getattr(item, "name", str(item))) for item in items]
