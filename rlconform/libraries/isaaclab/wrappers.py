"""Each Isaac Lab wrapper driven by its own API, its transitions read by its documented recipe and
compared, in torch, with what the env itself returned in the same step.

Why: a learning library sees the env only through its wrapper. Whether the data it trains on is
right is decided by the wrapper: which observation it stores as the transition's next
observation when a sub-env ends (Isaac Lab resets it in the same step), whether it keeps
terminations apart from time-outs, whether it hands rewards and flags on unchanged. The env's own
outputs, cloned by the :class:`~rlconform.libraries.isaaclab.monitor.ContractMonitor` tapped into the
unwrapped env, are the truth.

The recipes (isaaclab 3.0.0's ``isaaclab_rl``, torchrl 0.14.1, skrl 2.1, stable-baselines3 2.9):

* ``sb3``: ``Sb3VecEnvWrapper``, SB3's VecEnv API (NumPy actions, as SB3's algorithms pass them):
  ``dones``; a time-out is ``infos[i]["TimeLimit.truncated"]``; the terminal observation of an
  ending sub-env is ``infos[i]["terminal_observation"]``.
* ``rsl_rl``: ``RslRlVecEnvWrapper``: ``dones``; ``extras["time_outs"]`` marks the ones RSL-RL's
  PPO bootstraps (unless ``cfg.is_finite_horizon``). Its API has no terminal observation (PPO
  bootstraps a time-out from the value of the observation before the step), so none is compared.
* ``skrl``: ``SkrlVecEnvWrapper`` (skrl's ``IsaacLabWrapper``): ``terminated``/``truncated``; the
  returned observation is the next state skrl stores, for ending sub-envs too.
* ``torchrl_isaaclab``: Isaac Lab's ``IsaacLabTorchRLWrapper`` and ``torchrl_lib``: TorchRL's
  ``torchrl.envs.libs.isaac_lab.IsaacLabWrapper`` (``native_autoreset=True``, the setting under
  which it accepts a DirectRLEnv's same-step resets): ``step_and_maybe_reset``; the terminal
  observation is ``("next", key)``, the next step's observation the root's ``key``.

Specs: ``isaaclab.wrapper.obs`` (the observation the agent acts on next is the env's),
``isaaclab.wrapper.rewards``, ``isaaclab.wrapper.flags`` (ending, terminated and the time-outs a
learner bootstraps match the env's; a sub-env both terminated and timed out is terminated),
``isaaclab.wrapper.terminal_obs`` (an ending sub-env's next observation is the env's
``extras["final_obs"]`` row; without one there is no right answer, and the wrapper's stand-in is
named: the next episode's first observation, or NaN).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from rlconform.libraries.isaaclab.findings import Finding
from rlconform.libraries.isaaclab.monitor import StepTruth

OBS = "isaaclab.wrapper.obs"
REWARDS = "isaaclab.wrapper.rewards"
FLAGS = "isaaclab.wrapper.flags"
TERMINAL = "isaaclab.wrapper.terminal_obs"
WRAPPER_SPECS = (OBS, REWARDS, FLAGS, TERMINAL)


@dataclass
class WrapperStep:
    """One step as the wrapper's user reads it, as tensors on the CPU (rows per sub-env)."""

    obs: torch.Tensor
    reward: torch.Tensor
    done: torch.Tensor
    #: ending without bootstrapping
    terminated: torch.Tensor
    #: ending with bootstrapping (a time-out the learner treats as one)
    bootstrapped: torch.Tensor
    #: the next observation of each sub-env's transition; None when the API has none
    terminal_obs: torch.Tensor | None


def _cpu(value: Any) -> torch.Tensor:
    if isinstance(value, torch.Tensor):
        return value.detach().to("cpu").clone()
    return torch.as_tensor(np.array(value, copy=True))


def _flat(value: Any) -> torch.Tensor:
    tensor = _cpu(value)
    return tensor.reshape(tensor.shape[0]) if tensor.dim() > 1 else tensor


class Driver:
    """How one wrapper is built, reset and stepped, and how its step is read."""

    name = ""
    title = ""
    #: distributions the wrapper needs besides isaaclab (which ships isaaclab_rl) and torch; the
    #: bundled systems require them, so that a missing one is reported as "not installed: ..."
    requires: tuple[str, ...] = ()

    def build(self, env: Any) -> Any:
        raise NotImplementedError

    def reset(self, wrapped: Any, seed: int | None) -> None:
        """Seed (when given), then reset: the VecEnv-style wrappers' own calls."""
        if seed is not None:
            wrapped.seed(seed)
        wrapped.reset()

    def step(self, wrapped: Any, actions: torch.Tensor) -> WrapperStep:
        raise NotImplementedError

    def call_source(self) -> str:
        raise NotImplementedError

    def release(self, wrapped: Any) -> None:
        """Drop the wrapper without closing the env (rlconform reuses it for the next example)."""


class Sb3Driver(Driver):
    name = "sb3"
    title = "isaaclab_rl.sb3.Sb3VecEnvWrapper"

    requires = ("stable-baselines3",)

    def build(self, env: Any) -> Any:
        from isaaclab_rl.sb3 import Sb3VecEnvWrapper

        return Sb3VecEnvWrapper(env)

    def step(self, wrapped: Any, actions: torch.Tensor) -> WrapperStep:
        wrapped.step_async(actions.detach().cpu().numpy())
        obs, rewards, dones, infos = wrapped.step_wait()
        obs_t, done = _cpu(obs), _flat(dones).bool()
        truncated = torch.tensor([bool(info.get("TimeLimit.truncated", False)) for info in infos])
        terminal = obs_t.clone()
        for i in done.nonzero().flatten().tolist():  # only the ending sub-envs carry one
            if "terminal_observation" in infos[i]:
                terminal[i] = _cpu(infos[i]["terminal_observation"])
            else:
                terminal[i] = float("nan")
        return WrapperStep(obs_t, _flat(rewards), done, done & ~truncated, done & truncated, terminal)

    def call_source(self) -> str:
        return "venv.step_async(actions.cpu().numpy()); venv.step_wait()"


class RslRlDriver(Driver):
    name = "rsl_rl"
    title = "isaaclab_rl.rsl_rl.RslRlVecEnvWrapper"

    requires = ("rsl-rl-lib",)

    def build(self, env: Any) -> Any:
        from isaaclab_rl.rsl_rl import RslRlVecEnvWrapper

        return RslRlVecEnvWrapper(env)

    def step(self, wrapped: Any, actions: torch.Tensor) -> WrapperStep:
        obs, rewards, dones, extras = wrapped.step(actions)
        done = _flat(dones).bool()
        finite = bool(getattr(getattr(wrapped, "cfg", None), "is_finite_horizon", False))
        time_outs = extras.get("time_outs") if isinstance(extras, dict) else None
        boot = torch.zeros_like(done) if finite or time_outs is None else _flat(time_outs).bool()
        return WrapperStep(_cpu(obs["policy"]), _flat(rewards), done, done & ~boot, done & boot, None)

    def call_source(self) -> str:
        return "env.step(actions)"


class SkrlDriver(Driver):
    name = "skrl"
    title = "isaaclab_rl.skrl.SkrlVecEnvWrapper (skrl IsaacLabWrapper)"

    requires = ("skrl",)

    def build(self, env: Any) -> Any:
        import logging

        import skrl  # noqa: F401  (imported here: SkrlVecEnvWrapper imports it on its first call)
        from isaaclab_rl.skrl import SkrlVecEnvWrapper

        # skrl sets its logger to DEBUG when imported, which is after rlconform quieted the
        # libraries' loggers: its INFO line per wrapper ("Environment wrapper: Isaac Lab") would
        # land on the run's screen once per example. Its warnings still show.
        logger = logging.getLogger("skrl")
        level = logger.level
        logger.setLevel(max(level, logging.WARNING))
        try:
            return SkrlVecEnvWrapper(env, ml_framework="torch")
        finally:
            logger.setLevel(level)

    def reset(self, wrapped: Any, seed: int | None) -> None:
        wrapped.reset()  # skrl resets the env on its first reset only

    def step(self, wrapped: Any, actions: torch.Tensor) -> WrapperStep:
        obs, rewards, terminated, truncated, _info = wrapped.step(actions)
        term, trunc = _flat(terminated).bool(), _flat(truncated).bool()
        obs_t = _cpu(obs)
        # skrl's agents store the returned observation as the next state of every transition
        return WrapperStep(obs_t, _flat(rewards), term | trunc, term, trunc & ~term, obs_t.clone())

    def call_source(self) -> str:
        return "env.step(actions)"


class _TorchRLDriver(Driver):
    def reset(self, wrapped: Any, seed: int | None) -> None:
        if seed is not None:
            wrapped.set_seed(seed)
        self._td = wrapped.reset()

    def _key(self, wrapped: Any) -> str:
        keys = list(wrapped.observation_spec.keys())
        return "policy" if "policy" in keys else str(keys[0])

    def step(self, wrapped: Any, actions: torch.Tensor) -> WrapperStep:
        td = self._td
        td["action"] = actions.to(td.device) if td.device is not None else actions
        out, self._td = wrapped.step_and_maybe_reset(td)
        key = self._key(wrapped)
        nxt = out["next"]
        term = _flat(nxt["terminated"]).bool()
        trunc = _flat(nxt["truncated"]).bool() if "truncated" in nxt else torch.zeros_like(term)
        return WrapperStep(_cpu(self._td[key]), _flat(nxt["reward"]), term | trunc, term, trunc & ~term, _cpu(nxt[key]))

    def call_source(self) -> str:
        return "td['action'] = actions; out, td = env.step_and_maybe_reset(td)"

    def release(self, wrapped: Any) -> None:
        # a TorchRL env closes what it wraps when it is garbage-collected (EnvBase.__del__)
        wrapped.is_closed = True


class IsaacLabTorchRLDriver(_TorchRLDriver):
    name = "torchrl_isaaclab"
    title = "isaaclab_rl.torchrl.IsaacLabTorchRLWrapper"

    requires = ("torchrl",)

    def build(self, env: Any) -> Any:
        from isaaclab_rl.torchrl import IsaacLabTorchRLWrapper

        return IsaacLabTorchRLWrapper(env)


class TorchRLLibDriver(_TorchRLDriver):
    name = "torchrl_lib"
    title = "torchrl.envs.libs.isaac_lab.IsaacLabWrapper(native_autoreset=True)"

    requires = ("torchrl",)

    def build(self, env: Any) -> Any:
        from torchrl.envs.libs.isaac_lab import IsaacLabWrapper

        device = str(getattr(env, "unwrapped", env).device)
        return IsaacLabWrapper(env, device=device, native_autoreset=True)


class LaggingSb3Driver(Sb3Driver):
    """Planted bug: a wrapper that hands on the previous step's observations and rewards."""

    name = "planted_lagging"
    title = "planted bug: Sb3VecEnvWrapper reader one step behind"

    def step(self, wrapped: Any, actions: torch.Tensor) -> WrapperStep:
        step = super().step(wrapped, actions)
        previous, self._previous = getattr(self, "_previous", step), step
        return WrapperStep(
            previous.obs, previous.reward, step.done, step.terminated, step.bootstrapped, step.terminal_obs
        )


class TimeOutsAsTerminationsDriver(Sb3Driver):
    """Planted bug: every ending is read as a termination (no time-out is bootstrapped)."""

    name = "planted_no_time_outs"
    title = "planted bug: Sb3VecEnvWrapper reader ignoring TimeLimit.truncated"

    def step(self, wrapped: Any, actions: torch.Tensor) -> WrapperStep:
        step = super().step(wrapped, actions)
        return WrapperStep(step.obs, step.reward, step.done, step.done, torch.zeros_like(step.done), step.terminal_obs)


class ResetObsAsTerminalDriver(Sb3Driver):
    """Planted bug: the returned (post-reset) observation is stored as every transition's next one."""

    name = "planted_reset_obs_terminal"
    title = "planted bug: Sb3VecEnvWrapper reader ignoring terminal_observation"

    def step(self, wrapped: Any, actions: torch.Tensor) -> WrapperStep:
        step = super().step(wrapped, actions)
        return WrapperStep(step.obs, step.reward, step.done, step.terminated, step.bootstrapped, step.obs.clone())


DRIVERS: dict[str, Callable[[], Driver]] = {
    d.name: d for d in (Sb3Driver, RslRlDriver, SkrlDriver, IsaacLabTorchRLDriver, TorchRLLibDriver)
}
#: planted bugs of the wrapper specs: readers of the SB3 wrapper each getting one thing wrong
PLANTED_DRIVERS: dict[str, Callable[[], Driver]] = {
    d.name: d for d in (LaggingSb3Driver, TimeOutsAsTerminationsDriver, ResetObsAsTerminalDriver)
}


def driver_for(name: str) -> Driver:
    return (DRIVERS.get(name) or PLANTED_DRIVERS[name])()


def compare(step: WrapperStep, truth: StepTruth, *, finite_horizon: bool = False) -> list[Finding]:
    """The wrapper's step against the env's, every sub-env at once (on the CPU)."""
    obs = truth.obs.to("cpu")
    term = truth.terminated.to("cpu")
    trunc = truth.time_outs.to("cpu")
    done = term | trunc
    terminated = done if finite_horizon else term
    findings = [
        Finding(OBS, "the observation the agent acts on next is not the env's", ~_rows_equal(step.obs, obs)),
        Finding(REWARDS, "the reward is not the env's", step.reward.to(torch.float32) != truth.reward.to("cpu")),
        Finding(FLAGS, "ends where the env does not, or the reverse", step.done != done),
        Finding(
            FLAGS,
            "terminated (not bootstrapped) where the env did not terminate, or the reverse",
            step.done & done & (step.terminated != terminated),
        ),
    ]
    if step.terminal_obs is None:
        return findings
    terminal = step.terminal_obs
    findings.append(
        Finding(
            TERMINAL,
            "the transition's next observation is not the env's observation",
            ~done & ~_rows_equal(terminal, obs),
        )
    )
    nan = _rows_nan(terminal)
    reset_row = _rows_equal(terminal, obs)
    if truth.final_obs is not None:
        wrong = done & ~_rows_equal(terminal, truth.final_obs.to("cpu"))
        findings.append(
            Finding(TERMINAL, "ended, and the terminal observation is NaN, not extras['final_obs']", wrong & nan)
        )
        findings.append(
            Finding(
                TERMINAL,
                "ended, and the terminal observation is the next episode's first observation, not extras['final_obs']",
                wrong & reset_row & ~nan,
            )
        )
        findings.append(
            Finding(
                TERMINAL, "ended, and the terminal observation is not extras['final_obs']", wrong & ~reset_row & ~nan
            )
        )
    else:
        # the env wrote no final_obs (cfg.compute_final_obs False): the wrapper cannot be right
        findings.append(
            Finding(
                TERMINAL,
                "ended, the env returned no final_obs, and the wrapper's terminal observation is NaN",
                done & nan,
            )
        )
        findings.append(
            Finding(
                TERMINAL,
                "ended, the env returned no final_obs, and the wrapper uses the next episode's first observation "
                "as the terminal one",
                done & reset_row & ~nan,
            )
        )
    return findings


def _rows_equal(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    a = a.reshape(a.shape[0], -1).to(torch.float32)
    b = b.reshape(b.shape[0], -1).to(torch.float32)
    if a.shape != b.shape:
        return torch.zeros(a.shape[0], dtype=torch.bool)
    return (a == b).all(dim=1)


def _rows_nan(a: torch.Tensor) -> torch.Tensor:
    return a.reshape(a.shape[0], -1).isnan().any(dim=1)
