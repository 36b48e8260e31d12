"""rlconform's decodable torch env in RSL-RL's ``VecEnv`` protocol, and the log that is its ground truth.

Why its own env: RSL-RL's ``OnPolicyRunner`` takes a ``rsl_rl.env.VecEnv`` (``get_observations()``,
``step(actions) -> (obs, rewards, dones, extras)`` with ``extras["time_outs"]``), which Isaac Lab's
``RslRlVecEnvWrapper`` makes of a ``DirectRLEnv``. A learner's storage can be checked exactly only
against an env whose every observation says where it is; this one needs torch and tensordict only,
so the check runs without Isaac Lab.

The script (float32, every value exactly representable), for sub-env ``i`` in its episode ``e``:

* observation row ``[i, e, step, echo, salt]``: ``step`` counts the episode's steps (0 after a
  reset), ``echo`` is ``action[i, 0]`` of the step that produced the row (0 after a reset), ``salt``
  is ``1 + (31 i + 17 e + seed) % 1000``;
* the episode terminates when ``step`` reaches ``1 + (a i + b e) % (L + 3)`` (``a``, ``b`` drawn
  by the case, ``L`` the time limit), and times out at ``L`` steps; one that does both on the same
  step is terminated, and ``extras["time_outs"]`` holds the time-outs that did not terminate;
* the reward of a step is ``1 + (i % 4) + step_after / 8``, from the step the episode reached;
* a sub-env that ends is reset in the same step (RSL-RL keeps no terminal observation): the
  observation returned for it is the next episode's first.

:class:`StepLog` keeps per step what a learner should store: the observation the step started from,
the action sent, the reward, the flags and the terminal observation (the row the episode ended on).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

OBS_DIM = 5
NUM_ACTIONS = 2


@dataclass(frozen=True)
class StampScript:
    """What one case draws of the env: its size, time limit, termination pattern and seed."""

    num_envs: int
    max_episode_length: int
    term_a: int = 7
    term_b: int = 3
    seed: int = 0


@dataclass
class StepLog:
    """Per step (rows of ``[num_envs, ...]`` tensors), what the env saw and returned."""

    obs_before: list[torch.Tensor] = field(default_factory=list)
    actions: list[torch.Tensor] = field(default_factory=list)
    rewards: list[torch.Tensor] = field(default_factory=list)
    terminated: list[torch.Tensor] = field(default_factory=list)
    truncated: list[torch.Tensor] = field(default_factory=list)
    #: the observation each sub-env's step reached (the terminal one where it ended)
    reached: list[torch.Tensor] = field(default_factory=list)

    def stacked(self, name: str) -> torch.Tensor:
        return torch.stack(getattr(self, name))


def _obs_dict(rows: torch.Tensor) -> Any:
    from tensordict import TensorDict

    return TensorDict({"policy": rows.clone()}, batch_size=[rows.shape[0]], device=rows.device)


class StampCore:
    """The script's state and log (see the module docstring); the protocols are its subclasses."""

    def __init__(self, script: StampScript, device: str = "cpu") -> None:
        self.script = script
        self.num_envs = script.num_envs
        self.num_actions = NUM_ACTIONS
        self.max_episode_length = script.max_episode_length
        self.device = device
        self.cfg: dict[str, Any] = {}
        self.log = StepLog()
        self.ids = torch.arange(self.num_envs, device=device)
        self.episode = torch.zeros(self.num_envs, dtype=torch.long, device=device)
        self.episode_length_buf = torch.zeros(self.num_envs, dtype=torch.long, device=device)
        self.echo = torch.zeros(self.num_envs, device=device)
        self.reset()

    # ------------------------------------------------------------------------- the script
    def _salt(self) -> torch.Tensor:
        return (1 + torch.remainder(self.ids * 31 + self.episode * 17 + self.script.seed, 1000)).float()

    def _rows(self) -> torch.Tensor:
        return torch.stack(
            [self.ids.float(), self.episode.float(), self.episode_length_buf.float(), self.echo, self._salt()], dim=1
        )

    def _term_len(self) -> torch.Tensor:
        s = self.script
        return 1 + torch.remainder(self.ids * s.term_a + self.episode * s.term_b, s.max_episode_length + 3)

    # ------------------------------------------------------------------------ the protocol
    def reset(self) -> tuple[Any, dict[str, Any]]:
        self.episode.zero_()
        self.episode_length_buf.zero_()
        self.echo.zero_()
        return _obs_dict(self._rows()), {}

    def get_observations(self) -> Any:
        return _obs_dict(self._rows())

    def advance(self, actions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """One step of every sub-env, logged, with the ended ones reset: (reward, terminated,
        truncated, the rows the step reached)."""
        actions = actions.to(self.device)
        self.log.obs_before.append(self._rows())
        self.log.actions.append(actions.detach().clone().float())
        self.episode_length_buf += 1
        self.echo = actions[:, 0].detach().float().clone()
        reached = self._rows()
        step = self.episode_length_buf
        reward = (1 + torch.remainder(self.ids, 4) + step.float() / 8).float()
        terminated = step >= self._term_len()
        truncated = (step >= self.script.max_episode_length) & ~terminated
        done = terminated | truncated
        self.log.rewards.append(reward.clone())
        self.log.terminated.append(terminated.clone())
        self.log.truncated.append(truncated.clone())
        self.log.reached.append(reached)
        # same-step reset of the ended sub-envs
        self.episode = torch.where(done, self.episode + 1, self.episode)
        self.episode_length_buf = torch.where(done, torch.zeros_like(step), step)
        self.echo = torch.where(done, torch.zeros_like(self.echo), self.echo)
        return reward, terminated, truncated, reached

    def close(self) -> None:
        pass


class StampVecEnv(StampCore):
    """The env in RSL-RL's VecEnv protocol; a subclass of ``rsl_rl.env.VecEnv`` is made of it by
    :func:`make_stamp_vec_env` where RSL-RL is installed."""

    def step(self, actions: torch.Tensor) -> tuple[Any, torch.Tensor, torch.Tensor, dict[str, Any]]:
        reward, terminated, truncated, _reached = self.advance(actions)
        extras = {"time_outs": truncated.clone(), "log": {}}
        return _obs_dict(self._rows()), reward.clone(), (terminated | truncated).long(), extras


class StampDirectEnv(StampCore):
    """The env in Isaac Lab's ``DirectRLEnv`` step/reset protocol (what skrl's Isaac Lab wrapper
    takes): ``reset(seed) -> ({"policy": rows}, extras)``, ``step(actions) -> ({"policy": rows},
    reward, terminated, time_outs, extras)`` with the rows each ended episode reached in
    ``extras["final_obs"]["policy"]`` (as ``compute_final_obs=True`` gives them)."""

    def __init__(self, script: StampScript, device: str = "cpu") -> None:
        import numpy as np
        from gymnasium import spaces

        super().__init__(script, device)
        self.single_observation_space = spaces.Dict({"policy": spaces.Box(-np.inf, np.inf, (OBS_DIM,), np.float32)})
        self.single_action_space = spaces.Box(-1.0, 1.0, (NUM_ACTIONS,), np.float32)
        self.observation_space = self.single_observation_space
        self.action_space = self.single_action_space

    @property
    def unwrapped(self) -> StampDirectEnv:
        return self

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        super().reset()
        return {"policy": self._rows()}, {}

    def step(self, actions: torch.Tensor) -> tuple[Any, torch.Tensor, torch.Tensor, torch.Tensor, dict[str, Any]]:
        reward, terminated, truncated, reached = self.advance(actions)
        extras = {"final_obs": {"policy": reached.clone()}, "log": {}}
        return {"policy": self._rows()}, reward.clone(), terminated.clone(), truncated.clone(), extras


def make_stamp_vec_env(script: StampScript, device: str = "cpu") -> StampVecEnv:
    """The env as a ``rsl_rl.env.VecEnv`` (RSL-RL's abstract base), as an Isaac Lab user's runner
    is given one."""
    from rsl_rl.env import VecEnv

    cls = type("StampVecEnv", (StampVecEnv, VecEnv), {})
    return cls(script, device)  # type: ignore[no-any-return]


class DirectEnvRecorder:
    """A :class:`StepLog` of any env following ``DirectRLEnv``'s step/reset contract, recorded by
    tapping its (unwrapped) ``reset`` and ``step`` on the instance, whoever drives it (Isaac Lab's
    RSL-RL wrapper around the bundled reference env).

    Why from its outputs: the reference env (:mod:`rlconform.libraries.isaaclab.batch_env`) is held
    to its exact model by the torch tier, so what it returns is the truth; a learner over a
    wrapper is compared with it. The observation a step started from is the row the previous call
    returned; the row it reached is ``extras["final_obs"]["policy"]`` where the sub-env ended (the
    env must compute it: ``cfg.compute_final_obs``; Isaac Lab writes it on steps where a sub-env
    ended only), the returned row elsewhere. A step both
    terminated and timed out (Isaac Lab sets both where a termination falls on the time limit) is
    logged as terminated: ``truncated`` holds the time-outs that did not terminate. Every tensor is
    cloned: DirectRLEnv rewrites its flag buffers in place (FINDINGS I1)."""

    def __init__(self, env: Any) -> None:
        self.env = getattr(env, "unwrapped", env)
        self.log = StepLog()
        self._last: torch.Tensor | None = None
        self._reset = self.env.reset
        self._step = self.env.step
        self.env.reset = self.reset
        self.env.step = self.step

    def reset(self, *args: Any, **kwargs: Any) -> Any:
        result = self._reset(*args, **kwargs)
        self._last = result[0]["policy"].detach().clone()
        return result

    def step(self, actions: torch.Tensor) -> Any:
        result = self._step(actions)
        obs, reward, terminated, time_outs, extras = result
        rows = obs["policy"].detach().clone()
        term = terminated.detach().clone().bool()
        trunc = time_outs.detach().clone().bool() & ~term
        done = (term | trunc).reshape(-1, 1)
        final = extras.get("final_obs", {}).get("policy") if isinstance(extras, dict) else None
        if final is None:
            # Isaac Lab writes final_obs on steps with an autoreset only
            if bool(done.any()):
                raise ValueError("the env wrote no extras['final_obs']: set cfg.compute_final_obs")
            final = rows
        if self._last is None:
            raise ValueError("the env was stepped before it was reset")
        self.log.obs_before.append(self._last)
        self.log.actions.append(actions.detach().clone().float())
        self.log.rewards.append(reward.detach().clone().float())
        self.log.terminated.append(term)
        self.log.truncated.append(trunc)
        self.log.reached.append(torch.where(done, final.detach().clone(), rows))
        self._last = rows
        return result

    def get_observations(self) -> Any:
        """The observation group the env returned last, ``{"policy": rows}`` (what a learner's
        rollout ends on), as :meth:`StampCore.get_observations` gives it."""
        if self._last is None:
            raise ValueError("the env was not reset")
        return {"policy": self._last}

    def detach(self) -> None:
        for name in ("reset", "step"):
            vars(self.env).pop(name, None)
