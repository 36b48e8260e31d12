"""Family ``torchrl.ValueEstimator`` (``--api torchrl.ValueEstimator``): the advantages and value
targets a return estimator computes from collector output, checked against ground truth.

A factory ``make(value_network) -> ValueEstimatorBase`` is given a fixed linear value network
("observation" -> "state_value", :mod:`rlconform.libraries.torchrl.value_torch`). An
:class:`EstimatorCase` collects batches with a TorchRL ``Collector`` over the decodable reference
envs (a GymWrapper, or a SerialEnv for several sub-envs: batches of shape [time] or [envs, time],
with terminations and truncations inside them and a batch edge mid-episode) and hands each batch
to the estimator. Every frame's observation decodes to (env, episode, step), so the true episode
structure comes from the env's own log, not from the done flags the stack wrote; the reference
(:mod:`rlconform.libraries.torchrl.value_reference`) computes the lambda-return and advantage of
every frame from it in float64, at the gamma and lambda the estimator declares (TD(0): lambda 0,
TD(1): lambda 1). The estimator is then fed the same batch with the frames after an episode end,
or one sub-env's frames, changed: the targets of the other frames must not move.

TorchRL documents two approximations: ``GAE(auto_reset_env=True)`` bootstraps a time-out from
V(s_t), and ``shifted=True`` drops the samples an internal truncation displaces past its budget
(``"shifted_valid"``). An estimator that declares one is compared with the approximation's own
formula (``estimator.advantage``, ``estimator.value_target``), and ``estimator.exact_targets``
reports the approximation with its measured bias (a bundled system: "known", citing TorchRL's
documentation).
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TextIO

from rlconform.core.family import FactoryShape, is_instance_of
from rlconform.core.reproducer import write
from rlconform.core.spec import Checker, Outcome, spec
from rlconform.core.system import Capabilities, EnvFn, Probed, System, SystemTable
from rlconform.core.user import returned_type, spawns_workers
from rlconform.envs.plan import Case, Op, Reset
from rlconform.envs.reproducer import reference_parts
from rlconform.envs.script import EnvScript, EpisodePlan
from rlconform.envs.spaces import BoxObs, DiscreteAction
from rlconform.envs.stamp import Stamp
from rlconform.envs.trace import CallRecord
from rlconform.libraries.torchrl.frames import (
    NUM_ACTIONS,
    DrivenObjectFamily,
    env_source,
    note_environment_error,
    scenario_scripts,
)
from rlconform.libraries.torchrl.value_reference import (
    BatchReading,
    Declared,
    RefStep,
    close,
    diagnose,
    gae,
    retained,
    true_value,
)
from rlconform.specs.families import TORCHRL_VALUE_ESTIMATOR

if TYPE_CHECKING:
    from hypothesis.strategies import SearchStrategy

    from rlconform.core.spec import Spec
    from rlconform.envs.driver import Driver, Run

#: this module's systems, read by the catalog (rlconform.core.catalog)
SYSTEMS = SystemTable()

FAMILY_NAME = TORCHRL_VALUE_ESTIMATOR
FAMILIES = frozenset({FAMILY_NAME})
NEEDS_CASE = "runs only on an EstimatorCase (replay the verdict's case, not a plain Case)"
ROLE = "estimator_role"
ESTIMATOR_CLASSES = ("torchrl.objectives.value.advantages.ValueEstimatorBase",)


@dataclass(frozen=True)
class EstimatorCase(Case):
    """One run: ``batches`` collector batches of ``steps`` steps per sub-env, each handed to the
    estimator."""

    steps: int = 4
    batches: int = 1

    def collector_source(self) -> str:
        frames = self.steps * self.num_envs
        return (
            f"Collector({env_source(self.num_envs)}, policy, frames_per_batch={frames}, "
            f"total_frames={frames * self.batches})"
        )


def estimator_cases(system: System) -> SearchStrategy[EstimatorCase]:
    from hypothesis import strategies as st

    caps = system.capabilities
    return st.builds(
        EstimatorCase,
        script=scenario_scripts(),
        num_envs=st.integers(caps.min_envs, caps.max_envs),
        ops=st.just((Reset(),)),
        steps=st.integers(2, 8),
        batches=st.integers(1, 2),
    )


def _script(*episodes: EpisodePlan, stride: int = 0, limit: int | None = None) -> EnvScript:
    return EnvScript(
        obs=BoxObs(), action=DiscreteAction(NUM_ACTIONS), episodes=episodes, env_stride=stride, max_episode_steps=limit
    )


def estimator_edge_cases(system: System) -> list[EstimatorCase]:
    """Batches tried first under every profile: two sub-envs whose episodes end at different steps
    (a termination and a truncation inside the batch, a batch edge mid-episode); a truncation
    followed by a termination (shifted=True's budget); a step both terminated and truncated; and
    one sub-env alone (a batch of shape [time])."""
    caps = system.capabilities
    found = [
        EstimatorCase(
            _script(EpisodePlan(2, "terminated"), EpisodePlan(3, "truncated"), stride=1), 2, (Reset(),), steps=6
        ),
        EstimatorCase(_script(EpisodePlan(2, "truncated"), EpisodePlan(2, "terminated")), 2, (Reset(),), steps=5),
        EstimatorCase(_script(EpisodePlan(3, "terminated"), limit=3), 2, (Reset(),), steps=5),
        EstimatorCase(_script(EpisodePlan(2, "terminated"), EpisodePlan(4, "never"), limit=3), 1, (Reset(),), steps=7),
    ]
    return [case for case in found if caps.min_envs <= case.num_envs <= caps.max_envs]


def _harness(factory: Callable[[Any], Any]) -> Callable[[Sequence[EnvFn]], Any]:
    def build(env_fns: Sequence[EnvFn]) -> Any:
        import torchrl.collectors  # noqa: F401  (imported here, outside the calls' deadline)

        from rlconform.libraries.torchrl.value_torch import EstimatorHarness

        return EstimatorHarness(list(env_fns), factory)

    return build


class ValueEstimatorFamily(DrivenObjectFamily):
    """Family ``torchrl.ValueEstimator``."""

    name = FAMILY_NAME
    api = "torchrl.ValueEstimator"
    factory_signature = "(value_network: TensorDictModule) -> torchrl.objectives.value.ValueEstimatorBase"
    factory_argument = "value_network"
    quiet_loggers = ("torchrl",)
    claimed_classes = ESTIMATOR_CLASSES
    factory_shape = FactoryShape(
        returns=ESTIMATOR_CLASSES,
        return_names=("GAE", "TD0Estimator", "TD1Estimator", "TDLambdaEstimator", "VTrace"),
        takes=("tensordict.nn.common.TensorDictModuleBase", "tensordict.nn.common.TensorDictModule"),
    )

    def cases(self, system: System, scenario: str) -> SearchStrategy[Any]:
        return estimator_cases(system)

    def boundary_cases(self, system: System, scenario: str) -> list[Any]:
        return estimator_edge_cases(system) if scenario == "standard" else []

    def execute(self, driver: Driver, obj: Any, op: Op) -> None:
        """Build the estimator and the collector, then hand the estimator every batch."""
        case = driver.case
        if not isinstance(case, EstimatorCase):
            return
        record = driver.call(
            op, f"estimator = make(value_network); collector = {case.collector_source()}", obj.construct, (case,)
        )
        record.extra[ROLE] = "construct"
        if record.failed:
            note_environment_error(driver, record)
            return
        for _ in range(case.batches + 1):
            record = driver.call(op, "batch = next(iter(collector)); estimator(batch.clone())", obj.next_batch, (case,))
            if record.failed or record.result_live is None:
                record.extra[ROLE] = "end" if not record.failed else "batch"
                return
            record.extra[ROLE] = "batch"

    # ------------------------------------------------------------ the user API
    def check_factory(self, signature: inspect.Signature) -> None:
        signature.bind(object())

    def claims(self, obj: Any) -> bool:
        return is_instance_of(obj, ESTIMATOR_CLASSES)

    #: the FINDINGS rows of the bundled estimators' defects
    findings = {
        ("torchrl.*.shifted*", "estimator.advantage"): "V1",
        ("torchrl.*.shifted*", "estimator.value_target"): "V1",
        ("torchrl.GAE.auto_reset_env", "estimator.advantage"): "V2",
        ("torchrl.GAE.auto_reset_env", "estimator.value_target"): "V2",
    }

    def library_systems(self, run: Any) -> list[str]:
        """The bundled TorchRL estimator a user's estimator is (or derives from), with the
        switches it declares: most specific first (e.g. torchrl.GAE.shifted.not_vectorized, then
        torchrl.GAE.shifted)."""
        declared = readings(run).declared if isinstance(getattr(run, "case", None), EstimatorCase) else None
        if declared is None or declared.library_class is None:
            return []
        switches = [s for s, on in (("shifted", declared.shifted), ("auto_reset_env", declared.auto_reset_env)) if on]
        base = ".".join(["torchrl", declared.library_class, *switches])
        return [base + ".not_vectorized", base] if not declared.vectorized else [base]

    def user_system(self, fn: Callable[..., Any], reference: str, **options: Any) -> System:
        return System(
            id=f"user:{reference}",
            family=FAMILY_NAME,
            title=f"{reference}(value_network) (your return estimator)",
            build=_harness(fn),
            source=reference,
            kind="user",
            capabilities=_CAPS,
            description="a return estimator, checked on collector output against returns computed from the env's log",
        )

    def probe_factory(self, system: System) -> Probed:
        """Build the estimator once around the value network: a factory that raises, or returns
        something that is no ValueEstimatorBase, is bad input."""

        def build() -> Any:
            from rlconform.libraries.torchrl.value_torch import make_value_network

            harness = system.build([])
            return harness.factory(make_value_network())

        spawned = spawns_workers(system, build, ("forward",), returned_type(self.factory_signature), close=_no_close)
        return Probed(spawned, system.capabilities)

    def reproducer(self, system: System, spec: Spec, case: Any, run: Any) -> str:
        parts = reference_parts(system, spec, case, run, family=self)
        if not isinstance(case, EstimatorCase):
            return write(parts)
        about = (
            f"Estimator: {system.title}, built around a linear value network of the observation\n"
            f"(make_value_network), fed the batches of\n{case.collector_source()}\n"
            "with env_fns[i] = functools.partial(make_reference_env, script, i)."
        )
        return write(dataclasses.replace(parts, about=about))

    def print_run(self, run: Any, case: Any, stream: TextIO) -> None:
        print(f"system: {run.system.id} ({run.system.title})", file=stream)
        if run.build_error:
            print(f"build error: {run.build_error}", file=stream)
        found = readings(run)
        if found.declared is not None:
            print(f"declared: {found.declared}", file=stream)
        for number, reading in enumerate(found.batches):
            print(f"batch {number}: shape {reading.shape}", file=stream)
            n, steps = reading.shape
            for i in range(n):
                frames = reading.frames[i * steps : (i + 1) * steps]
                print(f"  sub-env {i}: " + " | ".join(_frame_text(f) for f in frames), file=stream)
                if reading.advantage is not None and reading.value_target is not None:
                    print(f"    advantage:    {_numbers(reading.advantage[i])}", file=stream)
                    print(f"    value_target: {_numbers(reading.value_target[i])}", file=stream)
        if found.failed is not None:
            print(f"{found.failed.source} raised {found.failed.error_type}: {found.failed.error_message}", file=stream)


def _no_close(obj: Any) -> None:
    """An estimator holds nothing to close."""


def _frame_text(frame: Any) -> str:
    obs = frame.obs.short() if isinstance(frame.obs, Stamp) else "?"
    flags = "T" if frame.terminated else ""
    flags += "t" if frame.truncated else ""
    return f"{obs}{' ' + flags if flags else ''}"


def _numbers(values: Sequence[float]) -> str:
    return " ".join(f"{v:8.4f}" for v in values)


FAMILY = ValueEstimatorFamily()


# -------------------------------------------------------------------------------- readings


@dataclass
class Readings:
    declared: Declared | None = None
    refused: CallRecord | None = None
    batches: list[BatchReading] = field(default_factory=list)
    #: a batch the estimator could not compute
    failed: CallRecord | None = None


def readings(run: Run) -> Readings:
    found = Readings()
    for record in run.calls:
        role = record.extra.get(ROLE)
        if role == "construct":
            if record.failed:
                found.refused = record
            else:
                found.declared = record.result_live
        elif role == "batch":
            if record.failed:
                found.failed = record
            elif record.result_live is not None:
                found.batches.append(record.result_live)
    return found


def true_rows(run: Run, reading: BatchReading) -> list[list[RefStep]] | str:
    """The batch's rows, each frame matched to the transition its env logged (a reason where a
    frame is none: collector.transitions is the spec about that)."""
    assert run.truth is not None
    codec = run.case.script.obs
    index = {t.obs: t for env in run.truth.envs for t in env.transitions}
    n, steps = reading.shape
    rows = []
    for i in range(n):
        row = []
        for t in range(steps):
            frame = reading.frames[i * steps + t]
            truth = index.get(frame.obs) if isinstance(frame.obs, Stamp) else None
            if truth is None:
                return f"sub-env {i} step {t} of the collector's batch is no transition its env made (see collector.transitions)"
            row.append(
                RefStep(
                    truth.obs,
                    truth.next_obs,
                    truth.reward,
                    truth.terminated,
                    truth.truncated,
                    true_value(codec, truth.obs),
                    true_value(codec, truth.next_obs),
                )
            )
        rows.append(row)
    return rows


def _start(run: Run, c: Checker) -> Readings | Outcome:
    if not isinstance(run.case, EstimatorCase):
        return c.not_applicable(NEEDS_CASE)
    found = readings(run)
    if found.refused is not None:
        return c.not_applicable(
            f"the estimator and collector were not built: {found.refused.error_type}: {found.refused.error_message}"
        )
    if found.declared is not None and found.declared.undriven is not None:
        return c.not_applicable(found.declared.undriven)
    return found


# ----------------------------------------------------------------------------------- specs


def _targets(run: Run, which: int) -> Outcome:
    key = ("advantage", "value_target")[which]
    c = Checker()
    found = _start(run, c)
    if isinstance(found, Outcome):
        return found
    declared = found.declared
    assert declared is not None
    if declared.gamma is None or declared.lmbda is None:
        missing = "gamma" if declared.gamma is None else "lmbda"
        return c.not_applicable(
            f"the estimator declares no {missing} (no {missing!r} attribute): nothing to compute its targets with"
        )
    if declared.standardized is not None and (which == 0 or "rewards" in declared.standardized):
        return c.not_applicable(f"{declared.standardized}: its {key} is not the return's own")
    base = declared.variants
    for number, reading in enumerate(found.batches):
        if reading.missing is not None:
            c.fail(f"batch {number}: {reading.missing}")
            continue
        rows = true_rows(run, reading)
        if isinstance(rows, str):
            return c.not_applicable(rows)
        keep = retained(rows, declared.shifted_budget) if declared.shifted else [[True] * len(row) for row in rows]
        if declared.shifted and reading.valid is not None:
            for i, (expected_row, given_row) in enumerate(zip(keep, reading.valid, strict=True)):
                c.expect(
                    expected_row == given_row,
                    f"batch {number}: sub-env {i}'s shifted_valid is {given_row}; by the documented rule "
                    f"(T + shifted_budget slots, one more per internal truncation) {expected_row}",
                    env=i,
                )
        kept_rows = [row[: sum(k)] for row, k in zip(rows, keep, strict=True)]
        reference = gae(kept_rows, declared.gamma, declared.lmbda, base)
        given_rows = reading.advantage if which == 0 else reading.value_target
        assert given_rows is not None
        for i, row in enumerate(kept_rows):
            wrong = [t for t in range(len(row)) if not close(given_rows[i][t], reference[i][t][which])]
            message = (
                _mismatch(number, key, which, i, wrong, row, kept_rows, given_rows, reference, declared, base, rows)
                if wrong
                else ""
            )
            c.expect(not wrong, message, env=i)
    if found.failed is not None:
        c.fail(f"{found.failed.source} raised {found.failed.error_type}: {found.failed.error_message}")
    if base or declared.shifted:
        c.note("compared with the documented approximation it declares: " + "; ".join(declared.approximations()))
    return c.done()


def _mismatch(
    number: int,
    key: str,
    which: int,
    i: int,
    wrong: list[int],
    row: list[RefStep],
    rows: list[list[RefStep]],
    given_rows: list[list[float]],
    reference: list[list[tuple[float, float]]],
    declared: Declared,
    base: frozenset[str],
    rows_all: list[list[RefStep]],
) -> str:
    """The latest wrong frame of the row (where an error in a backward recursion starts), with
    its likely cause, and how many earlier frames differ too."""
    t = wrong[-1]
    assert declared.gamma is not None and declared.lmbda is not None
    cause = diagnose(rows, declared.gamma, declared.lmbda, base, which, i, t, given_rows[i][t])
    if cause is None and key == "advantage":
        # a cause the value target shows as well (the advantage is the target less V(s_t))
        cause = diagnose(rows, declared.gamma, declared.lmbda, base, 1, i, t, given_rows[i][t] + row[t].value)
    more = f"; {len(wrong) - 1} earlier frame(s) of sub-env {i} differ too" if len(wrong) > 1 else ""
    if declared.shifted and t == len(row) - 1 and len(row) < len(rows_all[i]):
        more += " (the last sample shifted=True retains before the ones it drops)"
    return (
        f"batch {number}, sub-env {i}, step {t} ({row[t].describe()}): {key} {given_rows[i][t]:.6g}, expected "
        f"{reference[i][t][which]:.6g} (gamma {declared.gamma:g}, lambda {declared.lmbda:g})"
        + (f": {cause}" if cause else "")
        + more
    )


_RATIONALE = (
    "The advantage and the value target are what the policy and value losses train on; a termination "
    "bootstrapped, a time-out not bootstrapped, a trace run on across an episode end or from one sub-env "
    "into another biases every update silently, and no environment check can see it."
)


@spec(
    "estimator.advantage",
    impact="training-data",
    statement="The advantage an estimator writes for every frame of a collector batch equals the lambda-return computed from the env's own log less V(s_t): bootstrapped with V(final observation) at a time-out, 0 at a termination, V(next observation) at the batch's end, and never accumulated across an episode end or a sub-env boundary (at the gamma and lambda the estimator declares; where it declares one of TorchRL's documented approximations, the approximation's own formula).",
    rationale=_RATIONALE,
    families=FAMILIES,
)
def estimator_advantage(run: Run) -> Outcome:
    return _targets(run, 0)


@spec(
    "estimator.value_target",
    impact="training-data",
    statement="The value target an estimator writes for every frame of a collector batch equals the lambda-return computed from the env's own log: bootstrapped with V(final observation) at a time-out, 0 at a termination, V(next observation) at the batch's end, and never accumulated across an episode end or a sub-env boundary (at the gamma and lambda the estimator declares; where it declares one of TorchRL's documented approximations, the approximation's own formula).",
    rationale=_RATIONALE,
    families=FAMILIES,
)
def estimator_value_target(run: Run) -> Outcome:
    return _targets(run, 1)


def _leaks(run: Run, attribute: str, what: Callable[[BatchReading, int, int, int], str]) -> Outcome:
    c = Checker()
    found = _start(run, c)
    if isinstance(found, Outcome):
        return found
    for number, reading in enumerate(found.batches):
        for source, end, leaks in getattr(reading, attribute):
            message = ""
            if leaks:
                first = leaks[0]
                message = (
                    f"batch {number}, sub-env {first.row}, step {first.t}: its {first.key} moved from "
                    f"{first.before:.6g} to {first.after:.6g} when {what(reading, source, end, first.row)}"
                    + (f" ({len(leaks) - 1} more such change(s))" if len(leaks) > 1 else "")
                )
            c.expect(not leaks, message, env=source)
    return c.done()


def _after_end(reading: BatchReading, row: int, end: int, into: int) -> str:
    frame = reading.frames[row * reading.shape[1] + end]
    how = "terminated" if frame.terminated else "truncated"
    obs = frame.obs.short() if isinstance(frame.obs, Stamp) else "?"
    return (
        f"the rewards and observations after its episode end at step {end} ({obs}, {how}) changed: "
        "it accumulated across an episode end"
    )


def _other_env(reading: BatchReading, source: int, end: int, into: int) -> str:
    return (
        f"sub-env {source}'s rewards and observations changed: it accumulated from sub-env {source} into sub-env {into}"
    )


@spec(
    "estimator.no_cross_episode",
    impact="training-data",
    statement="An estimator's advantage and value target for a frame do not depend on any reward or observation after the end of the frame's episode (by termination or truncation) in the same sub-env.",
    rationale="GAE or a lambda-return run on across an episode end credits an action with the next episode's rewards: the bug of done read from the wrong step, or of done ignored.",
    families=FAMILIES,
)
def estimator_no_cross_episode(run: Run) -> Outcome:
    return _leaks(run, "cross_episode", _after_end)


@spec(
    "estimator.no_cross_env",
    impact="training-data",
    statement="An estimator's advantage and value target for a frame of one sub-env do not depend on any reward or observation of another sub-env of the batch.",
    rationale="A batch of shape [envs, time] flattened into one sequence, or a recursion run along the wrong dimension, credits one sub-env's actions with another sub-env's rewards.",
    families=FAMILIES,
)
def estimator_no_cross_env(run: Run) -> Outcome:
    return _leaks(run, "cross_env", _other_env)


@spec(
    "estimator.exact_targets",
    impact="training-data",
    statement="An estimator's declared computation gives the exact targets: where it declares one of TorchRL's documented approximations (GAE's auto_reset_env=True bootstrapping a time-out from V(s_t); shifted=True dropping the samples an internal truncation displaces past its budget and stopping the returns before them), the approximation is reported with the bias it measured on the case.",
    rationale="A documented approximation is no bug, but it is not the return either: the learner trains on targets biased at every time-out (or on fewer samples), and the user should know by how much.",
    families=FAMILIES,
)
def estimator_exact_targets(run: Run) -> Outcome:
    c = Checker()
    found = _start(run, c)
    if isinstance(found, Outcome):
        return found
    declared = found.declared
    assert declared is not None
    if declared.gamma is None or declared.lmbda is None:
        return c.not_applicable("the estimator declares no gamma or lambda")
    base = declared.variants
    for number, reading in enumerate(found.batches):
        rows = true_rows(run, reading)
        if isinstance(rows, str):
            return c.not_applicable(rows)
        keep = retained(rows, declared.shifted_budget) if declared.shifted else [[True] * len(row) for row in rows]
        kept_rows = [row[: sum(k)] for row, k in zip(rows, keep, strict=True)]
        exact = gae(rows, declared.gamma, declared.lmbda)
        approx = gae(kept_rows, declared.gamma, declared.lmbda, base)
        biases = [
            (approx[i][t][1] - exact[i][t][1], i, t)
            for i, row in enumerate(kept_rows)
            for t in range(len(row))
            if not close(approx[i][t][1], exact[i][t][1])
        ]
        dropped = sum(len(row) for row in rows) - sum(len(row) for row in kept_rows)
        total = sum(len(row) for row in rows)
        parts = []
        if biases:
            worst = max(biases, key=lambda b: abs(b[0]))
            mean = sum(abs(b[0]) for b in biases) / len(biases)
            i, t = worst[1], worst[2]
            parts.append(
                f"value targets biased at {len(biases)} of {total} frames, by up to {abs(worst[0]):.4g} "
                f"(mean |bias| {mean:.4g}), e.g. sub-env {i} step {t} ({rows[i][t].describe()}): "
                f"{approx[i][t][1]:.6g} where the exact target is {exact[i][t][1]:.6g}"
            )
        if dropped:
            parts.append(f"{dropped} of {total} samples dropped (shifted_valid False)")
        approximations = "; ".join(declared.approximations())
        if parts:
            c.approximation(declared.citation(), f"batch {number}: {approximations}: " + "; ".join(parts))
        else:
            c.expect(True, "")
    return c.done()


# --------------------------------------------------------------------------------- systems

_REQUIRES = ("torchrl", "tensordict", "gymnasium")
_CAPS = Capabilities(
    min_envs=1,
    max_envs=3,
    notes=(
        "Box float32 observations and a Discrete action; batches from a Collector over GymWrapper/SerialEnv; "
        "a linear value network of the observation",
    ),
)
GAMMA = 0.9
LMBDA = 0.8

_SHIFTED_KNOWN = (
    "estimator.exact_targets",
    "documented (TorchRL's value estimators, shifted=True): the samples an internal truncation displaces past "
    "T + shifted_budget are masked by shifted_valid, so the returns of the retained ones stop at the last retained sample",
)
_AUTO_RESET_KNOWN = (
    "estimator.exact_targets",
    "documented (torchrl.objectives.value.GAE, auto_reset_env=True): a truncated episode is bootstrapped from "
    "V(s_t) instead of V(final observation)",
)


def _torchrl(class_name: str, **kwargs: Any) -> Callable[[Any], Any]:
    def make(value_network: Any) -> Any:
        import torchrl.objectives.value as value

        return getattr(value, class_name)(value_network=value_network, **kwargs)

    return make


def _register(system_id: str, title: str, factory: Callable[[Any], Any], **kwargs: Any) -> None:
    SYSTEMS.add(
        System(
            id=system_id,
            family=FAMILY_NAME,
            title=title,
            build=_harness(factory),
            source=title,
            requires=_REQUIRES,
            capabilities=_CAPS,
            **kwargs,
        )
    )


for _name, _cls, _kwargs, _known in (
    ("GAE", "GAE", {"gamma": GAMMA, "lmbda": LMBDA}, ()),
    ("GAE.not_vectorized", "GAE", {"gamma": GAMMA, "lmbda": LMBDA, "vectorized": False}, ()),
    ("GAE.shifted", "GAE", {"gamma": GAMMA, "lmbda": LMBDA, "shifted": True}, (_SHIFTED_KNOWN,)),
    (
        "GAE.shifted.not_vectorized",
        "GAE",
        {"gamma": GAMMA, "lmbda": LMBDA, "shifted": True, "vectorized": False},
        (_SHIFTED_KNOWN,),
    ),
    ("GAE.auto_reset_env", "GAE", {"gamma": GAMMA, "lmbda": LMBDA, "auto_reset_env": True}, (_AUTO_RESET_KNOWN,)),
    ("TD0Estimator", "TD0Estimator", {"gamma": GAMMA}, ()),
    ("TD0Estimator.shifted", "TD0Estimator", {"gamma": GAMMA, "shifted": True}, (_SHIFTED_KNOWN,)),
    ("TD1Estimator", "TD1Estimator", {"gamma": GAMMA}, ()),
    ("TDLambdaEstimator", "TDLambdaEstimator", {"gamma": GAMMA, "lmbda": LMBDA}, ()),
    (
        "TDLambdaEstimator.not_vectorized",
        "TDLambdaEstimator",
        {"gamma": GAMMA, "lmbda": LMBDA, "vectorized": False},
        (),
    ),
    (
        "TDLambdaEstimator.shifted",
        "TDLambdaEstimator",
        {"gamma": GAMMA, "lmbda": LMBDA, "shifted": True},
        (_SHIFTED_KNOWN,),
    ),
):
    _args = ", ".join(f"{k}={v!r}" for k, v in _kwargs.items())
    _register(
        f"torchrl.{_name}",
        f"{_cls}(value_network=value_net, {_args})",
        _torchrl(_cls, **_kwargs),
        known_violations=_known,
    )


def _vtrace(value_network: Any) -> Any:
    from torchrl.objectives.value import VTrace

    from rlconform.libraries.torchrl.value_torch import make_actor

    return VTrace(gamma=GAMMA, value_network=value_network, actor_network=make_actor())


# VTrace needs the behaviour policy's log-probabilities: the harness writes its own actor's, so the
# batch is on-policy (every ratio 1) and V-trace's targets are the lambda = 1 returns
_register(
    "torchrl.VTrace",
    f"VTrace(gamma={GAMMA}, value_network=value_net, actor_network=actor), on-policy (behaviour = actor)",
    _vtrace,
)


def _functional(vectorized: bool, pass_terminated: bool = True) -> Callable[[Any], Any]:
    def make(value_network: Any) -> Any:
        from rlconform.libraries.torchrl.value_torch import FunctionalGAE

        return FunctionalGAE(
            gamma=GAMMA,
            lmbda=LMBDA,
            value_network=value_network,
            vectorized=vectorized,
            pass_terminated=pass_terminated,
        )

    return make


#: the functional API takes ``terminated`` to be ``done`` when it is left out (its docstring)
_TERMINATED_OMITTED_KNOWN = tuple(
    (
        spec_id,
        "documented (torchrl.objectives.value.functional, generalized_advantage_estimate: terminated "
        "'Defaults to done if not provided'): a time-out is then not bootstrapped",
    )
    for spec_id in ("estimator.advantage", "estimator.value_target")
)
_FUNCTIONAL_CALL = "(gamma, lmbda, V(obs), V(next obs), reward, done{terminated})"
for _fn, _vectorized in (("generalized_advantage_estimate", False), ("vec_generalized_advantage_estimate", True)):
    _register(
        f"torchrl.functional.{_fn}",
        f"torchrl.objectives.value.functional.{_fn}{_FUNCTIONAL_CALL.format(terminated=', terminated')}",
        _functional(_vectorized),
    )
_register(
    "torchrl.functional.vec_generalized_advantage_estimate.terminated_omitted",
    "torchrl.objectives.value.functional.vec_generalized_advantage_estimate"
    f"{_FUNCTIONAL_CALL.format(terminated='')}: terminated left out, so taken to be done",
    _functional(True, pass_terminated=False),
    known_violations=_TERMINATED_OMITTED_KNOWN,
)


def _own(defect: str = "", dtype: str = "float32") -> Callable[[Any], Any]:
    def make(value_network: Any) -> Any:
        import torch

        from rlconform.libraries.torchrl.value_torch import PlainGAE

        return PlainGAE(
            gamma=GAMMA, lmbda=LMBDA, value_network=value_network, defect=defect, dtype=getattr(torch, dtype)
        )

    return make


_register(
    "reference.torchrl.ValueEstimator",
    f"PlainGAE(gamma={GAMMA}, lmbda={LMBDA}): GAE as a loop over each sub-env's frames",
    _own(),
    kind="reference",
)
_register(
    "reference.torchrl.ValueEstimator.float64",
    f"PlainGAE(gamma={GAMMA}, lmbda={LMBDA}) computing in float64 (an innocent variant)",
    _own(dtype="float64"),
    kind="reference",
)

#: planted bug -> (what it does, the exact specs it fails)
PLANTS: dict[str, tuple[str, tuple[str, ...]]] = {
    "bootstraps_terminations": ("adds gamma * V(terminal observation) at a termination", ()),
    "done_as_terminated": ("reads done as terminated: a time-out is not bootstrapped", ()),
    "ignores_done": ("runs the trace on across episode ends", ("estimator.no_cross_episode",)),
    "mixes_sub_envs": ("flattens the [envs, time] batch into one sequence", ("estimator.no_cross_env",)),
    "lambda_without_gamma": ("decays the trace by lambda where gamma*lambda is due", ()),
}
for _defect, (_what, _extra) in PLANTS.items():
    _register(
        f"planted.torchrl.ValueEstimator.{''.join(p.title() for p in _defect.split('_'))}",
        f"PlainGAE that {_what}",
        _own(_defect),
        kind="planted",
        plants=("estimator.advantage", "estimator.value_target", *_extra),
    )

# a user's own estimator that takes TorchRL's documented approximation (a time-out bootstrapped
# from V(s_t)) and declares it: its targets follow the approximation exactly, and
# estimator.exact_targets reports the bias
_register(
    "planted.torchrl.ValueEstimator.ValueAtTruncation",
    "PlainGAE that bootstraps a time-out from V(s_t) and declares auto_reset_env=True",
    _own("value_at_truncation"),
    kind="planted",
    plants=("estimator.exact_targets",),
)

#: the exact specs each planted bug fails (tests/specs/test_specificity.py)
MUST_FAIL: dict[str, frozenset[str]] = {
    f"planted.torchrl.ValueEstimator.{''.join(p.title() for p in _defect.split('_'))}": frozenset(
        ("estimator.advantage", "estimator.value_target", *_extra)
    )
    for _defect, (_what, _extra) in PLANTS.items()
} | {"planted.torchrl.ValueEstimator.ValueAtTruncation": frozenset(("estimator.exact_targets",))}
