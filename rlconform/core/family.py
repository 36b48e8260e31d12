"""What the core knows of an API family: the :class:`Family` protocol.

A family is how one library's objects are built, driven and read. The core (runner, search,
reproducer, CLI, plugin) names no family: it asks the catalog for the family of a system and calls
this protocol, and reads nothing of a family or of a run that the protocols below do not list.
Every family stands on one base, :class:`rlconform.envs.whole_run.WholeRunFamily`, which gives
each member its default; the families driven around the reference envs one call at a time use
:class:`rlconform.envs.driver.ReferenceEnvFamily`, which adds the call-by-call driver.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TextIO, runtime_checkable

from rlconform.core.catalog import current

if TYPE_CHECKING:
    from hypothesis.strategies import SearchStrategy

    from rlconform.core.options import FamilyOption
    from rlconform.core.spec import Spec
    from rlconform.core.system import Probed, System


@dataclass(frozen=True)
class FactoryShape:
    """What a family's factories are annotated with, declared on the family (``factory_shape``,
    beside ``factory_argument``, the name of the parameter it passes them): read off a user's
    factory before anything of it runs, they say which ``--api`` it was written for
    (:func:`api_it_fits`). Classes are ``module.QualName`` and their subclasses count."""

    #: the library base classes of what the family's factories return (a return annotation)
    returns: tuple[str, ...] = ()
    #: further class names a return annotation written as a string may use (``-> "PPO"``)
    return_names: tuple[str, ...] = ()
    #: the classes of what the family passes its factories (their parameter's annotation)
    takes: tuple[str, ...] = ()
    #: suggested to a factory that fits it by its calling convention alone; False for a family
    #: whose factories look like another's (a replay buffer's ``make()`` is an env factory's
    #: signature too: only a factory annotated as returning a buffer is told that --api)
    suggested_unannotated: bool = True


#: how a run's ``build_error`` says that the library under the system refused rlconform's input for
#: its case (at build, in ``learn``, ``sample`` or ``step``), as opposed to failing to build it
REFUSED = "refused by the library: "


def refused(reason: str) -> str:
    """The ``build_error`` of a run whose case the library refused (``reason``: one line, the
    library's own words and where it said them). The search leaves the case out and counts it
    apart from the examples that were not built ("3 of the 47 examples were refused by the
    library, so left out (first: ...)"), checks the rest, and never makes the refusal a verdict on the system: a library
    that refuses rlconform's inputs is a named refusal, never a FAIL of the user's code.

    A family decides what a refusal is, by a rule it states (where the exception was raised, and
    whether anything had been used yet): a crash of the system's own code stays a failure."""
    return REFUSED + " ".join(reason.split())


def is_refusal(build_error: str | None) -> bool:
    """Whether ``build_error`` is a refusal (:func:`refused`), not an error building the system."""
    return build_error is not None and build_error.startswith(REFUSED)


@runtime_checkable
class RunRecord(Protocol):
    """What the core reads of any family's run of one case (the specs read the rest)."""

    system: System
    #: why the system could not be built for the case (None: it was built), or the library's
    #: refusal of the case's input (:func:`refused`): either way the case is left out, and counted
    build_error: str | None

    @property
    def usable(self) -> bool:
        """Whether the case ran far enough for the specs to read it (the system was built and
        the ground truth could be read): a spec's ``needs="usable"`` gate asks it."""
        ...

    @property
    def semantics(self) -> Mapping[str, Any]:
        """What the built stack declared about itself (``Spec.applies_to_stack`` reads it); empty
        where the family reads none."""
        ...

    def hang(self) -> str | None:
        """Which call of the run did not answer within its deadline, in words (None: every call
        answered, or the family sets no deadline); rlconform.core.hangs reads it."""
        ...

    @property
    def call_deadline(self) -> float:
        """Seconds one call of the run was allowed (0: none was set): what a hang counts against
        its system's hang budget (rlconform.core.hangs)."""
        ...


@runtime_checkable
class Family(Protocol):
    """One API family, as the core drives it."""

    #: the family's name, as in ``Spec.families`` and ``System.family``
    name: str
    #: the name users give ``--api`` to check their own factory with it (None: no user API)
    api: str | None
    #: the signature a user's factory must have (shown by ``check --help`` and in errors)
    factory_signature: str
    #: loggers of the library that log a line per object it builds; quieted while driving it
    quiet_loggers: tuple[str, ...]
    #: the options a user's factory is built with, declared once (rlconform.core.options) and
    #: rendered by every front end: ``--single-env`` for ``rlconform check``,
    #: ``--rlconform-single-env`` for the plugin, ``options={"single_env": ...}`` for
    #: ``parametrize_with_checks``; their values are passed to :meth:`user_system` by name
    options: tuple[FamilyOption, ...]
    #: the distributions (as pip names them) whose versions matter to a check of this family: the
    #: header of ``rlconform check`` names these (beside numpy, Hypothesis and pytest), no others
    libraries: tuple[str, ...]
    #: the family's systems run on a torch device: the header says which accelerator there is
    uses_accelerator: bool
    #: the parameter name of what a user's factory is given (``env_fns``, ``env``, ``num_envs``):
    #: a factory whose signature names another family's says which ``--api`` it fits
    factory_argument: str
    #: what the family's factories are annotated with (rlconform.core.user.api_it_fits)
    factory_shape: FactoryShape
    #: what the family documents about its outputs (``rlconform.envs.driver.Contract``), which the
    #: cross-family specs read instead of its name; None where no cross-family spec reads its runs
    contract: Any

    def run_case(self, system: System, case: Any, *, with_model: bool) -> RunRecord:
        """Build ``system``, run ``case`` on it, close it, and return what the specs read."""
        ...

    def cases(self, system: System, scenario: str) -> SearchStrategy[Any]:
        """The strategy of cases a search draws for ``system`` (``scenario``: the spec's)."""
        ...

    def end_search(self, system: System) -> None:
        """A search of ``system`` ended (passed, failed or raised): close what the family kept
        built across its examples (env-author mode's stack pool); nothing for most families."""
        ...

    def boundary_cases(self, system: System, scenario: str) -> list[Any]:
        """The cases every search tries before it draws any, under every profile (none for a
        family without edge cases of its own)."""
        ...

    def reproducer(self, system: System, spec: Spec, case: Any, run: Any) -> str:
        """A standalone script that replays ``case`` and prints ``spec``'s violations."""
        ...

    def print_run(self, run: Any, case: Any, stream: TextIO) -> None:
        """What ``run`` did, for a person reading a replay."""
        ...

    def check_factory(self, signature: inspect.Signature) -> None:
        """Raise TypeError when a user's factory with ``signature`` cannot be called as the family
        calls it."""
        ...

    def library_systems(self, run: Any) -> list[str]:
        """The bundled systems that are the library part of the stack a user's ``run`` built (the
        vectorizer or wrapper under the user's own code), which a failure of the user's may be
        inherited from (rlconform.core.inherited); empty for a family of the user's own objects."""
        ...

    def findings_row(self, system_id: str, spec_id: str) -> str | None:
        """The FINDINGS.md row of the library defect bundled ``system_id`` shows on ``spec_id``."""
        ...

    def built_from_library_classes(self, run: Any) -> bool:
        """Whether the user's object of ``run`` is made of the library's own classes only (no
        subclass or layer of the user's): built like the :meth:`library_systems`, with other
        settings, so a failure of a spec on which those show a FINDINGS defect is that defect
        even where the replay on the bundled system (other settings) does not show it."""
        ...

    def claims(self, obj: Any) -> bool:
        """Whether ``obj`` is, by the library's own base class, the kind of object this family's
        factories return: a product another family claims and this one does not is a factory
        given the wrong ``--api`` (rlconform.core.user.spawns_workers)."""
        ...

    def user_system(self, fn: Callable[..., Any], reference: str, **options: Any) -> System:
        """A user's factory ``fn`` (named ``reference``) as a system of this family."""
        ...

    def companions(self, system: System) -> list[System]:
        """Systems checked beside a user's ``system`` (a reference of the same kind, say)."""
        ...

    def probe_factory(self, system: System) -> Probed:
        """Build a user's system (in an isolated process): whether building it starts worker
        processes, the capabilities its cases are drawn with and, where the family reads them,
        the stack's semantics. Raises ``BadInput``."""
        ...


@dataclass(frozen=True)
class ModelMatch:
    """The reference system that models a built object's stack, or why none does.

    A user's factory names no model, so the stack it actually built is read layer by layer: a
    model describes an object only when every layer is one the model implements, with the
    parameters the model assumes. Anything else gets no model (``model.outputs_match`` is then
    not applicable, with ``reason``): comparing a stack with the model of another one blames
    correct code for the difference between the two.

    ``time_limit`` is a time limit the stack itself adds around every sub-env (a user's
    ``TimeLimit(env, N)`` in each env thunk): the model applies it too, the tighter of it and the
    script's own limit truncating, so that the model is of the stack the user built.

    ``parameters`` are the wrapper's own settings (``n_stack``, ``gamma``, ``training``, the
    statistics a normaliser holds when built, ...), passed to the model's build as keywords: a
    stack matches its model whatever it was configured with, and is compared with the model of
    exactly that configuration. Empty: the model's defaults, which are the bundled stacks'."""

    model_id: str | None
    reason: str = ""
    time_limit: int | None = None
    parameters: Mapping[str, Any] = field(default_factory=dict, hash=False)


def is_instance_of(obj: Any, class_paths: tuple[str, ...]) -> bool:
    """Whether a class in ``obj``'s MRO is one of ``class_paths`` (``module.QualName``), read from
    the class names alone: nothing is imported to ask."""
    return any(f"{cls.__module__}.{cls.__qualname__}" in class_paths for cls in type(obj).__mro__)


def layer_chain(obj: Any, attribute: str) -> list[Any]:
    """A stack of wrappers from the outside in, following ``attribute`` (``env``, ``venv``)."""
    chain = [obj]
    while len(chain) < 32:
        inner = getattr(chain[-1], attribute, None)
        if inner is None or inner is chain[-1]:
            break
        chain.append(inner)
    return chain


def find_layer(obj: Any, class_name: str, attribute: str) -> Any | None:
    """The layer of the stack whose class (or a base class) is ``class_name`` or the reference
    model of it (``Model<class_name>``); subclasses of either count."""
    wanted = {class_name, f"Model{class_name}"}
    for layer in layer_chain(obj, attribute):
        if any(cls.__name__ in wanted for cls in type(layer).__mro__):
            return layer
    return None


def get_family(name: str) -> Family:
    """The family ``name`` of the catalog in use."""
    return current().family(name)


def family_names() -> list[str]:
    return sorted(current().families())
