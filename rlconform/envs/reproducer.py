"""Reproducers and replay output for the families driven around the reference envs.

A reproducer rebuilds the system, replays the shrunk calls and prints the violation, without
Hypothesis; the library calls it makes are listed in its docstring so that the script doubles as
an upstream bug report. It imports only from :mod:`rlconform.replay`, the stable entry point.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TextIO

from rlconform.core.plan import Case

if TYPE_CHECKING:
    from rlconform.core.spec import Spec
    from rlconform.core.system import System
    from rlconform.envs.driver import Run


def case_reproducer(system: System, spec: Spec, case: Any, run: Any = None) -> str:
    calls = ""
    if run is not None and run.calls:
        lines = []
        for call in run.calls:
            note = "  # required by the documented recipe" if call.implied else ""
            outcome = f"  # raised {call.error_type}" if call.failed else ""
            lines.append(f"    {call.source}{note}{outcome}")
        calls = "\n".join(lines)
    system_ref = system.id if system.kind != "user" else system.source
    family_arg = f", family={system.family!r}" if system.kind == "user" else ""
    ops = ",\n        ".join(repr(op) for op in case.ops)
    case_source = f"""case = Case(
    script,
    num_envs={case.num_envs},
    ops=(
        {ops},
    ),
)"""
    extra_import = ""
    if type(case) is not Case:
        # a scenario's own case (a collector or replay-buffer run): its repr carries its parameters
        extra_import = f"from rlconform.replay import {type(case).__name__}\n"
        case_source = f"case = {case!r}"
    return f'''"""rlconform reproducer: {system.id} violates {spec.id}.

{spec.statement}

System: {system.title}
Built as: envs = {system.source}
with env_fns[i] = functools.partial(make_reference_env, script, i)

Calls replayed:
{calls}
"""
import numpy as np  # noqa: F401  (reprs of actions may use it)

from rlconform.replay import (
    BadStep, BoxAction, BoxObs, Case, DictObs, DiscreteAction, DiscreteObs, EnvScript, EpisodePlan,
    MultiBinaryObs, MultiDiscreteAction, MultiDiscreteObs, Reset, Step, TupleObs, replay,
)
{extra_import}
script = {case.script!r}
{case_source}

if __name__ == "__main__":
    violations = replay({system_ref!r}, case, {spec.id!r}{family_arg})
    raise SystemExit(1 if violations else 0)
'''


def print_run(run: Run, stream: TextIO, *, decode: bool = True) -> None:
    """Every call of a run and what it returned, observations decoded where they can be."""
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
