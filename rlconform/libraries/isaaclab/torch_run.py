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
from rlconform.libraries.isaaclab import monitor as mon
from rlconform.libraries.isaaclab import order_probe
from rlconform.libraries.isaaclab.findings import Finding, hits
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
    #: spec -> (what it needs to have seen, whether this run saw it, why not, whether the run had
    #: the occasion: a sub-env ended): Checker.requires
    requirements: dict[str, tuple[str, bool, str, bool]] = field(default_factory=dict)
    #: spec -> tallies summed over the search (Checker.count)
    tallies: dict[str, list[tuple[str, int]]] = field(default_factory=dict)
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
    order_notes = judge_order(env, case, monitor, run)
    run.violations = list(monitor.violations)
    run.counts = dict(monitor.counts)
    run.env_steps = monitor.env_steps_checked
    run.steps = monitor.steps_checked
    run.notes = list(monitor.notes)
    run.spec_notes = {spec_id: list(notes) for spec_id, notes in monitor.spec_notes.items()}
    for spec_id, notes in order_notes.items():
        run.spec_notes.setdefault(spec_id, []).extend(notes)
    return run


#: the specs whose facts are the order of an ending step, and what each judges
_ORDER = {"reward": mon.REWARD_ORDER, "obs": mon.AUTORESET, "final": mon.FINAL_OBS}
_WHAT = {
    mon.REWARD_ORDER: "an ending sub-env whose reward was judged computed before or after its reset",
    mon.AUTORESET: "an ending sub-env whose returned observation was judged read before or after its reset",
}


def judge_order(env: Any, case: TorchCase, monitor: ContractMonitor, run: TorchRun) -> dict[str, list[str]]:
    """Where the task hooks did not show the order of an ending step (an env without them, hooks
    that return nothing, a sub-env not reset within the step that ended it), replay the example
    (:mod:`~rlconform.libraries.isaaclab.order_probe`) and add what it found to the monitor's
    violations; record per spec how many ending sub-envs were judged, and how. Returns the notes
    of the specs that only note it."""
    notes: dict[str, list[str]] = {}
    tally = monitor.order.tally()
    ended = sum(tally.get(mon.REWARD_ORDER, (0, 0)))
    blind = {spec_id for spec_id, (_judged, unseen) in tally.items() if unseen}
    verdict = order_probe.judge(env, case, _ORDER, actions) if blind else None
    if verdict is not None:
        found = [
            Finding(spec_id, message, bad) for spec_id, message, bad, _step in verdict.findings if spec_id in blind
        ]
        steps = {spec_id: step for spec_id, _m, _b, step in verdict.findings}
        for finding in hits(found):
            step = steps[finding.spec]
            # the replay's calls: reset(seed) is the first, step t the (t + 1)-th
            monitor.report([finding], f"env.step(actions #{step}) of a replay", call=step + 1)
    for spec_id in (mon.REWARD_ORDER, mon.AUTORESET, mon.FINAL_OBS):
        hooked = tally.get(spec_id, (0, 0))[0]
        replayed = verdict.judged.get(spec_id, 0) if verdict is not None and spec_id in blind else 0
        if hooked:
            run.tallies.setdefault(spec_id, []).append(("ending sub-envs judged from the task hooks", hooked))
        if replayed:
            run.tallies.setdefault(spec_id, []).append(
                ("ending sub-envs judged by replaying the example with another random state", replayed)
            )
        why = why_not_judged(monitor, ended, verdict)
        if spec_id in _WHAT:
            run.requirements[spec_id] = (_WHAT[spec_id], bool(hooked or replayed), why, bool(ended))
        elif ended and not (hooked or replayed):
            notes.setdefault(spec_id, []).append(
                f"whether the terminal observation was computed before the reset: not judged ({why})"
            )
    return notes


def why_not_judged(monitor: ContractMonitor, ended: int, verdict: order_probe.OrderVerdict | None) -> str:
    if not ended:
        return f"no sub-env ended within the example's steps (max_episode_length={monitor.max_episode_length})"
    hooks = monitor.order
    missing = [
        name
        for name, present in (
            ("_reset_idx", hooks.has_reset),
            ("_get_rewards", hooks.has_rewards),
            ("_get_observations", hooks.has_observations),
        )
        if not present
    ]
    said = f"the env has no {', '.join(missing)}" if missing else "its task hooks did not show it"
    replay = verdict.not_judged if verdict is not None and verdict.not_judged else "the replay did not show it"
    return f"{said}, and replaying the example could not tell: {replay}"
