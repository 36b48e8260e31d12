"""Reproducers and replay output for the families driven around the reference envs.

A reproducer rebuilds the system, replays the shrunk calls and prints the violation, without
Hypothesis; the library calls it makes are listed in its docstring so that the script doubles as
an upstream bug report. It imports only from :mod:`rlconform.replay`, the stable entry point.

A reproducer of a user's own factory is also a pytest regression test the user can keep
(:func:`user_reproducer`): it imports the factory, builds it around the reference envs, makes the
minimal case's calls as plain ``reset``/``step`` calls, and asserts that replaying the case finds
no violation of the spec.
"""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING, Any, TextIO

from rlconform.core.hangs import RESPONSIVE, TIMEOUT_ERROR
from rlconform.envs.decode import decode as decode_obs
from rlconform.envs.decode import describe_decoded
from rlconform.envs.plan import Case

if TYPE_CHECKING:
    from rlconform.core.spec import Spec
    from rlconform.core.system import System
    from rlconform.envs.driver import ReferenceEnvFamily, Run


#: the names rlconform.replay gives every reproducer of a call sequence
REPLAY_NAMES = (
    "BadStep, BoxAction, BoxObs, Case, DictObs, DiscreteAction, DiscreteObs, EnvScript, EpisodePlan,\n"
    "    MultiBinaryObs, MultiDiscreteAction, MultiDiscreteObs, Reset, SmallDiscreteObs, Step, TupleObs"
)


def importable(reference: str) -> tuple[str, str] | None:
    """(module, attribute path) of a ``MODULE:QUALNAME`` factory a test file can import; None for
    one defined in ``__main__`` or inside a function."""
    module, _, path = reference.partition(":")
    if not module or not path or module == "__main__" or "<" in path:
        return None
    if not all(part.isidentifier() for part in (*module.split("."), *path.split("."))):
        return None
    return module, path


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


def test_name(spec: Spec) -> str:
    """The name of a regression test of ``spec``: ``test_terminal_final_obs``."""
    return "test_" + re.sub(r"[^A-Za-z0-9]+", "_", spec.id).strip("_")


def import_factory(reference: str, reserved: set[str]) -> tuple[str, str] | None:
    """(the import statement, the expression naming the factory) for a test file, the factory
    renamed ``factory`` where its name would shadow one the file uses; None: not importable."""
    where = importable(reference)
    if where is None:
        return None
    module, path = where
    head = path.split(".")[0]
    alias = "factory" if head in reserved else head
    statement = f"from {module} import {head}" + (f" as {alias}" if alias != head else "")
    return statement, ".".join([alias, *path.split(".")[1:]])


def user_reproducer(system: System, spec: Spec, case: Case, run: Any, family: ReferenceEnvFamily) -> str | None:
    """The reproducer of a user's factory of a reference-env family, written as a pytest
    regression test (see the module docstring); None where the family has no plain-call form or
    the factory cannot be imported by name."""
    if family.plain_build is None or family.api is None or type(case) is not Case:
        return None
    obj = family.plain_object
    reserved = {"np", "functools", "contextlib", "script", "case", "env_fns", "violations", "replay", "td", "data"}
    reserved |= {obj, *re.split(r"[\s,]+", REPLAY_NAMES), *family.plain_imports, "make_reference_env", test_name(spec)}
    found = import_factory(system.source, reserved)
    if found is None:
        return None
    imported, factory = found
    build = family.plain_build.format(factory=factory)
    calls = plain_calls(run, spec, obj)
    body = []
    if calls is not None:
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
            f"    same calls are replayed and read by the {family.api} recipe, and {spec.id} must hold."
        )
    else:
        what = f"Replays the minimal case on {system.source}, read by the {family.api} recipe: {spec.id} must hold."
    replayed = f"replay({factory}, case, {spec.id!r}, family={family.api!r}{_intended(system)})"
    body += [
        f"violations = {replayed}",
        'assert not violations, "\\n".join(v.render() for v in violations)',
    ]
    imports = "import contextlib\n" if calls is not None and any("contextlib" in line for line in calls) else ""
    extra = ", ".join(sorted({"make_reference_env", *family.plain_imports}))
    ops = ",\n        ".join(repr(op) for op in case.ops)
    indented = "\n".join(f"    {line}" if line else "" for line in body)
    return f'''"""rlconform reproducer: {system.id} violates {spec.id}.

{spec.statement}

System: {system.title}
Built as: {build}
with env_fns[i] = functools.partial(make_reference_env, script, i)

Keep it as a regression test: pytest collects {test_name(spec)}, which makes the minimal case's
calls on your factory and fails while the violation remains. Or run it: exit status 1 while the
violation remains.
"""
{imports}import functools

import numpy as np  # noqa: F401  (reprs of actions may use it)

{imported}
from rlconform.replay import (
    {REPLAY_NAMES},
    {extra}, replay,
)

script = {case.script!r}
case = Case(
    script,
    num_envs={case.num_envs},
    ops=(
        {ops},
    ),
)


def {test_name(spec)}() -> None:
    """{what}"""
{indented}


if __name__ == "__main__":
    violations = {replayed}
    raise SystemExit(1 if violations else 0)
'''


def _intended(system: System) -> str:
    """The ``intended=`` argument of a replay: the changes the user declared on purpose."""
    return f", intended={sorted(system.intended)!r}" if system.intended else ""


def case_reproducer(system: System, spec: Spec, case: Any, run: Any = None, *, family: ReferenceEnvFamily) -> str:
    """The standalone reproducer of ``case`` on ``system``, whose family is ``family``."""
    if system.kind == "user":
        kept = user_reproducer(system, spec, case, run, family)
        if kept is not None:
            return kept
    calls = ""
    if run is not None and run.calls:
        lines = []
        for call in run.calls:
            note = "  # required by the documented recipe" if call.implied else ""
            outcome = f"  # raised {call.error_type}" if call.failed else ""
            lines.append(f"    {call.source}{note}{outcome}")
        calls = "\n".join(lines)
    system_ref = system.id if system.kind != "user" else system.source
    # replay() takes the --api name a user's factory was checked under (a family's name may differ:
    # gymnasium.Env answers to --api gymnasium.Wrapper)
    family_arg = f", family={(family.api or system.family)!r}{_intended(system)}" if system.kind == "user" else ""
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
    MultiBinaryObs, MultiDiscreteAction, MultiDiscreteObs, Reset, SmallDiscreteObs, Step, TupleObs, replay,
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
