"""skrl agents as an Isaac Lab skrl script builds them, and the planted bugs of family ``skrl.Agent``.

:func:`make_agent` is skrl's PPO with a Gaussian policy and a deterministic value model from skrl's
model instantiators and a ``RandomMemory`` of one rollout, configured as Isaac Lab's
``skrl_ppo_cfg.yaml`` files configure it (``time_limit_bootstrap: False`` unless told). A planted bug
is what a fork of skrl's PPO, or a wrapper between the env and the agent, gets wrong: a GAE that
carries returns across episode ends or sub-envs, or discounts by the wrong factor (a fork whose
``update`` runs with its own ``compute_gae``); a memory that keeps the observation after the step,
or the flags one step late, or every end as a time-out.
"""

from __future__ import annotations

import types
from typing import Any

import skrl.agents.torch.ppo.ppo as ppo_module
import torch
from skrl.agents.torch.ppo import PPO, PPO_CFG
from skrl.memories.torch import RandomMemory
from skrl.resources.preprocessors.torch import RunningStandardScaler
from skrl.utils.model_instantiators.torch import deterministic_model, gaussian_model

DEFECTS = (
    "gae_across_episodes",
    "gae_lambda_as_gamma",
    "gae_across_envs",
    "post_step_obs",
    "late_flags",
    "time_outs_for_terminations",
)
_NETWORK = [{"name": "net", "input": "OBSERVATIONS", "layers": [32, 32], "activations": "elu"}]


def _gae(defect: str) -> Any:
    """A fork's ``compute_gae`` (skrl's arguments and results) that ends the recursion at every end,
    a time-out included (skrl's own ends it only at terminations unless ``time_limit_bootstrap``:
    FINDINGS K1), with one planted defect where ``defect`` names one."""

    def compute_gae(
        *,
        rewards: torch.Tensor,
        terminated: torch.Tensor,
        truncated: torch.Tensor,
        values: torch.Tensor,
        last_values: torch.Tensor,
        discount_factor: float = 0.99,
        lambda_coefficient: float = 0.95,
        time_limit_bootstrap: bool = False,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        ends = terminated | truncated
        gamma, lam = (
            (lambda_coefficient, lambda_coefficient)
            if defect == "gae_lambda_as_gamma"
            else (
                discount_factor,
                lambda_coefficient,
            )
        )
        if defect == "gae_across_episodes":
            ends = torch.zeros_like(ends)  # the bug: the recursion runs on across episode ends
        steps, n = rewards.shape[0], rewards.shape[1]
        if defect == "gae_across_envs":
            # the bug: one recursion over the sub-envs' rows laid end to end
            flat = [t.transpose(0, 1).reshape(steps * n, 1, -1) for t in (rewards, values, ends.float())]
            r, v, d = flat
            returns = torch.zeros_like(r)
            advantage = torch.zeros_like(r[0])
            for i in reversed(range(steps * n)):
                next_values = v[i + 1] if i < steps * n - 1 else last_values[-1:]
                advantage = r[i] - v[i] + gamma * (1 - d[i]) * (next_values + lam * advantage)
                returns[i] = advantage + v[i]
            returns = returns.reshape(n, steps, -1).transpose(0, 1)
        else:
            returns = torch.zeros_like(rewards)
            advantage = torch.zeros_like(rewards[0])
            not_done = ends.logical_not()
            for i in reversed(range(steps)):
                next_values = values[i + 1] if i < steps - 1 else last_values
                advantage = rewards[i] - values[i] + gamma * not_done[i] * (next_values + lam * advantage)
                returns[i] = advantage + values[i]
        advantages = returns - values
        return returns, (advantages - advantages.mean()) / (advantages.std() + 1e-8)

    return compute_gae


def _forked_update(defect: str = "") -> Any:
    """PPO's own ``update``, run with a fork's ``compute_gae`` (a copy of skrl's module globals)."""
    update = PPO.update
    namespace = {**vars(ppo_module), "compute_gae": _gae(defect)}
    return types.FunctionType(update.__code__, namespace, update.__name__, update.__defaults__, update.__closure__)


class ForkedPPO(PPO):
    """skrl's PPO whose GAE ends at every episode end, a time-out included: the fix of FINDINGS K1
    a user makes (no bootstrap without ``time_limit_bootstrap``, and no return carried into the
    next episode)."""

    update = _forked_update()


class ExactPPO(ForkedPPO):
    """The fork bootstrapping a time-out from its terminal observation, as a user who fixes I4
    writes it: run with ``time_limit_bootstrap=True``, it hands skrl's bootstrap the env's
    ``extras["final_obs"]`` rows (which skrl's Isaac Lab wrapper passes on in ``infos``) for the
    sub-envs that timed out, in place of the next episode's first observations."""

    def record_transition(self, **kwargs: Any) -> None:
        final = kwargs["infos"].get("final_obs") if isinstance(kwargs.get("infos"), dict) else None
        rows = final.get("policy") if isinstance(final, dict) else None
        if rows is not None:
            truncated = kwargs["truncated"].reshape(-1, 1).bool()
            kwargs["next_observations"] = torch.where(
                truncated, rows.reshape(kwargs["next_observations"].shape), kwargs["next_observations"]
            )
        super().record_transition(**kwargs)


class _PlantedPPO(ForkedPPO):
    """The fork with one planted defect in what it records (:attr:`defect`, set by :func:`make_agent`)."""

    defect = ""

    def record_transition(self, **kwargs: Any) -> None:
        if self.defect == "post_step_obs":
            kwargs["observations"] = kwargs["next_observations"]  # the bug: the row after the step stored
        if self.defect == "late_flags":
            late = getattr(self, "_late", None)
            self._late = (kwargs["terminated"].clone(), kwargs["truncated"].clone())
            if late is None:
                late = (torch.zeros_like(kwargs["terminated"]), torch.zeros_like(kwargs["truncated"]))
            kwargs["terminated"], kwargs["truncated"] = late  # the bug: the previous step's flags
        if self.defect == "time_outs_for_terminations":
            ends = kwargs["terminated"] | kwargs["truncated"]
            kwargs["terminated"], kwargs["truncated"] = torch.zeros_like(ends), ends  # the bug: every end a time-out
        super().record_transition(**kwargs)


def _parts(env: Any, rollouts: int) -> dict[str, Any]:
    """What every agent here is built of: a Gaussian policy and a deterministic value model from
    skrl's model instantiators, a ``RandomMemory`` of one rollout, the env's spaces and device."""
    spaces = {"observation_space": env.observation_space, "action_space": env.action_space}
    policy = gaussian_model(**spaces, device=env.device, network=_NETWORK, output="ACTIONS")
    value = deterministic_model(**spaces, device=env.device, network=_NETWORK, output="ONE")
    return {
        "models": {"policy": policy, "value": value},
        "memory": RandomMemory(memory_size=rollouts, num_envs=env.num_envs, device=env.device),
        "device": env.device,
        **spaces,
    }


def make_agent(
    env: Any,
    *,
    defect: str = "",
    rollouts: int = 8,
    discount_factor: float = 0.99,
    gae_lambda: float = 0.95,
    time_limit_bootstrap: bool = False,
    observation_preprocessor: bool = False,
    value_preprocessor: bool = False,
    rewards_shaper_scale: float | None = None,
    fork: bool = False,
    exact: bool = False,
) -> PPO:
    """skrl's PPO over ``env`` (skrl's wrapped env) with one rollout of memory (``fork``: the fork whose
    GAE ends at time-outs, :class:`ForkedPPO`); ``defect`` planted on the fork."""
    if defect and defect not in DEFECTS:
        raise ValueError(f"unknown defect {defect!r}; one of {', '.join(DEFECTS)}")
    device = env.device
    cfg = PPO_CFG(
        rollouts=rollouts,
        learning_epochs=1,
        mini_batches=1,
        discount_factor=discount_factor,
        gae_lambda=gae_lambda,
        time_limit_bootstrap=time_limit_bootstrap or exact,
        observation_preprocessor=RunningStandardScaler if observation_preprocessor else None,
        observation_preprocessor_kwargs={"size": env.observation_space, "device": device},
        value_preprocessor=RunningStandardScaler if value_preprocessor else None,
        value_preprocessor_kwargs={"size": 1, "device": device},
        rewards_shaper=(lambda rewards, *_: rewards * rewards_shaper_scale) if rewards_shaper_scale else None,
    )
    cls: type[PPO] = ExactPPO if exact else ForkedPPO if fork else PPO
    if defect in ("post_step_obs", "late_flags", "time_outs_for_terminations"):
        cls = type("PlantedPPO", (_PlantedPPO,), {"defect": defect})
    elif defect.startswith("gae_"):
        cls = type("PlantedForkedPPO", (ForkedPPO,), {"update": _forked_update(defect)})
    return cls(**_parts(env, rollouts), cfg=cfg)


def a2c(env: Any) -> Any:
    """skrl's A2C over ``env`` with one rollout of memory, its defaults otherwise (module level:
    ``rlconform check rlconform.libraries.skrl.agent_planted:a2c --api skrl.Agent``)."""
    from skrl.agents.torch.a2c import A2C, A2C_CFG

    return A2C(**_parts(env, 8), cfg=A2C_CFG(rollouts=8, mini_batches=1))


def ppo(env: Any) -> PPO:
    """skrl's PPO as Isaac Lab's skrl configs build it (module level: ``rlconform check
    rlconform.libraries.skrl.agent_planted:ppo --api skrl.Agent``)."""
    return make_agent(env)


def ppo_time_limit_bootstrap(env: Any) -> PPO:
    """The same with ``time_limit_bootstrap=True``."""
    return make_agent(env, time_limit_bootstrap=True)


def forked_ppo(env: Any) -> PPO:
    """The fork of skrl's PPO whose GAE ends at time-outs (:class:`ForkedPPO`)."""
    return make_agent(env, fork=True)


def exact_ppo(env: Any) -> PPO:
    """The fork bootstrapping a time-out from the env's terminal observation (:class:`ExactPPO`)."""
    return make_agent(env, exact=True)


def forked_ppo_post_step_obs(env: Any) -> PPO:
    """The fork storing the observation after the step as the step's own (a planted bug)."""
    return make_agent(env, defect="post_step_obs")
