"""The stable public entry point of reproducers: replay one case on one system, without Hypothesis.

A reproducer imports only from here: :func:`replay` and the names its case is written with (plan
operations, env scripts and spaces, and the case type of every family that draws its own:
``AlgorithmCase``, ``NativeCase``, ``EstimatorCase``, ``ReplayCase``, ``CollectorCase``,
``TorchCase``, ``EnvCase``, ``LearnerCase``). The modules behind them may move; these names stay. The case types
live in their libraries' packages and are imported only when a reproducer asks for them, so that
importing this module needs no optional library.

Every reproducer, whatever the ``--api``, is a pytest test that asserts that :func:`replay` finds no
violation (``rlconform.core.reproducer.write``). One of a user's own factory imports the factory
(``replay`` takes the factory object) and, where the family has a plain-call form, first builds it
around rlconform's reference envs (:func:`make_reference_env`; a ``torchrl.EnvBase`` factory gets a
:class:`SubEnvFactory`) and makes the minimal case's calls as plain ``reset``/``step`` calls.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Sequence
from typing import Any, TextIO

from rlconform.core.family import get_family
from rlconform.core.runner import execute
from rlconform.core.spec import Violation, all_specs, get_spec
from rlconform.core.system import System, get_system
from rlconform.core.user import factory_system, user_system, with_intents
from rlconform.envs.plan import BadStep, Case, Reset, Step
from rlconform.envs.script import EnvScript, EpisodePlan
from rlconform.envs.spaces import (
    BoxAction,
    BoxObs,
    DictObs,
    DiscreteAction,
    DiscreteObs,
    MultiBinaryObs,
    MultiDiscreteAction,
    MultiDiscreteObs,
    SmallDiscreteObs,
    TupleObs,
)

#: names a reproducer may import from here that live in a library's package: every family's case
#: type, imported only when a reproducer asks for it (a module that moves changes its line here,
#: never a reproducer)
_LAZY = {
    "AlgorithmCase": "rlconform.libraries.sb3.algorithm_case",
    "CollectorCase": "rlconform.libraries.torchrl.collectors",
    "EnvCase": "rlconform.libraries.envauthor.case",
    "EstimatorCase": "rlconform.libraries.torchrl.value_case",
    "NativeCase": "rlconform.libraries.gymnasium.native_vector",
    "ReplayCase": "rlconform.libraries.torchrl.replay_case",
    "LearnerCase": "rlconform.envs.learner_run",
    "TorchCase": "rlconform.libraries.isaaclab.torch_run",
    # the reference env is a gymnasium.Env: imported only when a reproducer builds one
    "make_reference_env": "rlconform.envs.reference_env",
    # the env_fn a torchrl.EnvBase factory gets: its k-th call builds sub-env k
    "SubEnvFactory": "rlconform.libraries.torchrl.env_user",
}

__all__ = [
    "BadStep",
    "BoxAction",
    "BoxObs",
    "Case",
    "DictObs",
    "DiscreteAction",
    "DiscreteObs",
    "EnvScript",
    "EpisodePlan",
    "MultiBinaryObs",
    "MultiDiscreteAction",
    "MultiDiscreteObs",
    "Reset",
    "SmallDiscreteObs",
    "Step",
    "TupleObs",
    "replay",
    "resolve_system",
    *_LAZY,
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'rlconform.replay' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def resolve_system(system: str | System | Callable[..., Any], family: str | None = None, **options: Any) -> System:
    """A bundled system by id, or a user's factory given as ``module:callable`` (or its system id
    ``user:module:callable``), or as the factory itself, with the ``--api`` name of its family
    and that family's options (Isaac Lab: ``num_envs``, ``device``)."""
    if isinstance(system, System):
        return system
    if not isinstance(system, str):
        if family is None:
            raise ValueError(f"{system!r} is a user factory: pass its family")
        return factory_system(system, family, **options)
    reference = system.removeprefix("user:")
    if ":" in reference:
        if family is None:
            raise ValueError(f"{system!r} is a user factory: pass its family")
        return user_system(reference, family, **options)
    return get_system(system)


def replay(
    system: str | System | Callable[..., Any],
    case: Any,
    spec_id: str | None = None,
    *,
    api: str | None = None,
    family: str | None = None,
    out: TextIO | None = None,
    intended: Sequence[str] = (),
    **options: Any,
) -> list[Violation]:
    """Run ``case`` on ``system``, print what it did and the violations of ``spec_id`` (or of every
    applicable spec), and return the violations. ``api``: the ``--api`` a user's factory is checked
    under (a family is named by it; ``family=`` is the same, the keyword reproducers written before
    0.2 use); ``intended``: the value changes the system makes on purpose (``rlconform check
    --intended``); further keywords are the family's options (``single_env``, ``stacks``, ...)."""
    if api is not None and family is not None and api != family:
        raise ValueError(f"replay: api={api!r} and family={family!r} disagree; pass api= only")
    stream = out or sys.stdout
    resolved = resolve_system(system, api or family, **options)
    if intended:
        resolved = with_intents(resolved, list(intended))
    run = execute(resolved, case)
    get_family(resolved.family).print_run(run, case, stream)
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
