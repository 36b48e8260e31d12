"""TorchRL replay buffers with slice samplers: every sampled slice lies within one episode.

A :class:`ReplayCase` (a :class:`~rlconform.envs.plan.Case` with the buffer's parameters) fills a
buffer from a TorchRL ``Collector`` over reference envs (a GymWrapper, or a SerialEnv for several
sub-envs), batch after batch into a storage small enough to wrap around, then samples slices.
Its single ``Reset`` op stands for "fill, then sample". The batches go in as TorchRL's examples
put them (``batch.reshape(-1)``: each sub-env's frames in a row, "env_major") or interleaved in
time ("time_major", as a vectorized env's steps arrive); the sampler finds trajectories with the
collector's ``("collector", "traj_ids")`` (``traj_key``), with ``("next", "done")``
(``end_key``), or with its defaults. Each slice is decoded, so "lies within one episode of one
sub-env and is contiguous in time" is checked against the stamps themselves.

``truncated_key`` is, as TorchRL documents it, where the sampler *writes* the end of a slice, not
how it finds trajectories; it is left at its default. ``PrioritizedSliceSampler`` is not
exercised: it needs TorchRL's C++ extension (``SumSegmentTreeFp32``), which does not load against
the torch in constraints.txt.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from rlconform.core.family import FactoryShape, is_instance_of
from rlconform.core.reproducer import write
from rlconform.core.spec import Checker, Outcome, spec
from rlconform.core.system import Capabilities, EnvFn, Probed, System, SystemTable
from rlconform.core.user import returned_type, spawns_workers
from rlconform.envs.plan import Case, Op, Reset
from rlconform.envs.reproducer import reference_parts
from rlconform.envs.script import EnvScript, EpisodePlan
from rlconform.envs.spaces import BoxObs, Decoded, DiscreteAction
from rlconform.envs.stamp import Stamp
from rlconform.envs.truth import EnvTruth, TrueTransition
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
from rlconform.libraries.torchrl.value_reference import close, true_value
from rlconform.specs.families import TORCHRL_REPLAY

if TYPE_CHECKING:
    from hypothesis.strategies import SearchStrategy

    from rlconform.core.spec import Spec
    from rlconform.envs.driver import Driver, Run

#: this module's systems, read by the catalog (rlconform.core.catalog)
SYSTEMS = SystemTable()

FAMILY_NAME = TORCHRL_REPLAY
FAMILIES = frozenset({FAMILY_NAME})
NEEDS_CASE = "runs only on a ReplayCase (replay the verdict's case, not a plain Case)"
ROLE = "replay_role"
#: what a user's factory returns (TensorDictReplayBuffer and the prioritized ones subclass it)
BUFFER_CLASSES = ("torchrl.data.replay_buffers.replay_buffers.ReplayBuffer",)

TrajectoryKeys = Literal["traj_key", "end_key", "defaults"]
Layout = Literal["env_major", "time_major"]
#: sampler keyword arguments for each way of finding trajectories
SAMPLER_KEYS: dict[str, str] = {
    "traj_key": 'traj_key=("collector", "traj_ids")',
    "end_key": 'end_key=("next", "done")',
    "defaults": "",
}
#: how a batch of shape [envs, time] (or [time]) goes into the buffer
LAYOUT_SOURCE = {"env_major": "batch.reshape(-1)", "time_major": "batch.transpose(0, -1).reshape(-1)"}


@dataclass(frozen=True)
class ReplayCase(Case):
    """One buffer run: collector batches in, slices out."""

    steps_per_batch: int = 4
    batches: int = 2
    storage_size: int = 8
    slice_len: int = 2
    num_slices: int = 2
    samples: int = 3
    keys: TrajectoryKeys = "end_key"
    layout: Layout = "env_major"
    seed: int = 0

    def sampler_source(self, sampler: str) -> str:
        keys = SAMPLER_KEYS[self.keys]
        return f"{sampler}(slice_len={self.slice_len}{', ' + keys if keys else ''})"


def replay_cases(system: System) -> SearchStrategy[ReplayCase]:
    from hypothesis import strategies as st

    caps = system.capabilities
    return st.builds(
        ReplayCase,
        script=scenario_scripts(),
        num_envs=st.integers(caps.min_envs, caps.max_envs),
        ops=st.just((Reset(),)),
        steps_per_batch=st.integers(2, 8),
        batches=st.integers(1, 4),
        storage_size=st.integers(4, 16),
        slice_len=st.integers(2, 4),
        num_slices=st.integers(1, 4),
        samples=st.integers(1, 4),
        keys=st.sampled_from(("traj_key", "end_key", "defaults")),
        layout=st.sampled_from(("env_major", "time_major")),
        seed=st.integers(0, 2**16),
    )


# ------------------------------------------------------------------------------------- harness

#: (case) -> (buffer, its constructor's source)
BufferFactory = Callable[[ReplayCase], tuple[Any, str]]
#: the discount the bootstrapped targets of a buffer without an n-step transform are computed with
GAMMA = 0.9


@dataclass
class Sample:
    """One sample, read back: every row decoded, with what the specs compare."""

    frames: list[Frame]
    rewards: list[float]
    #: ``steps_to_next_obs`` of every row (None: the rows carry none)
    steps: list[int] | None
    #: rows per slice of a slice sampler (None: rows drawn one by one)
    slice_len: int | None
    #: (n_steps, gamma) of the buffer's n-step transform (None: it declares none)
    declared: tuple[int, float] | None
    #: the discount the targets were computed with (the transform's, else GAMMA)
    gamma: float
    #: the value target ``TD0Estimator(gamma)`` computes from every row (None: not computed)
    targets: list[float] | None = None
    target_error: str | None = None

    @property
    def multistep(self) -> bool:
        return self.steps is not None or (self.declared is not None and self.declared[0] > 1)

    def slices(self) -> list[list[Frame]]:
        length = self.slice_len or 1
        return [self.frames[i : i + length] for i in range(0, len(self.frames), length)]


@dataclass(frozen=True)
class Filled:
    """What filling the buffer gave: the frames delivered, and the n-step transform it declares."""

    frames: int
    declared: tuple[int, float] | None
    #: rows per slice of its slice sampler (None: it draws rows one by one)
    slice_len: int | None
    #: the bundled systems built like it from TorchRL's own classes (a user's failure may be
    #: inherited from them: rlconform.core.inherited)
    library: tuple[str, ...] = ()


def library_layers(buffer: Any) -> tuple[str, ...]:
    """The bundled systems the buffer is built like, from TorchRL's own classes: its
    ``MultiStepTransform`` (n = 2 or 3), its slice sampler, or a plain ``LazyTensorStorage``."""

    def torchrl_class(obj: Any) -> str | None:
        return type(obj).__name__ if type(obj).__module__.startswith("torchrl.") else None

    found: list[str] = []
    transform = getattr(buffer, "_transform", None)
    try:
        transforms = list(transform) if transform is not None else []
    except TypeError:
        transforms = [transform]
    buffer_class = torchrl_class(buffer)
    for t in transforms:
        n = getattr(t, "n_steps", None)
        if torchrl_class(t) == "MultiStepTransform" and n in (2, 3):
            found.append(f"torchrl.TensorDictReplayBuffer.MultiStepTransform.n{n}")
    sampler = torchrl_class(getattr(buffer, "_sampler", None))
    if buffer_class in ("ReplayBuffer", "TensorDictReplayBuffer") and sampler in (
        "SliceSampler",
        "SliceSamplerWithoutReplacement",
    ):
        found.append(f"torchrl.{buffer_class}.{sampler}")
    if not found and buffer_class and torchrl_class(getattr(buffer, "_storage", None)) == "LazyTensorStorage":
        found.append("torchrl.ReplayBuffer.LazyTensorStorage")
    return tuple(found)


def declared_multistep(buffer: Any) -> tuple[int, float] | None:
    """(n_steps, gamma) of the first of the buffer's transforms that has both (TorchRL's
    ``MultiStepTransform`` and any transform written like it)."""
    transform = getattr(buffer, "_transform", None)
    if transform is None:
        return None
    try:
        found = list(transform)
    except TypeError:
        found = [transform]
    for t in found:
        n, gamma = getattr(t, "n_steps", None), getattr(t, "gamma", None)
        if isinstance(n, int) and isinstance(gamma, (int, float)):
            return n, float(gamma)
    return None


def _is_slice_sampler(sampler: Any) -> bool:
    return any(cls.__name__ == "SliceSampler" for cls in type(sampler).__mro__)


@dataclass
class ReplayHarness:
    env_fns: Sequence[EnvFn]
    factory: BufferFactory
    buffer: Any = None
    collector: Any = None
    source: str = ""

    def make(self, case: ReplayCase) -> Any:
        if self.buffer is None:
            self.buffer, self.source = self.factory(case)
        return self.buffer

    def two_dimensional(self) -> bool:
        """Whether the storage holds [envs, time] (``ndim=2``, as an n-step transform needs)."""
        return int(getattr(getattr(self.buffer, "_storage", None), "ndim", 1) or 1) >= 2

    def extend_source(self, case: ReplayCase) -> str:
        if self.two_dimensional():
            return "batch" if case.num_envs > 1 else "batch.unsqueeze(0)"
        return LAYOUT_SOURCE[case.layout]

    def fill(self, case: ReplayCase) -> Filled:
        """Collect ``case.batches`` batches and extend the buffer with each."""
        import torch
        from torchrl.collectors import Collector

        torch.manual_seed(case.seed)
        env = serial_or_single(list(self.env_fns))
        frames = case.steps_per_batch * case.num_envs
        self.collector = Collector(env, None, frames_per_batch=frames, total_frames=frames * case.batches)
        self.make(case)
        delivered = self._extend(case)
        return Filled(
            delivered, declared_multistep(self.buffer), self.sample_size(case)[1], library_layers(self.buffer)
        )

    def _extend(self, case: ReplayCase) -> int:
        assert self.collector is not None and self.buffer is not None
        delivered = 0
        for batch in self.collector:
            if self.two_dimensional():
                data = batch if batch.ndim > 1 else batch.unsqueeze(0)
            else:
                data = batch.transpose(0, -1) if case.layout == "time_major" and batch.ndim > 1 else batch
                data = data.reshape(-1)
            self.buffer.extend(data)
            delivered += batch.numel()
        return delivered

    def sample_size(self, case: ReplayCase) -> tuple[int | None, int | None]:
        """(the batch size to ask for, None where the buffer has its own; rows per slice, None
        where the sampler draws rows one by one)."""
        own = getattr(self.buffer, "_batch_size", None)
        length = getattr(self.buffer, "slice_len", None)  # rlconform's own model slice buffer
        sampler = getattr(self.buffer, "_sampler", None)
        if length is None and sampler is not None and _is_slice_sampler(sampler):
            if sampler.slice_len is not None:
                length = int(sampler.slice_len)
            elif own:
                length = int(own) // int(sampler.num_slices)
            else:
                return int(sampler.num_slices) * case.slice_len, case.slice_len
        size = None if own else (case.num_slices * (length or case.slice_len))
        return size, length

    def sample_source(self, case: ReplayCase) -> str:
        size, _ = self.sample_size(case)
        return f"rb.sample({size if size is not None else ''})"

    def sample(self, case: ReplayCase) -> Sample:
        """One sample, read back row by row, with the targets TD0Estimator computes from it."""
        size, length = self.sample_size(case)
        data = self.buffer.sample() if size is None else self.buffer.sample(size)
        flat = data.reshape(-1)
        steps = flat.get("steps_to_next_obs", None)
        declared = declared_multistep(self.buffer)
        found = Sample(
            frames=read_frames(flat, case.script),
            rewards=[float(r) for r in flat.get(("next", "reward")).reshape(-1).tolist()],
            steps=None if steps is None else [int(v) for v in steps.reshape(-1).tolist()],
            slice_len=length,
            declared=declared,
            gamma=declared[1] if declared is not None else GAMMA,
        )
        try:
            found.targets = _td0_targets(flat, found.gamma)
        except Exception as exc:  # the estimator refusing the rows is what the spec reports
            found.target_error = f"{type(exc).__name__}: {str(exc)[:200]}"
        return found

    def shutdown(self) -> None:
        if self.collector is not None:
            collector, self.collector = self.collector, None
            collector.shutdown()


def _td0_targets(rows: Any, gamma: float) -> list[float]:
    """What ``TD0Estimator(gamma)`` computes from ``rows`` with rlconform's value network (it reads
    ``steps_to_next_obs``, the reward and the terminated flag of every row)."""
    import torch
    from torchrl.objectives.value import TD0Estimator

    from rlconform.libraries.torchrl.value_torch import make_value_network

    estimator = TD0Estimator(gamma=gamma, value_network=make_value_network())
    with torch.no_grad():
        out = estimator(rows.clone())
    return [float(v) for v in out.get("value_target").reshape(-1).to(torch.float64).tolist()]


#: how the edge fills tell the sampler where trajectories end, and how they store the batches:
#: the end key both ways (T3 crosses in both), and the two settings that must not cross
_EDGE_FILLS: tuple[tuple[TrajectoryKeys, Layout], ...] = (
    ("end_key", "env_major"),
    ("end_key", "time_major"),
    ("traj_key", "time_major"),
    ("defaults", "env_major"),
)


def replay_edge_cases(system: System) -> list[ReplayCase]:
    """Fills tried first under every profile. Two sub-envs whose episodes end at different steps
    (a termination two steps in, a truncation three steps in), over two batches: a window of two
    or three steps reaches a termination, a time-out and a batch edge. Then fills whose slices
    can reach across a batch edge: two sub-envs whose episodes outlast a batch, stored sub-env by
    sub-env and interleaved in time, sampled with many slices for every way the sampler may be
    told where trajectories end. A random search needs the end key, an episode longer than a
    batch and a slice drawn over the edge at once (T3), and a small profile could draw none of
    them."""
    caps = system.capabilities
    if not caps.min_envs <= 2 <= caps.max_envs:
        return []
    action = DiscreteAction(NUM_ACTIONS)
    ends = EnvScript(
        obs=BoxObs(), action=action, episodes=(EpisodePlan(2, "terminated"), EpisodePlan(3, "truncated")), env_stride=1
    )
    script = EnvScript(obs=BoxObs(), action=action, episodes=(EpisodePlan(4, "truncated"),))
    return [
        ReplayCase(ends, 2, (Reset(),), steps_per_batch=5, storage_size=64, num_slices=6, samples=2, seed=1),
        *(
            ReplayCase(
                script,
                2,
                (Reset(),),
                steps_per_batch=6,
                storage_size=64,
                num_slices=8,
                keys=keys,
                layout=layout,
                seed=1,
            )
            for keys, layout in _EDGE_FILLS
        ),
    ]


class ReplayFamily(DrivenObjectFamily):
    """Family ``torchrl.replay``, which a user names ``--api torchrl.ReplayBuffer``: the family
    keeps the name its bundled systems, findings and corpus rows carry, and the API is the class
    a user's factory returns (as family ``gymnasium.Env`` answers to ``--api gymnasium.Wrapper``).
    A user's ``make() -> ReplayBuffer`` is filled and sampled exactly as the bundled buffers are;
    its storage, sampler, batch size and transforms are its own, so the case's ``storage_size``,
    ``slice_len`` (where its slice sampler sets one) and ``keys`` do not apply to it."""

    name = FAMILY_NAME
    api = "torchrl.ReplayBuffer"
    factory_signature = "() -> torchrl.data.ReplayBuffer"
    #: the factory takes no argument
    factory_argument = ""
    quiet_loggers = ("torchrl",)
    claimed_classes = BUFFER_CLASSES
    #: an env factory takes no arguments either: "did you mean --api torchrl.ReplayBuffer?" only
    #: for a factory annotated as returning a replay buffer (rlconform.core.user.api_it_fits)
    factory_shape = FactoryShape(
        returns=BUFFER_CLASSES,
        return_names=("TensorDictReplayBuffer", "PrioritizedReplayBuffer", "TensorDictPrioritizedReplayBuffer"),
        suggested_unannotated=False,
    )

    def cases(self, system: System, scenario: str) -> SearchStrategy[Any]:
        """This family's own cases (a subclass of ``Case`` with the scenario's parameters), not
        call sequences."""
        return replay_cases(system)

    def boundary_cases(self, system: System, scenario: str) -> list[Any]:
        return replay_edge_cases(system) if scenario == "standard" else []

    def execute(self, driver: Driver, obj: Any, op: Op) -> None:
        case = driver.case
        if not isinstance(case, ReplayCase):
            # driven call by call (the state machine) or from a plain Case: nothing to run, the
            # specs say so (a printed reproducer keeps the scenario's own case and its parameters)
            return
        record = driver.call(op, "rb = make()", obj.make, (case,))
        record.extra[ROLE] = "fill"
        if record.failed:
            note_environment_error(driver, record)
            return
        fill = (
            f"rb = {obj.source}; collector = Collector({env_source(case.num_envs)}, None, "
            f"frames_per_batch={case.steps_per_batch * case.num_envs}, "
            f"total_frames={case.steps_per_batch * case.num_envs * case.batches}); "
            f"for batch in collector: rb.extend({obj.extend_source(case)})"
        )
        record = driver.call(op, fill, obj.fill, (case,))
        record.extra[ROLE] = "fill"
        if record.failed:
            note_environment_error(driver, record)
            return
        for _ in range(case.samples):
            record = driver.call(op, obj.sample_source(case), obj.sample, (case,))
            record.extra[ROLE] = "sample"

    # ------------------------------------------------------------ the user API
    def check_factory(self, signature: inspect.Signature) -> None:
        signature.bind()

    def claims(self, obj: Any) -> bool:
        return is_instance_of(obj, BUFFER_CLASSES)

    #: the FINDINGS rows of the bundled buffers' defects
    findings = {
        ("torchrl.*ReplayBuffer.SliceSampler*", "replay.slices_within_episode"): "T3",
        ("torchrl.TensorDictReplayBuffer.MultiStepTransform.n*", "replay.bootstrap_targets"): "T4",
    }

    def library_systems(self, run: Any) -> list[str]:
        return list(dict.fromkeys(name for filled in _filled(run) for name in filled.library))

    def user_system(self, fn: Callable[..., Any], reference: str, **options: Any) -> System:
        def factory(case: ReplayCase) -> tuple[Any, str]:
            return fn(), f"{reference}()"

        return System(
            id=f"user:{reference}",
            family=FAMILY_NAME,
            title=f"{reference}() (your replay buffer)",
            build=_harness(factory),
            source=reference,
            kind="user",
            capabilities=_CAPS,
            description="a replay buffer filled from a TorchRL Collector over reference envs; every sampled row checked against the env's log",
        )

    def probe_factory(self, system: System) -> Probed:
        """Build the buffer once: a factory that raises, or returns something that is no replay
        buffer, is bad input."""

        def build() -> Any:
            harness = system.build([])
            return harness.factory(None)[0]

        spawned = spawns_workers(
            system, build, ("extend", "sample"), returned_type(self.factory_signature), close=_no_close
        )
        return Probed(spawned, system.capabilities)

    def reproducer(self, system: System, spec: Spec, case: Any, run: Any) -> str:
        parts = reference_parts(system, spec, case, run, family=self)
        if not isinstance(case, ReplayCase):
            return write(parts)
        about = (
            f"Buffer: {system.title}, filled from\n"
            f"Collector({env_source(case.num_envs)}, None, frames_per_batch={case.steps_per_batch * case.num_envs}, ...)\n"
            "with env_fns[i] = functools.partial(make_reference_env, script, i), then sampled."
        )
        return write(dataclasses.replace(parts, about=about))


def _no_close(obj: Any) -> None:
    """A replay buffer holds nothing to close."""


FAMILY = ReplayFamily()


# ------------------------------------------------------------------------------------------ spec


def _samples(run: Run, c: Checker) -> list[tuple[int, Sample]] | Outcome:
    """(call position, sample) of every sample drawn; an Outcome where the run has none to read."""
    case = run.case
    if not isinstance(case, ReplayCase):
        return c.not_applicable(NEEDS_CASE)
    found = []
    for record in run.calls:
        role = record.extra.get(ROLE)
        if role == "fill" and record.failed:
            return c.not_applicable(f"the buffer could not be filled: {record.error_type}: {record.error_message}")
        if role != "sample":
            continue
        if record.failed:
            # strict slices need a trajectory of slice_len frames; a buffer without one refuses
            c.note(f"a sample was refused: {record.error_type}: {(record.error_message or '')[:160]}")
            continue
        found.append((record.position, record.result_live))
    return found


def _filled(run: Run) -> list[Filled]:
    return [r.result_live for r in run.calls if r.extra.get(ROLE) == "fill" and isinstance(r.result_live, Filled)]


@spec(
    "replay.slices_within_episode",
    impact="training-data",
    statement="Every slice a slice sampler returns lies within one episode of one sub-env and is contiguous in time: its observations are consecutive steps of that episode, each frame's next observation the following frame's observation (n-step rows: the observations consecutive).",
    rationale="Sequence models and n-step returns read a slice as one stretch of experience; a slice that crosses an episode end (by termination or truncation only), the storage's wrap-around point or a boundary between sub-envs teaches the model a transition that never happened.",
    families=FAMILIES,
)
def slices_within_episode(run: Run) -> Outcome:
    c = Checker()
    found = _samples(run, c)
    if isinstance(found, Outcome):
        return found
    case = run.case
    assert isinstance(case, ReplayCase)
    if all(f.slice_len is None for f in _filled(run)):
        return c.not_applicable("the buffer's sampler draws rows one by one, not slices")
    for position, sample in found:
        for number, frames in enumerate(sample.slices()):
            problem = _slice_problem([(f.obs, f.next_obs) for f in frames], sample.multistep)
            c.expect(problem is None, f"slice {number} of {case.sampler_source('sampler')}: {problem}", call=position)
    return c.done()


def _slice_problem(frames: list[tuple[Decoded, Decoded]], multistep: bool = False) -> str | None:
    stamps = " | ".join(f"{describe(o)} -> {describe(n)}" for o, n in frames)
    for k, (obs, nxt) in enumerate(frames):
        if not (isinstance(obs, Stamp) and isinstance(nxt, Stamp)):
            return f"frame {k} is not a real observation: [{stamps}]"
        if k == 0:
            continue
        prev_obs, prev_next = frames[k - 1]
        assert isinstance(prev_obs, Stamp)
        if (obs.env, obs.episode) != (prev_obs.env, prev_obs.episode):
            return f"crosses from env {prev_obs.env} episode {prev_obs.episode} to env {obs.env} episode {obs.episode}: [{stamps}]"
        if obs.step != prev_obs.step + 1 or (obs != prev_next and not multistep):
            return f"not contiguous in time: [{stamps}]"
    return None


# ----------------------------------------------------------------------------- the rows' truth


def _index(run: Run) -> dict[Stamp, tuple[EnvTruth, int]]:
    """Every observation an env stepped from -> (its env's log, the transition's position)."""
    assert run.truth is not None
    return {t.obs: (env, k) for env in run.truth.envs for k, t in enumerate(env.transitions)}


def _window(env: EnvTruth, position: int, n: int) -> list[TrueTransition]:
    """The transitions an n-step row from ``position`` covers: n of them, fewer where the episode
    ends (by termination or truncation) first."""
    found: list[TrueTransition] = []
    for t in env.transitions[position : position + n]:
        if found and t.episode != found[0].episode:
            break
        found.append(t)
        if t.terminated or t.truncated:
            break
    return found


def _row_name(sample_number: int, k: int, truth: TrueTransition) -> str:
    return f"sample {sample_number} row {k} (sub-env {truth.env}, episode {truth.episode}, step {truth.obs.step})"


def _next_problem(given: Decoded, true: Stamp, window: list[TrueTransition]) -> str:
    if not isinstance(given, Stamp):
        return f"next observation {describe(given)}, expected {_where(true)}"
    first = window[0]
    if given.env != first.env:
        why = f"sub-env {given.env}'s observation, not sub-env {first.env}'s"
    elif given.episode != first.episode:
        end = window[-1]
        why = f"from episode {given.episode}: past the episode's end at step {end.obs.step}"
    else:
        why = f"step {given.step} where step {true.step} is due"
    return f"next observation {_where(given)}, expected {_where(true)} ({why})"


def _where(stamp: Stamp) -> str:
    return f"sub-env {stamp.env} {stamp.short()}"


@spec(
    "replay.rows_are_transitions",
    impact="training-data",
    statement="Every row a replay buffer samples is a transition one sub-env really made: its observation and action those the env logged, and (for a buffer without an n-step transform) its next observation the true next one (the true final observation at an episode end), its reward and its terminated/truncated flags those of the log.",
    rationale="An off-policy learner trains on sampled rows alone: a next observation from another sub-env or from the next episode, a lost flag or a stale reward is a transition that never happened, and no environment check sees it.",
    families=FAMILIES,
)
def rows_are_transitions(run: Run) -> Outcome:
    c = Checker()
    found = _samples(run, c)
    if isinstance(found, Outcome):
        return found
    index = _index(run)
    for number, (position, sample) in enumerate(found):
        for k, frame in enumerate(sample.frames):
            hit = index.get(frame.obs) if isinstance(frame.obs, Stamp) else None
            if hit is None:
                c.fail(
                    f"sample {number} row {k}: observation {describe(frame.obs)} is no step any env made", call=position
                )
                continue
            truth = hit[0].transitions[hit[1]]
            name = _row_name(number, k, truth)
            problems = []
            if frame.action != truth.action.code:
                problems.append(f"action {frame.action}, the env received {truth.action.code}")
            if not sample.multistep:
                if frame.next_obs != truth.next_obs:
                    problems.append(_next_problem(frame.next_obs, truth.next_obs, [truth]))
                if not close(sample.rewards[k], truth.reward):
                    problems.append(f"reward {sample.rewards[k]:.6g}, expected {truth.reward:.6g}")
                # a slice sampler marks the end of every slice truncated (its documented
                # truncated_key), so that a learner bootstraps there
                slice_end = sample.slice_len is not None and (k + 1) % sample.slice_len == 0
                truncated_ok = frame.truncated == truth.truncated or (slice_end and frame.truncated)
                if frame.terminated != truth.terminated or not truncated_ok:
                    problems.append(
                        f"terminated={frame.terminated}, truncated={frame.truncated}, expected "
                        f"terminated={truth.terminated}, truncated={truth.truncated}"
                    )
            c.expect(not problems, f"{name}: " + "; ".join(problems), env=truth.env, call=position)
    return c.done()


@spec(
    "replay.multistep_returns",
    impact="training-data",
    statement="Every row of a buffer with an n-step transform (n_steps, gamma) is one window of one episode of one sub-env: from step t it covers m = min(n_steps, the steps to the episode's end) steps, its reward is sum_k gamma^k r_{t+k} over them, its next observation the one m steps later (the true final observation where the episode ended) and its steps_to_next_obs m; it never sums across an episode end or across sub-envs.",
    rationale="An n-step learner bootstraps from the row's next observation with gamma^m: a window summed across an episode end or into another sub-env, or a wrong m, trains every Q-value on a return that was never earned.",
    families=FAMILIES,
)
def multistep_returns(run: Run) -> Outcome:
    c = Checker()
    found = _samples(run, c)
    if isinstance(found, Outcome):
        return found
    if all(f.declared is None for f in _filled(run)) and not any(sample.steps is not None for _, sample in found):
        return c.not_applicable("the buffer has no n-step transform (replay.rows_are_transitions checks its rows)")
    index = _index(run)
    for number, (position, sample) in enumerate(found):
        if sample.declared is None:
            return c.not_applicable("its rows carry steps_to_next_obs, but no transform declares n_steps and gamma")
        n, gamma = sample.declared
        for k, frame in enumerate(sample.frames):
            hit = index.get(frame.obs) if isinstance(frame.obs, Stamp) else None
            if hit is None:
                continue  # replay.rows_are_transitions
            window = _window(hit[0], hit[1], n)
            first, last = window[0], window[-1]
            m, total = len(window), sum(gamma**j * t.reward for j, t in enumerate(window))
            problems = []
            if frame.next_obs != last.next_obs:
                problems.append(_next_problem(frame.next_obs, last.next_obs, window))
            if sample.steps is None:
                problems.append(f"no steps_to_next_obs, expected {m}")
            elif sample.steps[k] != m:
                problems.append(f"steps_to_next_obs {sample.steps[k]}, expected {m}")
            if not close(sample.rewards[k], total):
                rewards = " + ".join(f"{gamma:g}^{j}*{t.reward:g}" for j, t in enumerate(window))
                problems.append(f"reward {sample.rewards[k]:.6g}, expected {rewards} = {total:.6g}")
            ended = " (the episode ends there)" if last.terminated or last.truncated else ""
            c.expect(
                not problems,
                f"{_row_name(number, k, first)}, a window of {m} step(s) to step {last.obs.step}{ended}: "
                + "; ".join(problems),
                env=first.env,
                call=position,
            )
    return c.done()


@spec(
    "replay.bootstrap_targets",
    impact="training-data",
    statement="The one-step bootstrapped target TD0Estimator computes from every sampled row (at the n-step transform's gamma, else 0.9) equals the true target of the row's window: its discounted reward plus gamma^m V(observation m steps later), without that bootstrap where the window ends in a termination.",
    rationale="The target is what the value loss trains on: a row whose flags do not say that its window ended in a termination bootstraps from a terminal observation, and a row without the right steps_to_next_obs discounts the bootstrap by gamma where gamma^m is due; both bias every update silently.",
    families=FAMILIES,
)
def bootstrap_targets(run: Run) -> Outcome:
    c = Checker()
    found = _samples(run, c)
    if isinstance(found, Outcome):
        return found
    codec = run.case.script.obs
    index = _index(run)
    for number, (position, sample) in enumerate(found):
        if sample.declared is None and sample.steps is not None:
            return c.not_applicable("its rows carry steps_to_next_obs, but no transform declares n_steps and gamma")
        if sample.target_error is not None or sample.targets is None:
            c.fail(f"sample {number}: TD0Estimator could not compute targets from the rows: {sample.target_error}")
            continue
        n, gamma = sample.declared or (1, sample.gamma)
        for k, frame in enumerate(sample.frames):
            hit = index.get(frame.obs) if isinstance(frame.obs, Stamp) else None
            if hit is None:
                continue  # replay.rows_are_transitions
            window = _window(hit[0], hit[1], n)
            first, last = window[0], window[-1]
            m, total = len(window), sum(gamma**j * t.reward for j, t in enumerate(window))
            value = true_value(codec, last.next_obs)
            expected = total + (0.0 if last.terminated else gamma**m * value)
            given = sample.targets[k]
            cause = ""
            if close(given, expected):
                c.expect(True, "")
                continue
            if last.terminated and close(given, total + gamma**m * value):
                cause = (
                    f": it bootstraps a termination (the window ends in the termination at step "
                    f"{last.obs.step}, but the row's terminated flag is {frame.terminated})"
                )
            elif m > 1 and close(given, total + (0.0 if last.terminated else gamma * value)):
                cause = f": the bootstrap is discounted by gamma where gamma^{m} is due"
            c.fail(
                f"{_row_name(number, k, first)}, a window of {m} step(s) to step {last.obs.step}: target "
                f"{given:.6g}, expected {expected:.6g} (gamma {gamma:g}){cause}",
                env=first.env,
                call=position,
            )
    return c.done()


# --------------------------------------------------------------------------------------- systems


def _torchrl_buffer(buffer: str, sampler: str) -> BufferFactory:
    def factory(case: ReplayCase) -> tuple[Any, str]:
        import torchrl.data

        keys: dict[str, Any] = {
            "traj_key": {"traj_key": ("collector", "traj_ids")},
            "end_key": {"end_key": ("next", "done")},
            "defaults": {},
        }[case.keys]
        source = f"{buffer}(storage=LazyTensorStorage({case.storage_size}), sampler={case.sampler_source(sampler)})"
        made = getattr(torchrl.data, sampler)(slice_len=case.slice_len, **keys)
        storage = torchrl.data.LazyTensorStorage(case.storage_size)
        return getattr(torchrl.data, buffer)(storage=storage, sampler=made), source

    return factory


class ModelSliceBuffer:
    """The documented semantics, executable: a circular storage of ``size`` frames; trajectories
    are the maximal runs of frames, in insertion order, without an end (``("next", "done")``)
    inside and with one trajectory id; a slice is ``slice_len`` frames of one of them.

    ``ignores_ends`` plants a bug: any ``slice_len`` frames in a row of the storage."""

    def __init__(self, case: ReplayCase, *, ignores_ends: bool = False) -> None:
        import random

        self.size, self.length, self.ignores_ends = case.storage_size, case.slice_len, ignores_ends
        #: read by the harness: this buffer samples slices of this many frames
        self.slice_len = case.slice_len
        self.frames: list[Any] = []
        self.rng = random.Random(case.seed)

    def extend(self, data: Any) -> None:
        self.frames.extend(data[i] for i in range(data.shape[0]))
        del self.frames[: max(0, len(self.frames) - self.size)]

    def sample(self, batch_size: int) -> Any:
        import torch

        runs = [list(range(len(self.frames)))] if self.ignores_ends else self._trajectories()
        starts = [(run[0] + k) for run in runs for k in range(len(run) - self.length + 1)]
        if not starts:
            raise RuntimeError(f"no trajectory of {self.length} frames in the storage")
        chosen = [self.rng.choice(starts) for _ in range(batch_size // self.length)]
        return torch.stack([self.frames[s + k] for s in chosen for k in range(self.length)])

    def _trajectories(self) -> list[list[int]]:
        runs: list[list[int]] = []
        for i, frame in enumerate(self.frames):
            traj = frame.get(("collector", "traj_ids"))
            if (
                runs
                and not bool(self.frames[i - 1].get(("next", "done")))
                and bool(traj == self.frames[i - 1].get(("collector", "traj_ids")))
            ):
                runs[-1].append(i)
            else:
                runs.append([i])
        return runs


def _model(ignores_ends: bool) -> BufferFactory:
    def factory(case: ReplayCase) -> tuple[Any, str]:
        return ModelSliceBuffer(
            case, ignores_ends=ignores_ends
        ), f"ModelSliceBuffer(size={case.storage_size}, slice_len={case.slice_len})"

    return factory


_REQUIRES = ("torchrl", "tensordict", "gymnasium")
_CAPS = Capabilities(
    min_envs=1,
    max_envs=3,
    notes=(
        "Box float32 observations and a Discrete action; the buffer is filled from a Collector over GymWrapper/SerialEnv",
    ),
)


def _harness(factory: BufferFactory) -> Callable[[Sequence[EnvFn]], ReplayHarness]:
    def build(env_fns: Sequence[EnvFn]) -> ReplayHarness:
        import torchrl.collectors
        import torchrl.data  # noqa: F401  (imported here, outside the calls' deadline)

        return ReplayHarness(list(env_fns), factory)

    return build


def _register(system_id: str, title: str, factory: BufferFactory, **kwargs: Any) -> None:
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


for _buffer in ("ReplayBuffer", "TensorDictReplayBuffer"):
    for _sampler in ("SliceSampler", "SliceSamplerWithoutReplacement"):
        _register(
            f"torchrl.{_buffer}.{_sampler}",
            f"{_buffer}(storage=LazyTensorStorage(size), sampler={_sampler}(slice_len, ...))",
            _torchrl_buffer(_buffer, _sampler),
        )
_register(
    "reference.torchrl.SliceBuffer",
    "model slice buffer: splits at ends and trajectory ids",
    _model(False),
    kind="reference",
)
_register(
    "planted.torchrl.SliceBuffer.IgnoresEpisodeEnds",
    "model slice buffer that ignores episode ends",
    _model(True),
    kind="planted",
    plants=("replay.slices_within_episode",),
)

# ------------------------------------------------------------- row buffers and n-step transforms

#: the discount of the bundled n-step transforms
NSTEP_GAMMA = 0.9


def _source(factory: Callable[[], Any], source: str) -> BufferFactory:
    def build(case: ReplayCase) -> tuple[Any, str]:
        return factory(), source

    return build


def _rows_buffer() -> Any:
    from torchrl.data import LazyTensorStorage, ReplayBuffer

    return ReplayBuffer(storage=LazyTensorStorage(1000))


def _list_buffer() -> Any:
    from torchrl.data import ListStorage, ReplayBuffer

    return ReplayBuffer(storage=ListStorage(1000), batch_size=5)


def _torchrl_multistep(n: int) -> Callable[[], Any]:
    def make() -> Any:
        from torchrl.data import LazyTensorStorage, RandomSampler, TensorDictReplayBuffer
        from torchrl.envs import MultiStepTransform

        return TensorDictReplayBuffer(
            storage=LazyTensorStorage(1000, ndim=2),
            sampler=RandomSampler(),
            transform=MultiStepTransform(n_steps=n, gamma=NSTEP_GAMMA),
        )

    return make


def _plain_multistep(defect: str = "", n: int = 3) -> Callable[[], Any]:
    def make() -> Any:
        from torchrl.data import LazyTensorStorage, RandomSampler, TensorDictReplayBuffer

        from rlconform.libraries.torchrl.replay_torch import PlainMultiStep

        return TensorDictReplayBuffer(
            storage=LazyTensorStorage(1000, ndim=2),
            sampler=RandomSampler(),
            transform=PlainMultiStep(n, NSTEP_GAMMA, defect),
        )

    return make


def _misaligned() -> Any:
    from torchrl.data import LazyTensorStorage

    from rlconform.libraries.torchrl.replay_torch import MisalignedNextObs

    return MisalignedNextObs(storage=LazyTensorStorage(1000, ndim=2))


_ROWS = "ReplayBuffer(storage=LazyTensorStorage(1000))"
_register("torchrl.ReplayBuffer.LazyTensorStorage", _ROWS, _source(_rows_buffer, _ROWS))
for _n in (2, 3):
    _title = (
        f"TensorDictReplayBuffer(storage=LazyTensorStorage(1000, ndim=2), sampler=RandomSampler(), "
        f"transform=MultiStepTransform(n_steps={_n}, gamma={NSTEP_GAMMA}))"
    )
    _register(
        f"torchrl.TensorDictReplayBuffer.MultiStepTransform.n{_n}",
        _title,
        _source(_torchrl_multistep(_n), _title),
    )
_LIST = "ReplayBuffer(storage=ListStorage(1000), batch_size=5)"
_register(
    "reference.torchrl.ReplayBuffer.ListStorage",
    f"{_LIST} (a user's buffer: its own storage and batch size, an innocent variant)",
    _source(_list_buffer, _LIST),
    kind="reference",
)
_PLAIN = f"TensorDictReplayBuffer(storage=LazyTensorStorage(1000, ndim=2), sampler=RandomSampler(), transform=PlainMultiStep(3, {NSTEP_GAMMA}))"
_register(
    "reference.torchrl.MultiStepBuffer",
    f"{_PLAIN}: n-step rows as a loop over each sub-env's frames",
    _source(_plain_multistep(), _PLAIN),
    kind="reference",
)

#: planted bug -> (what it does, the exact specs it fails)
PLANTS: dict[str, tuple[str, tuple[str, ...]]] = {
    "crosses_episode_ends": (
        "runs every window n_steps on, past episode ends",
        ("replay.multistep_returns", "replay.bootstrap_targets"),
    ),
    "first_step_flags": ("keeps the done flags of the row's first step", ("replay.bootstrap_targets",)),
    "gamma_not_powered": (
        "writes steps_to_next_obs 1 (the bootstrap discounted by gamma, not gamma^m)",
        ("replay.multistep_returns", "replay.bootstrap_targets"),
    ),
}
for _defect, (_what, _fails) in PLANTS.items():
    _register(
        f"planted.torchrl.MultiStep.{''.join(p.title() for p in _defect.split('_'))}",
        f"an n-step transform that {_what}",
        _source(_plain_multistep(_defect), _PLAIN.replace(f"{NSTEP_GAMMA}))", f"{NSTEP_GAMMA}, defect={_defect!r}))")),
        kind="planted",
        plants=_fails,
    )
_register(
    "planted.torchrl.ReplayBuffer.OtherEnvNextObs",
    "a buffer that stores each sub-env's rows with the next observations of the sub-env before it",
    _source(_misaligned, "MisalignedNextObs(storage=LazyTensorStorage(1000, ndim=2))"),
    kind="planted",
    plants=("replay.rows_are_transitions",),
)

#: the exact specs each planted bug of this module fails (tests/specs/test_specificity.py)
MUST_FAIL: dict[str, frozenset[str]] = {
    f"planted.torchrl.MultiStep.{''.join(p.title() for p in _defect.split('_'))}": frozenset(_fails)
    for _defect, (_what, _fails) in PLANTS.items()
} | {
    "planted.torchrl.ReplayBuffer.OtherEnvNextObs": frozenset(
        ("replay.rows_are_transitions", "replay.bootstrap_targets")
    )
}
