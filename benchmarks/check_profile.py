"""Part 4 of the benchmark: where the time of ``rlconform check`` goes (``bench.py --check-profile``).

For each target (a user's env or factory, ``TARGETS``) two measurements are taken in fresh
processes, back to back:

- **wall**: ``python -m rlconform.cli check TARGET --api API`` as a user runs it (interpreter
  start-up, imports, the probe, the isolated worker process, the report), timed from outside;
- **profile**: the same check in one process (``--in-process``'s path: the specs searched one
  after the other on one run cache) with explicit timers wrapped around rlconform's phases. Every
  second of the check lands in exactly one phase (time spent inside a nested phase is that
  phase's, not its caller's), so the phases add up to the profiled total:

  ``probe`` (building the user's factory once, in a forked process), ``build`` (a system built
  around its envs; ``process start`` is the part of it spent in ``Process.start``), ``calls`` (the
  library calls of an example, under their deadlines), ``deadline waits`` (calls and closes that
  ran into their deadline), ``close`` (closing a system, waiting for its workers),
  ``reap`` (terminating workers left behind), ``finish`` (logs, ground truth, recipe),
  ``model run`` (the reference model's run of the same case), ``bare replay`` / ``after-end
  probe`` / ``bare env runs`` (env-author mode's own runs of the bare env), ``checks`` (the specs
  reading runs), ``search`` (Hypothesis: drawing cases, the run cache, bookkeeping), and
  ``sleep (...)``: ``time.sleep`` calls, named by the phase that slept (TorchRL's ParallelEnv
  polls its exiting workers every 10 ms in close()).

  Per spec: seconds, examples, and the part after the first violation (shrinking). Per system
  driven (each stack env-author mode builds, the user's system, the bare env): build, calls and
  close seconds and the number of runs.

Ratios compare targets measured in the same run; absolute seconds move by 2x between runs on a
shared machine.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


@dataclass(frozen=True)
class Target:
    name: str
    reference: str
    api: str
    #: the in-process twin a multi-process target is compared with
    twin: str | None = None
    #: the target's library (skipped when it is not installed)
    requires: str = "gymnasium"
    #: timed when no target is named (the real envs, a minute each, only when named)
    by_default: bool = True


TARGETS = (
    Target("env", "rlconform.libraries.envauthor.sample_envs:counter", "gymnasium.Env"),
    Target("sync", "factories:sync", "gymnasium.vector"),
    Target("async", "factories:async_", "gymnasium.vector", twin="sync"),
    Target("dummy", "factories:dummy", "sb3.VecEnv", requires="stable_baselines3"),
    Target("subproc", "factories:subproc", "sb3.VecEnv", twin="dummy", requires="stable_baselines3"),
    Target("serial", "factories:serial", "torchrl.EnvBase", requires="torchrl"),
    Target("parallel", "factories:parallel", "torchrl.EnvBase", twin="serial", requires="torchrl"),
    # issue 39's real envs (real_envs.py), checked as their author would: only when named
    Target("acrobot", "real_envs:acrobot", "gymnasium.Env", by_default=False),
    Target("mountaincar", "real_envs:mountain_car_continuous", "gymnasium.Env", by_default=False),
    Target("doorkey", "real_envs:minigrid_doorkey", "gymnasium.Env", requires="minigrid", by_default=False),
    Target("carracing", "real_envs:car_racing", "gymnasium.Env", requires="Box2D", by_default=False),
)


# ------------------------------------------------------------------------------ the timers


class Phases:
    """Exclusive time per phase: a phase's time excludes the phases nested inside it."""

    def __init__(self) -> None:
        self.frames: list[list[Any]] = []  # [label, start, time in children]
        self.total: dict[str, float] = defaultdict(float)
        self.count: dict[str, int] = defaultdict(int)
        self.by_spec: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
        #: system driven -> phase -> inclusive seconds, and runs
        self.by_system: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
        self.spec = ""
        self.systems: list[str] = []
        self.model_depth = 0

    def enter(self, label: str) -> None:
        self.frames.append([label, time.perf_counter(), 0.0])

    def leave(self, label: str | None = None) -> float:
        frame = self.frames.pop()
        elapsed = time.perf_counter() - frame[1]
        name = label or frame[0]
        if self.model_depth and name not in ("model run",):
            name = "model run"
        exclusive = elapsed - frame[2]
        self.total[name] += exclusive
        self.count[name] += 1
        self.by_spec[self.spec][name] += exclusive
        if self.frames:
            self.frames[-1][2] += elapsed
        return elapsed

    def parent(self) -> str:
        return self.frames[-1][0] if self.frames else "outside"

    def system_time(self, phase: str, seconds: float) -> None:
        if self.systems and not self.model_depth:
            self.by_system[self.systems[-1]][phase] += seconds


def _system_key(system_id: str) -> str:
    if system_id.startswith("user:"):
        return "user system"
    if system_id.endswith("#bare"):
        return "bare env"
    return system_id


def instrument(phases: Phases) -> None:
    """Wrap rlconform's phases (and ``time.sleep``, ``Process.start``) with the timers."""
    import multiprocessing.process

    import rlconform.core.runner as runner
    import rlconform.core.user as user
    import rlconform.envs.driver as driver
    from rlconform.core.catalog import current
    from rlconform.core.watchdog import CallTimeout

    def timed(owner: Any, name: str, label: str, after: Callable[[Any], str | None] | None = None) -> None:
        original = getattr(owner, name)

        @functools.wraps(original)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            phases.enter(label)
            try:
                result = original(*args, **kwargs)
            except CallTimeout:
                phases.leave("deadline waits")
                raise
            except BaseException:
                phases.leave()
                raise
            phases.leave(after(result) if after is not None else None)
            return result

        setattr(owner, name, wrapper)

    timed(user, "probe", "probe")
    timed(multiprocessing.process.BaseProcess, "start", "process start")

    original_sleep = time.sleep

    def sleep(seconds: float) -> None:
        phases.enter(f"sleep ({phases.parent()})")
        try:
            original_sleep(seconds)
        finally:
            phases.leave()

    time.sleep = sleep  # type: ignore[assignment]

    # a system's build, calls, close: attributed to the system being driven
    live_init = driver.LiveRun.__init__

    def init(self: Any, system: Any, case: Any, **kwargs: Any) -> None:
        phases.systems.append(_system_key(system.id))
        phases.enter("build")
        try:
            live_init(self, system, case, **kwargs)
        finally:
            phases.system_time("build", phases.leave())
            phases.system_time("runs", 1)
            phases.systems.pop()

    driver.LiveRun.__init__ = init  # type: ignore[method-assign]

    original_call = driver.Driver.call

    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        phases.systems.append(_system_key(self.system.id))
        phases.enter("calls")
        try:
            record = original_call(self, *args, **kwargs)
        except BaseException:
            phases.leave()
            phases.systems.pop()
            raise
        seconds = phases.leave("deadline waits" if record.error_type == "CallTimeout" else None)
        phases.system_time("calls", seconds)
        phases.systems.pop()
        return record

    driver.Driver.call = call  # type: ignore[method-assign]

    original_finish = driver.LiveRun.finish

    def finish(self: Any) -> Any:
        phases.systems.append(_system_key(self.system.id))
        phases.enter("finish")
        try:
            return original_finish(self)
        finally:
            phases.leave()
            phases.systems.pop()

    driver.LiveRun.finish = finish  # type: ignore[method-assign]
    timed(driver, "reap", "reap")

    seen: set[type] = set()
    for family in current().families().values():
        cls = type(family)
        if cls in seen or not hasattr(cls, "close"):
            continue
        seen.add(cls)
        original_close = cls.close

        def close(self: Any, obj: Any, _original: Any = original_close) -> Any:
            phases.enter("close")
            try:
                result = _original(self, obj)
            except CallTimeout:
                phases.system_time("close", phases.leave("deadline waits"))
                raise
            except BaseException:
                phases.system_time("close", phases.leave())
                raise
            phases.system_time("close", phases.leave())
            return result

        cls.close = close

    # the reference model's run: a run nested in another one
    original_execute = runner.execute

    def execute(system: Any, case: Any, *, with_model: bool = True) -> Any:
        nested = any(frame[0] == "run" for frame in phases.frames)
        if nested:
            phases.model_depth += 1
        phases.enter("model run" if nested else "run")
        try:
            return original_execute(system, case, with_model=with_model)
        finally:
            phases.leave("model run" if nested else "run other")
            if nested:
                phases.model_depth -= 1

    runner.execute = execute  # drive_case imports it from the runner at call time

    try:
        import rlconform.libraries.envauthor.harness as envauthor_harness
        import rlconform.libraries.envauthor.stacks as envauthor_stacks
    except ImportError:  # pragma: no cover
        return
    timed(envauthor_stacks, "_replay", "bare replay")
    timed(envauthor_harness, "_probe_after_end", "after-end probe")
    timed(envauthor_harness, "_execute_user_env", "bare env runs")
    timed(envauthor_stacks, "_run_stack", "stack run")


# ------------------------------------------------------------------------- one profiled check


def profiled_check(reference: str, api: str, profile: str) -> dict[str, Any]:
    """The check of ``reference`` as ``--api api``, in this process, with the timers on."""
    from hypothesis.errors import HypothesisException  # noqa: F401  (imported before timing starts)

    import rlconform.core.search as search
    import rlconform.core.user as user
    from rlconform.core.spec import all_specs

    phases = Phases()
    instrument(phases)
    first_failure: dict[str, float] = {}
    failure_init = search.SpecFailure.__init__

    def on_failure(self: Any, *args: Any, **kwargs: Any) -> None:
        first_failure.setdefault(phases.spec, time.perf_counter())
        failure_init(self, *args, **kwargs)

    search.SpecFailure.__init__ = on_failure  # type: ignore[method-assign]

    started = time.perf_counter()
    phases.spec = "(probe)"
    family = user.family_for(api)
    phases.enter("probe")  # loading the factory (TorchRL's family builds it once) and probing it
    try:
        system = user.probe(user.user_system(reference, api))
    finally:
        phases.leave()
    systems = [system, *family.companions(system)]
    specs = [spec for spec in all_specs() if system.family in spec.families]
    per_spec = []
    for checked in systems:
        for spec in specs:
            phases.spec = spec.id
            t0 = time.perf_counter()
            wrapped = dataclasses.replace(spec, check=_timed_check(phases, spec.check))
            phases.enter("search")
            try:
                verdict = search.check_spec(checked, wrapped, profile)
            finally:
                phases.leave()
            t1 = time.perf_counter()
            shrink = t1 - first_failure[spec.id] if spec.id in first_failure else 0.0
            per_spec.append(
                {
                    "system": checked.id,
                    "spec": spec.id,
                    "status": verdict.status,
                    "examples": verdict.examples,
                    "seconds": t1 - t0,
                    "shrink_seconds": shrink,
                    "phases": dict(phases.by_spec[spec.id]),
                }
            )
    total = time.perf_counter() - started
    return {
        "reference": reference,
        "api": api,
        "costly": system.expensive,
        "total": total,
        "phases": dict(phases.total),
        "counts": dict(phases.count),
        "specs": per_spec,
        "systems": {k: dict(v) for k, v in phases.by_system.items()},
    }


def _timed_check(phases: Phases, check: Callable[[Any], Any]) -> Callable[[Any], Any]:
    @functools.wraps(check)
    def wrapper(run: Any) -> Any:
        phases.enter("checks")
        try:
            return check(run)
        finally:
            phases.leave()

    return wrapper


# --------------------------------------------------------------------------------- the driver


def _installed(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def _env(root: Path = ROOT) -> dict[str, str]:
    """The environment of the measured processes: ``root``'s rlconform (this checkout, or the
    baseline's), benchmarks/ for the factories module."""
    env = dict(os.environ)
    env.pop("RLCONFORM_SEED", None)
    env["PYTHONPATH"] = os.pathsep.join([str(root), str(HERE)])
    return env


def wall(target: Target, profile: str, root: Path, results: Path) -> tuple[float, int]:
    """Seconds ``rlconform check`` of ``target`` takes with ``root``'s rlconform (results to ``results``)."""
    command = [sys.executable, "-m", "rlconform.cli", "check", target.reference, "--api", target.api]
    command += ["--profile", profile, "--json", str(results)]
    t0 = time.perf_counter()
    done = subprocess.run(command, env=_env(root), capture_output=True, text=True, cwd=HERE, check=False)
    return time.perf_counter() - t0, done.returncode


def _statuses(results: Path) -> dict[str, str]:
    if not results.exists():
        return {}
    return {r["spec"]: r["status"] for r in json.loads(results.read_text()).get("results", [])}


def _diff(old: Path, new: Path) -> str:
    """What ``rlconform diff`` says changed between two results files ("" when no verdict changed)."""
    done = subprocess.run(
        [sys.executable, "-m", "rlconform.cli", "diff", str(old), str(new)],
        env=_env(),
        capture_output=True,
        text=True,
        check=False,
    )
    return done.stdout.strip()


def measure(
    target: Target, profile: str, log: Callable[[str], None], *, repeats: int, baseline: Path | None, breakdown: bool
) -> dict[str, Any]:
    """Wall times of the CLI check (alternating with the baseline's, if any), then the profiled
    in-process check, each in a fresh process."""
    if not _installed(target.requires):
        return {"name": target.name, "skipped": f"{target.requires} is not installed"}
    result: dict[str, Any] = {"name": target.name, "walls": [], "baseline_walls": []}
    with tempfile.TemporaryDirectory(prefix="rlconform-bench-") as folder:
        mine, theirs = Path(folder) / "results.json", Path(folder) / "baseline.json"
        for i in range(repeats):
            if baseline is not None:
                seconds, _ = wall(target, profile, baseline, theirs)
                result["baseline_walls"].append(seconds)
                log(f"  {target.name}: baseline {seconds:.1f} s")
            seconds, code = wall(target, profile, ROOT, mine)
            result["walls"].append(seconds)
            result["exit"] = code
            log(f"  {target.name}: {seconds:.1f} s (exit {code}, round {i + 1}/{repeats})")
        result["wall"] = statistics.median(result["walls"])
        result["verdicts"] = _statuses(mine)
        if baseline is not None:
            result["baseline_wall"] = statistics.median(result["baseline_walls"])
            result["diff"] = _diff(theirs, mine) if theirs.exists() and mine.exists() else "no results to compare"
    if breakdown:
        log(f"  {target.name}: profiling in-process")
        child = subprocess.run(
            [sys.executable, str(Path(__file__).resolve()), "--child", target.reference, target.api, profile],
            env=_env(),
            capture_output=True,
            text=True,
            cwd=HERE,
            check=False,
        )
        if child.returncode != 0:
            result["error"] = child.stderr[-2000:]
        else:
            result.update(json.loads(child.stdout.strip().splitlines()[-1]))
    return result


def bench_check_profile(
    names: Sequence[str] | None,
    profile: str,
    log: Callable[[str], None],
    *,
    repeats: int = 1,
    baseline: Path | None = None,
    breakdown: bool = True,
) -> list[dict[str, Any]]:
    chosen = [t for t in TARGETS if (t.name in names if names else t.by_default)]
    return [
        measure(target, profile, log, repeats=repeats, baseline=baseline, breakdown=breakdown) | {"twin": target.twin}
        for target in chosen
    ]


#: phases shown in the breakdown, in this order (others follow, largest first)
PHASE_ORDER = (
    "probe",
    "build",
    "process start",
    "calls",
    "deadline waits",
    "close",
    "reap",
    "finish",
    "model run",
    "bare env runs",
    "bare replay",
    "after-end probe",
    "stack run",
    "checks",
    "search",
)


def render(results: Sequence[dict[str, Any]], profile: str) -> list[str]:
    lines = [f"## 4. Where the time of `rlconform check` goes (profile {profile})", ""]
    by_name = {r["name"]: r for r in results}
    compared = any("baseline_wall" in r for r in results)
    head = f"{'target':9s} {'wall s':>7s} {'vs twin':>8s} {'profiled s':>10s} {'vs twin':>8s}"
    if compared:
        head += f" {'baseline s':>10s} {'vs twin':>8s} {'speed-up':>8s}  verdicts changed"
    lines.append(head + "  verdicts")
    for r in results:
        if "skipped" in r:
            lines.append(f"{r['name']:9s} skipped: {r['skipped']}")
            continue
        twin = by_name.get(r.get("twin") or "")

        def ratio(key: str, row: dict[str, Any] = r, twin: dict[str, Any] | None = twin) -> str:
            if twin is None or key not in twin or key not in row:
                return ""
            return f"{row[key] / twin[key]:.1f}x"

        counts: dict[str, int] = defaultdict(int)
        for status in r.get("verdicts", {}).values():
            counts[status] += 1
        summary = ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
        total = f"{r['total']:.1f}" if "total" in r else "-"
        line = f"{r['name']:9s} {r['wall']:7.1f} {ratio('wall'):>8s} {total:>10s} {ratio('total'):>8s}"
        if compared:
            changed = "none" if not r.get("diff") or "no verdict changed" in r["diff"].lower() else "YES (see below)"
            line += (
                f" {r['baseline_wall']:10.1f} {ratio('baseline_wall'):>8s} {r['baseline_wall'] / r['wall']:7.1f}x"
                f"  {changed}"
            )
        lines.append(line + f"  {summary}")
    for r in results:
        if r.get("diff") and "no verdict changed" not in r["diff"].lower():
            lines += ["", f"### {r['name']}: verdicts changed against the baseline", "", r["diff"]]
    for r in results:
        if "total" not in r:
            if "error" in r:
                lines += ["", f"### {r['name']}: profiling failed", "", r["error"]]
            continue
        lines += ["", f"### {r['name']}: `{r['reference']}` as {r['api']} ({r['total']:.1f} s profiled)", ""]
        phases = r["phases"]
        names = [p for p in PHASE_ORDER if p in phases] + sorted(
            (p for p in phases if p not in PHASE_ORDER), key=lambda p: -phases[p]
        )
        lines.append("phase                         seconds  share  count")
        for name in names:
            if phases[name] < 0.005:
                continue
            share = phases[name] / r["total"] * 100
            lines.append(f"{name:28s} {phases[name]:8.2f} {share:5.1f}% {r['counts'].get(name, 0):6d}")
        outside = r["total"] - sum(phases.values())
        lines.append(f"{'(outside the phases)':28s} {outside:8.2f} {outside / r['total'] * 100:5.1f}%")
        lines += ["", "spec                                 status          examples seconds  shrink s  top phases"]
        for s in sorted(r["specs"], key=lambda s: -s["seconds"])[:SPECS_SHOWN]:
            top = sorted(s["phases"].items(), key=lambda kv: -kv[1])[:3]
            tops = ", ".join(f"{k} {v:.1f}" for k, v in top if v >= 0.05)
            lines.append(
                f"{s['spec']:36s} {s['status']:15s} {s['examples']:8d} {s['seconds']:7.2f} "
                f"{s['shrink_seconds']:9.2f}  {tops}"
            )
        if len(r["specs"]) > SPECS_SHOWN:
            rest = sorted(r["specs"], key=lambda s: -s["seconds"])[SPECS_SHOWN:]
            lines.append(f"({len(rest)} more specs, {sum(s['seconds'] for s in rest):.2f} s together)")
        if len(r["systems"]) > 1:
            lines += ["", "system driven                        runs  build s  calls s  close s"]
            for name, v in sorted(
                r["systems"].items(), key=lambda kv: -sum(x for k, x in kv[1].items() if k != "runs")
            ):
                lines.append(
                    f"{name:36s} {int(v.get('runs', 0)):5d} {v.get('build', 0):8.2f} "
                    f"{v.get('calls', 0):8.2f} {v.get('close', 0):8.2f}"
                )
    return lines


#: specs listed per target (the slowest)
SPECS_SHOWN = 8


def add_arguments(parser: argparse.ArgumentParser, prefix: str = "") -> None:
    """The options of this part (``prefix``: how bench.py names them)."""
    parser.add_argument(
        f"--{prefix}targets",
        nargs="*",
        default=None,
        metavar="NAME",
        help=f"targets to time (default: {', '.join(t.name for t in TARGETS if t.by_default)}; "
        f"also: {', '.join(t.name for t in TARGETS if not t.by_default)})",
    )
    parser.add_argument(f"--{prefix}repeats", type=int, default=1, help="wall-time rounds per target (median)")
    parser.add_argument(
        f"--{prefix}baseline",
        metavar="ROOT",
        default=None,
        help="another checkout of rlconform: its check is timed alternately with this one's, and "
        "`rlconform diff` compares their verdicts",
    )
    parser.add_argument(f"--{prefix}no-breakdown", action="store_true", help="wall times only, no profiled run")


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] == "--child":
        reference, api, profile = args[1:4]
        result = profiled_check(reference, api, profile)
        print(json.dumps(result, default=str))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    add_arguments(parser)
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    options = parser.parse_args(args)
    results = bench_check_profile(
        options.targets,
        "ci",
        lambda m: print(m, file=sys.stderr, flush=True),
        repeats=options.repeats,
        baseline=Path(options.baseline).resolve() if options.baseline else None,
        breakdown=not options.no_breakdown,
    )
    print("\n".join(render(results, "ci")))
    if options.json:
        Path(options.json).write_text(json.dumps(results, indent=2, default=str) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
