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

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from rlconform.core.spec import Checker, Outcome, spec
from rlconform.core.system import Capabilities, EnvFn, System, SystemTable
from rlconform.envs.plan import Case, Op, Reset
from rlconform.envs.script import EnvScript, EpisodePlan
from rlconform.envs.spaces import BoxObs, Decoded, DiscreteAction
from rlconform.envs.stamp import Stamp
from rlconform.libraries.torchrl.frames import (
    NUM_ACTIONS,
    DrivenObjectFamily,
    describe,
    env_source,
    note_environment_error,
    read_frames,
    scenario_scripts,
    serial_or_single,
)
from rlconform.specs.families import TORCHRL_REPLAY

if TYPE_CHECKING:
    from hypothesis.strategies import SearchStrategy

    from rlconform.envs.driver import Driver, Run

#: this module's systems, read by the catalog (rlconform.core.catalog)
SYSTEMS = SystemTable()

FAMILY_NAME = TORCHRL_REPLAY
FAMILIES = frozenset({FAMILY_NAME})
NEEDS_CASE = "runs only on a ReplayCase (replay the verdict's case, not a plain Case)"
ROLE = "replay_role"

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


@dataclass
class ReplayHarness:
    env_fns: Sequence[EnvFn]
    factory: BufferFactory
    buffer: Any = None
    collector: Any = None

    def fill(self, case: ReplayCase) -> int:
        """Collect ``case.batches`` batches and extend the buffer with each; return the frames."""
        import torch
        from torchrl.collectors import Collector

        torch.manual_seed(case.seed)
        env = serial_or_single(list(self.env_fns))
        frames = case.steps_per_batch * case.num_envs
        self.collector = Collector(env, None, frames_per_batch=frames, total_frames=frames * case.batches)
        self.buffer, _ = self.factory(case)
        return self._extend(case)

    def _extend(self, case: ReplayCase) -> int:
        assert self.collector is not None and self.buffer is not None
        delivered = 0
        for batch in self.collector:
            data = batch.transpose(0, -1) if case.layout == "time_major" and batch.ndim > 1 else batch
            self.buffer.extend(data.reshape(-1))
            delivered += batch.numel()
        return delivered

    def sample(self, case: ReplayCase) -> list[list[tuple[Decoded, Decoded]]]:
        """One sample, as slices of (observation, next observation), decoded."""
        sample = self.buffer.sample(case.num_slices * case.slice_len)
        frames = read_frames(sample, case.script)
        length = case.slice_len
        return [[(f.obs, f.next_obs) for f in frames[i : i + length]] for i in range(0, len(frames), length)]

    def shutdown(self) -> None:
        if self.collector is not None:
            collector, self.collector = self.collector, None
            collector.shutdown()


#: how the edge fills tell the sampler where trajectories end, and how they store the batches:
#: the end key both ways (T3 crosses in both), and the two settings that must not cross
_EDGE_FILLS: tuple[tuple[TrajectoryKeys, Layout], ...] = (
    ("end_key", "env_major"),
    ("end_key", "time_major"),
    ("traj_key", "time_major"),
    ("defaults", "env_major"),
)


def replay_edge_cases(system: System) -> list[ReplayCase]:
    """Fills whose slices can reach across a batch edge, tried first under every profile: two
    sub-envs whose episodes outlast a batch, stored sub-env by sub-env and interleaved in time,
    sampled with many slices for every way the sampler may be told where trajectories end. A
    random search needs the end key, an episode longer than a batch and a slice drawn over the
    edge at once (T3), and a small profile could draw none of them."""
    caps = system.capabilities
    if not caps.min_envs <= 2 <= caps.max_envs:
        return []
    script = EnvScript(obs=BoxObs(), action=DiscreteAction(NUM_ACTIONS), episodes=(EpisodePlan(4, "truncated"),))
    return [
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
    ]


class ReplayFamily(DrivenObjectFamily):
    name = FAMILY_NAME
    quiet_loggers = ("torchrl",)

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
        _, buffer_source = obj.factory(case)
        fill = (
            f"rb = {buffer_source}; collector = Collector({env_source(case.num_envs)}, None, "
            f"frames_per_batch={case.steps_per_batch * case.num_envs}, "
            f"total_frames={case.steps_per_batch * case.num_envs * case.batches}); "
            f"for batch in collector: rb.extend({LAYOUT_SOURCE[case.layout]})"
        )
        record = driver.call(op, fill, obj.fill, (case,))
        record.extra[ROLE] = "fill"
        if record.failed:
            note_environment_error(driver, record)
            return
        for _ in range(case.samples):
            record = driver.call(op, f"rb.sample({case.num_slices * case.slice_len})", obj.sample, (case,))
            record.extra[ROLE] = "sample"


FAMILY = ReplayFamily()


# ------------------------------------------------------------------------------------------ spec


@spec(
    "replay.slices_within_episode",
    impact="training-data",
    statement="Every slice a slice sampler returns lies within one episode of one sub-env and is contiguous in time: its observations are consecutive steps of that episode, each frame's next observation the following frame's observation.",
    rationale="Sequence models and n-step returns read a slice as one stretch of experience; a slice that crosses an episode end (by termination or truncation only), the storage's wrap-around point or a boundary between sub-envs teaches the model a transition that never happened.",
    families=FAMILIES,
)
def slices_within_episode(run: Run) -> Outcome:
    c = Checker()
    case = run.case
    if not isinstance(case, ReplayCase):
        return c.not_applicable(NEEDS_CASE)
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
        for number, frames in enumerate(record.result_live):
            c.expect(
                _slice_problem(frames) is None,
                (f"slice {number} of {case.sampler_source('sampler')}: {_slice_problem(frames)}"),
                call=record.position,
            )
    return c.done()


def _slice_problem(frames: list[tuple[Decoded, Decoded]]) -> str | None:
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
        if obs.step != prev_obs.step + 1 or obs != prev_next:
            return f"not contiguous in time: [{stamps}]"
    return None


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


def _register(system_id: str, title: str, factory: BufferFactory, **kwargs: Any) -> None:
    def build(env_fns: Sequence[EnvFn]) -> ReplayHarness:
        import torchrl.collectors
        import torchrl.data  # noqa: F401

        return ReplayHarness(list(env_fns), factory)

    SYSTEMS.add(
        System(
            id=system_id,
            family=FAMILY_NAME,
            title=title,
            build=build,
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
