"""Standalone reproducers: a Python script that rebuilds the system, replays the shrunk calls and
prints the violation, without Hypothesis. The library calls it makes are listed in its docstring
so that the script doubles as an upstream bug report."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rlconform.core.spec import Spec
    from rlconform.core.system import System
    from rlconform.libraries.envauthor.family import EnvCase


def reproducer_source(system: System, spec: Spec, case: Any, run: Any = None) -> str:
    from rlconform.core.plan import Case
    from rlconform.libraries.envauthor.family import EnvCase

    if isinstance(case, EnvCase):
        return _env_reproducer(system, spec, case)
    if system.family == "isaaclab.torch":
        from rlconform.libraries.isaaclab.torch_family import reproducer

        return reproducer(system, spec.id, case)
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
        cls = type(case)
        extra_import = f"from {cls.__module__} import {cls.__name__}\n"
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

from rlconform.envs.script import EnvScript, EpisodePlan
from rlconform.envs.spaces import (
    BoxAction, BoxObs, DictObs, DiscreteAction, DiscreteObs, MultiBinaryObs, MultiDiscreteAction,
    MultiDiscreteObs, TupleObs,
)
from rlconform.core.plan import BadStep, Case, Reset, Step
from rlconform.replay import replay
{extra_import}
script = {case.script!r}
{case_source}

if __name__ == "__main__":
    violations = replay({system_ref!r}, case, {spec.id!r}{family_arg})
    raise SystemExit(1 if violations else 0)
'''


def _env_reproducer(system: System, spec: Spec, case: EnvCase) -> str:
    return f'''"""rlconform reproducer: {system.source} violates {spec.id}.

{spec.statement}

The env is reset with seed {case.seed}, stepped {case.steps} times with actions sampled from its
action space seeded with {case.action_seed} (+ i for copy i), and run through {case.num_envs}
copies in each installed stack.
"""
from rlconform.libraries.envauthor.family import EnvCase
from rlconform.replay import replay

case = {case!r}

if __name__ == "__main__":
    violations = replay({system.source!r}, case, {spec.id!r}, family="gymnasium.Env")
    raise SystemExit(1 if violations else 0)
'''
