"""Building and driving a TorchRL replay buffer for one :class:`~rlconform.libraries.torchrl.replay_case.ReplayCase`:
fill it from a ``Collector`` over reference envs, sample it, and read every sampled row back
(:class:`Sample`, :class:`Filled`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rlconform.core.system import EnvFn
from rlconform.libraries.torchrl.frames import (
    Frame,
    read_frames,
    serial_or_single,
)
from rlconform.libraries.torchrl.replay_case import LAYOUT_SOURCE, ROLE, ReplayCase

if TYPE_CHECKING:
    from rlconform.envs.driver import Run


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


def fills(run: Run) -> list[Filled]:
    """What every fill of the run gave (the fill calls that returned a :class:`Filled`)."""
    return [r.result_live for r in run.calls if r.extra.get(ROLE) == "fill" and isinstance(r.result_live, Filled)]
