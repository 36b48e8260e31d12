"""Reproducers and replay output for the families driven around the reference envs.

A family driven around the reference envs gives the parts of its reproducer
(:func:`reference_parts`); :func:`rlconform.core.reproducer.write` writes it, in the one shape every
family's reproducer has: a pytest test that replays the case through :mod:`rlconform.replay` and
fails while the violation remains, also runnable as a script. Its docstring lists the library calls
the case makes, so that the file doubles as an upstream bug report.

A reproducer of a user's own factory imports the factory, and its test first makes the minimal
case's calls as plain ``reset``/``step`` calls on the factory's object, built around the reference
envs (:func:`plain_calls`), before it replays the case.
"""

from __future__ import annotations

import ast
import dataclasses
from typing import TYPE_CHECKING, Any, TextIO

from rlconform.core.hangs import RESPONSIVE, TIMEOUT_ERROR
from rlconform.core.reproducer import ReproducerParts, case_lines, import_factory, importable, test_name, write
from rlconform.envs.decode import decode as decode_obs
from rlconform.envs.decode import describe_decoded
from rlconform.envs.plan import Case

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from rlconform.core.spec import Spec
    from rlconform.core.system import System
    from rlconform.envs.driver import ReferenceEnvFamily, Run

__all__ = [
    "case_reproducer",
    "import_factory",
    "importable",
    "plain_calls",
    "print_run",
    "reference_parts",
    "test_name",
]


def _names_used(source: str) -> set[str] | None:
    """The names a call source reads (None: it is not a statement Python can parse)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    return {node.id for node in ast.walk(tree) if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)}


def plain_calls(run: Any, spec: Spec, obj: str) -> list[str] | None:
    """The run's calls as the statements of a test (a call that raised in the failing run is
    allowed to raise again), or None where they cannot be replayed as plain code: a hang (the
    test would wait for it), or a call whose source names anything but NumPy and the object."""
    if run is None or not getattr(run, "calls", None) or spec.id == RESPONSIVE:
        return None
    allowed = {"np", obj, "td", "data"}
    lines = []
    for call in run.calls:
        names = _names_used(call.source)
        if names is None or not names <= allowed or call.error_type == TIMEOUT_ERROR:
            return None
        note = "  # required by the documented recipe" if call.implied else ""
        if call.failed:
            lines.append(f"with contextlib.suppress(Exception):  # raised {call.error_type} in the failing run")
            lines.append(f"    {call.source}{note}")
        else:
            lines.append(f"{call.source}{note}")
    return lines


def _plain(
    system: System, spec: Spec, case: Any, run: Any, family: ReferenceEnvFamily
) -> Callable[[str], tuple[Sequence[str], str]] | None:
    """The plain calls a user's test makes on the factory's object (rlconform.core.reproducer
    ReproducerParts.plain), or None where the family has none or the case is no call sequence."""
    build_template = family.plain_build
    if build_template is None or family.api is None or type(case) is not Case:
        return None
    obj = family.plain_object
    calls = plain_calls(run, spec, obj)
    api = family.api

    def plain(factory: str) -> tuple[Sequence[str], str]:
        build = build_template.format(factory=factory)
        if calls is None:
            return [], f"Replays the minimal case on {system.source}, read by the {api} recipe: {spec.id} must hold."
        body = [
            "env_fns = [functools.partial(make_reference_env, script, i) for i in range(case.num_envs)]",
            build,
            "try:",
            *("    " + line for line in calls),
            "finally:",
            f"    {obj}.close()",
        ]
        what = (
            f"The minimal case as plain calls on {system.source}, around rlconform's reference envs; then the\n"
            f"    same calls are replayed and read by the {api} recipe, and {spec.id} must hold."
        )
        return body, what

    return plain


def reference_parts(
    system: System, spec: Spec, case: Any, run: Any = None, *, family: ReferenceEnvFamily
) -> ReproducerParts:
    """The parts of the reproducer of ``case`` on ``system``, whose family is ``family``: the calls
    replayed (in the docstring), how the system is built, and for a user's factory its plain calls."""
    lines = []
    for call in getattr(run, "calls", None) or ():
        note = "  # required by the documented recipe" if call.implied else ""
        outcome = f"  # raised {call.error_type}" if call.failed else ""
        lines.append(f"    {call.source}{note}{outcome}")
    calls = "\n\nCalls replayed:\n" + "\n".join(lines) if lines else ""
    build = family.plain_build or "envs = {factory}(env_fns)"
    built = build.format(factory=system.source) if system.kind == "user" else f"envs = {system.source}"
    about = (
        f"System: {system.title}\nBuilt as: {built}\n"
        f"with env_fns[i] = functools.partial(make_reference_env, script, i){calls}"
    )
    return ReproducerParts(
        system=system,
        spec=spec,
        case=case_lines(case),
        # replay() takes the --api name a user's factory was checked under (a family's name may
        # differ: gymnasium.Env answers to --api gymnasium.Wrapper)
        api=family.api or system.family,
        about=about,
        options={"intended": sorted(system.intended) if system.intended else None},
        plain=_plain(system, spec, case, run, family) if system.kind == "user" else None,
    )


def case_reproducer(
    system: System, spec: Spec, case: Any, run: Any = None, *, family: ReferenceEnvFamily, about: str | None = None
) -> str:
    """The standalone reproducer of ``case`` on ``system``, whose family is ``family`` (``about``:
    what the system and case are, where the family says more than the replayed calls)."""
    parts = reference_parts(system, spec, case, run, family=family)
    return write(parts if about is None else dataclasses.replace(parts, about=about))


def print_run(run: Run, stream: TextIO, *, decode: bool = True) -> None:
    """Every call of a run and what it returned, observations decoded where they can be."""
    print(f"system: {run.system.id} ({run.system.title})", file=stream)
    if run.build_error:
        print(f"build error: {run.build_error}", file=stream)
        return
    for call in run.calls:
        marker = " (required by the recipe)" if call.implied else ""
        print(f"  [{call.position}] {call.source}{marker}", file=stream)
        if call.failed:
            print(f"      raised {call.error_type}: {call.error_message}", file=stream)
            continue
        view = call.view
        if view is None:
            continue
        if decode:
            obs = ", ".join(describe_decoded(decode_obs(run, o)) for o in view.obs_in_env_units())
        else:
            obs = ", ".join(repr(o) for o in view.obs)
        print(f"      obs: {obs}", file=stream)
        if view.kind == "step":
            print(
                f"      reward: {view.rewards}  terminated: {view.terminated}  truncated: {view.truncated}", file=stream
            )
            finals = view.final_obs_in_env_units()
            if decode and finals and any(f is not None for f in finals):
                text = ", ".join("-" if f is None else describe_decoded(decode_obs(run, f)) for f in finals)
                print(f"      final obs: {text}", file=stream)
