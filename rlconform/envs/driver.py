"""Driving a system around the reference envs: build it, perform a plan op by op, record, close.

The result is a :class:`Run`, everything the specs need: the literal call records, the ground
truth from the env logs, the transitions the family's recipe extracts, and (for the model spec)
the run of the reference model on the same case. :class:`ReferenceEnvFamily` is the base of every
family driven this way; its subclasses say how to perform an operation and how the library's
documented recipe reads the outputs.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import inspect
import shutil
import tempfile
import threading
import time
import traceback
import warnings
from abc import abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal, TextIO

from rlconform.core.crashlog import announce
from rlconform.core.family import ModelMatch, get_family
from rlconform.core.hangs import calls_hang
from rlconform.core.system import Capabilities, EnvFn, Probed, System, get_system
from rlconform.core.user import BadInput, returned_type, spawns_workers
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
from rlconform.envs.boundary_cases import boundary_cases
from rlconform.envs.calllog import FileSink, LogSink, MemorySink
from rlconform.envs.plan import Case, Op, Reset, Step
from rlconform.envs.reproducer import case_reproducer, print_run
from rlconform.envs.script import EnvScript
from rlconform.envs.spaces import batch_actions, single_action
from rlconform.envs.tap import SubEnvTap
from rlconform.envs.trace import CallRecord, CallView, Slot, snapshot
from rlconform.envs.truth import GroundTruth, build_truth
from rlconform.envs.whole_run import WholeRunFamily

if TYPE_CHECKING:
    from hypothesis.strategies import SearchStrategy

    from rlconform.core.spec import Spec


@dataclass(frozen=True)
class Contract:
    """What a family documents about its outputs, for the type and dtype specs."""

    #: dtype of the reward array (None: a Python or NumPy scalar for single envs)
    reward_dtype: str | None
    #: precision the family promises for reward values ("float64" or "float32")
    reward_precision: str
    #: returns per step call
    step_arity: int
    #: the family reports terminated and truncated separately
    separate_flags: bool
    #: the family batches outputs over sub-envs
    vectorized: bool
    #: positions of the reward and of the flag(s) in a step call's return tuple
    reward_position: int = 1
    flag_positions: tuple[int, ...] = (2, 3)
    #: the family can report an episode as truncated when the same step also terminated; SB3
    #: documents ``TimeLimit.truncated = truncated and not terminated`` (termination wins)
    truncation_survives_termination: bool = True
    # The facts below are what the cross-family specs read instead of the family's name, so a
    # new family states them here rather than adding a branch to every spec that reads them.
    #: the array library of the family's outputs: "numpy" (Gymnasium/SB3 tuples) or "torch"
    array_namespace: Literal["numpy", "torch"] = "numpy"
    #: where the reward and flag dtypes come from: "documented" (``reward_dtype`` and the flag
    #: dtypes the family documents) or "declared" (each env declares its own in its specs, read
    #: into the run's ``leaf_specs`` semantics: TorchRL documents no fixed dtype)
    dtypes: Literal["documented", "declared"] = "documented"
    #: why the generic reward/flag dtype check does not read this family's outputs, naming the
    #: family's own check that does (None: the generic check reads them)
    dtypes_checked_by: str | None = None
    #: why the family's data carries no terminal observation (None: it carries one)
    no_terminal_obs: str | None = None

    @property
    def has_terminal_obs(self) -> bool:
        """Whether the data a training loop takes from the family carries terminal observations."""
        return self.no_terminal_obs is None

    def expected_truncated(self, terminated: bool, truncated: bool) -> bool:
        """The truncated flag the family documents for an env stack that returned these flags."""
        return truncated and (self.truncation_survives_termination or not terminated)


class ReferenceEnvFamily(WholeRunFamily):
    """A family whose systems are driven around the reference envs, one plan operation at a time,
    and read by the library's documented recipe (Gymnasium, SB3, TorchRL envs, Isaac Lab's
    DirectRLEnv contract, TorchRL collectors and replay buffers).

    It adds the call-by-call driver to :class:`~rlconform.envs.whole_run.WholeRunFamily`: cases
    are call sequences drawn by :func:`rlconform.envs.strategies.cases` (or the family's own
    :meth:`cases`), a case runs through :class:`LiveRun`, and its reproducer replays the calls."""

    contract: ClassVar[Contract]
    #: how a user's regression test builds the user's object (``{factory}``: the factory) from
    #: ``env_fns``, binding the name the family's call sources use; None: no plain-call test
    #: (rlconform.envs.reproducer.user_reproducer)
    plain_build: ClassVar[str | None] = None
    #: that name (closed at the end of the test)
    plain_object: ClassVar[str] = "envs"
    #: names of rlconform.replay the build statement uses
    plain_imports: ClassVar[tuple[str, ...]] = ()
    #: a user's factory gets one ``env_fn`` that builds sub-env k on its k-th call (TorchRL): a
    #: sub-env built and driven more than once at the same time means workers with copies of it
    one_env_fn: ClassVar[bool] = False
    required_attributes: ClassVar[tuple[str, ...]] = ("reset", "step", "num_envs")

    # ------------------------------------------------------------ the Family protocol
    def run_case(self, system: System, case: Any, *, with_model: bool) -> Run:
        return drive_case(system, case, self, with_model=with_model)

    def cases(self, system: System, scenario: str) -> SearchStrategy[Any]:
        from rlconform.envs.strategies import cases

        return cases(system, scenario, vectorized=self.contract.vectorized)

    def boundary_cases(self, system: System, scenario: str) -> list[Any]:
        """The edge cases every search tries first (rlconform.envs.boundary_cases)."""
        return boundary_cases(system, scenario, vectorized=self.contract.vectorized)

    def reproducer(self, system: System, spec: Spec, case: Any, run: Any) -> str:
        return case_reproducer(system, spec, case, run, family=self, about=self.about_case(system, case))

    def about_case(self, system: System, case: Any) -> str | None:
        """What the reproducer's docstring says the system and case are, where the replayed calls
        do not say it (a buffer filled from a collector, an estimator fed its batches); None: the
        calls say it."""
        return None

    def print_run(self, run: Any, case: Any, stream: TextIO) -> None:
        print_run(run, stream)

    def check_factory(self, signature: inspect.Signature) -> None:
        """Raise TypeError when a user's factory cannot take ``env_fns`` (the default API)."""
        signature.bind([])

    def library_layers(self, obj: Any) -> list[str]:
        """The bundled systems that are the library part of the built stack ``obj`` (read while it
        is alive, kept in the run's semantics as ``library_systems``); none by default."""
        return []

    def library_systems(self, run: Any) -> list[str]:
        return list(run.semantics.get("library_systems") or [])

    def user_capabilities(self) -> Capabilities:
        """What a user's system of this family is drawn with before the probe narrows it."""
        return Capabilities(partial_reset=False)

    def prepare_user_build(self) -> None:
        """Called before each build of a user's factory (SB3 preloads its fork server)."""

    def user_system(self, fn: Callable[..., Any], reference: str, **options: Any) -> System:
        """A user's ``(env_fns) -> object`` factory as a system of this family."""

        def build(env_fns: Sequence[EnvFn]) -> Any:
            self.prepare_user_build()
            return fn(list(env_fns))

        return self.user_system_of(
            reference,
            title=f"{reference}(env_fns)",
            build=build,
            # the factory may move envs to worker processes: log to files, which work either way
            out_of_process=True,
            capabilities=self.user_capabilities(),
        )

    def probe_num_envs(self, system: System) -> int:
        """How many reference envs the probe builds a user's system around."""
        return 2

    def refuse_shared_sub_envs(self, system: System, reason: str) -> str | None:
        """Why a factory whose sub-envs share one env factory cannot be checked (None: it can)."""
        return None

    def probe_factory(self, system: System) -> Probed:
        """Whether building it starts worker processes, the capabilities to draw its cases with,
        and its stack's semantics.

        The factory is first driven with each observation and action kind
        (:mod:`rlconform.envs.factory_probe`): its cases are drawn from the kinds it accepts, one
        that never used the envs it was given is bad input, and the stack semantics are what every
        accepted build read the same."""
        from rlconform.envs.factory_probe import accepted_kinds

        given = self.factory_argument
        acceptance = accepted_kinds(system, self, self.probe_num_envs(system))
        if acceptance.ignored_env_fns:
            raise BadInput(
                f"{system.source} ignored the {given} it was given (it built its own envs: its reset and step "
                f"succeeded while no env from {given} saw a call); a {system.family} factory must build its "
                f"sub-envs by calling {given}"
            )
        shared = acceptance.shared_sub_envs
        refusal = None if shared is None else self.refuse_shared_sub_envs(system, shared.reason)
        if refusal is not None:
            raise BadInput(refusal)
        # no kind ran cleanly: build with the default script, so that a factory that cannot be
        # built at all is bad input with its traceback, and one whose calls fail is checked (and fails)
        script = acceptance.base or EnvScript()
        n = self.probe_num_envs(system)
        case = Case(script, n, (Reset(),))
        folder = tempfile.mkdtemp(prefix="rlconform-probe-") if system.out_of_process else None
        sinks: list[LogSink] = (
            [FileSink(Path(folder) / f"env-{i}.log") for i in range(n)]
            if folder is not None
            else [MemorySink() for _ in range(n)]
        )
        try:
            spawned = spawns_workers(
                system,
                lambda: system.build(env_fns_for(case, sinks)),
                self.required_attributes,
                returned_type(self.factory_signature),
                close=self.close_probe,
            )
        finally:
            if folder is not None:
                shutil.rmtree(folder, ignore_errors=True)
        return Probed(spawned, acceptance.restrict(system.capabilities), acceptance.stack_semantics)

    # ------------------------------------------------------------ driving, op by op

    def begin(self, driver: Driver, obj: Any) -> None:
        """Prepare per-run driver state before the first operation."""

    @abstractmethod
    def execute(self, driver: Driver, obj: Any, op: Op) -> None:
        """Perform one plan operation (and any call the recipe requires before it)."""

    @abstractmethod
    def recipe(self, calls: list[CallRecord], num_envs: int, semantics: dict[str, Any]) -> list[Slot]:
        """The (sub-env, agent step) cells a correct training loop reads from these calls.

        ``semantics`` is what :meth:`describe_semantics` read off the built object (for example
        the autoreset mode a Gymnasium vector env declares)."""

    def observe(self, obj: Any, record: CallRecord) -> None:
        """Record family-specific state right after a call (e.g. normalizer statistics)."""

    def close(self, obj: Any) -> None:
        close = getattr(obj, "close", None)
        if callable(close):
            close()

    def default_model(self, obj: Any) -> str | None:
        """Id of the reference system modelling ``obj`` when the system names none."""
        return self.model_match(obj).model_id

    def model_match(self, obj: Any) -> ModelMatch:
        """The reference system modelling the stack ``obj`` is, or why none does (a user's
        system names no model: the one of the stack it actually built is used, never the
        family's plain one)."""
        return ModelMatch(None, f"rlconform has no reference model of the {self.name} family")

    def describe_semantics(self, obj: Any) -> dict[str, Any]:
        """What the built object declares about itself: spaces, modes, wrappers present.

        Read once after construction, while the object is alive; the specs use it later."""
        return {}

    def api_problems(self, call: CallRecord, num_envs: int) -> list[str]:
        """Where a call's return value departs from the family's documented structure."""
        return []

    def object_problems(self, semantics: dict[str, Any], num_envs: int) -> list[str]:
        """Where the built object departs from the family's documented attributes."""
        return []


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
    #: what the user's layers around each sub-env returned (rlconform.envs.tap), where tapped
    tap: SubEnvTap | None = field(default=None, repr=False, compare=False)
    memo: dict[Any, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def usable(self) -> bool:
        return self.build_error is None and self.truth is not None

    def hang(self) -> str | None:
        return calls_hang(self.calls, self.call_timeout, self.close_error, self.close_timeout)

    @property
    def call_deadline(self) -> float:
        return self.call_timeout

    def slots_of(self, env: int) -> list[Slot]:
        return [s for s in self.slots if s.env == env]

    def call(self, position: int) -> CallRecord:
        return self.calls[position]


#: how long the driver waits after a failed call on a system with worker processes


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
        spec = case.script.action
        return cls(functools.partial(single_action, spec), functools.partial(batch_actions, spec), reference_units=True)


class Driver:
    """Driver state for one run; adapters make every library call through :meth:`call`."""

    def __init__(
        self,
        system: System,
        case: Case,
        family: ReferenceEnvFamily,
        codec: ActionCodec | None = None,
        *,
        user_envs: bool = False,
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
        #: why no further call is made although none hung: the system refused a reset (it raised),
        #: so its envs are in no state a caller may step; a later call's output would be blamed on
        #: the system for a call a correct caller never makes (api.valid_calls_succeed reports the
        #: refusal itself)
        self.stopped: str | None = None
        # what ran beside this thread before the system was built (see works_elsewhere)
        self._children = child_processes()
        self._threads = threading.active_count()

    def works_elsewhere(self) -> bool:
        """Whether the system may still be working after a call returned: it runs its envs in
        worker processes (a bundled out-of-process system, or a user's factory whose probe saw it
        start workers), or it has started processes or threads since the driver began."""
        if self.system.expensive:
            return True
        return bool(child_processes() - self._children) or threading.active_count() > self._threads

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
            if isinstance(op, Reset) and not isinstance(exc, CallTimeout):
                self.stopped = f"{source} raised {record.error_type}: the run stops at the refused reset"
                record.extra["stops_run"] = self.stopped
            if isinstance(exc, CallTimeout):
                self.aborted = True
            elif self.system.out_of_process and not (self.calls and self.calls[-1].failed) and self.works_elsewhere():
                # work a failed call left running in worker processes lands in its own window
                # (events are charged to the call whose window they arrive in), not the next
                # one's; once per streak of failures (a wedged system fails every call at once).
                # A user's factory that runs every env in this thread has no such work: it logs
                # to files only because it might have had workers
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


class StackRefusal(Exception):
    """What a family's ``describe_semantics`` raises when the stack it built cannot take the envs
    it was given, as the stack's own declaration shows (a TorchRL transform whose observation spec
    cannot read back a value of its own): the stack's limit, not rlconform's error. The run records
    it as the system's build error, so that the factory probe names the kind as refused and a
    search counts the example as not built."""


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
        family: ReferenceEnvFamily | None = None,
        built: Any = None,
        keep_open: bool = False,
    ) -> None:
        """``env_fns``/``codec`` replace the reference envs and their actions (to drive a user's
        own env through a library stack); no ground truth is then recorded.

        ``built``: an object this system built for an earlier run with the same ``env_fns``,
        driven again instead of a fresh build; ``keep_open``: ``finish`` leaves the object open
        (and its worker processes running) for a later run, unless a call hung. Both are for env-author
        mode's stack pool (rlconform.libraries.envauthor.stack_pool), which owns the object and
        confirms every failure on a fresh build."""
        self.system = system
        self.family = family if family is not None else reference_family(system.family)
        self.run = Run(system=system, case=case)
        self.obj: Any = None
        self._log_dir = Path(tempfile.mkdtemp(prefix="rlconform-logs-")) if system.out_of_process else None
        self._sinks = _sinks(system, case.num_envs, self._log_dir) if env_fns is None else []
        self._children = child_processes()
        self.driver = Driver(system, case, self.family, codec, user_envs=env_fns is not None)
        self._finished = False
        self._keep_open = keep_open
        self._ops: list[Op] = []
        reference_envs = env_fns is None
        if env_fns is None:
            env_fns = env_fns_for(case, self._sinks)
        announce(f"building {system.id}")
        try:
            if built is not None:
                self.obj = built
            elif self._log_dir is not None:
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
        self.run.call_timeout = self.driver.timeout if deadlines_available() else 0.0
        try:
            self.run.semantics = self.family.describe_semantics(self.obj)
            if self.system.kind == "user":
                self.run.semantics["library_systems"] = self.family.library_layers(self.obj)
        except StackRefusal as refusal:
            self.run.build_error = str(refusal)
            try:
                self._close(self.run)
                self.run.orphans = reap(self._children)
            finally:
                self._cleanup()
                self._finished = True
            return
        if reference_envs:
            self.run.tap = SubEnvTap.attach(self.obj, case.script.max_episode_steps)
        self.family.begin(self.driver, self.obj)

    #: ``finish`` left the object open (``keep_open``, and no call hung)
    kept_open = False

    @property
    def built(self) -> bool:
        return self.run.build_error is None

    @property
    def calls(self) -> list[CallRecord]:
        return self.driver.calls

    def apply(self, op: Op) -> list[CallRecord]:
        """Perform one operation; return the call records it produced."""
        if not self.built or self.driver.aborted or self.driver.stopped is not None:
            return []
        before = len(self.driver.calls)
        self._ops.append(op)
        self.family.execute(self.driver, self.obj, op)
        return self.driver.calls[before:]

    def finish(self) -> Run:
        if self._finished:
            return self.run
        self._finished = True
        run = self.run
        # a scenario family whose construction failed for a reason no case avoids (see
        # torchrl_frames.note_environment_error) reports it as a build failure
        run.build_error = run.build_error or self.driver.state.get(BUILD_ERROR)
        if self._ops and tuple(self._ops) != run.case.ops:
            # driven op by op (state machines): the case is what was actually applied
            run.case = Case(run.case.script, run.case.num_envs, tuple(self._ops))
        try:
            if self._keep_open and not self.driver.aborted:
                self.kept_open = True  # its owner closes it, and reaps its workers then
            else:
                self._close(run)
                run.orphans = reap(self._children)
            run.calls = self.driver.calls
            run.truth = build_truth(run.case.script, [sink.read() for sink in self._sinks]) if self._sinks else None
            run.slots = self.family.recipe(run.calls, run.case.num_envs, run.semantics)
        finally:
            self._cleanup()
        return run

    def _close(self, run: Run) -> None:
        """Close the built system, under the close deadline; a failure is ``run.close_error``."""
        if self.driver.aborted:
            # a call already hung: the system is wedged and close() would hang as well; its
            # workers are terminated by the caller (reap) and the hang is the verdict
            run.close_error = "not attempted: an earlier call hung"
            _mark_closed(self.obj)
            return
        # a user's stack may start spawned workers, whose shutdown takes seconds; the bundled
        # stacks' workers are forked or forkserver children and close within a call's deadline
        limit = close_timeout(self.driver.timeout) if self.system.kind == "user" else self.driver.timeout
        run.close_timeout = limit if deadlines_available() else 0.0
        announce("close()", limit)
        try:
            with deadline(limit, watch_deadlock=self.system.kind == "user"), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                self.family.close(self.obj)
        except (Exception, CallTimeout) as exc:
            run.close_error = f"{type(exc).__name__}: {exc}"
            _mark_closed(self.obj)
        finally:
            announce("")

    def drive(self, ops: Sequence[Op]) -> Run:
        """Apply ``ops`` (stopping early if a call hangs), then finish."""
        try:
            for op in ops:
                self.apply(op)
                if self.driver.aborted:
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
        self.model_time_limit = match.time_limit
        self.model_parameters = dict(match.parameters)
        return match.model_id

    #: a time limit the stack adds around each sub-env, which its model applies too (``model_id``)
    model_time_limit: int | None = None
    #: the wrapper's settings the model is built with (``model_id``; empty: the model's defaults)
    model_parameters: Mapping[str, Any] = {}

    def model_system(self, model_id: str) -> System:
        """The reference system ``model_id`` built with the parameters of the stack this run
        built (:attr:`model_parameters`), so that a stack configured otherwise than the bundled
        one is compared with the model of its own configuration; without parameters, the
        registered system itself (the bundled systems' verdicts rest on it)."""
        model = get_system(model_id)
        if not self.model_parameters:
            return model
        build: Any = model.build
        settings = ", ".join(
            f"{name}={value!r}" if isinstance(value, (bool, int, float, str)) else f"{name} as built"
            for name, value in sorted(self.model_parameters.items())
        )
        return dataclasses.replace(
            model,
            build=functools.partial(build, **self.model_parameters),
            source=f"{model.source}  # with the stack's {settings}",
        )

    def model_case(self) -> Case:
        """The case the reference model runs: this one, its envs also cut by a time limit the
        stack adds around each of them (the tighter of it and the script's own truncates)."""
        case, limit = self.run.case, self.model_time_limit
        if limit is None:
            return case
        own = case.script.max_episode_steps
        script = dataclasses.replace(case.script, max_episode_steps=limit if own is None else min(own, limit))
        return dataclasses.replace(case, script=script)

    def _cleanup(self) -> None:
        if self._log_dir is not None:
            shutil.rmtree(self._log_dir, ignore_errors=True)


#: ``driver.state`` key: an adapter's report that the system could not be built after all
BUILD_ERROR = "build_error"


def _mark_closed(obj: Any) -> None:
    """After a close() that failed or hung (its workers are then terminated by the runner), stop
    the object's finaliser from trying to close it again at some later garbage collection."""
    with contextlib.suppress(Exception):
        obj.closed = True


def reference_family(name: str) -> ReferenceEnvFamily:
    """The family ``name`` of the catalog in use, as the reference-env family it must be."""
    family = get_family(name)
    if not isinstance(family, ReferenceEnvFamily):
        raise TypeError(f"family {name} is not driven around the reference envs")
    return family


def drive_case(system: System, case: Case, family: ReferenceEnvFamily, *, with_model: bool = True) -> Run:
    """Run ``case`` on ``system`` (and on its reference model when ``with_model``)."""
    live = LiveRun(system, case, family=family)
    model_id = live.model_id()
    run = live.drive(case.ops)
    if with_model and model_id is not None:
        run.model_id = model_id
        model = live.model_system(model_id)
        run.model = reference_family(model.family).run_case(model, live.model_case(), with_model=False)
    return run
