"""Execute a case on a system: build it around reference envs, drive it, record, close, read logs.

The result is a :class:`Run`, everything the specs need: the literal call records, the ground
truth from the env logs, the transitions the family's recipe extracts, and (for the model spec)
the run of the reference model on the same case.
"""

from __future__ import annotations

import functools
import shutil
import tempfile
import time
import traceback
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlconform.adapters.base import Family, get_family
from rlconform.fixtures.calllog import FileSink, LogSink, MemorySink
from rlconform.plan import Case, Op, Step
from rlconform.systems import System, get_system
from rlconform.trace import CallRecord, CallView, Slot, snapshot
from rlconform.truth import GroundTruth, build_truth


@dataclass
class Run:
    system: System
    case: Case
    calls: list[CallRecord] = field(default_factory=list)
    truth: GroundTruth | None = None
    slots: list[Slot] = field(default_factory=list)
    build_error: str | None = None
    close_error: str | None = None
    semantics: dict[str, Any] = field(default_factory=dict)
    model: Run | None = None
    model_id: str | None = None

    @property
    def usable(self) -> bool:
        return self.build_error is None and self.truth is not None

    def slots_of(self, env: int) -> list[Slot]:
        return [s for s in self.slots if s.env == env]

    def call(self, position: int) -> CallRecord:
        return self.calls[position]


class Session:
    """Driver state for one run; adapters make every library call through :meth:`call`."""

    def __init__(self, system: System, case: Case, family: Family) -> None:
        self.system = system
        self.case = case
        self.family = family
        self.calls: list[CallRecord] = []
        self.agent_steps = 0
        self.state: dict[str, Any] = {}

    @property
    def num_envs(self) -> int:
        return self.case.num_envs

    def call(
        self,
        op: Op,
        source: str,
        fn: Callable[..., Any],
        args: tuple[Any, ...] = (),
        *,
        implied: bool = False,
        view: Callable[[Any], CallView] | None = None,
        obj: Any = None,
    ) -> CallRecord:
        is_step = isinstance(op, Step) or type(op).__name__ == "BadStep"
        if is_step:
            self.agent_steps += 1
        record = CallRecord(
            position=len(self.calls),
            op=op,
            implied=implied,
            source=source,
            args_live=args,
            args_snapshot=snapshot(args),
            agent_step=self.agent_steps if is_step else 0,
        )
        record.start_ns = time.monotonic_ns()
        start = time.perf_counter()
        try:
            result = fn(*args)
        except Exception as exc:  # the system raised: that is an outcome, not a suite error
            record.seconds = time.perf_counter() - start
            record.end_ns = time.monotonic_ns()
            record.error_type = type(exc).__name__
            record.error_message = str(exc).splitlines()[0][:500] if str(exc) else ""
            self.calls.append(record)
            return record
        record.seconds = time.perf_counter() - start
        record.end_ns = time.monotonic_ns()
        record.result_live = result
        record.result_snapshot = snapshot(result)
        if view is not None:
            try:
                record.view = view(result)
            except Exception as exc:
                # the output does not have the documented structure; the API spec reports it
                record.extra["view_error"] = f"{type(exc).__name__}: {exc}"
        if obj is not None:
            self.family.observe(obj, record)
        self.calls.append(record)
        return record


def _sinks(system: System, num_envs: int, log_dir: Path | None) -> list[LogSink]:
    if system.out_of_process:
        assert log_dir is not None
        return [FileSink(log_dir / f"env-{i}.log") for i in range(num_envs)]
    return [MemorySink() for _ in range(num_envs)]


def env_fns_for(case: Case, sinks: list[LogSink]) -> list[Callable[[], Any]]:
    from rlconform.fixtures.reference_env import make_reference_env

    return [functools.partial(make_reference_env, case.script, i, sinks[i]) for i in range(case.num_envs)]


def execute(system: System, case: Case, *, with_model: bool = True) -> Run:
    """Run ``case`` on ``system`` (and on its reference model when ``with_model``)."""
    family = get_family(system.family)
    run = Run(system=system, case=case)
    log_dir = Path(tempfile.mkdtemp(prefix="rlconform-logs-")) if system.out_of_process else None
    try:
        sinks = _sinks(system, case.num_envs, log_dir)
        env_fns = env_fns_for(case, sinks)
        try:
            obj = system.build(env_fns)
        except Exception as exc:
            run.build_error = f"{type(exc).__name__}: {exc}"
            run.build_error += "\n" + "".join(traceback.format_exception(exc)[-3:])
            return run
        session = Session(system, case, family)
        try:
            run.semantics = family.describe_semantics(obj)
            family.begin(session, obj)
            for op in case.ops:
                family.execute(session, obj, op)
        finally:
            try:
                family.close(obj)
            except Exception as exc:
                run.close_error = f"{type(exc).__name__}: {exc}"
        run.calls = session.calls
        run.truth = build_truth(case.script, [sink.read() for sink in sinks])
        run.slots = family.recipe(run.calls, case.num_envs, run.semantics)
        if with_model:
            model_id = system.model or family.default_model(obj)
            run.model_id = model_id
            if model_id is not None and model_id != system.id:
                run.model = execute(get_system(model_id), case, with_model=False)
        return run
    finally:
        if log_dir is not None:
            shutil.rmtree(log_dir, ignore_errors=True)


class RunCache:
    """Runs keyed by (system id, case). Every spec's search draws the same examples first, so the
    specs of one system share most runs instead of rebuilding the system for each spec."""

    def __init__(self, size: int = 256) -> None:
        self.size = size
        self._runs: OrderedDict[tuple[str, Case], Run] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def get(self, system: System, case: Case) -> Run:
        key = (system.id, case)
        run = self._runs.get(key)
        if run is not None:
            self.hits += 1
            self._runs.move_to_end(key)
            return run
        self.misses += 1
        run = execute(system, case)
        self._runs[key] = run
        if len(self._runs) > self.size:
            self._runs.popitem(last=False)
        return run

    def clear(self) -> None:
        self._runs.clear()


RUN_CACHE = RunCache()
