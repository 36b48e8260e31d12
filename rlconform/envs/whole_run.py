"""The base of every family: :class:`WholeRunFamily`, whose case is one whole run of its system.

A family implements :class:`rlconform.core.family.Family`. Most of that protocol is the same for
every family: a user's factory is built once in an isolated probe and must return an object with
the family's attributes, the object is claimed by its library's base classes, a bundled system's
defect is looked up in the family's FINDINGS table, and a family with no library under the user's
code inherits nothing. This class writes those defaults once, so that a family states only what is
its own (its cases, how it runs one, its reproducer's parts, its user system) and no family carries
no-op stubs.

Two kinds of family stand on it:

- families whose case is one whole run of an object built once (an SB3 algorithm's ``learn``, a
  ready-made vector env driven black-box, a user's own env through every stack, Isaac Lab's torch
  tier) subclass it directly;
- families driven around the reference envs one call at a time subclass
  :class:`rlconform.envs.driver.ReferenceEnvFamily`, which adds the call-by-call driver on top.
"""

from __future__ import annotations

import fnmatch
import inspect
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar, TextIO

from rlconform.core.family import FactoryShape, is_instance_of
from rlconform.core.options import FamilyOption
from rlconform.core.system import Probed, System
from rlconform.core.user import close_within_limit, returned_type, spawns_workers

if TYPE_CHECKING:
    from hypothesis.strategies import SearchStrategy

    from rlconform.core.family import RunRecord
    from rlconform.core.spec import Spec


class WholeRunRecord:
    """The :class:`~rlconform.core.family.RunRecord` members a family's run need not write: no
    stack semantics are read, and no call has a deadline of its own (the search's limits apply).
    A run class that has either overrides it."""

    @property
    def semantics(self) -> dict[str, Any]:
        return {}

    def hang(self) -> str | None:
        return None

    @property
    def call_deadline(self) -> float:
        return 0.0


class WholeRunFamily(ABC):
    """Every member of :class:`~rlconform.core.family.Family`, with the defaults most families
    share; a subclass overrides what is its own."""

    name: ClassVar[str]
    #: the ``--api`` name users check their own factories with (None: no user API)
    api: ClassVar[str | None] = None
    #: the factory signature a user's factory must have, as shown by ``check --help``
    factory_signature: ClassVar[str] = ""
    #: what a user's factory is given (the parameter name a factory's signature says it fits)
    factory_argument: ClassVar[str] = "env_fns"
    #: loggers of the library that log a line per object it builds, quieted while it is driven
    quiet_loggers: ClassVar[tuple[str, ...]] = ()
    #: the options a user's factory is built with, declared once (rlconform.core.options) and
    #: passed to :meth:`user_system` by name
    options: ClassVar[tuple[FamilyOption, ...]] = ()
    #: distributions whose versions matter to a check of this family
    libraries: ClassVar[tuple[str, ...]] = ("gymnasium",)
    #: the family's systems run on a torch device
    uses_accelerator: ClassVar[bool] = False
    #: what the family documents about its outputs, read by the cross-family specs
    #: (:class:`rlconform.envs.driver.Contract`); None: no cross-family spec reads its runs
    contract: ClassVar[Any] = None
    #: the library base classes (``module.QualName``) of what a user's factory returns (:meth:`claims`)
    claimed_classes: ClassVar[tuple[str, ...]] = ()
    #: what a factory of the family is annotated with (the classes it returns and is passed),
    #: which tells a factory given the wrong ``--api`` (rlconform.core.user.api_it_fits)
    factory_shape: ClassVar[FactoryShape] = FactoryShape()
    #: attributes every object of the family has: a user's factory that returns something
    #: without them is bad input (:meth:`probe_factory`)
    required_attributes: ClassVar[tuple[str, ...]] = ("reset", "step")
    #: (bundled system id pattern, spec id) -> the FINDINGS.md row of the defect it shows there
    #: (:meth:`findings_row`)
    findings: ClassVar[dict[tuple[str, str], str]] = {}

    # ------------------------------------------------------------ what each family writes
    @abstractmethod
    def run_case(self, system: System, case: Any, *, with_model: bool) -> RunRecord:
        """Build ``system``, run ``case`` on it, close it, and return what the specs read."""

    @abstractmethod
    def cases(self, system: System, scenario: str) -> SearchStrategy[Any]:
        """The strategy of cases a search draws for ``system``."""

    @abstractmethod
    def reproducer(self, system: System, spec: Spec, case: Any, run: Any) -> str:
        """A standalone reproducer that replays ``case`` on ``system`` and fails on ``spec``."""

    @abstractmethod
    def user_system(self, fn: Callable[..., Any], reference: str, **options: Any) -> System:
        """A user's factory ``fn`` (named ``reference``) as a system of this family."""

    @abstractmethod
    def check_factory(self, signature: inspect.Signature) -> None:
        """Raise TypeError when a user's factory with ``signature`` cannot be called as the
        family calls it."""

    # ------------------------------------------------------------ the shared defaults
    def boundary_cases(self, system: System, scenario: str) -> list[Any]:
        """The edge cases every search tries first; none unless the family has some."""
        return []

    def end_search(self, system: System) -> None:
        """A search of ``system`` ended; nothing to do unless the family keeps what it built
        across a search's examples (env-author mode's stacks)."""
        return None

    def print_run(self, run: Any, case: Any, stream: TextIO) -> None:
        """What ``run`` did, for a person reading a replay: the system, the case and whether it
        could be built; a family with more to show overrides it."""
        print(f"system: {run.system.id} ({run.system.title}), {case}", file=stream)
        if run.build_error:
            print(f"build error: {run.build_error}", file=stream)

    def claims(self, obj: Any) -> bool:
        """Whether ``obj`` is, by its library's base classes, what this family's factories return."""
        return is_instance_of(obj, self.claimed_classes)

    def library_systems(self, run: Any) -> list[str]:
        """The bundled systems under a user's object that a failure may be inherited from: none
        unless the family builds a user's code on a library of its own."""
        return []

    def built_from_library_classes(self, run: Any) -> bool:
        """Whether the user's object is made of the library's own classes only (see
        :class:`rlconform.core.family.Family`); no by default."""
        return False

    def findings_row(self, system_id: str, spec_id: str) -> str | None:
        for (pattern, spec), row in self.findings.items():
            if spec == spec_id and fnmatch.fnmatchcase(system_id, pattern):
                return row
        return None

    def user_system_of(self, reference: str, **fields: Any) -> System:
        """The :class:`System` of a user's factory named ``reference`` in this family: its id,
        family, source and kind written once; ``fields`` are the family's own (title, build,
        capabilities, description, whether it runs out of process, options)."""
        return System(id=f"user:{reference}", family=self.name, source=reference, kind="user", **fields)

    def companions(self, system: System) -> list[System]:
        """Systems checked beside a user's ``system``: none unless the family has a reference
        of the same kind to show beside it."""
        return []

    def probe_build(self, system: System) -> Any:
        """Build a user's system once for :meth:`probe_factory`."""
        return system.build([])

    def close_probe(self, obj: Any) -> None:
        """Close what :meth:`probe_build` built (None here: the probe calls ``obj.close()``)."""
        close = getattr(obj, "close", None)
        if callable(close):
            close_within_limit(close)

    def probe_factory(self, system: System) -> Probed:
        """Build a user's system once (in an isolated worker): a factory that raises, or returns
        something without :attr:`required_attributes` or claimed by another family, is bad input;
        otherwise whether building it started worker processes."""
        spawned = spawns_workers(
            system,
            lambda: self.probe_build(system),
            self.required_attributes,
            returned_type(self.factory_signature),
            close=self.close_probe,
        )
        return Probed(spawned, system.capabilities)
