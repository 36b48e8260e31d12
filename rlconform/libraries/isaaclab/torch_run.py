"""One check of an Isaac Lab env: a seeded reset, then steps with torch actions on its device.

Why the env is built once per process: Isaac Lab allows one ``SimulationContext`` per process and
building a real task takes seconds, so every example of a search drives the same env object,
each from a full ``reset(seed=...)``. What an example draws is a :class:`TorchCase`: the reset
seed, the seed of the action generator, how many steps, and the kind of actions (uniform in the
action space's bounds, or [-1, 1] where they are infinite; zeros; the bounds themselves at
random; the upper bound every step, which drives a physical task to the edge of its state space).
"""

from __future__ import annotations

import atexit
import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from rlconform.envs.whole_run import WholeRunRecord
from rlconform.libraries.isaaclab.monitor import ContractMonitor, ExactModel, Violation
from rlconform.libraries.isaaclab.wrappers import compare, driver_for
from rlconform.specs.families import ISAACLAB_TORCH

PATTERNS = ("uniform", "zeros", "extremes", "push")


@dataclass(frozen=True)
class TorchCase:
    """What one example of an Isaac Lab check draws."""

    seed: int
    action_seed: int
    steps: int
    pattern: str = "uniform"


@dataclass(frozen=True)
class Target:
    """What an Isaac Lab system builds and how it is driven."""

    #: ``(num_envs, device) -> env`` following DirectRLEnv's step/reset contract
    factory: Callable[[int, str], Any]
    num_envs: int
    device: str
    #: a wrapper of :data:`rlconform.libraries.isaaclab.wrappers.DRIVERS` to drive the env through; None: the env
    wrapper: str | None = None
    #: ``(env) -> ExactModel`` for a decodable reference env
    model: Callable[[Any], ExactModel] | None = None


@dataclass
class TorchRun(WholeRunRecord):
    """The outcome of one :class:`TorchCase`: the monitor's violations and what was checked."""

    case: TorchCase
    build_error: str | None = None
    family: str = ISAACLAB_TORCH
    violations: list[Violation] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    env_steps: int = 0
    steps: int = 0
    notes: list[str] = field(default_factory=list)
    #: notes that concern one spec only
    spec_notes: dict[str, list[str]] = field(default_factory=dict)
    #: the system the case ran on (the core's RunRecord; set by the family's ``run_case``)
    system: Any = None

    @property
    def usable(self) -> bool:
        return self.build_error is None


_ENVS: dict[tuple[Any, ...], Any] = {}


def _close_all() -> None:
    for env in _ENVS.values():
        with contextlib.suppress(Exception):  # closing at exit: nothing left to report to
            env.close()
    _ENVS.clear()


atexit.register(_close_all)


def env_for(target: Target) -> Any:
    """The target's env, built on first use in this process (see the module docstring)."""
    key = (target.factory, target.num_envs, target.device)
    if key not in _ENVS:
        # one simulation per process: an env of another target is closed first
        _close_all()
        _ENVS[key] = target.factory(target.num_envs, target.device)
    return _ENVS[key]


def actions(env: Any, case: TorchCase, generator: torch.Generator) -> torch.Tensor:
    """One batch of actions for ``case``: a tensor on the env's device of the action space's dtype."""
    u = getattr(env, "unwrapped", env)
    space = u.single_action_space
    device = torch.device(u.device)
    dtype = getattr(torch, str(space.dtype))
    shape = (int(u.num_envs), *space.shape)
    low = torch.as_tensor(space.low, dtype=torch.float32)
    high = torch.as_tensor(space.high, dtype=torch.float32)
    low = torch.where(torch.isfinite(low), low, torch.full_like(low, -1.0))
    high = torch.where(torch.isfinite(high), high, torch.full_like(high, 1.0))
    if case.pattern == "zeros":
        batch = torch.zeros(shape)
    elif case.pattern == "push":
        batch = high.expand(shape).clone()
    elif case.pattern == "extremes":
        pick = torch.rand(shape, generator=generator) < 0.5
        batch = torch.where(pick, low.expand(shape), high.expand(shape))
    else:
        batch = low + (high - low) * torch.rand(shape, generator=generator)
    return batch.to(device=device, dtype=dtype)


def drive(target: Target, case: TorchCase) -> TorchRun:
    """Run ``case`` on the target's env (through its wrapper, if any) under a contract monitor."""
    run = TorchRun(case)
    try:
        env = env_for(target)
    except Exception as exc:
        run.build_error = f"{type(exc).__name__}: {exc}"
        return run
    model = target.model(env) if target.model is not None else None
    monitor = ContractMonitor(env, model=model)
    try:
        generator = torch.Generator().manual_seed(case.action_seed)
        if target.wrapper is None:
            env.reset(seed=case.seed)
            for _ in range(case.steps):
                env.step(actions(env, case, generator))
        else:
            driver = driver_for(target.wrapper)
            wrapped = driver.build(env)
            try:
                driver.reset(wrapped, case.seed)
                finite = bool(getattr(getattr(monitor.unwrapped, "cfg", None), "is_finite_horizon", False))
                for t in range(case.steps):
                    step = driver.step(wrapped, actions(env, case, generator))
                    if monitor.last is not None:
                        source = f"{driver.title}: {driver.call_source()} (step {t + 1})"
                        monitor.report(compare(step, monitor.last, finite_horizon=finite), source)
            finally:
                driver.release(wrapped)
    finally:
        monitor.detach()
    run.violations = list(monitor.violations)
    run.counts = dict(monitor.counts)
    run.env_steps = monitor.env_steps_checked
    run.steps = monitor.steps_checked
    run.notes = list(monitor.notes)
    run.spec_notes = {spec_id: list(notes) for spec_id, notes in monitor.spec_notes.items()}
    return run
