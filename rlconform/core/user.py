"""Loading a user's system from ``MODULE:CALLABLE`` for ``rlconform check`` and the plugin.

Every way this can go wrong is a :class:`BadInput` whose first line says why: the module cannot be
imported, the callable does not exist or is not callable, its signature does not fit the family,
it raises while being built (then the last frames of its own traceback follow, indented), it
returns something that is not a system of that family, or it ignores the envs it is given.
"""

from __future__ import annotations

import importlib
import inspect
import os
import sys
from collections.abc import Callable, Sequence
from traceback import FrameSummary
from typing import Any

from rlconform.core.system import Capabilities, EnvFn, System
from rlconform.envs.script import EnvScript

#: family -> the factory signature it expects
FACTORY_SIGNATURES = {
    "gymnasium.Env": "() -> gymnasium.Env",
    "gymnasium.vector": "(env_fns: list[Callable[[], gymnasium.Env]], **kwargs) -> gymnasium.vector.VectorEnv",
    "sb3.VecEnv": "(env_fns: list[Callable[[], gymnasium.Env]]) -> stable_baselines3 VecEnv",
    # env_fn's k-th call builds sub-env k; the returned env's batch size is the number of
    # sub-envs (rlconform.libraries.torchrl.env_family.SubEnvFactory)
    "torchrl.EnvBase": "(env_fn: Callable[[], gymnasium.Env]) -> EnvBase",
    # rlconform.libraries.isaaclab.user: checked vectorized in torch (family isaaclab.torch)
    "isaaclab": "(num_envs: int, device: str) -> env following DirectRLEnv's step/reset contract",
}
ISAACLAB_API = "isaaclab"
TORCHRL_FAMILY = "torchrl.EnvBase"

#: the internal family that checks a user's own env (its observations are not decodable)
USER_ENV_FAMILY = "user.env"


class BadInput(Exception):
    """The user's input cannot be used; the message's first line says why on its own (a factory's
    traceback may follow on indented lines)."""


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
            raise BadInput(f"module {module_name!r} not found") from None
        raise BadInput(f"importing {module_name!r} failed: {exc}") from None
    except Exception as exc:
        raise BadInput(f"importing {module_name!r} raised {type(exc).__name__}: {exc}") from None
    target: Any = module
    for part in attr_path.split("."):
        if not hasattr(target, part):
            raise BadInput(f"module {module_name!r} has no attribute {attr_path!r}")
        target = getattr(target, part)
    if not callable(target):
        raise BadInput(f"{reference} is a {type(target).__name__}, not a callable")
    return target  # type: ignore[no-any-return]


def check_family(family: str) -> None:
    if family not in FACTORY_SIGNATURES:
        raise BadInput(f"unknown API family {family!r}; known: {', '.join(sorted(FACTORY_SIGNATURES))}")


def check_signature(fn: Callable[..., Any], family: str, reference: str) -> None:
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return  # builtins and some C callables have no signature: let the call decide
    try:
        if family == "gymnasium.Env":
            signature.bind()
        elif family == TORCHRL_FAMILY:
            signature.bind(lambda: None)
        elif family == ISAACLAB_API:
            signature.bind(1, "cpu")
        else:
            signature.bind([])
    except TypeError:
        raise BadInput(
            f"{reference} has signature {signature}; family {family} expects {FACTORY_SIGNATURES[family]}"
        ) from None


def user_system(reference: str, family: str, **options: Any) -> System:
    """The user's factory, named ``MODULE:CALLABLE``, as a system of ``family`` (``options``:
    ``num_envs`` and ``device`` for ``--api isaaclab``)."""
    check_family(family)
    fn = load_callable(reference)
    return factory_system(fn, family, reference, **options)


def with_intents(system: System, intended: Sequence[str] | str | None) -> System:
    """``system`` with the value changes its user declared on purpose (rlconform.core.intents); an
    unknown intent is bad input."""
    import dataclasses

    from rlconform.core.intents import UnknownIntent, parse_intents

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


def factory_system(fn: Callable[..., Any], family: str, reference: str | None = None, **options: Any) -> System:
    """A factory object as a system of ``family`` (``reference`` names it; default: its qualname)."""
    check_family(family)
    reference = reference or reference_of(fn)
    if not callable(fn):
        raise BadInput(f"{reference} is a {type(fn).__name__}, not a callable")
    check_signature(fn, family, reference)
    if family == ISAACLAB_API:
        from rlconform.libraries.isaaclab.user import torch_system

        return torch_system(fn, reference, num_envs=options.get("num_envs"), device=options.get("device"))
    if family == "gymnasium.Env":
        return System(
            id=f"user:{reference}",
            family=USER_ENV_FAMILY,
            title=f"{reference}() (your env)",
            build=lambda env_fns: fn(),
            source=reference,
            kind="user",
            out_of_process=False,
            capabilities=Capabilities(partial_reset=False, max_envs=3),
            description="a user's own env: checked for what holds for any env, and through every installed stack",
            env_factory=fn,
        )

    if family == TORCHRL_FAMILY:
        return _torchrl_system(fn, reference)

    def build(env_fns: Sequence[EnvFn]) -> Any:
        if family == "sb3.VecEnv":
            from rlconform.libraries.sb3.vecenv_family import preload_forkserver

            # a SubprocVecEnv the factory starts forks its workers from a server that has SB3
            # imported already: the probe's trials and every example build at fork speed
            preload_forkserver()
        return fn(list(env_fns))

    return System(
        id=f"user:{reference}",
        family=family,
        title=f"{reference}(env_fns)",
        build=build,
        source=reference,
        kind="user",
        # the factory may move envs to worker processes: log to files, which work either way
        out_of_process=True,
        capabilities=Capabilities(partial_reset=family == "gymnasium.vector"),
    )


def _torchrl_system(fn: Callable[..., Any], reference: str) -> System:
    """A ``torchrl.EnvBase`` factory: it gets one ``env_fn`` whose k-th call builds sub-env k and
    picks the number of sub-envs itself; one isolated build reads that number off the returned
    env's batch size, and every case is drawn with exactly that many sub-envs."""
    from rlconform.core.isolation import run_isolated
    from rlconform.libraries.torchrl import env_family as torchrl_env

    outcome = run_isolated(_user_num_envs, fn, reference, timeout=120.0)
    if outcome.failure is not None:
        raise BadInput(f"building {reference} as {TORCHRL_FAMILY}: {outcome.failure}")
    kind, value = outcome.value
    if kind == "bad":
        raise BadInput(value)
    num_envs = int(value)

    def build(env_fns: Sequence[EnvFn]) -> Any:
        return torchrl_env.build_user_env(fn, env_fns)

    return System(
        id=f"user:{reference}",
        family=TORCHRL_FAMILY,
        title=f"{reference}(env_fn)",
        build=build,
        source=reference,
        kind="user",
        out_of_process=True,
        capabilities=torchrl_env.user_capabilities(num_envs),
        description=f"a user's TorchRL env factory ({num_envs} sub-env(s), read from its batch size)",
    )


def _user_num_envs(fn: Callable[..., Any], reference: str) -> tuple[str, Any]:
    """``torchrl_env.user_num_envs`` in the isolated child: a factory that raises is bad input
    with its own traceback (the child's generic failure line would keep the first line only)."""
    from rlconform.libraries.torchrl import env_family as torchrl_env

    try:
        return "ok", torchrl_env.user_num_envs(fn)
    except Exception as exc:
        return "bad", factory_error(f"building {reference} as {TORCHRL_FAMILY}", exc)


def _build(system: System, env_fns: Sequence[EnvFn]) -> Any:
    """Build once for the probe; a factory that raises is bad input too, with its traceback."""
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return system.build(env_fns)
    except Exception as exc:
        raise BadInput(factory_error(f"building {system.source} as {system.family}", exc)) from None


def probe(system: System) -> System:
    """Build the user's system once, check that it is an object of its family, and return the
    system with its cost known (whether building it started worker processes).

    The build runs in a forked process of its own process group where the platform allows: a
    factory that crashes its process is bad input, not the end of rlconform, and whatever it
    starts (worker processes, servers) is killed with the group."""
    import dataclasses

    from rlconform.core.isolation import HUNG_PAST_DEADLINE, run_isolated

    if system.costly is not None:
        return system
    outcome = run_isolated(_probe_in_process, system, timeout=PROBE_SECONDS)
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
    spawned, capabilities = value
    return dataclasses.replace(system, costly=spawned, capabilities=capabilities)


#: how long the probe (one build per candidate env kind, see rlconform.envs.factory_probe) may take
PROBE_SECONDS = 240.0


def _expected(family: str) -> str:
    signature = FACTORY_SIGNATURES.get("isaaclab" if family == "isaaclab.torch" else family)
    return (signature or FACTORY_SIGNATURES["gymnasium.Env"]).split("-> ")[-1]


def _probe_in_process(system: System) -> tuple[str, Any]:
    try:
        return "ok", _probe(system)
    except BadInput as exc:
        return "bad", str(exc)


#: families whose factory is given the reference envs to build (env_fns, or TorchRL's env_fn)
ENV_FN_FAMILIES = ("gymnasium.vector", "sb3.VecEnv", TORCHRL_FAMILY)


def _probe(system: System) -> tuple[bool, Capabilities]:
    """(whether building it starts worker processes, the capabilities to draw its cases with).

    A factory given reference envs is first driven with each observation and action kind
    (:mod:`rlconform.envs.factory_probe`): its cases are drawn from the kinds it accepts, and one that
    never used the envs it was given is bad input."""
    from rlconform.envs.factory_probe import accepted_kinds

    if system.family not in ENV_FN_FAMILIES:
        return _spawns_workers(system), system.capabilities
    num_envs = system.capabilities.min_envs if system.family == TORCHRL_FAMILY else 2
    acceptance = accepted_kinds(system, num_envs)
    if acceptance.ignored_env_fns:
        given = "env_fn" if system.family == TORCHRL_FAMILY else "env_fns"
        raise BadInput(
            f"{system.source} ignored the {given} it was given (it built its own envs: its reset and step "
            f"succeeded while no env from {given} saw a call); a {system.family} factory must build its "
            f"sub-envs by calling {given}"
        )
    shared = acceptance.shared_sub_envs
    if shared is not None:
        raise BadInput(
            f"{system.source} builds its sub-envs in worker processes, each with its own copy of env_fn "
            f"({shared.reason}); rlconform's env_fn hands out distinct sub-envs in this process only, so "
            "this factory cannot be checked as torchrl.EnvBase: build the sub-envs in this process "
            "(SerialEnv, GymWrapper over a vector env), or check the vector env it wraps with --api gymnasium.vector"
        )
    # no kind ran cleanly: build with the default script, so that a factory that cannot be built
    # at all is bad input with its traceback, and one whose calls fail is checked (and fails)
    script = acceptance.base or EnvScript()
    return _spawns_workers(system, script), acceptance.restrict(system.capabilities)


def factory_error(what: str, exc: BaseException) -> str:
    """A bad-input message for a factory that raised: one self-contained first line (the
    exception, where it was raised and the factory's own line that led there), then the last
    frames of the traceback, indented under it, as pytest shows them."""
    import traceback

    message = str(exc).splitlines()[0] if str(exc) else "(no message)"
    if getattr(exc, "explains_itself", False):
        return f"{what} raised {type(exc).__name__}: {message}"
    frames = traceback.extract_tb(exc.__traceback__)
    ours = os.path.dirname(os.path.abspath(__file__))
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


def _close_within_limit(close: Callable[[], Any]) -> None:
    """Close the probe's build under close()'s own limit: a close() that never returns is the
    system's defect, which lifecycle.responsive reports, not a reason to refuse the factory."""
    import contextlib

    from rlconform.core.watchdog import CallTimeout, call_timeout, close_timeout, deadline

    with contextlib.suppress(CallTimeout), deadline(close_timeout(call_timeout())):
        close()


def _spawns_workers(system: System, script: EnvScript | None = None) -> bool:
    from rlconform.core.watchdog import child_processes, reap

    before = child_processes()
    folder: str | None = None
    if system.family == USER_ENV_FAMILY:
        obj = _build(system, [])
        required: tuple[str, ...] = ("reset", "step", "observation_space", "action_space")
    elif system.family == "isaaclab.torch":
        obj = _build(system, [])
        required = ("reset", "step", "num_envs", "device")
    else:
        from rlconform.core.plan import Case, Reset
        from rlconform.core.runner import env_fns_for
        from rlconform.envs.calllog import MemorySink

        n = system.capabilities.min_envs if system.family == TORCHRL_FAMILY else 2
        case = Case(script or EnvScript(), n, (Reset(),))
        sinks = [MemorySink() for _ in range(n)]
        if system.out_of_process:
            import tempfile

            from rlconform.envs.calllog import FileSink

            folder = tempfile.mkdtemp(prefix="rlconform-probe-")
            sinks = [FileSink(os.path.join(folder, f"env-{i}.log")) for i in range(n)]  # type: ignore[misc]
        obj = _build(system, env_fns_for(case, sinks))  # type: ignore[arg-type]
        required = (
            ("reset", "step", "step_and_maybe_reset", "batch_size")
            if system.family == TORCHRL_FAMILY
            else ("reset", "step", "num_envs")
        )
    try:
        missing = [name for name in required if not hasattr(obj, name)]
        if missing:
            raise BadInput(
                f"{system.source} returned a {type(obj).__name__} without {', '.join(missing)}; "
                f"expected {_expected(system.family)}"
            )
        spawned = bool(child_processes() - before)
    finally:
        if system.family == TORCHRL_FAMILY:
            from rlconform.core.family import get_family

            get_family(TORCHRL_FAMILY).close(obj)  # a batched env not started is already closed
        else:
            close = getattr(obj, "close", None)
            if callable(close):
                _close_within_limit(close)
        reap(before)
        if folder is not None:
            import shutil

            shutil.rmtree(folder, ignore_errors=True)
    return spawned
