"""What an SB3 on-policy algorithm (PPO, A2C, a user's ``RolloutBuffer`` subclass) collects, and
the reference it is compared with (family ``sb3.Algorithm``).

``OnPolicyAlgorithm.collect_rollouts`` (SB3 2.9.2, ``on_policy_algorithm.py``) fills the rollout
buffer, calls ``rollout_buffer.compute_returns_and_advantage(last_values, dones)`` and then
``callback.on_rollout_end()``; ``train()`` runs only after ``collect_rollouts`` returns. A callback
therefore reads the buffer at ``on_rollout_end``, when it holds the rollout's returns and
advantages and the policy is still the one that collected it, and stops ``learn`` there (it raises
:class:`RolloutCollected`, which rlconform catches): no gradient step ever changes the value
function the reference evaluates.

The reference (:func:`reference_gae`) is rlconform's own float64 code over the env logs and the
model's own value function (``policy.predict_values``) evaluated on the true observations: SB3's
documented time-out bootstrap ``r + gamma * V(terminal observation)`` in the reward of a step that
truncated (and did not terminate), 0 after a termination, V(next observation) at the rollout's end.
Over VecNormalize the policy's inputs and the rewards are the normalised ones: the callback keeps
the wrapper's running statistics after every step, and the true observation and reward of step t
are normalised with the statistics VecNormalize used for them, by its own ``normalize_obs`` and
``normalize_reward``.

Nothing here imports SB3 or torch at module level.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import numpy as np


class RolloutCollected(Exception):
    """Raised by the reading callback at ``on_rollout_end``: the rollout is read, ``learn`` stops."""


@dataclass
class RolloutFacts:
    """One rollout as the buffer held it at ``on_rollout_end`` (arrays shaped ``[rows, n_envs]``)."""

    class_name: str
    n_envs: int
    rows: int
    #: the model's gamma (the time-out bootstrap) and the buffer's gamma and lambda (its GAE)
    gamma: float
    buffer_gamma: float
    gae_lambda: float
    observations: Any
    actions: np.ndarray
    rewards: np.ndarray
    episode_starts: np.ndarray
    values: np.ndarray
    returns: np.ndarray
    advantages: np.ndarray
    #: the VecNormalize the model collected through (None: the observations are the env's own)
    normalized: bool = False
    #: VecNormalize's (obs_rms, ret_rms) after reset and after each step (``stats[t + 1]``: step t)
    stats: list[tuple[Any, Any]] = field(default_factory=list)
    #: a recurrent buffer (sb3-contrib's RecurrentRolloutBuffer): the critic's LSTM (hidden, cell)
    #: states it stored for each row, ``[rows, layers, n_envs, hidden]`` (the state before the row's
    #: observation), and the model's state after the rollout's last step, ``[layers, n_envs, hidden]``
    vf_states: tuple[np.ndarray, np.ndarray] | None = None
    final_vf_state: tuple[np.ndarray, np.ndarray] | None = None


@dataclass
class RolloutReference:
    """What the rows should hold, from the env logs and the model's value function (float64)."""

    #: the policy's input for each row's true observation (the stored observation, as it should be)
    inputs: list[list[Any]]
    #: V(row's true observation), V(true observation after the row's step: the terminal one at an
    #: episode end)
    v_obs: np.ndarray
    v_next: np.ndarray
    rewards: np.ndarray
    returns: np.ndarray
    advantages: np.ndarray
    #: the (one-step, normalised where VecNormalize is used) rewards without the bootstrap
    plain_rewards: np.ndarray


def reading_callback(model: Any, sink: dict[str, Any]) -> Any:
    """An SB3 callback that keeps the rollout buffer in ``sink['facts']`` at ``on_rollout_end`` and
    stops ``learn`` by raising :class:`RolloutCollected`."""
    from stable_baselines3.common.callbacks import BaseCallback

    vec_normalize = model.get_vec_normalize_env()

    def snapshot() -> tuple[Any, Any]:
        assert vec_normalize is not None
        return copy.deepcopy(vec_normalize.obs_rms), copy.deepcopy(vec_normalize.ret_rms)

    class ReadRollout(BaseCallback):
        def __init__(self) -> None:
            super().__init__()
            self.stats: list[tuple[Any, Any]] = []

        def _on_rollout_start(self) -> None:
            if vec_normalize is not None:
                self.stats = [snapshot()]

        def _on_step(self) -> bool:
            if vec_normalize is not None:
                self.stats.append(snapshot())
            return True

        def _on_rollout_end(self) -> None:
            buffer = model.rollout_buffer
            observations = buffer.observations
            if isinstance(observations, dict):
                observations = {k: np.array(v, copy=True) for k, v in observations.items()}
            else:
                observations = np.array(observations, copy=True)
            sink["facts"] = RolloutFacts(
                class_name=type(buffer).__name__,
                n_envs=int(buffer.n_envs),
                rows=int(buffer.buffer_size),
                gamma=float(model.gamma),
                buffer_gamma=float(getattr(buffer, "gamma", model.gamma)),
                gae_lambda=float(getattr(buffer, "gae_lambda", getattr(model, "gae_lambda", 1.0))),
                observations=observations,
                actions=np.array(buffer.actions, copy=True),
                rewards=np.array(buffer.rewards, dtype=np.float64, copy=True),
                episode_starts=np.array(buffer.episode_starts, dtype=np.float64, copy=True),
                values=np.array(buffer.values, dtype=np.float64, copy=True),
                returns=np.array(buffer.returns, dtype=np.float64, copy=True),
                advantages=np.array(buffer.advantages, dtype=np.float64, copy=True),
                normalized=vec_normalize is not None,
                stats=list(self.stats),
                **_recurrent_states(model, buffer),
            )
            raise RolloutCollected

    return ReadRollout()


def _recurrent_states(model: Any, buffer: Any) -> dict[str, Any]:
    """The critic's LSTM states a recurrent rollout buffer stored, and the model's last ones."""
    if not hasattr(buffer, "hidden_states_vf"):
        return {}
    found: dict[str, Any] = {
        "vf_states": (np.array(buffer.hidden_states_vf, copy=True), np.array(buffer.cell_states_vf, copy=True))
    }
    last = getattr(getattr(model, "_last_lstm_states", None), "vf", None)
    if last is not None:
        found["final_vf_state"] = tuple(np.array(x.detach().cpu().numpy(), copy=True) for x in last)
    return found


def recurrent_values(
    policy: Any, facts: RolloutFacts, inputs: list[list[Any]], nexts: list[list[Any]], starts: list[list[bool]]
) -> tuple[np.ndarray, np.ndarray]:
    """A recurrent policy's V of each row's true observation, from the LSTM state the buffer stored
    for the row (reset where the observation starts an episode, ``starts``), and of the true
    observation after the row's step, from the state after that step (the next row's, or the
    model's last), as sb3-contrib's RecurrentPPO bootstraps a time-out: float64 ``[rows, n_envs]``."""
    import torch

    assert facts.vf_states is not None and facts.final_vf_state is not None
    hidden, cell = facts.vf_states
    rows, n_envs = facts.rows, facts.n_envs

    def value(obs: Any, h: np.ndarray, c: np.ndarray, start: bool) -> float:
        tensor, _ = policy.obs_to_tensor(_stack([obs]))
        state = (torch.as_tensor(h, device=policy.device), torch.as_tensor(c, device=policy.device))
        with torch.no_grad():
            out = policy.predict_values(tensor, state, torch.tensor([float(start)], device=policy.device))
        return float(out.reshape(-1)[0])

    v_obs, v_next = np.zeros((rows, n_envs)), np.zeros((rows, n_envs))
    for t in range(rows):
        for e in range(n_envs):
            v_obs[t, e] = value(inputs[t][e], hidden[t][:, e : e + 1], cell[t][:, e : e + 1], starts[t][e])
            after = (
                (hidden[t + 1][:, e : e + 1], cell[t + 1][:, e : e + 1])
                if t + 1 < rows
                else (facts.final_vf_state[0][:, e : e + 1], facts.final_vf_state[1][:, e : e + 1])
            )
            v_next[t, e] = value(nexts[t][e], after[0], after[1], False)
    return v_obs, v_next


def _with_stats(vec_normalize: Any, stats: tuple[Any, Any] | None, fn: Any, value: Any) -> Any:
    """``fn(value)`` with VecNormalize's running statistics set to ``stats`` (restored after)."""
    if vec_normalize is None or stats is None:
        return value
    kept = vec_normalize.obs_rms, vec_normalize.ret_rms
    vec_normalize.obs_rms, vec_normalize.ret_rms = stats
    try:
        return fn(value)
    finally:
        vec_normalize.obs_rms, vec_normalize.ret_rms = kept


def _stack(inputs: list[Any]) -> Any:
    if isinstance(inputs[0], dict):
        return {k: np.stack([np.asarray(i[k]) for i in inputs]) for k in inputs[0]}
    return np.stack([np.asarray(i) for i in inputs])


def predict_values(policy: Any, inputs: list[Any]) -> np.ndarray:
    """The policy's own ``predict_values`` of each input (one batch), as float64."""
    import torch

    if not inputs:
        return np.zeros(0)
    tensor, _ = policy.obs_to_tensor(_stack(inputs))
    with torch.no_grad():
        values = policy.predict_values(tensor)
    return np.asarray(values.detach().cpu().numpy(), dtype=np.float64).reshape(-1)


def reference_gae(
    facts: RolloutFacts, transitions: list[list[Any]], encode: Any, policy: Any, vec_normalize: Any
) -> RolloutReference:
    """The rollout's reference from ``transitions[e][t]`` (the true transitions of each sub-env,
    row t = its t-th step), in float64; ``encode`` maps a true observation (Stamp) to the env's
    observation."""
    rows, n_envs = facts.rows, facts.n_envs

    def stats(k: int) -> tuple[Any, Any] | None:
        return facts.stats[k] if facts.normalized and k < len(facts.stats) else None

    def policy_input(stamp: Any, k: int) -> Any:
        return _with_stats(vec_normalize, stats(k), lambda v: vec_normalize.normalize_obs(v), encode(stamp))

    inputs = [[policy_input(transitions[e][t].obs, t) for e in range(n_envs)] for t in range(rows)]
    nexts = [[policy_input(transitions[e][t].next_obs, t + 1) for e in range(n_envs)] for t in range(rows)]
    if facts.vf_states is not None:
        starts = [[transitions[e][t].obs.step == 0 for e in range(n_envs)] for t in range(rows)]
        v_obs, v_next = recurrent_values(policy, facts, inputs, nexts, starts)
    else:
        values = predict_values(policy, [x for row in inputs for x in row] + [x for row in nexts for x in row])
        v_obs = values[: rows * n_envs].reshape(rows, n_envs)
        v_next = values[rows * n_envs :].reshape(rows, n_envs)
    plain = np.zeros((rows, n_envs))
    for t in range(rows):
        for e in range(n_envs):
            reward = np.array([transitions[e][t].reward], dtype=np.float64)
            if facts.normalized:
                reward = _with_stats(vec_normalize, stats(t + 1), lambda r: vec_normalize.normalize_reward(r), reward)
            plain[t, e] = float(np.asarray(reward).reshape(-1)[0])
    rewards = plain.copy()
    advantages = np.zeros((rows, n_envs))
    gamma, lam = facts.buffer_gamma, facts.gae_lambda
    for e in range(n_envs):
        trace = 0.0
        for t in reversed(range(rows)):
            true = transitions[e][t]
            if true.truncated and not true.terminated:
                rewards[t, e] += facts.gamma * v_next[t, e]
            going_on = 0.0 if (true.terminated or true.truncated) else 1.0
            delta = rewards[t, e] + gamma * going_on * v_next[t, e] - v_obs[t, e]
            trace = delta + gamma * lam * going_on * trace
            advantages[t, e] = trace
    return RolloutReference(
        inputs=inputs,
        v_obs=v_obs,
        v_next=v_next,
        rewards=rewards,
        returns=advantages + v_obs,
        advantages=advantages,
        plain_rewards=plain,
    )
