"""Torch-batched user envs that follow ``DirectRLEnv``'s step/reset contract without subclassing
anything from Isaac Lab: a correct one, one bug each of the kinds a hand-written Isaac Lab task
makes, and innocent variants that look like those bugs but are not.

Why here: ``rlconform check MODULE:FACTORY --api isaaclab`` checks a user's own torch-batched env,
with or without Isaac Lab installed; these are the envs that show it (``tests/core`` runs them
without Isaac Lab, ``tests/isaaclab`` with it). Module-level factories
``(num_envs, device) -> env``, so that ``rlconform check
rlconform.libraries.isaaclab.sample_user_envs:walker --api isaaclab`` works.

The task: each sub-env walks a point along a line, pushed by its action and a seeded drift. It
terminates when the point leaves [-LIMIT, LIMIT]; it times out after ``max_episode_length`` steps
(Isaac Lab's rule ``episode_length_buf >= max_episode_length``); the reward is the distance walked
towards the far end in that step, from the position before the step to the one after it (the
step's own state, not the next episode's). The observation is ``[position, episode_length_buf /
max_episode_length]``; it is computed after the ending sub-envs are reset, as DirectRLEnv does,
and with ``compute_final_obs`` the pre-reset observation goes into ``extras["final_obs"]``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from gymnasium import spaces

LIMIT = 1.5
EPISODE_LENGTH = 9


class WalkerEnv:
    """A correct torch-batched env following DirectRLEnv's step/reset contract (see the module
    docstring). ``variant`` plants one bug (:data:`VARIANTS`)."""

    def __init__(
        self,
        num_envs: int,
        device: str,
        *,
        variant: str = "correct",
        compute_final_obs: bool = True,
        max_episode_length: int = EPISODE_LENGTH,
    ) -> None:
        if variant not in VARIANTS:
            raise ValueError(f"unknown variant {variant!r}; one of {sorted(VARIANTS)}")
        self.num_envs = num_envs
        self.device = device
        self.variant = variant
        self.compute_final_obs = compute_final_obs
        self.max_episode_length = max_episode_length
        self.single_observation_space = spaces.Dict({"policy": spaces.Box(-np.inf, np.inf, (2,), np.float32)})
        self.single_action_space = spaces.Box(-1.0, 1.0, (1,), np.float32)
        self.episode_length_buf = torch.zeros(num_envs, dtype=torch.long, device=device)
        self.reset_terminated = torch.zeros(num_envs, dtype=torch.bool, device=device)
        self.reset_time_outs = torch.zeros(num_envs, dtype=torch.bool, device=device)
        self.reset_buf = torch.zeros(num_envs, dtype=torch.bool, device=device)
        self.position = torch.zeros(num_envs, device=device)
        self.generator = torch.Generator(device=device)
        self.extras: dict[str, Any] = {}
        self.actions = torch.zeros(num_envs, 1, device=device)

    @property
    def unwrapped(self) -> WalkerEnv:
        return self

    # --------------------------------------------------------------------------- the task hooks
    def _pre_physics_step(self, actions: torch.Tensor) -> None:
        self.actions = actions.clone()

    def _drift(self, n: int) -> torch.Tensor:
        return 0.3 * (torch.rand(n, generator=self.generator, device=self.device) - 0.5)

    def _reset_idx(self, env_ids: torch.Tensor) -> None:
        self.position[env_ids] = self._drift(int(env_ids.numel()))
        self.episode_length_buf[env_ids] = 0

    def _get_observations(self) -> dict[str, torch.Tensor]:
        progress = self.episode_length_buf.to(torch.float32) / float(self.max_episode_length)
        return {"policy": torch.stack([self.position, progress], dim=1)}

    def _get_rewards(self, before: torch.Tensor) -> torch.Tensor:
        return (self.position - before).abs().to(torch.float32)

    def _get_dones(self) -> tuple[torch.Tensor, torch.Tensor]:
        time_out = self.episode_length_buf >= self.max_episode_length
        died = self.position.abs() > LIMIT
        if self.variant == "terminal_at_limit":
            # innocent: the task ends every episode at its last step as a real termination (a goal
            # reached exactly then); it still reports the time-out Isaac Lab's rule computes
            died = died | time_out
        if self.variant == "time_out_as_termination":
            return died | time_out, torch.zeros_like(time_out)
        return died, time_out

    # ------------------------------------------------------------------------------ the contract
    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
        if seed is not None:
            self.generator.manual_seed(int(seed))
        self._reset_idx(torch.arange(self.num_envs, device=self.device))
        return self._get_observations(), self.extras

    def step(
        self, action: torch.Tensor
    ) -> tuple[dict[str, torch.Tensor], torch.Tensor, torch.Tensor, torch.Tensor, dict[str, Any]]:
        self._pre_physics_step(action.to(self.device))
        before = self.position.clone()
        self.position = self.position + 0.5 * self.actions[:, 0] + self._drift(self.num_envs)
        self.episode_length_buf += 1
        self.reset_terminated, self.reset_time_outs = self._get_dones()
        self.reset_buf = self.reset_terminated | self.reset_time_outs
        stale = self._get_observations() if self.variant == "stale_reset_obs" else None
        if self.variant != "reward_after_reset":
            reward = self._get_rewards(before)
        self.extras = {}
        ids = self.reset_buf.nonzero().flatten()
        late = self.variant == "final_obs_after_reset"
        if self.compute_final_obs and len(ids) > 0 and not late:
            self.extras["final_obs"] = {"policy": self._get_observations()["policy"].clone()}
        if len(ids) > 0:
            self._reset_idx(ids)
        if self.compute_final_obs and len(ids) > 0 and late:
            # the bug: the terminal observation read after the reset (the next episode's first)
            self.extras["final_obs"] = {"policy": self._get_observations()["policy"].clone()}
        if self.variant == "reward_after_reset":
            # the bug: the ending sub-envs' reward read from the next episode's first state
            reward = self._get_rewards(before)
        obs = self._get_observations() if stale is None else stale
        return obs, reward, self.reset_terminated, self.reset_time_outs, self.extras

    def close(self) -> None:
        pass


#: variant -> what it does (``correct`` and the innocent ones must pass every spec of the tier)
VARIANTS = {
    "correct": "the correct env",
    "terminal_at_limit": "innocent: terminates every episode at its last step and reports the time-out too",
    "time_out_as_termination": "reports a time-out as a termination (terminated=True, time_outs=False)",
    "stale_reset_obs": "returns an ending sub-env's pre-reset observation as the next episode's first",
    "reward_after_reset": "computes an ending sub-env's reward from the next episode's first state",
    "final_obs_after_reset": "gives the next episode's first observation as an ending sub-env's terminal one",
}


def walker(num_envs: int, device: str) -> WalkerEnv:
    return WalkerEnv(num_envs, device)


def walker_no_final_obs(num_envs: int, device: str) -> WalkerEnv:
    return WalkerEnv(num_envs, device, compute_final_obs=False)


def walker_terminal_at_limit(num_envs: int, device: str) -> WalkerEnv:
    return WalkerEnv(num_envs, device, variant="terminal_at_limit")


def walker_time_out_as_termination(num_envs: int, device: str) -> WalkerEnv:
    return WalkerEnv(num_envs, device, variant="time_out_as_termination")


def walker_stale_reset_obs(num_envs: int, device: str) -> WalkerEnv:
    return WalkerEnv(num_envs, device, variant="stale_reset_obs")


def walker_reward_after_reset(num_envs: int, device: str) -> WalkerEnv:
    return WalkerEnv(num_envs, device, variant="reward_after_reset")


def walker_final_obs_after_reset(num_envs: int, device: str) -> WalkerEnv:
    return WalkerEnv(num_envs, device, variant="final_obs_after_reset")


class GymStyleWalkerEnv:
    """The same task written as Isaac Gym envs were: ``reset_idx``, ``compute_reward`` and
    ``compute_observations`` fill ``rew_buf`` and ``obs_buf`` (none of DirectRLEnv's hook names),
    ``progress_buf`` counts the steps, and DirectRLEnv's step/reset contract is kept on the outside.
    The dynamics draw nothing (the point moves by half the action); the reset puts it at a random
    position drawn from torch's global generator (``rng="numpy"``: from a NumPy generator the env
    holds). ``variant`` plants one bug or an innocent difference (:data:`GYM_STYLE_VARIANTS`).

    Why: without the hooks only the replay with another random state for the reset
    (:mod:`~rlconform.libraries.isaaclab.order_probe`) sees the order of an ending step."""

    def __init__(self, num_envs: int, device: str, *, variant: str = "correct", rng: str = "torch") -> None:
        if variant not in GYM_STYLE_VARIANTS:
            raise ValueError(f"unknown variant {variant!r}; one of {sorted(GYM_STYLE_VARIANTS)}")
        self.num_envs = num_envs
        self.device = device
        self.variant = variant
        self.max_episode_length = EPISODE_LENGTH
        self.single_observation_space = spaces.Dict({"policy": spaces.Box(-np.inf, np.inf, (2,), np.float32)})
        self.single_action_space = spaces.Box(-1.0, 1.0, (1,), np.float32)
        self.position = torch.zeros(num_envs, device=device)
        self.progress_buf = torch.zeros(num_envs, dtype=torch.long, device=device)
        self.reset_buf = torch.zeros(num_envs, dtype=torch.bool, device=device)
        self.timeout_buf = torch.zeros(num_envs, dtype=torch.bool, device=device)
        self.obs_buf = torch.zeros(num_envs, 2, device=device)
        self.rew_buf = torch.zeros(num_envs, device=device)
        self.extras: dict[str, Any] = {}
        self.np_rng = np.random.default_rng(0) if rng == "numpy" else None

    @property
    def unwrapped(self) -> GymStyleWalkerEnv:
        return self

    def _start_positions(self, n: int) -> torch.Tensor:
        if self.variant == "fixed_reset":
            return torch.zeros(n, device=self.device)
        if self.np_rng is not None:
            return torch.as_tensor(self.np_rng.uniform(-0.5, 0.5, n), dtype=torch.float32, device=self.device)
        return torch.rand(n, device=self.device) - 0.5

    def reset_idx(self, env_ids: torch.Tensor) -> None:
        self.position[env_ids] = self._start_positions(int(env_ids.numel()))
        self.progress_buf[env_ids] = 0

    def compute_observations(self) -> None:
        progress = self.progress_buf.to(torch.float32) / float(self.max_episode_length)
        self.obs_buf = torch.stack([self.position, progress], dim=1)

    def compute_reward(self, before: torch.Tensor) -> None:
        self.rew_buf = (self.position - before).abs().to(torch.float32)
        self.timeout_buf = self.progress_buf >= self.max_episode_length
        self.reset_buf = (self.position.abs() > LIMIT) | self.timeout_buf

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
        if seed is not None:
            torch.manual_seed(int(seed))
            if self.np_rng is not None:
                self.np_rng = np.random.default_rng(int(seed))
        self.reset_idx(torch.arange(self.num_envs, device=self.device))
        self.reset_buf[:] = False
        self.compute_observations()
        return {"policy": self.obs_buf.clone()}, self.extras

    def step(
        self, action: torch.Tensor
    ) -> tuple[dict[str, torch.Tensor], torch.Tensor, torch.Tensor, torch.Tensor, dict[str, Any]]:
        if self.variant == "deferred_reset":
            # the bug (Isaac Gym's pre_physics_step): the sub-envs that ended last step are reset
            # only now, so the observation returned when they ended was their last one
            pending = self.reset_buf.nonzero().flatten()
            if len(pending) > 0:
                self.reset_idx(pending)
        action = action.to(self.device)
        before = self.position.clone()
        noise = 0.05 * torch.randn(self.num_envs, device=self.device) if self.variant == "noisy_steps" else 0.0
        self.position = self.position + 0.5 * action[:, 0] + noise
        self.progress_buf += 1
        if self.variant != "reward_after_reset":
            self.compute_reward(before)
        else:
            self.timeout_buf = self.progress_buf >= self.max_episode_length
            self.reset_buf = (self.position.abs() > LIMIT) | self.timeout_buf
        ended = self.reset_buf.clone()
        time_outs = self.timeout_buf.clone()
        self.compute_observations()
        self.extras = {"final_obs": {"policy": self.obs_buf.clone()}}
        ids = ended.nonzero().flatten()
        if len(ids) > 0 and self.variant != "deferred_reset":
            self.reset_idx(ids)
        if self.variant == "reward_after_reset":
            # the bug: the reward read from the positions after the reset
            self.rew_buf = (self.position - before).abs().to(torch.float32)
        if self.variant not in ("stale_reset_obs", "deferred_reset"):
            self.compute_observations()
        # the bug of both: obs_buf still holds what was computed before the reset
        return {"policy": self.obs_buf.clone()}, self.rew_buf.clone(), ended & ~time_outs, time_outs, self.extras

    def close(self) -> None:
        pass


#: variant -> what it does (``correct`` and the innocent ones must pass every spec they can judge)
GYM_STYLE_VARIANTS = {
    "correct": "the correct env",
    "fixed_reset": "innocent: every episode starts at 0 (the reset draws nothing: its observations are not judged)",
    "noisy_steps": "innocent: the steps add noise from torch's generator (the replay cannot judge the order)",
    "stale_reset_obs": "computes the observations before the reset and returns them as the next episode's first",
    "deferred_reset": "resets the ended sub-envs at the start of the next step (Isaac Gym's pre_physics_step)",
    "reward_after_reset": "computes the ending sub-envs' reward after their reset",
}


def gym_style_walker(num_envs: int, device: str) -> GymStyleWalkerEnv:
    return GymStyleWalkerEnv(num_envs, device)


def gym_style_walker_numpy_rng(num_envs: int, device: str) -> GymStyleWalkerEnv:
    return GymStyleWalkerEnv(num_envs, device, rng="numpy")


def gym_style_walker_fixed_reset(num_envs: int, device: str) -> GymStyleWalkerEnv:
    return GymStyleWalkerEnv(num_envs, device, variant="fixed_reset")


def gym_style_walker_noisy_steps(num_envs: int, device: str) -> GymStyleWalkerEnv:
    return GymStyleWalkerEnv(num_envs, device, variant="noisy_steps")


def gym_style_walker_stale_reset_obs(num_envs: int, device: str) -> GymStyleWalkerEnv:
    return GymStyleWalkerEnv(num_envs, device, variant="stale_reset_obs")


def gym_style_walker_deferred_reset(num_envs: int, device: str) -> GymStyleWalkerEnv:
    return GymStyleWalkerEnv(num_envs, device, variant="deferred_reset")


def gym_style_walker_reward_after_reset(num_envs: int, device: str) -> GymStyleWalkerEnv:
    return GymStyleWalkerEnv(num_envs, device, variant="reward_after_reset")
