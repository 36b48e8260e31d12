"""Loading a user's system from ``MODULE:CALLABLE`` for ``rlconform check`` and the plugin.

Every way this can go wrong is a :class:`BadInput` whose first line says why: the module cannot be
imported, the callable does not exist or is not callable, its signature does not fit the family,
it raises while being built (then the last frames of its own traceback follow, indented), it
returns something that is not a system of that family, or it ignores the envs it is given. A build
that is merely slow is not among them: a probe past its limit (sized from the probes measured in
this run and the machine's load, :func:`probe_limit`) leaves the system unprobed and every check of
it says it was not exercised, and why.

The family decides what its factories look like (:class:`~rlconform.core.family.Family`: ``api``,
``factory_signature``, ``check_factory``, ``user_system``, ``probe_factory``); nothing here names
one.
"""

from __future__ import annotations

import importlib
import inspect
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from traceback import FrameSummary
from typing import TYPE_CHECKING, Any

from rlconform.core.catalog import current
from rlconform.core.family import FactoryShape, get_family
from rlconform.core.intents import UnknownIntent, parse_intents
from rlconform.core.isolation import HUNG_PAST_DEADLINE, run_isolated
from rlconform.core.options import OptionError, mapping_options
from rlconform.core.system import System
from rlconform.core.watchdog import CallTimeout, call_timeout, child_processes, close_timeout, deadline, reap

if TYPE_CHECKING:
    from rlconform.core.family import Family


class BadInput(Exception):
    """The user's input cannot be used; the message's first line says why on its own (a factory's
    traceback may follow on indented lines)."""


def user_apis() -> dict[str, Family]:
    """``--api`` name -> the family that checks a user's factory of that API."""
    return {family.api: family for family in current().families().values() if family.api is not None}


def factory_signatures() -> dict[str, str]:
    """``--api`` name -> the factory signature it expects (for ``check --help`` and errors)."""
    return {api: family.factory_signature for api, family in sorted(user_apis().items())}


def load_callable(reference: str) -> Callable[..., Any]:
    if ":" not in reference:
        raise BadInput(f"expected MODULE:CALLABLE, got {reference!r}")
    module_name, _, attr_path = reference.partition(":")
    if not module_name or not attr_path:
        raise BadInput(f"expected MODULE:CALLABLE, got {reference!r}")
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and (module_name == exc.name or module_name.startswith(exc.name + ".")):
            raise BadInput(f"module {module_name!r} not found{_module_did_you_mean(module_name, cwd)}") from None
        raise BadInput(f"importing {module_name!r} failed: {exc}") from None
    except Exception as exc:
        raise BadInput(f"importing {module_name!r} raised {type(exc).__name__}: {exc}") from None
    target: Any = module
    for part in attr_path.split("."):
        if not hasattr(target, part):
            names = [n for n in dir(target) if not n.startswith("_") and callable(getattr(target, n, None))]
            raise BadInput(f"module {module_name!r} has no attribute {attr_path!r}{did_you_mean(part, names)}")
        target = getattr(target, part)
    if not callable(target):
        raise BadInput(f"{reference} is a {type(target).__name__}, not a callable")
    return target  # type: ignore[no-any-return]


def _module_did_you_mean(module_name: str, cwd: str) -> str:
    """The importable modules closest to a mistyped module name: the package's own for a dotted
    name, else those in the working directory (then the installed top-level ones)."""
    import pkgutil

    parent = module_name.rpartition(".")[0]
    if parent:
        try:
            package = importlib.import_module(parent)
        except Exception:
            return ""
        names = [f"{parent}.{m.name}" for m in pkgutil.iter_modules(getattr(package, "__path__", []))]
        return did_you_mean(module_name, names)
    names = [m.name for m in pkgutil.iter_modules([cwd])] or [m.name for m in pkgutil.iter_modules()]
    return did_you_mean(module_name, names)


def family_for(api: str) -> Family:
    """The family checking factories of ``--api api``; an unknown name is bad input."""
    apis = user_apis()
    if api not in apis:
        raise BadInput(f"unknown API family {api!r}{did_you_mean(api, sorted(apis))}; known: {', '.join(sorted(apis))}")
    return apis[api]


def check_signature(fn: Callable[..., Any], family: Family, reference: str) -> None:
    """Refuse a factory whose signature says it is not one of ``family``'s: bad input naming the
    ``--api`` it fits (:func:`api_it_fits`), before anything of the factory runs."""
    misfit = api_it_fits(fn, family)
    if misfit is not None:
        raise BadInput(misfit.refusal(reference, family))


# -------------------------------------------------------------------- the --api a factory fits


@dataclass(frozen=True)
class Misfit:
    """A factory given the wrong ``--api``: the ``--api``(s) it fits (none: no family can call it)
    and what showed it."""

    #: the fitting families, by ``--api`` name
    apis: tuple[str, ...]
    #: ``signature`` (the asked family cannot call it), ``annotation``, ``name`` (its parameter's)
    #: or ``product`` (what it returned)
    evidence: str
    #: what the evidence was, as the refusal says it: "takes num_envs", "returned a ..."
    detail: str = ""
    #: the signature, for a refusal by signature
    signature: inspect.Signature | None = None

    def refusal(self, reference: str, asked: Family, expected: str | None = None) -> str:
        """The one-line refusal: what showed the factory is not ``asked``'s, the ``--api`` it fits
        and that API's factory signature."""
        fits = " or ".join(f"--api {api}" for api in self.apis)
        suggestion = ""
        if self.apis:
            factories = "; ".join(f"--api {api}: {user_apis()[api].factory_signature}" for api in self.apis)
            suggestion = f"; did you mean {fits}? (factories: {factories})"
        if self.evidence == "signature":
            return f"{reference} has signature {self.signature}; family {asked.api} expects {asked.factory_signature}{suggestion}"
        what = "passes" if self.detail.startswith("takes") else "checks"
        return (
            f"{reference} {self.detail}, which is what {fits} {what}, not --api {asked.api} "
            f"(which expects {expected or asked.factory_signature}){suggestion}"
        )


#: ``product`` of :func:`api_it_fits` before the factory was built
NOT_BUILT: Any = object()

#: the factories given to :func:`factory_system`, by reference: their signatures decide between the
#: families that claim what one returned (the probe runs in a fork, which inherits this)
_FACTORIES: dict[str, Callable[..., Any]] = {}


def api_it_fits(factory: Callable[..., Any] | None, asked: Family, *, product: Any = NOT_BUILT) -> Misfit | None:
    """The ``--api`` a factory given as ``--api asked.api`` fits instead, or None when it may be
    ``asked``'s: the one decision behind every refusal of a wrong ``--api``.

    Before the factory is built (``product`` left out) it is read, never called: the families
    that can call it (``check_factory``), narrowed to those its annotations name (its return
    annotation, else the annotations of its required parameters, against each family's
    ``factory_shape``), then to those whose ``factory_argument`` is one of its parameter names.
    A narrowing that would leave no family is skipped, so a factory with ``**kwargs``, no
    annotations or parameter names of its own is never refused by them. It fits ``asked`` when
    ``asked`` survives.

    Given what the factory returned, it fits another family when that family claims the object
    by its library's base class (``claims``) and ``asked`` does not; the claimants are narrowed
    by the same signature evidence."""
    families = sorted(user_apis().values(), key=lambda family: str(family.api))
    facts = _FactoryFacts.of(factory)
    if product is not NOT_BUILT:
        if asked.claims(product):
            return None
        claimants = [family for family in families if family is not asked and family.claims(product)]
        if not claimants:
            return None
        fits, _ = facts.narrow(claimants, (facts.calls, facts.annotated, facts.named))
        kind = type(product)
        return Misfit(_apis(fits), "product", f"returned a {kind.__module__}.{kind.__qualname__}")
    callers = [family for family in families if facts.calls(family)]
    fits, excluded_by = facts.narrow(callers, (facts.annotated, facts.named), keep=asked)
    if asked in fits:
        return None
    suggested = [f for f in fits if f is not asked and (_shape(f).suggested_unannotated or facts.annotated(f))]
    if asked not in callers:
        return Misfit(_apis(suggested), "signature", signature=facts.signature)
    if excluded_by == 0:
        return Misfit(_apis(suggested), "annotation", facts.annotation_detail(fits))
    return Misfit(_apis(suggested), "name", facts.name_detail(fits))


def _apis(families: Sequence[Family]) -> tuple[str, ...]:
    return tuple(sorted(str(family.api) for family in families))


def _shape(family: Family) -> FactoryShape:
    return family.factory_shape


@dataclass(frozen=True)
class _Annotation:
    """One annotation of a factory, as the classes it names: a class (resolved, strings included,
    in the factory's module) by its MRO, or, where it cannot be resolved without running anything
    (a name imported under ``TYPE_CHECKING``), by its dotted name."""

    text: str
    #: ``module.QualName`` of the class and its bases, where it resolved to a class
    mro: frozenset[str] = frozenset()
    #: the dotted name's last part and first part, where it did not
    name: str | None = None
    root: str | None = None

    def names(self, classes: tuple[str, ...], extra: tuple[str, ...] = ()) -> bool:
        """Whether this annotation names one of ``classes`` (or a class named one of ``extra``)."""
        if self.name is None:
            return bool(self.mro & set(classes))
        if self.name not in {path.rsplit(".", 1)[-1] for path in classes} | set(extra):
            return False
        roots = {path.split(".", 1)[0] for path in classes}
        return self.root is None or not roots or self.root in roots

    @staticmethod
    def of(annotation: Any, namespace: dict[str, Any]) -> _Annotation | None:
        import builtins
        import re

        if annotation is inspect.Parameter.empty:
            return None
        text = annotation if isinstance(annotation, str) else getattr(annotation, "__qualname__", str(annotation))
        if isinstance(annotation, str):
            if not re.fullmatch(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*", annotation.strip()):
                return None  # a generic (list[Callable[[], Env]]): it names what it holds, not what it is
            parts = annotation.strip().split(".")
            annotation = namespace.get(parts[0], getattr(builtins, parts[0], None))
            for part in parts[1:]:
                if not (inspect.ismodule(annotation) or inspect.isclass(annotation)):
                    break
                annotation = getattr(annotation, part, None)
            else:
                if annotation is not None and not inspect.isclass(annotation):
                    return None  # an alias (EnvFns = Sequence[...]), a module: no class
            if not inspect.isclass(annotation):
                root = namespace.get(parts[0])
                first = root.__name__.split(".")[0] if inspect.ismodule(root) else parts[0]
                return _Annotation(text, name=parts[-1], root=first if len(parts) > 1 else None)
        if not inspect.isclass(annotation) or annotation.__module__ == "builtins":
            return None  # int, str, a typing construct: they name no family's object
        return _Annotation(text, mro=frozenset(f"{c.__module__}.{c.__qualname__}" for c in annotation.__mro__))


@dataclass(frozen=True)
class _FactoryFacts:
    """What a factory's signature says, read without calling it."""

    signature: inspect.Signature | None
    #: its return annotation (a class given as the factory: the class itself)
    returns: _Annotation | None
    #: the annotations of its required parameters, by name
    takes: dict[str, _Annotation]

    @staticmethod
    def of(factory: Callable[..., Any] | None) -> _FactoryFacts:
        if factory is None:
            return _FactoryFacts(None, None, {})
        try:
            signature = inspect.signature(factory)
        except (TypeError, ValueError):
            return _FactoryFacts(None, None, {})  # builtins and some C callables: let the call decide
        module = sys.modules.get(getattr(factory, "__module__", None) or "")
        namespace = getattr(inspect.unwrap(factory), "__globals__", None) or (vars(module) if module else {})
        returns = (
            _Annotation(
                factory.__qualname__, mro=frozenset(f"{c.__module__}.{c.__qualname__}" for c in factory.__mro__)
            )
            if inspect.isclass(factory)
            else _Annotation.of(signature.return_annotation, namespace)
        )
        takes = {
            name: found
            for name, parameter in signature.parameters.items()
            if parameter.default is inspect.Parameter.empty
            and parameter.kind not in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
            and (found := _Annotation.of(parameter.annotation, namespace)) is not None
        }
        return _FactoryFacts(signature, returns, takes)

    def calls(self, family: Family) -> bool:
        """Whether ``family`` can call the factory as it calls its factories."""
        if self.signature is None:
            return True
        try:
            family.check_factory(self.signature)
        except TypeError:
            return False
        return True

    def annotated(self, family: Family) -> bool:
        """Whether the factory's annotations name ``family``'s objects: its return annotation, or,
        where that names no family's, the annotation of a parameter."""
        shape = _shape(family)
        if self.returns is not None and self._return_names_any():
            return self.returns.names(shape.returns, shape.return_names)
        return any(found.names(shape.takes) for found in self.takes.values())

    def _return_names_any(self) -> bool:
        assert self.returns is not None
        return any(self.returns.names(_shape(f).returns, _shape(f).return_names) for f in user_apis().values())

    def named(self, family: Family) -> bool:
        """Whether one of the factory's parameters is named as ``family`` names what it passes."""
        return (
            self.signature is not None
            and bool(family.factory_argument)
            and family.factory_argument in self.signature.parameters
        )

    def narrow(
        self,
        families: list[Family],
        evidence: Sequence[Callable[[Family], bool]],
        keep: Family | None = None,
    ) -> tuple[list[Family], int | None]:
        """``families`` narrowed by each piece of ``evidence`` in turn (one that would leave none is
        skipped), and the index of the piece that dropped ``keep`` (None: it was not dropped)."""
        dropped = None
        for index, holds in enumerate(evidence):
            narrowed = [family for family in families if holds(family)]
            if narrowed:
                if keep in families and keep not in narrowed and dropped is None:
                    dropped = index
                families = narrowed
        return families, dropped

    def annotation_detail(self, fits: Sequence[Family]) -> str:
        if self.returns is not None and self._return_names_any():
            return f"is annotated to return {self.returns.text}"
        for name, found in self.takes.items():
            if any(found.names(_shape(f).takes) for f in fits):
                return f"takes {name}: {found.text}"
        return "is annotated"

    def name_detail(self, fits: Sequence[Family]) -> str:
        names = [f.factory_argument for f in fits if f.factory_argument]
        return f"takes {names[0]}" if names else "takes its arguments"


def did_you_mean(word: str, candidates: Sequence[str]) -> str:
    """The suffix ``(did you mean 'x'?)`` naming the candidate closest to a mistyped ``word``, or
    nothing when none is close."""
    import difflib

    close = difflib.get_close_matches(word, list(candidates), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def user_system(reference: str, api: str, **options: Any) -> System:
    """The user's factory, named ``MODULE:CALLABLE``, as a system of the family of ``--api api``
    (``options``: that family's own, e.g. ``num_envs`` and ``device`` for ``--api isaaclab``)."""
    family_for(api)
    fn = load_callable(reference)
    return factory_system(fn, api, reference, **options)


def with_intents(system: System, intended: Sequence[str] | str | None) -> System:
    """``system`` with the value changes its user declared on purpose (rlconform.core.intents); an
    unknown intent is bad input."""
    import dataclasses

    try:
        intents = parse_intents(intended)
    except UnknownIntent as exc:
        raise BadInput(str(exc)) from None
    return dataclasses.replace(system, intended=intents) if intents else system


def reference_of(fn: Callable[..., Any]) -> str:
    """``MODULE:QUALNAME`` of a factory, the name its system and reproducers carry."""
    module = getattr(fn, "__module__", None) or "__main__"
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or type(fn).__name__
    return f"{module}:{name}"


def factory_system(fn: Callable[..., Any], api: str, reference: str | None = None, **options: Any) -> System:
    """A factory object as a system of the family of ``--api api`` (``reference`` names it;
    default: its qualname)."""
    family = family_for(api)
    reference = reference or reference_of(fn)
    if not callable(fn):
        raise BadInput(f"{reference} is a {type(fn).__name__}, not a callable")
    check_signature(fn, family, reference)
    _FACTORIES[reference] = fn
    try:
        declared = mapping_options(family, options)
    except OptionError as exc:
        raise BadInput(str(exc)) from None
    return family.user_system(fn, reference, **declared)


def _build(system: System, build: Callable[[], Any]) -> Any:
    """Build once for the probe; a factory that raises is bad input too, with its traceback."""
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return build()
    except Exception as exc:
        raise BadInput(factory_error(f"building {system.source} as {system.family}", exc)) from None


def probe(system: System, *, limit: float | None = None) -> System:
    """Build the user's system, check that it is an object of its family, and return the system
    with what the build showed: its cost (whether building it started worker processes), the
    capabilities its cases are drawn with and its stack's semantics.

    The build runs in a forked process of its own process group where the platform allows: a
    factory that crashes its process is bad input, not the end of rlconform, and whatever it
    starts (worker processes, servers) is killed with the group.

    A probe that outlasts its limit (:func:`probe_limit`; ``limit`` replaces :data:`PROBE_SECONDS`
    as its base) is not the user's error: the system is returned unprobed, every check of it
    reported as not exercised, saying how long the probe ran, the limit and the machine's load
    (:func:`slow_build_reason`)."""
    import dataclasses
    import functools
    import time

    if system.costly is not None:
        return system
    allowed, rule = probe_limit(PROBE_SECONDS if limit is None else limit)
    started = time.perf_counter()
    outcome = run_isolated(_probe_in_process, system, timeout=allowed)
    elapsed = time.perf_counter() - started
    if outcome.failure is not None and outcome.failure.startswith(_OVERRAN):
        reason = slow_build_reason(system, elapsed, allowed, rule)
        return dataclasses.replace(system, costly=True, availability=functools.partial(_not_exercised, reason))
    if outcome.failure is not None and HUNG_PAST_DEADLINE in outcome.failure:
        # a call the deadline could not interrupt (native code that blocks SIGALRM): the system is
        # built and drives as far as its first hang, which lifecycle.responsive reports; its
        # kinds stay unprobed
        return dataclasses.replace(system, costly=True)
    if outcome.failure is not None:
        raise BadInput(f"building {system.source} as {system.family}: {outcome.failure}")
    kind, value = outcome.value
    if kind == "bad":
        raise BadInput(value)
    _PROBES_MEASURED.append(elapsed)
    return dataclasses.replace(
        system,
        costly=value.spawned,
        capabilities=value.capabilities,
        stack_semantics=value.stack_semantics,
        apart=value.apart,
    )


#: the base of the probe's limit (one build per candidate env kind, see rlconform.envs.factory_probe):
#: what a probe may take on an idle machine when no probe of this run has been measured yet
PROBE_SECONDS = 240.0
#: a probe may take this many times the longest probe already measured in this run
PROBE_MARGIN = 4.0
#: seconds each probe that finished in this process took (the builds measured in this run)
_PROBES_MEASURED: list[float] = []
#: how :class:`~rlconform.core.isolation.IsolatedCall` says it killed a call past its timeout
_OVERRAN = "did not finish within"


def usable_cpus() -> int:
    """The CPUs this process may use (its affinity where the platform says, else the machine's)."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(cpus, 1)


def machine_load() -> tuple[float, int]:
    """The 1-minute load average and the CPUs this process may use (load 0.0 where unknown)."""
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):
        load = 0.0
    return load, usable_cpus()


def probe_limit(base: float = PROBE_SECONDS) -> tuple[float, str]:
    """The probe's limit in this run, and the rule that gave it.

    The rule: the larger of ``base`` and :data:`PROBE_MARGIN` times the longest probe already
    measured in this run (a session that probed a slow factory once gives the next as long), then
    stretched by the machine's load: times ``load / CPUs`` where the 1-minute load average exceeds
    the CPUs this process may use (a build on a machine busy twice over takes about twice as long).
    """
    limit = base
    rule = f"base {_secs(base)} s"
    if _PROBES_MEASURED:
        longest = max(_PROBES_MEASURED)
        if PROBE_MARGIN * longest > limit:
            limit = PROBE_MARGIN * longest
            rule = f"{PROBE_MARGIN:g} x the longest probe measured in this run ({longest:.1f} s)"
    load, cpus = machine_load()
    if load > cpus:
        limit *= load / cpus
        rule += f", x {load / cpus:.2f} for the load"
    return limit, rule


def slow_build_reason(system: System, elapsed: float, limit: float, rule: str) -> str:
    """Why a system whose probe outlasted its limit was not exercised: a slow build is not a defect."""
    load, cpus = machine_load()
    measured = (
        f"{len(_PROBES_MEASURED)} other probe(s) measured in this run, the longest {max(_PROBES_MEASURED):.1f} s"
        if _PROBES_MEASURED
        else "no other probe measured in this run"
    )
    return (
        f"not exercised: building {system.source} as {system.family} (the probe's builds) was still running after "
        f"{_secs(elapsed)} s, past the limit of {_secs(limit)} s ({rule}; {measured}), and was stopped; load average "
        f"{load:.2f} on {cpus} CPU(s). A slow build is not a defect of the system: check it on a less busy "
        "machine or with a cheaper factory"
    )


def _not_exercised(reason: str) -> str:
    return reason


def _secs(seconds: float) -> str:
    return f"{seconds:.0f}" if seconds >= 10 else f"{seconds:.1f}"


def _probe_in_process(system: System) -> tuple[str, Any]:
    try:
        return "ok", get_family(system.family).probe_factory(system)
    except BadInput as exc:
        return "bad", str(exc)


def spawns_workers(
    system: System,
    build: Callable[[], Any],
    required: Sequence[str],
    expected: str,
    close: Callable[[Any], None] | None = None,
) -> bool:
    """Build the user's system once with ``build``, check it has the ``required`` attributes of
    ``expected`` (what the factory should return), close it, and say whether it started worker
    processes. A factory that raises is bad input, with its traceback."""
    before = child_processes()
    obj = _build(system, build)
    try:
        # what it returned decides where its signature did not (rlconform.core.user.api_it_fits)
        own = get_family(system.family)
        misfit = api_it_fits(_FACTORIES.get(system.source), own, product=obj)
        if misfit is not None:
            raise BadInput(misfit.refusal(system.source, own, expected))
        missing = [name for name in required if not hasattr(obj, name)]
        if missing:
            raise BadInput(
                f"{system.source} returned a {type(obj).__name__} without {', '.join(missing)}; expected {expected}"
            )
        spawned = bool(child_processes() - before)
    finally:
        if close is not None:
            close(obj)
        else:
            method = getattr(obj, "close", None)
            if callable(method):
                close_within_limit(method)
        reap(before)
    return spawned


def returned_type(signature: str) -> str:
    """What a factory signature says the factory returns."""
    return signature.split("-> ")[-1]


def factory_error(what: str, exc: BaseException) -> str:
    """A bad-input message for a factory that raised: one self-contained first line (the
    exception, where it was raised and the factory's own line that led there), then the last
    frames of the traceback, indented under it, as pytest shows them."""
    import traceback

    message = str(exc).splitlines()[0] if str(exc) else "(no message)"
    if getattr(exc, "explains_itself", False):
        return f"{what} raised {type(exc).__name__}: {message}"
    frames = traceback.extract_tb(exc.__traceback__)
    ours = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the rlconform package
    outside = [f for f in frames if not os.path.abspath(f.filename).startswith(ours + os.sep)]
    where = ""
    if outside:
        innermost = outside[-1]
        where = f" at {_location(innermost)}"
        if innermost.line:
            where += f" ({innermost.line.strip()})"
        if outside[0] is not innermost:
            where += f", called from {_location(outside[0])}"
    # rlconform's own frames (the probe calling the factory) say nothing about the factory
    shown = traceback.format_list(outside[-TRACEBACK_FRAMES:]) + traceback.format_exception_only(type(exc), exc)
    indented = "\n".join("    " + line for line in "".join(shown).rstrip("\n").splitlines())
    return f"{what} raised {type(exc).__name__}: {message}{where}\n{indented}"


#: frames of a factory's traceback shown under the bad-input line
TRACEBACK_FRAMES = 8


def _location(frame: FrameSummary) -> str:
    return f"{frame.filename}:{frame.lineno} in {frame.name}"


def close_within_limit(close: Callable[[], Any]) -> None:
    """Close the probe's build under close()'s own limit (or until it is seen deadlocked): a
    close() that never returns is the system's defect, which lifecycle.responsive reports, not a
    reason to refuse the factory."""
    import contextlib

    with contextlib.suppress(CallTimeout), deadline(close_timeout(call_timeout()), watch_deadlock=True):
        close()
