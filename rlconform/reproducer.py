"""Standalone reproducers: a Python script that rebuilds the system, replays the shrunk calls and
prints the violation, without Hypothesis. The library calls it makes are listed in its docstring
so that the script doubles as an upstream bug report."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rlconform.plan import Case
    from rlconform.runner import Run
    from rlconform.specs.registry import Spec
    from rlconform.systems import System


def reproducer_source(system: System, spec: Spec, case: Case, run: Run | None = None) -> str:
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
    return f'''"""rlconform reproducer: {system.id} violates {spec.id}.

{spec.statement}

System: {system.title}
Built as: envs = {system.source}
with env_fns[i] = functools.partial(make_reference_env, script, i)

Calls replayed:
{calls}
"""
import numpy as np  # noqa: F401  (reprs of actions may use it)

from rlconform.fixtures.script import EnvScript, EpisodePlan
from rlconform.fixtures.spaces import (
    BoxAction, BoxObs, DictObs, DiscreteAction, DiscreteObs, MultiBinaryObs, MultiDiscreteAction,
    MultiDiscreteObs, TupleObs,
)
from rlconform.plan import BadStep, Case, Reset, Step
from rlconform.replay import replay

script = {case.script!r}
case = Case(
    script,
    num_envs={case.num_envs},
    ops=(
        {ops},
    ),
)

if __name__ == "__main__":
    violations = replay({system_ref!r}, case, {spec.id!r}{family_arg})
    raise SystemExit(1 if violations else 0)
'''
