"""Family ``torchrl.replay`` (``--api torchrl.ReplayBuffer``): the family, and the bundled buffers as
systems (TorchRL's slice samplers and n-step transforms, the reference models and the planted
bugs, with ``MUST_FAIL``).

``truncated_key`` is, as TorchRL documents it, where the sampler *writes* the end of a slice, not
how it finds trajectories; it is left at its default. ``PrioritizedSliceSampler`` is not
exercised: it needs TorchRL's C++ extension (``SumSegmentTreeFp32``), which does not load against
the torch in constraints.txt.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from rlconform.core.family import FactoryShape, is_instance_of
from rlconform.core.system import Capabilities, EnvFn, Probed, System, SystemTable
from rlconform.core.user import returned_type, spawns_workers
from rlconform.envs.plan import Op
from rlconform.libraries.torchrl.frames import (
    DrivenObjectFamily,
    env_source,
    note_environment_error,
)
from rlconform.libraries.torchrl.replay_case import FAMILY_NAME, ROLE, ReplayCase, replay_cases, replay_edge_cases
from rlconform.libraries.torchrl.replay_harness import BufferFactory, ReplayHarness, fills

if TYPE_CHECKING:
    from hypothesis.strategies import SearchStrategy

    from rlconform.envs.driver import Driver


#: this module's systems, read by the catalog (rlconform.core.catalog)
SYSTEMS = SystemTable()


#: what a user's factory returns (TensorDictReplayBuffer and the prioritized ones subclass it)
BUFFER_CLASSES = ("torchrl.data.replay_buffers.replay_buffers.ReplayBuffer",)


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
        return list(dict.fromkeys(name for filled in fills(run) for name in filled.library))

    def built_from_library_classes(self, run: Any) -> bool:
        filled = fills(run)
        return bool(filled) and all(f.library_own for f in filled)

    def user_system(self, fn: Callable[..., Any], reference: str, **options: Any) -> System:
        def factory(case: ReplayCase) -> tuple[Any, str]:
            return fn(), f"{reference}()"

        return self.user_system_of(
            reference,
            title=f"{reference}() (your replay buffer)",
            build=_harness(factory),
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

    def about_case(self, system: System, case: Any) -> str | None:
        if not isinstance(case, ReplayCase):
            return None
        return (
            f"Buffer: {system.title}, filled from\n"
            f"Collector({env_source(case.num_envs)}, None, frames_per_batch={case.steps_per_batch * case.num_envs}, ...)\n"
            "with env_fns[i] = functools.partial(make_reference_env, script, i), then sampled."
        )


def _no_close(obj: Any) -> None:
    """A replay buffer holds nothing to close."""


FAMILY = ReplayFamily()


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
