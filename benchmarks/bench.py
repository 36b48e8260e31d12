"""rlconform's benchmark: what recording and checking cost, and how fast planted bugs are found.

Run ``python benchmarks/bench.py [--quick] [--json FILE]``. Performance is measured here, never
by timed tests. The machine is shared and noisy, so every figure that compares two things is a
ratio of two measurements taken back to back in the same process, and every figure is the median
over repeats.

Part 1, overhead. One fixed, deterministic case (Box float32 observations, Discrete(3) actions,
episode plans of lengths 3-9, one seeded reset then a few hundred steps with fixed actions, no
partial resets) is run on each benchmarked system three ways:

- raw: the system built with ``system.build`` around the same reference env factories and log
  sinks rlconform uses, then reset/step called in a plain loop, then close;
- recorded: what :func:`rlconform.core.runner.execute` does (``LiveRun`` construction, the apply loop,
  ``finish``), with construction timed separately, as the raw build is;
- recorded + checked: the same plus ``spec.check(run)`` of every applicable spec; and, as its own
  column, with the reference model's run (``execute(model, case, with_model=False)``) attached
  before the checks, as the search does.

Part 2, planted bugs. For every planted system and each spec it must be caught by: (a) a
generation-only Hypothesis search (no shrinking), counting examples and time until the spec first
reports a violation; (b) the full ``check_spec(system, spec, "ci")``: total examples (generation +
shrinking), time, the size of the shrunk case, and where in that search the first violation came.
Each measurement uses a fresh ``RunCache``.

Part 3, Isaac Lab. What the :class:`~rlconform.libraries.isaaclab.monitor.ContractMonitor` costs per step of
a torch-vectorized env at Isaac Lab's scale: one ``BatchStampEnv`` (Isaac Lab's own
``DirectRLEnv.step``/``reset`` over a fake simulator, ``compute_final_obs=True``) per device and
sub-env count (64, 1024, 4096; cpu, and cuda when torch sees a device), stepped with pre-generated
actions (a) raw, (b) with the monitor attached (generic checks) and (c) with the monitor and the
exact ``BatchStampModel``. Each round runs the three back to back; ratios are per round, then the
median. Without isaaclab the section says it was not run, and why.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime as dt
import gc
import importlib
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

# rlconform and the libraries are imported inside the functions, not here: worker processes
# started with the "forkserver" or "spawn" method (SB3's SubprocVecEnv default) re-import the main
# module, and heavy imports here would inflate every worker start-up the benchmark measures.
if TYPE_CHECKING:
    from hypothesis import settings

    from rlconform.core.runner import RunCache
    from rlconform.core.spec import Spec
    from rlconform.core.system import System
    from rlconform.core.verdict import Verdict
    from rlconform.envs.plan import Case

OVERHEAD_SYSTEMS = (
    "gymnasium.SyncVectorEnv.NextStep",
    "gymnasium.SyncVectorEnv.SameStep",
    "gymnasium.AsyncVectorEnv.NextStep",
    "sb3.DummyVecEnv",
    "sb3.SubprocVecEnv",
    "gymnasium.Env.make",
)
#: sub-envs of the vector systems (single-env systems take one)
NUM_ENVS = 4
STEPS = 200
SEED = 1234
PROFILE = "ci"
#: how many of the slowest specs each system's check-time line names
SLOWEST_SPECS = 5
#: part 3: sub-envs of the Isaac Lab env, its timed and warm-up steps, and the modes of each round
ISAACLAB_NUM_ENVS = (64, 1024, 4096)
ISAACLAB_STEPS = 200
ISAACLAB_WARMUP = 5
ISAACLAB_MODES = ("raw", "monitor", "model")


# ------------------------------------------------------------------------------------ utilities


def _median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def _fmt_ms(seconds: float) -> str:
    return f"{seconds * 1e3:.1f}"


def _clock() -> float:
    return time.perf_counter()


def _quiet_gc() -> None:
    """Collect now, so that a collection triggered by the previous measurement's garbage does not
    land inside the next timed region."""
    gc.collect()


# --------------------------------------------------------------------------- the benchmark case


def bench_case(num_envs: int, steps: int = STEPS) -> Case:
    """The fixed case: one seeded reset, then ``steps`` agent steps with fixed actions."""
    from rlconform.envs.plan import Case, Reset, Step
    from rlconform.envs.script import EnvScript, EpisodePlan
    from rlconform.envs.spaces import BoxObs, DiscreteAction

    script = EnvScript(
        obs=BoxObs(dtype="float32", shape=(5,)),
        action=DiscreteAction(n=3),
        episodes=(
            EpisodePlan(3, "terminated"),
            EpisodePlan(7, "truncated"),
            EpisodePlan(5, "both"),
            EpisodePlan(9, "terminated"),
            EpisodePlan(4, "truncated"),
        ),
        env_stride=1,
    )
    ops: list[Reset | Step] = [Reset(seed=SEED)]
    for t in range(steps):
        ops.append(Step(tuple((t * 7 + i * 5 + t // 3) % 3 for i in range(num_envs))))
    return Case(script, num_envs, tuple(ops))


def num_envs_for(system: System) -> int:
    """One env for single-env systems, else ``NUM_ENVS``: the same batch for every vector system,
    even where the search's capabilities cap the sub-envs lower to save time (worker systems)."""
    return 1 if system.capabilities.max_envs == 1 else max(NUM_ENVS, system.capabilities.min_envs)


def raw_loop(system: System, case: Case) -> Callable[[Any], None]:
    """The plain loop a caller would write for ``case`` on ``system``'s API family. Actions are
    converted to the objects the library takes beforehand, as a policy would hand them over."""
    from rlconform.envs.plan import Reset, Step
    from rlconform.envs.spaces import batch_actions
    from rlconform.libraries.gymnasium.env_family import single_action

    first = case.ops[0]
    assert isinstance(first, Reset) and first.mask is None
    seed = first.seed
    steps = [op for op in case.ops[1:] if isinstance(op, Step)]
    if len(steps) != len(case.ops) - 1:
        raise ValueError("the raw loop drives one reset followed by steps only")
    spec = case.script.action

    if system.family == "gymnasium.Env":
        actions = [single_action(spec, op.actions[0]) for op in steps]

        def single_loop(env: Any) -> None:
            env.reset(seed=seed)
            for action in actions:
                _, _, terminated, truncated, _ = env.step(action)
                if terminated or truncated:
                    env.reset()

        return single_loop

    batches = [batch_actions(spec, op.actions) for op in steps]
    if system.family == "gymnasium.vector":

        def vector_loop(envs: Any) -> None:
            envs.reset(seed=seed)
            for batch in batches:
                envs.step(batch)

        return vector_loop

    if system.family == "sb3.VecEnv":

        def sb3_loop(venv: Any) -> None:
            venv.seed(seed)
            venv.reset()
            for batch in batches:
                venv.step(batch)

        return sb3_loop

    raise ValueError(f"no raw loop for family {system.family}")


# ------------------------------------------------------------------------------------ part 1


@dataclass
class OverheadSample:
    """One repeat on one system; all times in seconds."""

    raw_build: float
    raw_loop: float
    raw_close: float
    rec_build: float
    rec_loop: float
    rec_finish: float
    model: float
    checks: dict[str, float]
    checks_with_model: dict[str, float]
    calls: int
    violations: dict[str, int]

    @property
    def raw(self) -> float:
        return self.raw_loop + self.raw_close

    @property
    def recorded(self) -> float:
        return self.rec_loop + self.rec_finish

    @property
    def checked(self) -> float:
        return self.recorded + sum(self.checks.values())

    @property
    def checked_with_model(self) -> float:
        return self.recorded + self.model + sum(self.checks_with_model.values())


@dataclass
class OverheadResult:
    system: str
    num_envs: int
    agent_steps: int
    specs: list[str]
    samples: list[OverheadSample] = field(default_factory=list)
    model: str | None = None
    skipped: str | None = None

    def summary(self) -> dict[str, Any]:
        s = self.samples
        if not s:
            return {}
        raw_loop = _median([x.raw_loop for x in s])
        checks = {sid: _median([x.checks_with_model[sid] for x in s]) for sid in self.specs}
        return {
            "raw_steps_per_s": self.agent_steps / raw_loop,
            "raw_env_steps_per_s": self.agent_steps * self.num_envs / raw_loop,
            "raw_build_s": _median([x.raw_build for x in s]),
            "raw_loop_s": raw_loop,
            "raw_close_s": _median([x.raw_close for x in s]),
            "rec_build_s": _median([x.rec_build for x in s]),
            "rec_loop_s": _median([x.rec_loop for x in s]),
            "rec_finish_s": _median([x.rec_finish for x in s]),
            "model_s": _median([x.model for x in s]),
            "checks_s": _median([sum(x.checks.values()) for x in s]),
            "checks_with_model_s": _median([sum(x.checks_with_model.values()) for x in s]),
            # ratios per repeat (raw and recorded measured back to back), then the median
            "recorded_over_raw": _median([x.recorded / x.raw for x in s]),
            "checked_over_raw": _median([x.checked / x.raw for x in s]),
            "checked_with_model_over_raw": _median([x.checked_with_model / x.raw for x in s]),
            "loop_over_raw_loop": _median([x.rec_loop / x.raw_loop for x in s]),
            "check_s_by_spec": dict(sorted(checks.items(), key=lambda kv: -kv[1])),
            "calls": s[-1].calls,
            "violations": s[-1].violations,
        }


def measure_raw(system: System, case: Case, loop: Callable[[Any], None]) -> tuple[float, float, float]:
    from rlconform.envs.driver import _sinks, env_fns_for

    log_dir = Path(tempfile.mkdtemp(prefix="rlconform-bench-")) if system.out_of_process else None
    try:
        sinks = _sinks(system, case.num_envs, log_dir)
        env_fns = env_fns_for(case, sinks)
        _quiet_gc()
        t0 = _clock()
        obj = system.build(env_fns)
        t1 = _clock()
        loop(obj)
        t2 = _clock()
        obj.close()
        t3 = _clock()
    finally:
        if log_dir is not None:
            shutil.rmtree(log_dir, ignore_errors=True)
    return t1 - t0, t2 - t1, t3 - t2


def measure_recorded(system: System, case: Case, specs: Sequence[Spec]) -> tuple[OverheadSample, str | None]:
    """What ``execute(system, case, with_model=False)`` does, phase by phase, then the checks
    without and with the model run attached. Returns the sample (raw fields zero) and the model id."""
    from rlconform.core.runner import execute
    from rlconform.core.system import get_system
    from rlconform.envs.driver import LiveRun

    _quiet_gc()
    t0 = _clock()
    live = LiveRun(system, case)
    t1 = _clock()
    if not live.built:
        raise RuntimeError(f"{system.id} could not be built: {live.run.build_error}")
    model_id = live.model_id()
    for op in case.ops:
        live.apply(op)
        if live.driver.aborted:
            break
    t2 = _clock()
    run = live.finish()
    t3 = _clock()
    if live.driver.aborted:
        raise RuntimeError(f"{system.id}: a call hung during the benchmark case")

    checks: dict[str, float] = {}
    for spec in specs:
        start = _clock()
        spec.check(run)
        checks[spec.id] = _clock() - start

    model_seconds = 0.0
    if model_id is not None:
        start = _clock()
        model_run = execute(get_system(model_id), case, with_model=False)
        model_seconds = _clock() - start
        run.model = model_run
        run.model_id = model_id
    checks_with_model: dict[str, float] = {}
    violations: dict[str, int] = {}
    for spec in specs:
        start = _clock()
        outcome = spec.check(run)
        checks_with_model[spec.id] = _clock() - start
        if outcome.violations:
            violations[spec.id] = len(outcome.violations)
    sample = OverheadSample(
        raw_build=0.0,
        raw_loop=0.0,
        raw_close=0.0,
        rec_build=t1 - t0,
        rec_loop=t2 - t1,
        rec_finish=t3 - t2,
        model=model_seconds,
        checks=checks,
        checks_with_model=checks_with_model,
        calls=len(run.calls),
        violations=violations,
    )
    return sample, model_id


def bench_overhead(repeats: int, steps: int, log: Callable[[str], None]) -> list[OverheadResult]:
    from rlconform.core.runner import execute
    from rlconform.core.spec import all_specs
    from rlconform.core.system import UnknownSystemError, get_system

    results: list[OverheadResult] = []
    plans: list[tuple[System, Case, Callable[[Any], None], list[Spec], OverheadResult]] = []
    for system_id in OVERHEAD_SYSTEMS:
        try:
            system = get_system(system_id)
        except UnknownSystemError:
            results.append(OverheadResult(system_id, 0, 0, [], skipped="not registered"))
            continue
        missing = system.missing_requirements()
        if missing:
            results.append(OverheadResult(system_id, 0, 0, [], skipped=f"not installed: {', '.join(missing)}"))
            continue
        case = bench_case(num_envs_for(system), steps)
        specs = [spec for spec in all_specs() if spec.not_applicable_reason(system) is None]
        result = OverheadResult(system_id, case.num_envs, case.agent_steps, [spec.id for spec in specs])
        results.append(result)
        plans.append((system, case, raw_loop(system, case), specs, result))

    # one untimed round first: imports (torch for SB3), worker start-up paths, caches; and a check
    # that the phase-by-phase measurement makes exactly the calls execute() makes
    for system, case, loop, specs, result in plans:
        try:
            measure_raw(system, case, loop)
            sample, result.model = measure_recorded(system, case, specs)
            reference = execute(system, case, with_model=False)
            if len(reference.calls) != sample.calls:
                raise RuntimeError(
                    f"execute() made {len(reference.calls)} calls, the measured loop {sample.calls}: "
                    "bench.measure_recorded no longer mirrors rlconform.core.runner.execute"
                )
        except Exception as exc:
            result.skipped = f"{type(exc).__name__}: {exc}"
            log(f"  {system.id}: skipped ({result.skipped.splitlines()[0]})")
    # repeats interleave the systems, and raw and recorded run back to back in each repeat
    for rep in range(repeats):
        for system, case, loop, specs, result in plans:
            if result.skipped:
                continue
            raw_build, raw_loop_s, raw_close = measure_raw(system, case, loop)
            sample, _ = measure_recorded(system, case, specs)
            sample.raw_build, sample.raw_loop, sample.raw_close = raw_build, raw_loop_s, raw_close
            result.samples.append(sample)
        log(f"  overhead repeat {rep + 1}/{repeats} done")
    return results


def render_overhead(results: Sequence[OverheadResult], repeats: int) -> list[str]:
    lines = [
        f"## 1. Overhead of recording + checking vs raw stepping (median of {repeats} repeats)",
        "",
        "raw = the plain reset/step loop + close; rec = LiveRun apply loop + finish (close, logs, truth, recipe);",
        "+chk = rec + every applicable spec's check; +model+chk = rec + the reference model's run + checks.",
        "Build times are excluded from the ratios and shown separately. Ratios are per agent step",
        "(same steps on both sides), computed per repeat and then the median taken.",
        "",
    ]
    head = (
        f"{'system':36} {'envs':>4} {'steps':>5} {'raw steps/s':>11} {'raw build ms':>12} {'rec build ms':>12} "
        f"{'rec/raw':>8} {'+chk/raw':>9} {'+model+chk/raw':>14}"
    )
    lines += [head, "-" * len(head)]
    for r in results:
        if r.skipped or not r.samples:
            lines.append(f"{r.system:36} skipped: {(r.skipped or 'no samples').splitlines()[0]}")
            continue
        s = r.summary()
        lines.append(
            f"{r.system:36} {r.num_envs:>4} {r.agent_steps:>5} {s['raw_steps_per_s']:>11.0f} "
            f"{_fmt_ms(s['raw_build_s']):>12} {_fmt_ms(s['rec_build_s']):>12} "
            f"{s['recorded_over_raw']:>7.1f}x {s['checked_over_raw']:>8.1f}x {s['checked_with_model_over_raw']:>13.1f}x"
        )
    lines += ["", "Where the recorded time goes (median ms): loop / finish / model run / checks (with model)"]
    for r in results:
        if r.skipped or not r.samples:
            continue
        s = r.summary()
        lines.append(
            f"  {r.system:36} raw {_fmt_ms(s['raw_loop_s'])} + close {_fmt_ms(s['raw_close_s'])}  |  "
            f"rec loop {_fmt_ms(s['rec_loop_s'])} ({s['loop_over_raw_loop']:.1f}x raw loop), "
            f"finish {_fmt_ms(s['rec_finish_s'])}, model {_fmt_ms(s['model_s'])} ({r.model or 'none'}), "
            f"checks {_fmt_ms(s['checks_s'])} / {_fmt_ms(s['checks_with_model_s'])}"
        )
    lines += ["", f"Check time by spec, slowest {SLOWEST_SPECS} (median ms, with the model run attached)"]
    for r in results:
        if r.skipped or not r.samples:
            continue
        s = r.summary()
        slow = list(s["check_s_by_spec"].items())[:SLOWEST_SPECS]
        total = s["checks_with_model_s"]
        lines.append(
            f"  {r.system:36} "
            + ", ".join(f"{sid} {_fmt_ms(sec)}" for sid, sec in slow)
            + f"  (all {len(r.specs)} specs: {_fmt_ms(total)})"
        )
    flagged = [(r.system, r.summary()["violations"]) for r in results if r.samples and r.summary()["violations"]]
    if flagged:
        lines += ["", "Violations reported on the benchmark case (the case is meant to be clean):"]
        lines += [f"  {system}: {violations}" for system, violations in flagged]
    return lines


# ------------------------------------------------------------------------------------ part 2


class _Found(Exception):
    """Raised inside the generation-only search at a violation: stop at the first one."""


@dataclass
class PlantedSample:
    gen_found: bool
    gen_examples: int
    gen_seconds: float
    gen_total_seconds: float
    full_status: str
    full_examples: int
    full_seconds: float
    full_executions: int
    full_first_examples: int | None
    full_first_seconds: float | None
    shrunk: dict[str, Any]
    error: str | None = None


@dataclass
class PlantedResult:
    system: str
    spec: str
    budget: int
    samples: list[PlantedSample] = field(default_factory=list)
    skipped: str | None = None

    def summary(self) -> dict[str, Any]:
        s = self.samples
        if not s:
            return {}
        last = s[-1]
        return {
            "budget": self.budget,
            "gen_found": last.gen_found,
            "gen_examples": last.gen_examples,
            "gen_seconds": _median([x.gen_seconds for x in s]),
            "full_status": last.full_status,
            "full_examples": last.full_examples,
            "full_executions": last.full_executions,
            "full_seconds": _median([x.full_seconds for x in s]),
            "full_first_examples": last.full_first_examples,
            "full_first_seconds": _median([x.full_first_seconds for x in s if x.full_first_seconds is not None]),
            "shrunk": last.shrunk,
            "deterministic": all(
                (x.gen_examples, x.full_examples, x.shrunk) == (last.gen_examples, last.full_examples, last.shrunk)
                for x in s
            ),
            "error": last.error,
        }


def counting_cache() -> tuple[RunCache, Callable[[], int]]:
    """A fresh :class:`~rlconform.core.runner.RunCache` and a function giving how many lookups (one per
    example) it has served."""
    from rlconform.core.runner import RunCache

    class CountingCache(RunCache):
        lookups = 0

        def get(self, system: System, case: Any) -> Any:
            self.lookups += 1
            return super().get(system, case)

    cache = CountingCache()
    return cache, lambda: cache.lookups


def case_size(case: Any) -> dict[str, Any]:
    from rlconform.envs.plan import Case

    if case is None:
        return {}
    if isinstance(case, Case):
        return {
            "ops": len(case.ops),
            "agent_steps": case.agent_steps,
            "num_envs": case.num_envs,
            "episode_plans": len(case.script.episodes),
        }
    return {"repr": repr(case)}


def describe_size(size: dict[str, Any]) -> str:
    if not size:
        return "-"
    if "repr" in size:
        return str(size["repr"])
    return f"{size['ops']} ops, {size['agent_steps']} steps, {size['num_envs']} envs, {size['episode_plans']} plans"


def generation_only(system: System, spec: Spec, budget_settings: settings) -> tuple[bool, int, float, float]:
    """Examples and seconds until ``spec`` first reports a violation, generating without shrinking."""
    from hypothesis import Phase, given, settings

    from rlconform.core.search import strategy_for

    cache, lookups = counting_cache()
    found_at: list[tuple[int, float]] = []
    start = _clock()

    def prop(case: Any) -> None:
        run = cache.get(system, case)
        if run.build_error is not None:
            return
        outcome = spec.check(run)
        if outcome.violations:
            if not found_at:
                found_at.append((lookups(), _clock() - start))
            raise _Found

    test = given(strategy_for(system, spec))(prop)
    test = settings(
        budget_settings, phases=[Phase.generate], derandomize=True, database=None, deadline=None, print_blob=False
    )(test)
    with contextlib.suppress(_Found):
        test()
    total = _clock() - start
    if found_at:
        return True, found_at[0][0], found_at[0][1], total
    return False, lookups(), total, total


def full_search(system: System, spec: Spec) -> tuple[Verdict, int, int, int | None, float | None, float]:
    """``check_spec(system, spec, "ci")`` with a fresh cache; the spec's check is wrapped (same id,
    same function) only to note where in the search the first violation came."""
    from rlconform.core.search import check_spec

    cache, lookups = counting_cache()
    first: list[tuple[int, float]] = []
    start = _clock()
    check = spec.check

    def watched(run: Any) -> Any:
        outcome = check(run)
        if outcome.violations and not first:
            first.append((lookups(), _clock() - start))
        return outcome

    verdict = check_spec(system, dataclasses.replace(spec, check=watched), PROFILE, cache=cache)
    seconds = _clock() - start
    first_examples = first[0][0] if first else None
    first_seconds = first[0][1] if first else None
    return verdict, lookups(), cache.misses, first_examples, first_seconds, seconds


def bench_planted(repeats: int, log: Callable[[str], None]) -> list[PlantedResult]:
    from rlconform.core.profiles import get_profile, hypothesis_settings
    from rlconform.core.spec import get_spec
    from rlconform.core.system import all_systems

    profile = get_profile(PROFILE)
    results: list[PlantedResult] = []
    runnable: list[tuple[System, Spec, settings, PlantedResult]] = []
    for system in all_systems():
        if system.kind != "planted":
            continue
        for spec_id in system.plants:
            try:
                spec = get_spec(spec_id)
            except KeyError:
                results.append(PlantedResult(system.id, spec_id, 0, skipped="unknown spec"))
                continue
            expensive = system.out_of_process or spec.expensive
            result = PlantedResult(system.id, spec_id, profile.examples_for(expensive))
            results.append(result)
            reason = spec.not_applicable_reason(system)
            missing = system.missing_requirements()
            if reason is not None or missing:
                result.skipped = reason or f"not installed: {', '.join(missing)}"
                continue
            runnable.append((system, spec, hypothesis_settings(profile, expensive), result))

    if runnable:
        # untimed: the first search pays one-time costs (imports, Hypothesis' engine, the models)
        system, spec, base, _ = runnable[0]
        generation_only(system, spec, base)
    for system, spec, base, result in runnable:
        for _ in range(repeats):
            _quiet_gc()
            try:
                found, gen_examples, gen_seconds, gen_total = generation_only(system, spec, base)
                _quiet_gc()
                verdict, _lookups, misses, first_ex, first_s, seconds = full_search(system, spec)
            except Exception as exc:
                result.samples.append(
                    PlantedSample(False, 0, 0.0, 0.0, "error", 0, 0.0, 0, None, None, {}, error=repr(exc))
                )
                log(f"  {system.id} / {spec.id}: {traceback.format_exc(limit=3)}")
                break
            result.samples.append(
                PlantedSample(
                    gen_found=found,
                    gen_examples=gen_examples,
                    gen_seconds=gen_seconds,
                    gen_total_seconds=gen_total,
                    full_status=verdict.status,
                    full_examples=verdict.examples,
                    full_seconds=seconds,
                    full_executions=misses,
                    full_first_examples=first_ex,
                    full_first_seconds=first_s,
                    shrunk=case_size(verdict.case),
                    error=verdict.message.splitlines()[0] if verdict.status == "error" else None,
                )
            )
        log(f"  planted {system.id} / {spec.id} done")
    return results


def render_planted(results: Sequence[PlantedResult], repeats: int) -> list[str]:
    lines = [
        f"## 2. Planted bugs: examples and time to the first failure and to the shrunk reproducer "
        f"(profile {PROFILE}; times are medians of {repeats})",
        "",
        "gen = Hypothesis generate phase only (derandomized, no shrinking), stopped at the first violation;",
        "full = check_spec(system, spec, 'ci'): examples = generation + shrinking, runs = cache misses",
        "(executions); 1st = where the first violation came inside that full search.",
        "",
    ]
    head = (
        f"{'planted system':40} {'spec':32} {'budget':>6} {'gen ex':>6} {'gen ms':>8} "
        f"{'verdict':>7} {'1st ex':>6} {'1st ms':>8} {'full ex':>7} {'runs':>5} {'full ms':>8}  shrunk case"
    )
    lines += [head, "-" * len(head)]
    for r in results:
        name = r.system.removeprefix("planted.")
        if r.skipped or not r.samples:
            lines.append(f"{name:40} {r.spec:32} skipped: {r.skipped or 'no samples'}")
            continue
        s = r.summary()
        gen_ex = str(s["gen_examples"]) if s["gen_found"] else f">{s['gen_examples']}"
        first_ex = "-" if s["full_first_examples"] is None else str(s["full_first_examples"])
        first_ms = "-" if s["full_first_examples"] is None else _fmt_ms(s["full_first_seconds"])
        lines.append(
            f"{name:40} {r.spec:32} {s['budget']:>6} {gen_ex:>6} {_fmt_ms(s['gen_seconds']):>8} "
            f"{s['full_status']:>7} {first_ex:>6} {first_ms:>8} {s['full_examples']:>7} {s['full_executions']:>5} "
            f"{_fmt_ms(s['full_seconds']):>8}  {describe_size(s['shrunk'])}"
        )
    done = [r.summary() for r in results if r.samples]
    if done:
        gen = [s["gen_examples"] for s in done if s["gen_found"]]
        lines += [
            "",
            f"{len(done)} searches; found by generation alone in {len(gen)}; "
            f"median examples to first failure {_median(gen):.0f} (max {max(gen, default=0)}); "
            f"median full-search time {_fmt_ms(_median([s['full_seconds'] for s in done]))} ms; "
            f"verdicts: {', '.join(f'{k} {v}' for k, v in sorted(_count([s['full_status'] for s in done]).items()))}",
        ]
        odd = [
            (r, r.summary())
            for r in results
            if r.samples
            and (
                r.summary()["full_status"] != "fail"
                or not r.summary()["gen_found"]
                or not r.summary()["deterministic"]
                or r.summary()["error"]
            )
        ]
        if odd:
            lines += ["", "Oddities:"]
            for r, s in odd:
                why = []
                if s["full_status"] != "fail":
                    why.append(f"check_spec verdict {s['full_status']} (expected fail)")
                if not s["gen_found"]:
                    why.append(f"generation alone found nothing in {s['gen_examples']} examples")
                if not s["deterministic"]:
                    why.append("examples or shrunk case differ between repeats")
                if s["error"]:
                    why.append(str(s["error"]))
                lines.append(f"  {r.system} / {r.spec}: {'; '.join(why)}")
    return lines


def _count(items: Sequence[str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for item in items:
        counts[item] = counts.get(item, 0) + 1
    return counts


# ------------------------------------------------------------------------------------ part 3


@dataclass
class IsaacLabSample:
    """One round on one (device, sub-envs): seconds per step of each mode, measured back to back."""

    raw: float
    monitor: float
    model: float


@dataclass
class IsaacLabResult:
    device: str
    num_envs: int
    steps: int
    samples: list[IsaacLabSample] = field(default_factory=list)
    #: violations the monitor reported in the last round, by spec (generic / with the exact model)
    violations: dict[str, int] = field(default_factory=dict)
    violations_with_model: dict[str, int] = field(default_factory=dict)
    skipped: str | None = None

    def summary(self) -> dict[str, Any]:
        s = self.samples
        if not s:
            return {}
        raw = _median([x.raw for x in s])
        monitor = _median([x.monitor for x in s])
        model = _median([x.model for x in s])
        return {
            "raw_s_per_step": raw,
            "monitor_s_per_step": monitor,
            "model_s_per_step": model,
            "raw_env_steps_per_s": self.num_envs / raw,
            "monitor_env_steps_per_s": self.num_envs / monitor,
            "model_env_steps_per_s": self.num_envs / model,
            # ratios per round (the three modes measured back to back), then the median
            "monitor_over_raw": _median([x.monitor / x.raw for x in s]),
            "model_over_raw": _median([x.model / x.raw for x in s]),
        }


def isaaclab_unavailable() -> str | None:
    """Why the Isaac Lab section cannot run here (None when it can)."""
    try:
        # the fixture module checks the installed isaaclab release on import
        importlib.import_module("rlconform.libraries.isaaclab.batch_env")
        importlib.import_module("rlconform.libraries.isaaclab.monitor")
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


def measure_isaaclab(env: Any, mode: str, warmup: Sequence[Any], batches: Sequence[Any]) -> tuple[float, Any]:
    """Seconds per step of ``env.step`` over ``batches`` after ``reset(seed=0)`` and ``warmup``
    steps; ``mode`` is raw, monitor (generic checks) or model (monitor + exact model). Returns the
    time and the monitor (detached), None for raw."""
    import torch

    from rlconform.libraries.isaaclab.batch_env import BatchStampModel
    from rlconform.libraries.isaaclab.monitor import ContractMonitor

    cuda = torch.device(env.device).type == "cuda"
    monitor = None
    if mode != "raw":
        monitor = ContractMonitor(env, model=BatchStampModel.for_env(env) if mode == "model" else None)
    try:
        env.reset(seed=0)
        for batch in warmup:
            env.step(batch)
        _quiet_gc()
        if cuda:
            torch.cuda.synchronize()
        start = _clock()
        for batch in batches:
            env.step(batch)
        if cuda:
            torch.cuda.synchronize()
        seconds = (_clock() - start) / len(batches)
    finally:
        if monitor is not None:
            monitor.detach()
    # the taps are gone: the next raw measurement steps the env's own methods
    assert "step" not in env.__dict__ and "_pre_physics_step" not in env.__dict__
    return seconds, monitor


def bench_isaaclab(rounds: int, steps: int, log: Callable[[str], None]) -> tuple[list[IsaacLabResult], list[str]]:
    """Every (device, sub-envs) of :data:`ISAACLAB_NUM_ENVS` on cpu and, when there is one, cuda.
    Returns the results and notes on what was not measured."""
    import torch

    from rlconform.libraries.isaaclab.batch_env import make_batch_stamp_env
    from rlconform.libraries.isaaclab.torch_run import TorchCase, actions

    devices = ["cpu"]
    notes: list[str] = []
    if torch.cuda.is_available():
        devices.append("cuda")
    else:
        notes.append("cuda: not measured (no CUDA device)")
    results: list[IsaacLabResult] = []
    case = TorchCase(seed=0, action_seed=SEED, steps=ISAACLAB_WARMUP + steps)
    for device in devices:
        for num_envs in ISAACLAB_NUM_ENVS:
            result = IsaacLabResult(device, num_envs, steps)
            results.append(result)
            try:
                env = make_batch_stamp_env(num_envs, device, compute_final_obs=True)
            except Exception as exc:
                result.skipped = f"{type(exc).__name__}: {exc}"
                log(f"  isaaclab {device} x{num_envs}: skipped ({result.skipped.splitlines()[0]})")
                continue
            try:
                env.log_actions = False
                generator = torch.Generator().manual_seed(case.action_seed)
                batches = [actions(env, case, generator) for _ in range(case.steps)]
                warmup, timed = batches[:ISAACLAB_WARMUP], batches[ISAACLAB_WARMUP:]
                # one untimed round first: first-call costs (allocator, kernels, CUDA context)
                for mode in ISAACLAB_MODES:
                    measure_isaaclab(env, mode, warmup, timed)
                for _ in range(rounds):
                    times: dict[str, float] = {}
                    for mode in ISAACLAB_MODES:
                        times[mode], monitor = measure_isaaclab(env, mode, warmup, timed)
                        if mode == "monitor":
                            result.violations = dict(monitor.counts)
                        elif mode == "model":
                            result.violations_with_model = dict(monitor.counts)
                    result.samples.append(IsaacLabSample(times["raw"], times["monitor"], times["model"]))
            except Exception as exc:
                result.skipped = f"{type(exc).__name__}: {exc}"
                log(f"  isaaclab {device} x{num_envs}: {traceback.format_exc(limit=3)}")
            finally:
                env.close()
            log(f"  isaaclab {device} x{num_envs} done")
    return results, notes


def render_isaaclab(results: Sequence[IsaacLabResult], notes: Sequence[str], rounds: int, steps: int) -> list[str]:
    lines = [
        f"## 3. Isaac Lab: ContractMonitor overhead vs raw stepping (median of {rounds} rounds)",
        "",
        "BatchStampEnv (Isaac Lab's real DirectRLEnv.step/reset over a fake simulator, compute_final_obs=True),",
        f"reset(seed=0) + {ISAACLAB_WARMUP} warm-up steps, then {steps} timed steps with pre-generated actions;",
        "raw = env.step; +mon = ContractMonitor attached (generic checks); +mon+model = with BatchStampModel",
        "(exact checks). The three run back to back in each round; ratios per round, then the median.",
        "",
    ]
    head = (
        f"{'device':6} {'envs':>5} {'raw ms/step':>11} {'+mon/raw':>9} {'+mon+model/raw':>14} "
        f"{'raw env-steps/s':>15} {'+mon env-steps/s':>16} {'+mon+model env-steps/s':>22}"
    )
    lines += [head, "-" * len(head)]
    for r in results:
        if r.skipped or not r.samples:
            lines.append(f"{r.device:6} {r.num_envs:>5} skipped: {(r.skipped or 'no samples').splitlines()[0]}")
            continue
        s = r.summary()
        lines.append(
            f"{r.device:6} {r.num_envs:>5} {s['raw_s_per_step'] * 1e3:>11.3f} {s['monitor_over_raw']:>8.1f}x "
            f"{s['model_over_raw']:>13.1f}x {s['raw_env_steps_per_s']:>15.0f} {s['monitor_env_steps_per_s']:>16.0f} "
            f"{s['model_env_steps_per_s']:>22.0f}"
        )
    lines += list(notes)
    flagged = [r for r in results if r.samples and (r.violations or r.violations_with_model)]
    if flagged:
        lines += [
            "",
            "Violations the monitor counted in one round (generic / with the model), by spec; DirectRLEnv.step",
            "rewrites its terminated/time-out buffers in place, a known isaaclab.returned_data_stable finding:",
        ]
        lines += [f"  {r.device} x{r.num_envs}: {r.violations} / {r.violations_with_model}" for r in flagged]
    return lines


# ------------------------------------------------------------------------------------- driver


def header() -> tuple[list[str], dict[str, Any]]:
    from rlconform.core.profiles import get_profile
    from rlconform.reports.results import header_lines, library_versions  # imports the whole suite; only here

    now = dt.datetime.now(dt.timezone.utc).astimezone()
    machine = {
        "cpu_count": os.cpu_count(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "processor": platform.processor(),
        "python": sys.version.split()[0],
    }
    lines = [
        "# rlconform benchmark",
        *header_lines(get_profile(PROFILE), None),
        f"machine: {machine['cpu_count']} CPUs, {machine['platform']} ({machine['machine']})",
        f"date: {now.isoformat(timespec='seconds')}",
    ]
    return lines, {"date": now.isoformat(), "machine": machine, "libraries": library_versions()}


def _jsonable(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {k: _jsonable(v) for k, v in dataclasses.asdict(value).items()}
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, float) and value != value:
        return None
    return value


def check_profile() -> Any:
    """Part 4's module (benchmarks/check_profile.py), imported from beside this file."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import check_profile as part

    return part


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="fewer repeats (3 for overhead, 1 for planted bugs)")
    parser.add_argument("--json", metavar="FILE", help="also write all figures to FILE as JSON")
    parser.add_argument("--repeats", type=int, default=None, help="overhead repeats (default 5, 3 with --quick)")
    parser.add_argument(
        "--planted-repeats", type=int, default=None, help="planted-bug search repeats (default 3, 1 with --quick)"
    )
    parser.add_argument("--steps", type=int, default=STEPS, help=f"agent steps of the overhead case (default {STEPS})")
    parser.add_argument("--skip-overhead", action="store_true", help="skip part 1")
    parser.add_argument("--skip-planted", action="store_true", help="skip part 2")
    parser.add_argument("--skip-isaaclab", action="store_true", help="skip part 3 (Isaac Lab monitor overhead)")
    parser.add_argument(
        "--isaaclab-rounds",
        type=int,
        default=None,
        help="part 3 rounds, each raw / +monitor / +model (default 5, 3 with --quick)",
    )
    parser.add_argument(
        "--isaaclab-steps",
        type=int,
        default=ISAACLAB_STEPS,
        help=f"timed steps per part 3 measurement (default {ISAACLAB_STEPS})",
    )
    parser.add_argument(
        "--check-profile",
        action="store_true",
        help="part 4: where the time of `rlconform check` goes, for a user env, a Sync vectorizer and its "
        "multi-process twins (benchmarks/check_profile.py; about 15 minutes on a loaded 2-core machine)",
    )
    parser.add_argument("--only-check-profile", action="store_true", help="run part 4 only")
    check_profile().add_arguments(parser, prefix="check-")
    args = parser.parse_args(argv)
    if args.only_check_profile:
        args.check_profile = args.skip_overhead = args.skip_planted = args.skip_isaaclab = True
    repeats = args.repeats or (3 if args.quick else 5)
    planted_repeats = args.planted_repeats or (1 if args.quick else 3)
    isaaclab_rounds = args.isaaclab_rounds or (3 if args.quick else 5)

    started = _clock()

    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    head, meta = header()
    print("\n".join(head), flush=True)
    print(flush=True)
    document: dict[str, Any] = {
        **meta,
        "header": head,
        "config": {
            "quick": args.quick,
            "repeats": repeats,
            "planted_repeats": planted_repeats,
            "steps": args.steps,
            "num_envs": NUM_ENVS,
            "seed": SEED,
            "profile": PROFILE,
            "isaaclab_rounds": isaaclab_rounds,
            "isaaclab_steps": args.isaaclab_steps,
            "isaaclab_num_envs": ISAACLAB_NUM_ENVS,
        },
    }

    if not args.skip_overhead:
        log("part 1: overhead")
        overhead = bench_overhead(repeats, args.steps, log)
        print("\n".join(render_overhead(overhead, repeats)), flush=True)
        print(flush=True)
        document["overhead"] = [
            {
                "system": r.system,
                "num_envs": r.num_envs,
                "agent_steps": r.agent_steps,
                "model": r.model,
                "skipped": r.skipped,
                "specs": r.specs,
                "summary": r.summary(),
                "samples": r.samples,
            }
            for r in overhead
        ]
    if not args.skip_planted:
        log("part 2: planted bugs")
        planted = bench_planted(planted_repeats, log)
        print("\n".join(render_planted(planted, planted_repeats)), flush=True)
        print(flush=True)
        document["planted"] = [
            {
                "system": r.system,
                "spec": r.spec,
                "budget": r.budget,
                "skipped": r.skipped,
                "summary": r.summary(),
                "samples": r.samples,
            }
            for r in planted
        ]

    if not args.skip_isaaclab:
        log("part 3: Isaac Lab")
        unavailable = isaaclab_unavailable()
        if unavailable is not None:
            lines = [
                "## 3. Isaac Lab: ContractMonitor overhead vs raw stepping",
                "",
                f"not run: isaaclab cannot be used here ({unavailable.splitlines()[0]})",
            ]
            print("\n".join(lines), flush=True)
            document["isaaclab"] = {"not_run": unavailable}
        else:
            isaaclab, notes = bench_isaaclab(isaaclab_rounds, args.isaaclab_steps, log)
            print("\n".join(render_isaaclab(isaaclab, notes, isaaclab_rounds, args.isaaclab_steps)), flush=True)
            document["isaaclab"] = {
                "notes": notes,
                "results": [
                    {
                        "device": r.device,
                        "num_envs": r.num_envs,
                        "steps": r.steps,
                        "skipped": r.skipped,
                        "violations": r.violations,
                        "violations_with_model": r.violations_with_model,
                        "summary": r.summary(),
                        "samples": r.samples,
                    }
                    for r in isaaclab
                ],
            }
        print(flush=True)

    if args.check_profile:
        log("part 4: where the time of rlconform check goes")
        part = check_profile()
        baseline = Path(args.check_baseline).resolve() if args.check_baseline else None
        checks = part.bench_check_profile(
            args.check_targets,
            PROFILE,
            log,
            repeats=args.check_repeats,
            baseline=baseline,
            breakdown=not args.check_no_breakdown,
        )
        print("\n".join(part.render(checks, PROFILE)), flush=True)
        print(flush=True)
        document["check_profile"] = checks

    elapsed = _clock() - started
    document["total_seconds"] = elapsed
    print(f"total benchmark time: {elapsed:.1f} s ({'quick' if args.quick else 'full'} run)", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(_jsonable(document), indent=2, default=repr) + "\n")
        print(f"figures written to {args.json}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
