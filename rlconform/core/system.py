"""Systems under test: a named way to build one library object around reference environments.

A system knows how to build itself from a list of env factories, which API family it belongs to
(and so which recipe and model apply), which libraries it needs, and which env configurations it
accepts. Bundled systems cover the real libraries; reference systems are the executable models;
planted systems are models with one deliberate bug, used by the suite's own tests.
"""

from __future__ import annotations

import functools
import importlib.metadata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from rlconform.core.catalog import current

EnvFn = Callable[[], Any]


class Script(Protocol):
    """What :meth:`Capabilities.accepts` reads of a case's env script
    (:class:`rlconform.envs.script.EnvScript`): declared here because core sits below the
    reference envs and may not import them."""

    @property
    def obs(self) -> Any: ...
    @property
    def action(self) -> Any: ...
    @property
    def max_episode_steps(self) -> int | None: ...


SystemKind = Literal["library", "reference", "planted", "user"]
#: the kinds of system rlconform bundles and a user selects among by id (``rlconform list``,
#: ``rlconform run``): planted bugs are the test suite's, never a run's
BUNDLED_KINDS: tuple[SystemKind, ...] = ("library", "reference")

#: the keys of a built object's semantics (``Family.describe_semantics``) that describe the stack
#: itself (its autoreset mode, whether it keeps episode statistics, its running normalizers, the
#: vectorizer whose sub-envs run in worker processes, whose layers cannot be read in-process), not
#: the case it was built for: every build of one factory reads the same, so what the probe reads
#: holds for every example, and specs that apply only to some stacks can be decided before any runs
STACK_KEYS = ("autoreset_mode", "episode_statistics", "normalizers", "sub_env_workers")

#: a stack's :data:`STACK_KEYS` as the probe read them: (key, value) pairs of plain values
StackSemantics = tuple[tuple[str, Any], ...]

_PLAIN = (str, int, float, bool, type(None))


def stack_reading(semantics: Mapping[str, Any]) -> StackSemantics | None:
    """The :data:`STACK_KEYS` of ``semantics`` as plain, comparable pairs (lists become tuples);
    None when one holds anything else, so that nothing is decided from a reading not understood."""
    pairs: list[tuple[str, Any]] = []
    for key in STACK_KEYS:
        value = semantics.get(key)
        if isinstance(value, (list, tuple)):
            if not all(isinstance(v, _PLAIN) for v in value):
                return None
            value = tuple(value)
        elif not isinstance(value, _PLAIN):
            return None
        pairs.append((key, value))
    return tuple(pairs)


@dataclass(frozen=True)
class Capabilities:
    """Which env configurations a system accepts and which calls it supports.

    Restrictions here are documented limits of the library (e.g. VecFrameStack needs Box
    observations, NormalizeObservation refuses partial resets): the strategies avoid them
    rather than reporting the refusal as a violation. The report lists the restrictions.
    """

    obs_kinds: frozenset[str] = frozenset({"box", "discrete", "multidiscrete", "multibinary", "dict", "tuple"})
    box_dtypes: frozenset[str] = frozenset({"float32", "float64", "uint8", "int64"})
    action_kinds: frozenset[str] = frozenset({"box", "discrete", "multidiscrete"})
    partial_reset: bool = True
    max_envs: int = 4
    min_envs: int = 1
    #: whether scripts may ("allowed"), must ("required") or must not ("forbidden") put a
    #: TimeLimit around each env
    time_limit: Literal["allowed", "required", "forbidden"] = "allowed"
    #: Dict/Tuple leaves must be Box (wrappers that normalise or stack every leaf)
    composite_box_leaves_only: bool = False
    notes: tuple[str, ...] = ()

    def accepts(self, script: Script) -> bool:
        obs = script.obs
        if obs.kind not in self.obs_kinds:
            return False
        leaves: list[Any] = [obs]
        if obs.kind == "dict":
            leaves = [leaf for _, leaf in obs.entries]  # type: ignore[union-attr]
        elif obs.kind == "tuple":
            leaves = list(obs.elements)  # type: ignore[union-attr]
        for leaf in leaves:
            # the small Discrete is only ever a whole observation, never a composite's leaf: a
            # stack that refused a Dict of mixed leaves may still take it (a one-hot wrapper)
            if self.composite_box_leaves_only and leaf.kind not in ("box", "small_discrete"):
                return False
            if leaf.kind == "box" and leaf.dtype not in self.box_dtypes:
                return False
        if script.action.kind not in self.action_kinds:
            return False
        if self.time_limit == "forbidden" and script.max_episode_steps is not None:
            return False
        return not (self.time_limit == "required" and script.max_episode_steps is None)


@dataclass(frozen=True)
class System:
    """One buildable system. ``build`` takes one env factory per sub-env."""

    id: str
    family: str
    title: str
    build: Callable[[Sequence[EnvFn]], Any]
    #: Python source that builds the same object from a list ``env_fns``, for reproducers
    source: str
    requires: tuple[str, ...] = ()
    kind: SystemKind = "library"
    out_of_process: bool = False
    capabilities: Capabilities = field(default_factory=Capabilities)
    #: id of the reference system that models this one; None: the family picks from the
    #: semantics the built object declares (e.g. Gymnasium's metadata["autoreset_mode"])
    model: str | None = None
    #: for planted bugs: the spec ids this planted bug must be caught by
    plants: tuple[str, ...] = ()
    #: (spec id, reason) pairs this system is known and documented to violate; for reference
    #: models, the places where the documented semantics themselves break a spec
    known_violations: tuple[tuple[str, str], ...] = ()
    description: str = ""
    #: for a user's own env (family user.env): the picklable ``() -> Env`` factory
    env_factory: Callable[[], Any] | None = None
    #: each example is costly (worker processes): searches use the smaller example budget;
    #: None: costly exactly when the envs run out of process
    costly: bool | None = None
    #: its specs marked ``own_worker`` are worth a worker process of their own where a second job is
    #: free (rlconform.core.suite.work_units): set by the probe where they are a large part of the
    #: check (env-author mode: an env with long episodes). A short check split in two only pays
    #: for a second start
    apart: bool = False
    #: why the installed release of the library has no such system (an autoreset mode an older
    #: Gymnasium lacks, say); None: it has. Asked at run time: the compatibility matrix runs the
    #: same registry against several releases.
    availability: Callable[[], str | None] | None = None
    #: the device of the torch-native env the system is built around (its envs return torch
    #: tensors and want them back); None: NumPy envs
    torch_native: str | None = None
    #: value changes the user declared to be on purpose (rlconform.core.intents): the specs accept
    #: them and list them as "changed as declared" instead of failing
    intended: frozenset[str] = frozenset()
    #: a user's system: the family options it was given (``Family.options``, e.g. the stacks
    #: env-author mode runs the env through), as (name, value) pairs; its family reads them, and
    #: its reproducers rebuild the system with them
    options: tuple[tuple[str, Any], ...] = ()
    #: a user's system: its stack's semantics as every build of the probe read them (None: not
    #: probed, or the builds disagreed); a spec that cannot apply to such a stack
    #: (``Spec.applies_to_stack``) is then not applicable before any example runs
    stack_semantics: StackSemantics | None = None

    def option(self, name: str, default: Any = None) -> Any:
        """The value of the family option ``name`` this system was given (``default``: none)."""
        return dict(self.options).get(name, default)

    @property
    def expensive(self) -> bool:
        return self.out_of_process if self.costly is None else self.costly

    def known_violation(self, spec_id: str) -> str | None:
        for known_id, reason in self.known_violations:
            if known_id == spec_id:
                return reason
        return None

    def missing_requirements(self) -> list[str]:
        return [dist for dist in self.requires if not _installed(dist, importlib.metadata.version)]

    def skip_reason(self) -> str | None:
        """Why this system cannot be checked here ("not installed: ..." or the release's reason);
        None when it can. A skipped system's specs are reported as skipped with this reason."""
        missing = self.missing_requirements()
        if missing:
            return f"not installed: {', '.join(missing)}"
        return self.availability() if self.availability is not None else None


@functools.cache
def _installed(dist: str, version: Callable[[str], str]) -> bool:
    """Whether distribution ``dist`` is installed, as ``version`` (``importlib.metadata.version``)
    finds it. Asked once per distribution: reading a distribution's metadata takes milliseconds,
    and env-author mode asks for every stack of every example. The lookup is part of the key, so
    that a test replacing ``importlib.metadata.version`` is asked afresh."""
    try:
        version(dist)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


@dataclass(frozen=True)
class Probed:
    """What the probe learned by building a user's system (``Family.probe_factory``)."""

    #: building it started worker processes (its searches use the smaller example budget)
    spawned: bool
    #: the capabilities its cases are drawn with
    capabilities: Capabilities
    #: see ``System.stack_semantics``
    stack_semantics: StackSemantics | None = None
    #: see ``System.apart``
    apart: bool = False


class UnknownSystemError(KeyError):
    pass


class SystemTable(list[System]):
    """A module's systems, in the order they are added: the catalog reads a module's ``SYSTEMS``.

    A table is data: adding a system registers it nowhere; only the catalog, when asked, reads it."""

    def add(self, system: System) -> System:
        self.append(system)
        return system


def all_systems() -> list[System]:
    """Every system of the catalog in use."""
    return current().systems()


def get_system(system_id: str) -> System:
    try:
        return current().system(system_id)
    except KeyError:
        raise UnknownSystemError(system_id) from None


def library_version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None
