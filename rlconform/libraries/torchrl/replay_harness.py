"""Building and driving a TorchRL replay buffer for one :class:`~rlconform.libraries.torchrl.replay_case.ReplayCase`:
fill it from a ``Collector`` over reference envs, sample it, and read every sampled row back
(:class:`Sample`, :class:`Filled`).
"""

from __future__ import annotations

import inspect
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
    #: the slice sampler's own end marks, one per row: True on the last row of every slice (its
    #: ``truncated_key``, as the sampler computed it; None: it wrote none, slices are ``slice_len``)
    slice_ends: list[bool] | None = None
    #: the user's sampler, as built (None: the buffer has no sampler object to read)
    sampler: str | None = None
    #: why the sample's slices cannot be told apart (None: they can)
    unsliced: str | None = None

    @property
    def multistep(self) -> bool:
        return self.steps is not None or (self.declared is not None and self.declared[0] > 1)

    def slices(self) -> list[list[Frame]]:
        """The sample's slices: cut after every end mark where the sampler wrote them (slices of
        any length, e.g. ``strict_length=False``), else into ``slice_len`` rows each."""
        if self.slice_ends is not None:
            found: list[list[Frame]] = [[]]
            for frame, end in zip(self.frames, self.slice_ends, strict=True):
                found[-1].append(frame)
                if end:
                    found.append([])
            return [chunk for chunk in found if chunk]
        length = self.slice_len or 1
        return [self.frames[i : i + length] for i in range(0, len(self.frames), length)]

    def slice_end(self, k: int) -> bool:
        """Whether row ``k`` is the last of its slice (where the sampler marks it truncated)."""
        if self.unsliced is not None:
            return False
        if self.slice_ends is not None:
            return self.slice_ends[k]
        return self.slice_len is not None and (k + 1) % self.slice_len == 0


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
    #: the buffer and every part of it (storage, sampler, writer, transforms) are TorchRL's own
    #: classes: built like ``library`` with other settings
    library_own: bool = False


def library_layers(buffer: Any) -> tuple[str, ...]:
    """The bundled systems the buffer is built like, from TorchRL's own classes: its
    ``MultiStepTransform`` (n = 2 or 3), its slice sampler, or a plain ``LazyTensorStorage``."""

    def torchrl_class(obj: Any) -> str | None:
        return type(obj).__name__ if type(obj).__module__.startswith("torchrl.") else None

    found: list[str] = []
    transforms = buffer_transforms(buffer)
    buffer_class = torchrl_class(buffer)
    for t in transforms:
        n = getattr(t, "n_steps", None)
        if torchrl_class(t) == "MultiStepTransform" and isinstance(n, int) and n >= 2:
            # bundled with n = 2 and 3; a larger n is built like the n = 3 one
            found.append(f"torchrl.TensorDictReplayBuffer.MultiStepTransform.n{min(n, 3)}")
    sampler = torchrl_class(getattr(buffer, "_sampler", None))
    if buffer_class in ("ReplayBuffer", "TensorDictReplayBuffer") and sampler in (
        "SliceSampler",
        "SliceSamplerWithoutReplacement",
    ):
        found.append(f"torchrl.{buffer_class}.{sampler}")
    if not found and buffer_class and torchrl_class(getattr(buffer, "_storage", None)) == "LazyTensorStorage":
        found.append("torchrl.ReplayBuffer.LazyTensorStorage")
    return tuple(found)


def buffer_transforms(buffer: Any) -> list[Any]:
    """The buffer's transforms: those of its ``Compose``, its one transform, or none."""
    transform = getattr(buffer, "_transform", None)
    if transform is None:
        return []
    try:
        return list(transform)
    except TypeError:
        return [transform]


def made_of_library_classes(buffer: Any) -> bool:
    """Whether the buffer and its storage, sampler, writer and transforms are all TorchRL's own
    classes (no subclass or part of the user's)."""

    def own(obj: Any) -> bool:
        return obj is None or type(obj).__module__.startswith("torchrl.")

    parts = [
        buffer,
        *(getattr(buffer, name, None) for name in ("_storage", "_sampler", "_writer")),
        *buffer_transforms(buffer),
    ]
    return all(own(part) for part in parts)


def declared_multistep(buffer: Any) -> tuple[int, float] | None:
    """(n_steps, gamma) of the first of the buffer's transforms that has both (TorchRL's
    ``MultiStepTransform`` and any transform written like it)."""
    found = buffer_transforms(buffer)
    for t in found:
        n, gamma = getattr(t, "n_steps", None), getattr(t, "gamma", None)
        if isinstance(n, int) and isinstance(gamma, (int, float)):
            return n, float(gamma)
    return None


def _is_slice_sampler(sampler: Any) -> bool:
    return any(cls.__name__ == "SliceSampler" for cls in type(sampler).__mro__)


def _set(value: Any) -> bool:
    """Whether a sampler option is on (TorchRL keeps ``span`` as a pair: (False, False) is off)."""
    return any(bool(v) for v in value) if isinstance(value, tuple | list) else bool(value)


def _variable_length(sampler: Any) -> bool:
    """Whether a slice sampler's slices may be shorter than its slice length: ``strict_length=False``
    (short trajectories kept whole) or a ``span`` (slices cut at a trajectory's edge)."""
    return getattr(sampler, "strict_length", True) is False or _set(getattr(sampler, "span", False))


def _key_text(key: Any) -> str:
    if isinstance(key, tuple):
        return "(" + ", ".join(_key_text(k) for k in key) + ")"
    return f'"{key}"' if isinstance(key, str) else repr(key)


#: the SliceSampler arguments a description shows where they differ from their defaults
_SAMPLER_ARGUMENTS = ("num_slices", "slice_len", "traj_key", "end_key", "end_keys", "truncated_key", "strict_length")
_SAMPLER_FLAGS = ("span", "pad_output", "fragmented")


def describe_sampler(buffer: Any) -> str | None:
    """The buffer's own sampler as its user built it, read off the object (``SliceSampler(slice_len=4,
    strict_length=False)``); None where the buffer has no sampler object."""
    sampler = getattr(buffer, "_sampler", None)
    if sampler is None:
        return None
    name = type(sampler).__name__
    if not _is_slice_sampler(sampler):
        return f"{name}()"
    defaults = {"truncated_key": ("next", "truncated"), "strict_length": True}
    parts = []
    for argument in _SAMPLER_ARGUMENTS:
        value = getattr(sampler, argument, None)
        if argument == "end_key" and (getattr(sampler, "traj_key", None) is not None or _finds_trajectories(sampler)):
            continue  # the default end key, set when the trajectory key is given or found
        if value is not None and value != defaults.get(argument):
            text = _key_text(value) if argument.endswith(("key", "keys")) else repr(value)
            parts.append(f"{argument}={text}")
        elif argument == "truncated_key" and value is None:
            parts.append("truncated_key=None")
    parts += [f"{flag}={getattr(sampler, flag)!r}" for flag in _SAMPLER_FLAGS if _set(getattr(sampler, flag, False))]
    return f"{name}({', '.join(parts)})"


def _finds_trajectories(sampler: Any) -> bool:
    """A SliceSampler built without a trajectory or end key finds the trajectories on its first
    sample (TorchRL's ``_traj_key_auto``: ``("collector", "traj_ids")``, then ``"episode"``, then
    the end key)."""
    return bool(getattr(sampler, "_traj_key_auto", False))


def _marks_key(buffer: Any) -> Any:
    """The key under which the buffer's slice sampler marks the last row of every slice (its
    ``truncated_key``), where ``buffer.sample(..., return_info=True)`` hands back the marks as
    the sampler computed them; None otherwise."""
    sampler = getattr(buffer, "_sampler", None)
    key = getattr(sampler, "truncated_key", None)
    if sampler is None or key is None or not _is_slice_sampler(sampler):
        return None
    try:
        parameters = inspect.signature(buffer.sample).parameters
    except (TypeError, ValueError):
        return None
    takes = "return_info" in parameters or any(p.kind is p.VAR_KEYWORD for p in parameters.values())
    return key if takes else None


@dataclass
class ReplayHarness:
    env_fns: Sequence[EnvFn]
    factory: BufferFactory
    buffer: Any = None
    collector: Any = None
    source: str = ""
    #: the buffer's sampler as built, before any sample resolves its defaults
    sampler: str | None = None

    def make(self, case: ReplayCase) -> Any:
        if self.buffer is None:
            self.buffer, self.source = self.factory(case)
            self.sampler = describe_sampler(self.buffer)
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
            delivered,
            declared_multistep(self.buffer),
            self.sample_size(case)[1],
            library_layers(self.buffer),
            made_of_library_classes(self.buffer),
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
        arguments = [str(size)] if size is not None else []
        if _marks_key(self.buffer) is not None:
            arguments.append("return_info=True")
        return f"rb.sample({', '.join(arguments)})"

    def sample(self, case: ReplayCase) -> Sample:
        """One sample, read back row by row, with the targets TD0Estimator computes from it. A
        slice sampler's slices are read by the end marks it computed (``return_info=True``:
        TorchRL's sampler marks the last row of every slice under its ``truncated_key``), so
        slices of any length (``strict_length=False``, ``span``) are read as the sampler cut them;
        the rows ``pad_output=True`` repeats (``("collector", "mask")`` False) are left out."""
        size, length = self.sample_size(case)
        key = _marks_key(self.buffer)
        arguments: tuple[Any, ...] = () if size is None else (size,)
        info: dict[Any, Any] = {}
        if key is not None:
            data, info = self.buffer.sample(*arguments, return_info=True)
        else:
            data = self.buffer.sample(*arguments)
        flat = data.reshape(-1)
        marks = _row_flags(info.get(key), flat) if key is not None else None
        real = _row_flags(info.get(("collector", "mask")), flat)
        if real is not None and not all(real):
            import torch

            flat = flat[torch.tensor(real)]
            marks = None if marks is None else [m for m, r in zip(marks, real, strict=True) if r]
        unsliced = None
        if marks is None and length is not None and _variable_length(getattr(self.buffer, "_sampler", None)):
            unsliced = (
                f"its sampler ({self.sampler}) cuts slices of varying length and writes no end marks to read "
                "them by (truncated_key=None): where one slice ends cannot be told"
            )
        steps = flat.get("steps_to_next_obs", None)
        declared = declared_multistep(self.buffer)
        found = Sample(
            frames=read_frames(flat, case.script),
            rewards=[float(r) for r in flat.get(("next", "reward")).reshape(-1).tolist()],
            steps=None if steps is None else [int(v) for v in steps.reshape(-1).tolist()],
            slice_len=length,
            declared=declared,
            gamma=declared[1] if declared is not None else GAMMA,
            slice_ends=marks if length is not None else None,
            sampler=self.sampler,
            unsliced=unsliced,
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


def _row_flags(value: Any, rows: Any) -> list[bool] | None:
    """One flag per sampled row from an entry of the sampler's info (None where it gave none, or
    not one per row)."""
    if value is None:
        return None
    import torch

    flags = torch.as_tensor(value).reshape(-1)
    if flags.numel() != rows.numel():
        return None
    return [bool(f) for f in flags.tolist()]


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
