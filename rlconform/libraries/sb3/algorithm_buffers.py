"""Replay-buffer subclasses for the ``sb3.Algorithm`` family's planted bugs and innocent variants.

Imports Stable-Baselines3 at module level, so the catalog never imports it: the systems of
:mod:`rlconform.libraries.sb3.algorithm_planted` import it when they build. Each planted class
has one deliberate defect of a kind reported again and again in learners' buffers; the innocent
ones are correct in another way than SB3's own.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from stable_baselines3.common.buffers import NStepReplayBuffer, ReplayBuffer, RolloutBuffer
from stable_baselines3.common.type_aliases import ReplayBufferSamples
from stable_baselines3.common.vec_env import VecEnvWrapper


class ResetAsTerminalBuffer(ReplayBuffer):
    """Planted: at an episode end it keeps the observation the next ``add`` starts from (the next
    episode's first) as the row's next observation, as a buffer that reads ``obs[t + 1]`` does."""

    _ended: list[tuple[int, int]]

    def add(self, obs: Any, next_obs: Any, action: Any, reward: Any, done: Any, infos: Any) -> None:
        for row, env in getattr(self, "_ended", []):
            self.next_observations[row, env] = np.array(obs)[env]
        self._ended = [(self.pos, i) for i, d in enumerate(np.asarray(done)) if d]
        super().add(obs, next_obs, action, reward, done, infos)


class TimeoutDroppedBuffer(ReplayBuffer):
    """Planted: declares ``handle_timeout_termination=True`` and never stores a time-out flag, so a
    time-out is trained on as a termination."""

    def add(self, obs: Any, next_obs: Any, action: Any, reward: Any, done: Any, infos: Any) -> None:
        row = self.pos
        super().add(obs, next_obs, action, reward, done, infos)
        self.timeouts[row] = 0.0


class RewardOfNextEnvBuffer(ReplayBuffer):
    """Planted: stores each sub-env's reward in the row of the next sub-env (a transposed batch)."""

    def add(self, obs: Any, next_obs: Any, action: Any, reward: Any, done: Any, infos: Any) -> None:
        super().add(obs, next_obs, action, np.roll(np.asarray(reward), 1), done, infos)


class CopyingBuffer(ReplayBuffer):
    """Innocent: copies every argument before storing it and counts what it stored (a user's
    buffer that instruments SB3's): the same rows."""

    stored = 0

    def add(self, obs: Any, next_obs: Any, action: Any, reward: Any, done: Any, infos: Any) -> None:
        self.stored += 1
        super().add(
            np.array(obs, copy=True),
            np.array(next_obs, copy=True),
            np.array(action, copy=True),
            np.array(reward, copy=True),
            np.array(done, copy=True),
            [dict(i) for i in infos],
        )


class OwnNStepBuffer(NStepReplayBuffer):
    """An n-step buffer whose sampling is its own loop (not SB3's vectorized one); the flags plant
    one defect each, none of them set: correct (an innocent variant).

    ``mix_envs``: steps after the first take the next sub-env's reward; ``cross_episodes``: the
    window runs on past an episode end; ``gamma_n``: the bootstrap is discounted by gamma^n even
    when the window is shorter; ``gamma_n_at_terminations``: gamma^n only where the row ends in a
    termination, where no bootstrap is taken (innocent)."""

    mix_envs = False
    cross_episodes = False
    gamma_n = False
    gamma_n_at_terminations = False

    def _get_samples(self, batch_inds: np.ndarray, env: Any = None) -> ReplayBufferSamples:
        env_indices = np.random.randint(0, self.n_envs, size=batch_inds.shape)
        newest = (self.pos - 1) % self.buffer_size
        rewards, next_obs, dones, discounts = [], [], [], []
        for row, e in zip(batch_inds, env_indices, strict=True):
            total, k, index = 0.0, 0, int(row)
            while True:
                source = (e + 1) % self.n_envs if self.mix_envs and k > 0 else e
                total += self.gamma**k * float(self.rewards[index, source])
                k += 1
                ended = bool(self.dones[index, e]) or bool(self.timeouts[index, e])
                if (ended and not self.cross_episodes) or index == newest or k == self.n_steps:
                    break
                index = (index + 1) % self.buffer_size
            done = float(self.dones[index, e]) * (1.0 - float(self.timeouts[index, e]))
            steps = self.n_steps if self.gamma_n or (self.gamma_n_at_terminations and done) else k
            rewards.append(total)
            next_obs.append(self.next_observations[index, e])
            dones.append(done)
            discounts.append(self.gamma**steps)
        column = np.asarray(rewards, dtype=np.float32).reshape(-1, 1)
        return ReplayBufferSamples(
            observations=self.to_torch(self._normalize_obs(self.observations[batch_inds, env_indices], env)),  # type: ignore[arg-type]
            actions=self.to_torch(self.actions[batch_inds, env_indices]),
            next_observations=self.to_torch(self._normalize_obs(np.stack(next_obs), env)),  # type: ignore[arg-type]
            dones=self.to_torch(np.asarray(dones, dtype=np.float32).reshape(-1, 1)),
            rewards=self.to_torch(self._normalize_reward(column, env)),
            discounts=self.to_torch(np.asarray(discounts, dtype=np.float32).reshape(-1, 1)),
        )


class MixedEnvNStepBuffer(OwnNStepBuffer):
    """Planted: n-step sums take the next sub-env's rewards after the first step."""

    mix_envs = True


class CrossEpisodeNStepBuffer(OwnNStepBuffer):
    """Planted: n-step windows run on across episode ends."""

    cross_episodes = True


class GammaNNStepBuffer(OwnNStepBuffer):
    """Planted: the bootstrap is discounted by gamma^n after fewer steps."""

    gamma_n = True


class GammaNAtTerminationsBuffer(OwnNStepBuffer):
    """Innocent: gamma^n where the row ends in a termination (multiplied by done = 1: unused)."""

    gamma_n_at_terminations = True


# ------------------------------------------------------------------ on-policy (RolloutBuffer)


class OwnGAERolloutBuffer(RolloutBuffer):
    """A rollout buffer whose GAE is its own loop, sub-env by sub-env, in float64 (an innocent
    variant); the flags plant one defect each, none of them set here.

    ``cross_episodes``: the trace runs on across episode ends (the bootstrap is still cut);
    ``bootstrap_terminations``: the bootstrap ``gamma * V(next row)`` is taken at every episode end
    (the trace is still cut); ``mix_envs``: the next row's value and start flag are the next sub-env's."""

    cross_episodes = False
    bootstrap_terminations = False
    mix_envs = False

    def compute_returns_and_advantage(self, last_values: Any, dones: np.ndarray) -> None:
        last = np.asarray(last_values.detach().cpu().numpy(), dtype=np.float64).reshape(-1)
        values = self.values.astype(np.float64)
        rewards = self.rewards.astype(np.float64)
        starts = self.episode_starts.astype(np.float64)
        rows, n_envs = values.shape
        advantages = np.zeros((rows, n_envs), dtype=np.float64)
        for e in range(n_envs):
            source = (e + 1) % n_envs if self.mix_envs else e
            running = 0.0
            for t in range(rows - 1, -1, -1):
                if t == rows - 1:
                    following, ends = float(last[source]), bool(np.asarray(dones)[source])
                else:
                    following, ends = float(values[t + 1, source]), bool(starts[t + 1, source])
                bootstrap = 0.0 if ends and not self.bootstrap_terminations else self.gamma * following
                cut = 0.0 if ends and not self.cross_episodes else 1.0
                running = rewards[t, e] + bootstrap - values[t, e] + self.gamma * self.gae_lambda * cut * running
                advantages[t, e] = running
        self.advantages = advantages.astype(np.float32)
        self.returns = (advantages + values).astype(np.float32)


class VectorGAERolloutBuffer(RolloutBuffer):
    """Innocent: GAE over all sub-envs at once in float64, the episode ends read as "the next row
    starts an episode" by shifting episode_starts one row up (SB3's own buffer, rewritten)."""

    def compute_returns_and_advantage(self, last_values: Any, dones: np.ndarray) -> None:
        values = self.values.astype(np.float64)
        next_values = np.concatenate(
            [values[1:], np.asarray(last_values.detach().cpu().numpy(), np.float64).reshape(1, -1)]
        )
        ends = np.concatenate([self.episode_starts[1:], np.asarray(dones, np.float64).reshape(1, -1)]).astype(
            np.float64
        )
        deltas = self.rewards.astype(np.float64) + self.gamma * (1.0 - ends) * next_values - values
        advantages = np.zeros_like(deltas)
        carry = np.zeros(deltas.shape[1])
        for t in range(deltas.shape[0] - 1, -1, -1):
            carry = deltas[t] + self.gamma * self.gae_lambda * (1.0 - ends[t]) * carry
            advantages[t] = carry
        self.advantages = advantages.astype(np.float32)
        self.returns = (advantages + values).astype(np.float32)


class CrossEpisodeGAEBuffer(OwnGAERolloutBuffer):
    """Planted: the GAE trace runs on across episode ends."""

    cross_episodes = True


class BootstrapsTerminationsGAEBuffer(OwnGAERolloutBuffer):
    """Planted: every episode end is bootstrapped with the next row's value (the next episode's
    first observation), terminations included."""

    bootstrap_terminations = True


class MixedEnvGAEBuffer(OwnGAERolloutBuffer):
    """Planted: the next row's value and start flag are read from the next sub-env."""

    mix_envs = True


class NoEpisodeStartsBuffer(RolloutBuffer):
    """Planted: stores episode_starts as 0 after the first row (a buffer that ignores the flag it is
    given), so SB3's own GAE runs every sub-env's rollout as one episode."""

    def add(self, obs: Any, action: Any, reward: Any, episode_start: Any, value: Any, log_prob: Any) -> None:
        if self.pos > 0:
            episode_start = np.zeros_like(np.asarray(episode_start))
        super().add(obs, action, reward, episode_start, value, log_prob)


class ObservationOfNextEnvBuffer(RolloutBuffer):
    """Planted: stores each sub-env's observation in the column of the next sub-env (a transposed
    batch); its values and rewards stay right."""

    def add(self, obs: Any, action: Any, reward: Any, episode_start: Any, value: Any, log_prob: Any) -> None:
        if isinstance(obs, dict):
            obs = {k: np.roll(np.asarray(v), 1, axis=0) for k, v in obs.items()}
        else:
            obs = np.roll(np.asarray(obs), 1, axis=0)
        super().add(obs, action, reward, episode_start, value, log_prob)


class DropsTimeLimitInfo(VecEnvWrapper):
    """Planted (a user's VecEnv wrapper, not a buffer): rebuilds every info without
    ``"TimeLimit.truncated"``, so the on-policy collection never sees a time-out and never adds
    SB3's ``gamma * V(terminal observation)`` bootstrap: a time-out is trained on as a termination."""

    def reset(self) -> Any:
        return self.venv.reset()

    def step_wait(self) -> Any:
        obs, rewards, dones, infos = self.venv.step_wait()
        return obs, rewards, dones, [{k: v for k, v in info.items() if k != "TimeLimit.truncated"} for info in infos]
