"""A rule-based state machine that drives a system and its reference model side by side.

Rules interleave ``reset(seed)``, steps, partial resets and a manual reset right after an episode
ends; after every rule the two must agree, decoded call by call, and at teardown every standard
spec must hold on the whole run. Hypothesis shrinks a failure to the shortest rule sequence.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, precondition, rule

from rlconform.core.spec import Violation, all_specs
from rlconform.core.system import System
from rlconform.envs.decode import decode, describe_decoded
from rlconform.envs.driver import LiveRun, Run, reference_family
from rlconform.envs.plan import Case, Op, Reset
from rlconform.envs.strategies import SEEDS, _partial_reset, _step, num_envs_for, scripts
from rlconform.envs.trace import CallRecord


class ConformanceFailure(AssertionError):
    pass


def _describe(run: Run, call: CallRecord) -> list[str]:
    if call.failed:
        return [f"raised {call.error_type}"]
    view = call.view
    if view is None:
        return ["unreadable output"]
    parts = [describe_decoded(decode(run, o)) for o in view.obs_in_env_units()]
    if view.kind == "step":
        parts += [f"terminated={view.terminated}", f"truncated={view.truncated}"]
        finals = view.final_obs_in_env_units()
        if finals:
            parts += ["final=" + ", ".join("-" if f is None else describe_decoded(decode(run, f)) for f in finals)]
    return parts


def conformance_machine(system: System, specs: Sequence[str] | None = None) -> type[RuleBasedStateMachine]:
    """A state machine class for ``system`` (which must have a reference model); at teardown it
    checks ``specs`` (default: every standard spec that applies)."""
    caps = system.capabilities
    vectorized = reference_family(system.family).contract.vectorized

    class Machine(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            self.real: LiveRun | None = None
            self.model: LiveRun | None = None
            self.script: Any = None
            self.num_envs = 1
            self.ended: list[bool] = []

        @initialize(script=scripts(caps), num_envs=num_envs_for(system, vectorized), seed=st.none() | SEEDS)
        def start(self, script: Any, num_envs: int, seed: int | None) -> None:
            self.script, self.num_envs = script, num_envs
            case = Case(script, num_envs, (Reset(seed=seed),))
            self.real = LiveRun(system, case)
            model_id = self.real.model_id() if system.kind != "reference" else system.id
            assert model_id is not None, f"{system.id} has no reference model"
            self.model = LiveRun(self.real.model_system(model_id), self.real.model_case())
            self._apply(Reset(seed=seed))

        def _apply(self, op: Op) -> None:
            assert self.real is not None and self.model is not None
            got, want = self.real.apply(op), self.model.apply(op)
            for a, b in zip(got, want, strict=False):
                real_parts, model_parts = _describe(self.real.run, a), _describe(self.model.run, b)
                if real_parts != model_parts:
                    raise ConformanceFailure(
                        f"{a.source}: the system returned {real_parts}; the reference model returns {model_parts}"
                    )
            if len(got) != len(want):
                raise ConformanceFailure(
                    f"{op.describe()} made {len(got)} calls on the system, {len(want)} on the model"
                )
            last = want[-1] if want else None
            if (
                last is not None
                and last.view is not None
                and last.view.kind == "step"
                and last.view.terminated is not None
            ):
                assert last.view.truncated is not None
                self.ended = [a or b for a, b in zip(last.view.terminated, last.view.truncated, strict=True)]
            elif last is not None and last.view is not None:
                self.ended = [False] * self.num_envs

        @rule(data=st.data())
        def step(self, data: st.DataObject) -> None:
            self._apply(data.draw(_step(self.script.action, self.num_envs)))

        @rule(seed=st.none() | SEEDS)
        def reset(self, seed: int | None) -> None:
            self._apply(Reset(seed=seed))

        @precondition(lambda self: caps.partial_reset and vectorized)
        @rule(data=st.data())
        def partial_reset(self, data: st.DataObject) -> None:
            self._apply(data.draw(_partial_reset(self.num_envs)))

        @precondition(lambda self: any(self.ended))
        @rule()
        def manual_reset_after_end(self) -> None:
            if caps.partial_reset and vectorized and not all(self.ended):
                self._apply(Reset(seed=None, mask=tuple(self.ended)))
            else:
                self._apply(Reset(seed=None))

        def teardown(self) -> None:
            if self.real is None or self.model is None:
                return
            run, model_run = self.real.finish(), self.model.finish()
            run.model = model_run if system.kind != "reference" else None
            violations: list[Violation] = []
            for spec in all_specs():
                if spec.scenario != "standard" or spec.not_applicable_reason(system) is not None:
                    continue
                if specs is not None and spec.id not in specs:
                    continue
                if system.known_violation(spec.id):
                    continue
                violations.extend(spec.check(run).violations)
            if violations:
                raise ConformanceFailure("; ".join(f"{v.spec_id}: {v.render()}" for v in violations[:3]))

    Machine.__name__ = f"Conformance[{system.id}]"
    return Machine
