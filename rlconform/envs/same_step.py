"""The same-step autoreset recipe, shared by the families whose step resets an ending sub-env in place.

SB3's VecEnv and Isaac Lab's DirectRLEnv/ManagerBasedRLEnv both return, for a sub-env whose episode
ended, the next episode's first observation in the step's observation batch, and keep the true last
observation aside (SB3: ``infos[i]["terminal_observation"]``; Isaac Lab: ``extras["final_obs"]``,
only with ``compute_final_obs``). A training loop stores (previous row, action, reward, final
observation where the sub-env ended and one is given, else the returned row) and carries the returned
row forward. Each adapter reads its library's outputs into a :class:`~rlconform.envs.trace.CallView`;
this module turns those views into transitions once, so the two families cannot drift apart.
"""

from __future__ import annotations

from typing import Any

from rlconform.envs.trace import CallRecord, Slot


def same_step_slots(calls: list[CallRecord], num_envs: int) -> list[Slot]:
    """One transition per sub-env per step call; reset calls set every sub-env's current row."""
    last_obs: list[Any] = [None] * num_envs
    slots: list[Slot] = []
    for record in calls:
        view = record.view
        if record.failed or view is None:
            continue
        obs = view.obs_in_env_units()
        if view.kind == "reset":
            last_obs = list(obs)
            continue
        assert view.terminated is not None and view.truncated is not None
        rewards = view.rewards_in_env_units()
        finals = view.final_obs_in_env_units() or [None] * num_envs
        actions = record.op.actions  # type: ignore[union-attr]
        for j in range(num_envs):
            done = view.terminated[j] or view.truncated[j]
            slots.append(
                Slot(
                    env=j,
                    call=record.position,
                    agent_step=record.agent_step,
                    kind="transition",
                    obs=last_obs[j],
                    action=actions[j] if j < len(actions) else None,
                    reward=rewards[j] if rewards is not None else None,
                    next_obs=finals[j] if done and finals[j] is not None else obs[j],
                    terminated=view.terminated[j],
                    truncated=view.truncated[j],
                    info=view.infos[j] if view.infos is not None else None,
                )
            )
            last_obs[j] = obs[j]
    return slots
