"""The value an off-policy SB3 algorithm's own target bootstraps from, at observations rlconform
chooses: what a documented approximation drops from a target, measured rather than described.

SB3's off-policy target is ``r + (1 - done) * gamma^m * Q'(s')`` with ``Q'`` read from the
algorithm's target networks (DQN: ``max_a q_net_target(s')[a]``; TD3 and DDPG: the smallest of
``critic_target(s', actor_target(s'))``; SAC: the smallest of ``critic_target(s', a')`` less the
entropy term, ``a'`` drawn by the actor). A time-out stored as a termination zeroes that term, so
the bias of the row's target is ``-gamma^m * Q'(true final observation)``. This reads ``Q'`` off the
model after ``learn`` the way its ``train`` does, without the exploration noise (TD3's target
smoothing) or the sampling (SAC's action and its entropy term): SAC's value is the critics' at the
actor's mean action. An algorithm whose target networks are none of these has no value read, and
the verdict says so.

Nothing here imports SB3 or torch at module level.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rlconform.libraries.sb3.algorithm_rollouts import _stack


def bootstrap_values(model: Any, inputs: list[Any]) -> tuple[np.ndarray | None, str]:
    """``Q'(s')`` of each input (already in the model's input units, e.g. normalised) as float64,
    and how it was read; ``(None, why)`` when the model has none of the target networks above."""
    import torch

    if not inputs:
        return np.zeros(0), ""
    tensor, _ = model.policy.obs_to_tensor(_stack(inputs))
    with torch.no_grad():
        if hasattr(model, "q_net_target"):
            values = model.q_net_target(tensor).max(dim=1).values
            how = "max_a q_net_target(s')[a], the target network DQN's train bootstraps from"
        elif hasattr(model, "critic_target") and hasattr(model, "actor_target"):
            actions = model.actor_target(tensor)
            values = torch.cat(model.critic_target(tensor, actions), dim=1).min(dim=1).values
            how = "min over critic_target(s', actor_target(s')), as TD3's and DDPG's train (target noise left out)"
        elif hasattr(model, "critic_target") and hasattr(model, "actor"):
            actions = model.actor(tensor, deterministic=True)
            values = torch.cat(model.critic_target(tensor, actions), dim=1).min(dim=1).values
            how = "min over critic_target(s', a') at the actor's mean action a' (SAC's sampling and entropy term left out)"
        else:
            return None, f"{type(model).__name__} has none of q_net_target, actor_target or critic_target to read"
    return np.asarray(values.detach().cpu().numpy(), dtype=np.float64).reshape(-1), how
