"""Replay one case on one system without Hypothesis and print what the specs find.

Reproducers call :func:`replay`; it is also handy at a debugger prompt.
"""

from __future__ import annotations

import sys
from typing import Any, TextIO

from rlconform.core.runner import Run, execute
from rlconform.core.spec import Violation, all_specs, get_spec
from rlconform.core.system import System, get_system


def resolve_system(system: str | System, family: str | None = None) -> System:
    """A bundled system by id, or a user's factory given as ``module:callable`` with its family."""
    if isinstance(system, System):
        return system
    if ":" in system:
        from rlconform.core.user import user_system

        if family is None:
            raise ValueError(f"{system!r} is a user factory: pass its family")
        return user_system(system, family)
    return get_system(system)


def replay(
    system: str | System,
    case: Any,
    spec_id: str | None = None,
    *,
    family: str | None = None,
    out: TextIO | None = None,
) -> list[Violation]:
    """Run ``case`` on ``system``, print every call and the violations of ``spec_id`` (or of every
    applicable spec), and return the violations."""
    stream = out or sys.stdout
    resolved = resolve_system(system, family)
    run = execute(resolved, case)
    if isinstance(run, Run):
        print_run(run, stream)
    else:
        print(f"system: {resolved.source} (your env), {case}", file=stream)
        if run.first is not None:
            print_run(run.first, stream, decode=False)
    specs = [get_spec(spec_id)] if spec_id else [s for s in all_specs() if s.not_applicable_reason(resolved) is None]
    found: list[Violation] = []
    for spec in specs:
        outcome = spec.check(run)
        for violation in outcome.violations:
            print(f"VIOLATION {spec.id}: {violation.render()}", file=stream)
        found.extend(outcome.violations)
    if not found:
        print("no violation", file=stream)
    return found


def print_run(run: Run, stream: TextIO, *, decode: bool = True) -> None:
    from rlconform.specs.helpers import decode as decode_obs
    from rlconform.specs.helpers import describe_decoded

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
