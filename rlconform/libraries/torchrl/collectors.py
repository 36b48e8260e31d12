"""TorchRL collectors: exact frame accounting, real transitions, and policy updates that arrive.

A collector is not driven call by call: it owns its envs and its loop. A
:class:`CollectorCase` (a :class:`~rlconform.envs.plan.Case` with the collector's parameters) gives the
script, the number of sub-envs (one per worker for multi-process collectors), ``frames_per_batch``,
``total_frames``, which policy, and whether devices are passed explicitly. Its single ``Reset`` op
stands for "construct the collector and iterate it to the end" (the collector resets its envs
itself). The family records the construction, every batch (decoded to stamps) and the in-place
weight update after the first batch as call records, so that the runner, the run cache, the
reports and the reproducers handle collectors like any other system.

The policy's action is a function of one weight, so a stale policy copy shows in the actions; see
:mod:`rlconform.libraries.torchrl.policies` for the uncopyable and the silently detaching policies.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rlconform.core.forkserver import spawn_from_fork_server
from rlconform.core.spec import Checker, Outcome, spec
from rlconform.core.system import Capabilities, EnvFn, System, SystemTable
from rlconform.envs.plan import Case, Op, Reset
from rlconform.envs.script import EnvScript, EpisodePlan
from rlconform.envs.spaces import BoxObs, DiscreteAction
from rlconform.envs.stamp import Stamp
from rlconform.envs.trace import CallRecord
from rlconform.libraries.torchrl.env_systems import FORKSERVER_PRELOAD, gym_wrapper
from rlconform.libraries.torchrl.frames import (
    NUM_ACTIONS,
    DrivenObjectFamily,
    Frame,
    describe,
    env_source,
    note_environment_error,
    read_frames,
    scenario_scripts,
    serial_or_single,
)
from rlconform.specs.families import TORCHRL_COLLECTOR

if TYPE_CHECKING:
    from hypothesis.strategies import SearchStrategy

    from rlconform.envs.driver import Driver, Run
    from rlconform.libraries.torchrl.policies import PolicyKind

#: this module's systems, read by the catalog (rlconform.core.catalog)
SYSTEMS = SystemTable()

FAMILY_NAME = TORCHRL_COLLECTOR
FAMILIES = frozenset({FAMILY_NAME})
#: CallRecord.extra key saying what a recorded call was
NEEDS_CASE = "runs only on a CollectorCase (replay the verdict's case, not a plain Case)"
ROLE = "collector_role"


@dataclass(frozen=True)
class CollectorCase(Case):
    """One collector run: the script and sub-envs of a Case, plus the collector's parameters."""

    frames_per_batch: int = 4
    total_frames: int = 8
    policy: PolicyKind = "plain"
    #: pass ``policy_device="cpu", env_device="cpu"`` explicitly (a device cast is set up)
    device_casts: bool = False

    def kwargs_source(self) -> str:
        casts = ', policy_device="cpu", env_device="cpu"' if self.device_casts else ""
        return f"frames_per_batch={self.frames_per_batch}, total_frames={self.total_frames}{casts}"


def collector_cases(system: System) -> SearchStrategy[CollectorCase]:
    """Mostly requests a collector can meet exactly (frames_per_batch a multiple of the envs,
    total_frames a multiple of frames_per_batch), and some it cannot."""
    from hypothesis import strategies as st

    caps = system.capabilities

    @st.composite
    def draw_case(draw: st.DrawFn) -> CollectorCase:
        num_envs = draw(st.integers(caps.min_envs, caps.max_envs))
        exact = draw(st.booleans() | st.just(True))
        per_batch = num_envs * draw(st.integers(1, 3)) if exact else draw(st.integers(1, 6))
        total = per_batch * draw(st.integers(1, 3)) if exact else draw(st.integers(1, 14))
        return CollectorCase(
            draw(scenario_scripts()),
            num_envs,
            (Reset(),),
            frames_per_batch=per_batch,
            total_frames=total,
            policy=draw(st.sampled_from(("plain", "handle", "detaching"))),
            device_casts=draw(st.booleans()),
        )

    return draw_case()


# ------------------------------------------------------------------------------------- harness

#: (env_fns, policy, case) -> a collector
CollectorFactory = Callable[[Sequence[EnvFn], Any, CollectorCase], Any]


@dataclass
class CollectorHarness:
    """What a collector system builds: the envs' factories and how to make the collector; the
    collector itself is made by the driver, so that a refusal is a recorded outcome."""

    env_fns: Sequence[EnvFn]
    factory: CollectorFactory
    #: reproducer text of the construction, given the case
    source: Callable[[CollectorCase], str]
    #: batches a collector may still yield from before a weight update (async workers' batches
    #: already in flight); 0 for synchronous collectors
    lag: int = 0
    collector: Any = None
    net: Any = None
    batches: Iterator[Any] | None = field(default=None, repr=False)

    def construct(self, case: CollectorCase) -> None:
        from rlconform.libraries.torchrl.policies import make_policy

        policy, self.net = make_policy(case.policy, NUM_ACTIONS)
        self.collector = self.factory(self.env_fns, policy, case)
        self.batches = iter(self.collector)

    def next_frames(self, case: CollectorCase) -> list[Frame] | None:
        assert self.batches is not None
        batch = next(self.batches, None)
        return None if batch is None else read_frames(batch, case.script)

    def update_weights(self) -> None:
        from rlconform.libraries.torchrl.policies import set_new_weights

        set_new_weights(self.net)
        self.collector.update_policy_weights_()

    def shutdown(self) -> None:
        if self.collector is not None:
            collector, self.collector = self.collector, None
            collector.shutdown()


def collector_edge_cases(system: System) -> list[CollectorCase]:
    """Requests at the edges of what a collector can meet exactly, tried first under every
    profile: ``total_frames`` not a multiple of ``frames_per_batch`` (TorchRL rounds it up, T1)
    and, where several sub-envs run, ``frames_per_batch`` not a multiple of their number (T2). A
    random search draws such a request in about one example of four, so a small profile could
    miss both."""
    caps = system.capabilities
    script = EnvScript(obs=BoxObs(), action=DiscreteAction(NUM_ACTIONS), episodes=(EpisodePlan(3, "terminated"),))
    n = max(caps.min_envs, 1)
    found = [CollectorCase(script, n, (Reset(),), frames_per_batch=2 * n, total_frames=5 * n)]
    if caps.max_envs >= 2:
        found.append(CollectorCase(script, 2, (Reset(),), frames_per_batch=3, total_frames=6))
    return [case for case in found if caps.min_envs <= case.num_envs <= caps.max_envs]


class CollectorFamily(DrivenObjectFamily):
    name = FAMILY_NAME
    quiet_loggers = ("torchrl",)
    #: the FINDINGS rows of the bundled collectors' defects (rlconform.core.findings): every
    #: collector overshoots a total_frames its batches do not divide (T1; Collector(SerialEnv)
    #: also rounds frames_per_batch up to the number of envs, T2, on the same spec)
    findings = {("torchrl.*Collector.*", "collector.frame_accounting"): "T1"}

    def cases(self, system: System, scenario: str) -> SearchStrategy[Any]:
        """This family's own cases (a subclass of ``Case`` with the scenario's parameters), not
        call sequences."""
        return collector_cases(system)

    def boundary_cases(self, system: System, scenario: str) -> list[Any]:
        return collector_edge_cases(system) if scenario == "standard" else []

    def describe_semantics(self, obj: Any) -> dict[str, Any]:
        return {"lag": obj.lag}

    def execute(self, driver: Driver, obj: Any, op: Op) -> None:
        """Construct the collector, iterate it to the end, and change the policy's weights in
        place (then call ``update_policy_weights_()``, TorchRL's documented sync) after the
        first batch."""
        case = driver.case
        if not isinstance(case, CollectorCase):
            # driven call by call (the state machine) or from a plain Case: nothing to run, the
            # specs say so (a printed reproducer keeps the scenario's own case and its parameters)
            return
        record = driver.call(op, obj.source(case), obj.construct, (case,))
        record.extra[ROLE] = "construct"
        if record.failed:
            note_environment_error(driver, record)
            return
        # a collector must stop by itself; a bound keeps a runaway one from looping forever
        for index in range(case.total_frames + 2):
            record = driver.call(op, "frames = next(iter(collector))", obj.next_frames, (case,))
            if record.failed or record.result_live is None:
                record.extra[ROLE] = "end"
                return
            record.extra[ROLE] = "batch"
            if index == 0:
                update = driver.call(
                    op, "policy.module.w.fill_(2.0); collector.update_policy_weights_()", obj.update_weights
                )
                update.extra[ROLE] = "update"


FAMILY = CollectorFamily()


# -------------------------------------------------------------------------------------- readings


@dataclass
class Readings:
    """A collector run as the specs see it."""

    refused: CallRecord | None = None
    batches: list[list[Frame]] = field(default_factory=list)
    #: the call that failed mid-run (a batch, or the weight update)
    crashed: CallRecord | None = None
    #: how many batches were delivered before the weight update
    before_update: int | None = None


def readings(run: Run) -> Readings:
    found = Readings()
    for record in run.calls:
        role = record.extra.get(ROLE)
        if role == "construct" and record.failed:
            found.refused = record
        elif record.failed:
            found.crashed = record
        elif role == "batch":
            found.batches.append(record.result_live)
        elif role == "update":
            found.before_update = len(found.batches)
    return found


def _error(record: CallRecord) -> str:
    return f"{record.error_type}: {record.error_message}"


def _raw_pickling(record: CallRecord) -> bool:
    """A bare pickling failure (the user's object named, but not what the collector needed)."""
    text = f"{record.error_type} {record.error_message}".lower()
    return record.error_type in ("TypeError", "PicklingError", "AttributeError") and "pickle" in text


# ----------------------------------------------------------------------------------------- specs


@spec(
    "collector.frame_accounting",
    impact="api-contract",
    statement="Every batch a collector yields holds exactly frames_per_batch frames and the batches add up to exactly total_frames; a request it cannot meet is refused at construction with an error that names it.",
    rationale="Training schedules, learning-rate annealing and logged sample counts are written in frames; a collector that silently rounds total_frames up or frames_per_batch to its number of envs trains on a different budget than the one asked for.",
    families=FAMILIES,
)
def frame_accounting(run: Run) -> Outcome:
    c = Checker()
    case = run.case
    if not isinstance(case, CollectorCase):
        return c.not_applicable(NEEDS_CASE)
    found = readings(run)
    if found.refused is not None:
        text = found.refused.error_message or ""
        if "frames_per_batch" in text or "total_frames" in text:
            c.expect(True, "")
            return c.done()
        return c.not_applicable(f"the collector was not built: {_error(found.refused)}")
    asked = f"frames_per_batch={case.frames_per_batch}, total_frames={case.total_frames}"
    for index, frames in enumerate(found.batches):
        c.expect(
            len(frames) == case.frames_per_batch,
            f"batch {index} holds {len(frames)} frames; asked for {asked}",
            call=index,
        )
    if found.crashed is None:
        delivered = sum(len(frames) for frames in found.batches)
        c.expect(
            delivered == case.total_frames,
            lambda: f"{len(found.batches)} batches delivered {delivered} frames in all; asked for {asked}",
        )
    return c.done()


@spec(
    "collector.transitions",
    impact="training-data",
    statement="Every frame a collector delivers is a transition its env really made (never a reset step), with that env's terminal next observation and its terminated/truncated flags, and the frames of one env within a batch are consecutive transitions, none missing, none delivered twice.",
    rationale="A collector sits between the envs and the loss: a reset observation stored as a next observation, a lost truncation flag or a dropped step corrupts bootstrapping silently.",
    families=FAMILIES,
)
def collector_transitions(run: Run) -> Outcome:
    c = Checker()
    if not isinstance(run.case, CollectorCase):
        return c.not_applicable(NEEDS_CASE)
    found = readings(run)
    if found.refused is not None:
        return c.not_applicable(f"the collector was not built: {_error(found.refused)}")
    assert run.truth is not None
    index: dict[tuple[Stamp, Stamp], tuple[int, Any]] = {}
    for env in run.truth.envs:
        for position, transition in enumerate(env.transitions):
            index[(transition.obs, transition.next_obs)] = (position, transition)
    seen: set[tuple[Stamp, Stamp]] = set()
    for number, frames in enumerate(found.batches):
        last: dict[int, int] = {}
        for frame in frames:
            obs, nxt = frame.obs, frame.next_obs
            if not (isinstance(obs, Stamp) and isinstance(nxt, Stamp)):
                c.fail(f"batch {number}: a frame {describe(obs)} -> {describe(nxt)}", call=number)
                continue
            hit = index.get((obs, nxt))
            if hit is None:
                kind = " (a reset observation as next observation)" if nxt.step == 0 else ""
                c.fail(
                    f"batch {number}: frame {obs.short()} -> {nxt.short()}{kind} is no transition env {obs.env} made",
                    env=obs.env,
                    call=number,
                )
                continue
            position, truth = hit
            c.expect(
                (frame.terminated, frame.truncated) == (truth.terminated, truth.truncated),
                (
                    f"batch {number}: {truth.describe()} recorded with terminated={frame.terminated}, truncated={frame.truncated}"
                ),
                env=obs.env,
                call=number,
            )
            c.expect((obs, nxt) not in seen, f"batch {number}: {truth.describe()} delivered twice", env=obs.env)
            seen.add((obs, nxt))
            previous = last.get(obs.env)
            if previous is not None:
                c.expect(
                    position == previous + 1,
                    (
                        f"batch {number}: {position - previous - 1} transitions of env {obs.env} missing before {truth.describe()}"
                    ),
                    env=obs.env,
                    call=number,
                )
            last[obs.env] = position
    return c.done()


@spec(
    "collector.policy_updates",
    impact="training-data",
    statement="After the policy's weights change in place and update_policy_weights_() is called, the collector's next batch (an async collector: once the batches its workers already had in flight are out) acts with the new weights; a policy the collector cannot copy or send to its workers is refused at construction with an error that says so, never run as a stale copy nor failing with a raw pickling error.",
    rationale="Collectors deep-copy or pickle policies to cast devices or reach workers; a policy bound to hardware or holding a handle, or whose copy silently detaches its weights, then trains one network while collecting with another.",
    families=FAMILIES,
)
def policy_updates(run: Run) -> Outcome:
    from rlconform.libraries.torchrl.policies import NEW_CODE, OLD_CODE

    c = Checker()
    case = run.case
    if not isinstance(case, CollectorCase):
        return c.not_applicable(NEEDS_CASE)
    found = readings(run)
    if found.refused is not None:
        c.expect(
            not _raw_pickling(found.refused),
            f"{case.policy} policy: construction failed with a raw pickling error: {_error(found.refused)}",
        )
        return c.done()
    if found.crashed is not None:
        c.expect(
            not _raw_pickling(found.crashed),
            f"{case.policy} policy: a pickling error mid-run: {_error(found.crashed)}",
            call=found.crashed.position,
        )
    if found.before_update is None:
        return c.done()
    lag = run.semantics.get("lag", 0)
    for number, frames in enumerate(found.batches):
        codes = sorted({frame.action for frame in frames})
        if number < found.before_update:
            c.expect(codes == [OLD_CODE], f"batch {number}: actions {codes} before any update; expected [{OLD_CODE}]")
        elif number >= found.before_update + lag:
            c.expect(
                codes == [NEW_CODE],
                (
                    f"{case.policy} policy: batch {number}, after the weights changed in place and update_policy_weights_() was called: actions {codes}, expected [{NEW_CODE}] (a stale policy copy)"
                ),
                call=number,
            )
    return c.done()


# --------------------------------------------------------------------------------------- systems


def _casts(case: CollectorCase) -> dict[str, Any]:
    return {"policy_device": "cpu", "env_device": "cpu"} if case.device_casts else {}


def _sync(env_fns: Sequence[EnvFn], policy: Any, case: CollectorCase) -> Any:
    from torchrl.collectors import Collector

    env = functools.partial(serial_or_single, list(env_fns))
    return Collector(
        env, policy, frames_per_batch=case.frames_per_batch, total_frames=case.total_frames, **_casts(case)
    )


#: what the fork server imports for a multi-process collector's workers: the envs' imports, and the
#: collector's own worker loop and rlconform's policies, which each worker unpickles
COLLECTOR_PRELOAD = (*FORKSERVER_PRELOAD, "torchrl.collectors", "rlconform.libraries.torchrl.policies")


def _multi(name: str) -> CollectorFactory:
    def build(env_fns: Sequence[EnvFn], policy: Any, case: CollectorCase) -> Any:
        import torchrl.collectors

        cls = getattr(torchrl.collectors, name)
        envs = [functools.partial(gym_wrapper, fn) for fn in env_fns]
        with spawn_from_fork_server(COLLECTOR_PRELOAD):
            return cls(
                envs, policy, frames_per_batch=case.frames_per_batch, total_frames=case.total_frames, **_casts(case)
            )

    return build


def _harness(
    factory: CollectorFactory, template: str, *, lag_per_env: bool = False
) -> Callable[[Sequence[EnvFn]], Any]:
    def build(env_fns: Sequence[EnvFn]) -> CollectorHarness:
        import torchrl.collectors  # noqa: F401  (imported here, outside the calls' deadline)

        import rlconform.libraries.torchrl.policies  # noqa: F401

        def source(case: CollectorCase) -> str:
            return template.format(env=env_source(case.num_envs), n=case.num_envs, kwargs=case.kwargs_source())

        return CollectorHarness(list(env_fns), factory, source, lag=len(env_fns) if lag_per_env else 0)

    return build


_REQUIRES = ("torchrl", "tensordict", "gymnasium")
_POLICY = "policy=TensorDictModule(net, ['observation'], ['action'])"
_WORKER_ENVS = "[partial(gym_wrapper, partial(make_reference_env, script, i)) for i in range({n})]"
_SCENARIO_NOTE = "Box float32 observations and a Discrete action; one reference env per sub-env (per worker for multi-process collectors)"


def _register(system_id: str, title: str, factory: CollectorFactory, template: str, **kwargs: Any) -> None:
    lag = kwargs.pop("lag_per_env", False)
    caps = kwargs.pop("capabilities", Capabilities(max_envs=1, notes=(_SCENARIO_NOTE,)))
    SYSTEMS.add(
        System(
            id=system_id,
            family=FAMILY_NAME,
            title=title,
            build=_harness(factory, template, lag_per_env=lag),
            source=template,
            requires=_REQUIRES,
            capabilities=caps,
            **kwargs,
        )
    )


_register(
    "torchrl.Collector.GymWrapper",
    "Collector(GymWrapper(env), policy)",
    _sync,
    "Collector({env}, " + _POLICY + ", {kwargs})",
)
_register(
    "torchrl.Collector.SerialEnv",
    "Collector(SerialEnv(n, [GymWrapper(env) ...]), policy)",
    _sync,
    "Collector({env}, " + _POLICY + ", {kwargs})",
    capabilities=Capabilities(min_envs=2, max_envs=3, notes=(_SCENARIO_NOTE,)),
)
_register(
    "torchrl.MultiSyncCollector.GymWrapper",
    "MultiSyncCollector([GymWrapper(env) ...], policy): one worker process per env",
    _multi("MultiSyncCollector"),
    "MultiSyncCollector(" + _WORKER_ENVS + ", " + _POLICY + ", {kwargs})",
    out_of_process=True,
    capabilities=Capabilities(min_envs=1, max_envs=2, notes=(_SCENARIO_NOTE,)),
)
_register(
    "torchrl.MultiAsyncCollector.GymWrapper",
    "MultiAsyncCollector([GymWrapper(env) ...], policy): one worker process per env",
    _multi("MultiAsyncCollector"),
    "MultiAsyncCollector(" + _WORKER_ENVS + ", " + _POLICY + ", {kwargs})",
    out_of_process=True,
    lag_per_env=True,
    capabilities=Capabilities(min_envs=1, max_envs=2, notes=(_SCENARIO_NOTE,)),
)

# ------------------------------------------------------------------------- model and planted bugs


class ModelCollector:
    """The documented semantics, executable: refuse what cannot be met exactly, use the policy as
    given (no copy), step with ``step_and_maybe_reset`` and record the ``("next", ...)`` entries.

    ``defect`` plants one bug: "drops_last_frame", "records_reset_step" or "stale_copy"."""

    def __init__(self, env: Any, policy: Any, frames_per_batch: int, total_frames: int, defect: str = "") -> None:
        width = env.batch_size[0] if env.batch_size else 1
        if total_frames % frames_per_batch or frames_per_batch % width:
            env.close(raise_if_closed=False)
            raise ValueError(
                f"total_frames={total_frames} must be a multiple of frames_per_batch={frames_per_batch}, "
                f"itself a multiple of the {width} envs"
            )
        if defect == "stale_copy":
            from rlconform.libraries.torchrl.policies import stale_copy

            policy = stale_copy(policy)
        self.env, self.policy, self.defect = env, policy, defect
        self.frames_per_batch, self.total_frames, self.width = frames_per_batch, total_frames, width

    def __iter__(self) -> Iterator[Any]:
        import torch

        td = self.env.reset()
        for _ in range(self.total_frames // self.frames_per_batch):
            steps = []
            for _ in range(self.frames_per_batch // self.width):
                td = self.policy(td)
                data, td = self.env.step_and_maybe_reset(td)
                data = data.clone()
                if self.defect == "records_reset_step":
                    data.set(("next", "observation"), td.get("observation").clone())
                steps.append(data)
            batch = torch.stack(steps, dim=-1)
            yield batch[..., :-1] if self.defect == "drops_last_frame" else batch

    def update_policy_weights_(self) -> None:
        """The policy is the caller's own object: nothing to synchronise."""

    def shutdown(self) -> None:
        self.env.close()


def _model(defect: str = "") -> CollectorFactory:
    def build(env_fns: Sequence[EnvFn], policy: Any, case: CollectorCase) -> Any:
        env = serial_or_single(list(env_fns))
        return ModelCollector(env, policy, case.frames_per_batch, case.total_frames, defect)

    return build


_MODEL_CAPS = Capabilities(min_envs=1, max_envs=2, notes=(_SCENARIO_NOTE,))
_MODEL_SOURCE = "ModelCollector({env}, " + _POLICY + ", {kwargs})"
_register(
    "reference.torchrl.Collector",
    "model collector: exact frames, policy used as given",
    _model(),
    _MODEL_SOURCE,
    kind="reference",
    capabilities=_MODEL_CAPS,
)
for _defect, _plants, _what in (
    ("drops_last_frame", ("collector.frame_accounting",), "drops the last frame of every batch"),
    (
        "records_reset_step",
        ("collector.transitions",),
        "records the reset observation as an ended episode's next observation",
    ),
    ("stale_copy", ("collector.policy_updates",), "deep-copies the policy at construction"),
):
    _register(
        f"planted.torchrl.Collector.{''.join(p.title() for p in _defect.split('_'))}",
        f"model collector that {_what}",
        _model(_defect),
        _MODEL_SOURCE,
        kind="planted",
        plants=_plants,
        capabilities=_MODEL_CAPS,
    )
