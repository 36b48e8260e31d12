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
from traceback import FrameSummary
from typing import TYPE_CHECKING, Any

from rlconform.core.catalog import current
from rlconform.core.family import get_family
from rlconform.core.intents import UnknownIntent, parse_intents
from rlconform.core.isolation import HUNG_PAST_DEADLINE, run_isolated
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
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return  # builtins and some C callables have no signature: let the call decide
    try:
        family.check_factory(signature)
    except TypeError:
        raise BadInput(
            f"{reference} has signature {signature}; family {family.api} expects {family.factory_signature}"
            + _signature_fits(signature, family)
        ) from None


def _signature_fits(signature: inspect.Signature, family: Family) -> str:
    """The suffix ``; did you mean --api X?`` when another family's factories have ``signature``."""
    fits: list[Family] = []
    for other in user_apis().values():
        if other is family:
            continue
        try:
            other.check_factory(signature)
        except TypeError:
            continue
        fits.append(other)
    # a factory of no arguments fits several families (an env's, a replay buffer's): the families
    # whose returned type the factory's return annotation names are meant; without such a name, a
    # family flagged suggested_when_annotated (the replay buffer's) is not suggested
    annotation = "" if signature.return_annotation is inspect.Signature.empty else str(signature.return_annotation)
    annotated = [f for f in fits if returned_type(f.factory_signature).rsplit(".", 1)[-1] in annotation]
    fits = annotated or [f for f in fits if not getattr(f, "suggested_when_annotated", False)]
    # a parameter named as a family names its factory's argument (env_fns, env_fn, env, num_envs)
    # says which of the families that could call it is meant
    named = [f for f in fits if f.factory_argument in signature.parameters]
    chosen = sorted(f"--api {f.api}" for f in (named or fits))
    return f"; did you mean {' or '.join(chosen)}?" if chosen else ""


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
    return family.user_system(fn, reference, **options)


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
        system, costly=value.spawned, capabilities=value.capabilities, stack_semantics=value.stack_semantics
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


def machine_load() -> tuple[float, int]:
    """The 1-minute load average and the CPUs this process may use (load 0.0 where unknown)."""
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):
        load = 0.0
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return load, max(cpus, 1)


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
        wrong_api = _fits_another_api(system, obj, expected)
        if wrong_api is not None:
            raise BadInput(wrong_api)
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


def _fits_another_api(system: System, obj: Any, expected: str) -> str | None:
    """Why ``obj`` is the product of a factory given the wrong ``--api``: another family claims
    it by its library's base class (an SB3 VecEnv checked as ``gymnasium.vector``, a ready-made
    vector env checked as one ``gymnasium.Env``) and the system's own family does not."""
    own = get_family(system.family)
    if own.claims(obj):
        return None
    others = sorted(
        (family for family in user_apis().values() if family is not own and family.claims(obj)),
        key=lambda family: str(family.api),
    )
    if not others:
        return None
    apis = " or ".join(f"--api {other.api}" for other in others)
    factories = "; ".join(f"--api {other.api}: {other.factory_signature}" for other in others)
    return (
        f"{system.source} returned a {type(obj).__module__}.{type(obj).__qualname__}, "
        f"which is what {apis} checks, not --api {own.api} (expected {expected}); "
        f"did you mean {apis}? (factories: {factories})"
    )


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
