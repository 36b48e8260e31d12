"""Execute a case on a system: build it around reference envs, drive it, record, close, read logs.

The result is a :class:`Run`, everything the specs need: the literal call records, the ground
truth from the env logs, the transitions the family's recipe extracts, and (for the model spec)
the run of the reference model on the same case.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import shutil
import tempfile
import time
import traceback
import warnings
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlconform.core.crashlog import announce
from rlconform.core.family import Family, get_family
from rlconform.core.hangs import note_run
from rlconform.core.plan import Case, Op, Step
from rlconform.core.system import System, get_system
from rlconform.core.trace import CallRecord, CallView, Slot, snapshot
from rlconform.core.watchdog import (
    CallTimeout,
    call_timeout,
    child_processes,
    close_timeout,
    deadline,
    deadlines_available,
    reap,
    stderr_to,
)
from rlconform.envs.calllog import FileSink, LogSink, MemorySink
from rlconform.envs.truth import GroundTruth, build_truth


@dataclass
class Run:
    system: System
    case: Case
    calls: list[CallRecord] = field(default_factory=list)
    truth: GroundTruth | None = None
    slots: list[Slot] = field(default_factory=list)
    build_error: str | None = None
    close_error: str | None = None
    #: worker processes still alive after close(), terminated by the runner
    orphans: int = 0
    #: seconds each call was allowed (0: no deadline could be set in this thread)
    call_timeout: float = 0.0
    #: seconds close() was allowed (longer than a call: see watchdog.CLOSE_TIMEOUT)
    close_timeout: float = 0.0
    semantics: dict[str, Any] = field(default_factory=dict)
    model: Run | None = None
    model_id: str | None = None
    #: why no reference model describes the system (``model`` is then None)
    model_reason: str | None = None
    #: derived readings shared by the specs of one run (decoded observations, matches)
    memo: dict[Any, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def usable(self) -> bool:
        return self.build_error is None and self.truth is not None

    def slots_of(self, env: int) -> list[Slot]:
        return [s for s in self.slots if s.env == env]

    def call(self, position: int) -> CallRecord:
        return self.calls[position]


#: how long the driver waits after a failed call on a system with worker processes
FAILED_CALL_SETTLE_SECONDS = 0.1


class ActionCodec:
    """How plan actions become the objects a correct caller passes: one action for a single env,
    a batch (one row per sub-env, the action space's dtype) for a vector env."""

    def __init__(
        self, single: Callable[[Any], Any], batch: Callable[[Sequence[Any]], Any], *, reference_units: bool = False
    ) -> None:
        self.single = single
        self.batch = batch
        #: plan actions are sent as elements of the reference env's own action space; a family
        #: whose system declares another space re-encodes them into it (adapters.action_space)
        self.reference_units = reference_units

    @classmethod
    def for_script(cls, case: Case) -> ActionCodec:
        from rlconform.envs.spaces import batch_actions
        from rlconform.libraries.gymnasium.env_family import single_action

        spec = case.script.action
        return cls(functools.partial(single_action, spec), functools.partial(batch_actions, spec), reference_units=True)


class Session:
    """Driver state for one run; adapters make every library call through :meth:`call`."""

    def __init__(
        self, system: System, case: Case, family: Family, codec: ActionCodec | None = None, *, user_envs: bool = False
    ) -> None:
        self.system = system
        self.case = case
        self.family = family
        self.codec = codec or ActionCodec.for_script(case)
        self.calls: list[CallRecord] = []
        self.agent_steps = 0
        self.state: dict[str, Any] = {}
        self.timeout = call_timeout(user_envs=user_envs)
        #: a call hung: the system is wedged and no further call is made
        self.aborted = False

    @property
    def num_envs(self) -> int:
        return self.case.num_envs

    def single(self, value: Any) -> Any:
        return self.codec.single(value)

    def batch(self, values: Sequence[Any]) -> Any:
        return self.codec.batch(values)

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
        # an isolated worker that dies in this call names it (rlconform.core.crashlog)
        announce(f"{source} (agent step {record.agent_step})" if is_step else source, self.timeout)
        try:
            with deadline(self.timeout), warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                result = fn(*args)
            if caught:
                record.extra["warnings"] = [f"{w.category.__name__}: {w.message}" for w in caught]
        except (Exception, CallTimeout) as exc:  # the system raised or hung: an outcome, not a suite error
            announce("")
            record.seconds = time.perf_counter() - start
            record.end_ns = time.monotonic_ns()
            record.error_type = type(exc).__name__
            record.error_message = str(exc).splitlines()[0][:500] if str(exc) else ""
            if isinstance(exc, CallTimeout):
                self.aborted = True
            elif self.system.out_of_process and not (self.calls and self.calls[-1].failed):
                # work a failed call left running in worker processes lands in its own window
                # (events are charged to the call whose window they arrive in), not the next
                # one's; once per streak of failures (a wedged system fails every call at once)
                time.sleep(FAILED_CALL_SETTLE_SECONDS)
            self.calls.append(record)
            return record
        announce("")
        record.seconds = time.perf_counter() - start
        record.end_ns = time.monotonic_ns()
        record.result_live = result
        record.result_snapshot = snapshot(result)
        if view is not None:
            try:
                # read the snapshot, not the live object: a library that later overwrites what
                # it returned must not rewrite what the recipe already read
                record.view = view(record.result_snapshot)
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
    from rlconform.envs.reference_env import make_reference_env

    return [functools.partial(make_reference_env, case.script, i, sinks[i]) for i in range(case.num_envs)]


class LiveRun:
    """A system being driven one operation at a time (the state machine tests drive it rule by
    rule); :func:`execute` drives a whole case through it. ``finish`` closes the system, reads
    the env logs and returns the :class:`Run`."""

    def __init__(
        self,
        system: System,
        case: Case,
        *,
        env_fns: Sequence[Callable[[], Any]] | None = None,
        codec: ActionCodec | None = None,
    ) -> None:
        """``env_fns``/``codec`` replace the reference envs and their actions (to drive a user's
        own env through a library stack); no ground truth is then recorded."""
        self.system = system
        self.family = get_family(system.family)
        self.run = Run(system=system, case=case)
        self.obj: Any = None
        self._log_dir = Path(tempfile.mkdtemp(prefix="rlconform-logs-")) if system.out_of_process else None
        self._sinks = _sinks(system, case.num_envs, self._log_dir) if env_fns is None else []
        self._children = child_processes()
        self.session = Session(system, case, self.family, codec, user_envs=env_fns is not None)
        self._finished = False
        self._ops: list[Op] = []
        if env_fns is None:
            env_fns = env_fns_for(case, self._sinks)
        announce(f"building {system.id}")
        try:
            if self._log_dir is not None:
                # worker processes inherit fd 2: their dying words go to a file, not the report
                with stderr_to(str(self._log_dir / "workers.stderr")):
                    self.obj = system.build(env_fns)
            else:
                self.obj = system.build(env_fns)
        except Exception as exc:
            announce("")
            self.run.build_error = f"{type(exc).__name__}: {exc}"
            self.run.build_error += "\n" + "".join(traceback.format_exception(exc)[-3:])
            reap(self._children)
            self._cleanup()
            self._finished = True
            return
        announce("")
        self.run.call_timeout = self.session.timeout if deadlines_available() else 0.0
        self.run.semantics = self.family.describe_semantics(self.obj)
        self.family.begin(self.session, self.obj)

    @property
    def built(self) -> bool:
        return self.run.build_error is None

    @property
    def calls(self) -> list[CallRecord]:
        return self.session.calls

    def apply(self, op: Op) -> list[CallRecord]:
        """Perform one operation; return the call records it produced."""
        if not self.built or self.session.aborted:
            return []
        before = len(self.session.calls)
        self._ops.append(op)
        self.family.execute(self.session, self.obj, op)
        return self.session.calls[before:]

    def finish(self) -> Run:
        if self._finished:
            return self.run
        self._finished = True
        run = self.run
        # a scenario family whose construction failed for a reason no case avoids (see
        # torchrl_frames.note_environment_error) reports it as a build failure
        run.build_error = run.build_error or self.session.state.get(BUILD_ERROR)
        if self._ops and tuple(self._ops) != run.case.ops:
            # driven op by op (state machines): the case is what was actually applied
            run.case = Case(run.case.script, run.case.num_envs, tuple(self._ops))
        try:
            if self.session.aborted:
                # a call already hung: the system is wedged and close() would hang as well; its
                # workers are terminated below and the hang is the verdict
                run.close_error = "not attempted: an earlier call hung"
                _mark_closed(self.obj)
            else:
                # a user's stack may start spawned workers, whose shutdown takes seconds; the bundled
                # stacks' workers are forked or forkserver children and close within a call's deadline
                limit = close_timeout(self.session.timeout) if self.system.kind == "user" else self.session.timeout
                run.close_timeout = limit if deadlines_available() else 0.0
                announce("close()", limit)
                try:
                    with deadline(limit), warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        self.family.close(self.obj)
                except (Exception, CallTimeout) as exc:
                    run.close_error = f"{type(exc).__name__}: {exc}"
                    _mark_closed(self.obj)
                finally:
                    announce("")
            run.orphans = reap(self._children)
            run.calls = self.session.calls
            run.truth = build_truth(run.case.script, [sink.read() for sink in self._sinks]) if self._sinks else None
            run.slots = self.family.recipe(run.calls, run.case.num_envs, run.semantics)
        finally:
            self._cleanup()
        return run

    def drive(self, ops: Sequence[Op]) -> Run:
        """Apply ``ops`` (stopping early if a call hangs), then finish."""
        try:
            for op in ops:
                self.apply(op)
                if self.session.aborted:
                    break
        finally:
            run = self.finish()
        return run

    def model_id(self) -> str | None:
        """The reference system the system names, else the one of the stack it built (a user's
        system names none); where none describes it, ``run.model_reason`` says why."""
        if self.system.kind == "reference" or not self.built:
            return None
        if self.system.model is not None:
            return None if self.system.model == self.system.id else self.system.model
        match = self.family.model_match(self.obj)
        self.run.model_reason = match.reason or None
        return match.model_id

    def _cleanup(self) -> None:
        if self._log_dir is not None:
            shutil.rmtree(self._log_dir, ignore_errors=True)


#: ``session.state`` key: an adapter's report that the system could not be built after all
BUILD_ERROR = "build_error"


#: loggers of libraries under test that log INFO lines for every env they build (TorchRL: one per
#: GymWrapper and per lazy storage); quieted to WARNING while rlconform drives a system, so that
#: thousands of them do not bury the report
CHATTY_LOGGERS = ("torchrl",)


@contextlib.contextmanager
def quiet_library_logs() -> Iterator[None]:
    loggers = [logging.getLogger(name) for name in CHATTY_LOGGERS]
    levels = [logger.level for logger in loggers]
    for logger, level in zip(loggers, levels, strict=True):
        logger.setLevel(max(level, logging.WARNING))
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)


def execute(system: System, case: Any, *, with_model: bool = True) -> Any:
    """Run ``case`` on ``system`` (and on its reference model when ``with_model``).

    A user's own env (family ``user.env``) takes an :class:`~rlconform.libraries.envauthor.family.EnvCase` and
    gives an :class:`~rlconform.libraries.envauthor.family.EnvRun`."""
    with quiet_library_logs():
        return _execute(system, case, with_model=with_model)


def _execute(system: System, case: Any, *, with_model: bool) -> Any:
    from rlconform.core.user import USER_ENV_FAMILY

    if system.family == USER_ENV_FAMILY:
        from rlconform.libraries.envauthor.family import execute_user_env

        return execute_user_env(system, case)
    if system.family == "isaaclab.torch":
        from rlconform.libraries.isaaclab.torch_family import execute as execute_torch

        return execute_torch(system, case)
    live = LiveRun(system, case)
    model_id = live.model_id()
    run = live.drive(case.ops)
    if with_model and model_id is not None:
        run.model_id = model_id
        run.model = execute(get_system(model_id), case, with_model=False)
    return run


def _mark_closed(obj: Any) -> None:
    """After a close() that failed or hung (its workers are then terminated by the runner), stop
    the object's finaliser from trying to close it again at some later garbage collection."""
    with contextlib.suppress(Exception):
        obj.closed = True


class RunCache:
    """Runs keyed by (system id, case). Every spec's search draws the same examples first, so the
    specs of one system share most runs instead of rebuilding the system for each spec."""

    def __init__(self, size: int = 256) -> None:
        self.size = size
        self._runs: OrderedDict[tuple[str, Any], Any] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def get(self, system: System, case: Any) -> Any:
        key = (system.id, case)
        run = self._runs.get(key)
        if run is not None:
            self.hits += 1
            self._runs.move_to_end(key)
            return run
        self.misses += 1
        run = execute(system, case)
        note_run(system.id, case, run)  # a fresh hang counts against the system's hang budget
        self._runs[key] = run
        if len(self._runs) > self.size:
            self._runs.popitem(last=False)
        return run

    def clear(self) -> None:
        self._runs.clear()


RUN_CACHE = RunCache()
