"""RSL-RL runners as an Isaac Lab user builds them, and the planted bugs of family ``rsl_rl.Runner``.

:func:`make_runner` is ``OnPolicyRunner(env, train_cfg, log_dir=None, device="cpu")`` with a small
``train_cfg`` of RSL-RL 5's shape (``algorithm``, ``actor``, ``critic``, ``obs_groups``). A planted
bug is what a fork of RSL-RL's PPO or storage, or a wrapper between the env and the runner, gets
wrong: a GAE that carries returns across episode ends or sub-envs, or discounts by the wrong
factor; a storage that keeps the observation after the step or the dones one step late; a wrapper
that hands every done to RSL-RL as a time-out, or none.
"""

from __future__ import annotations

from typing import Any

import torch
from rsl_rl.algorithms import PPO
from rsl_rl.runners import OnPolicyRunner

DEFECTS = (
    "gae_across_episodes",
    "gae_lambda_as_gamma",
    "gae_across_envs",
    "post_step_obs",
    "late_dones",
    "time_outs_for_terminations",
    "no_time_outs",
)


class _PlantedPPO(PPO):
    """RSL-RL's PPO with one planted defect (:attr:`defect`, set by :func:`make_runner`)."""

    defect = ""

    def process_env_step(self, obs: Any, rewards: torch.Tensor, dones: torch.Tensor, extras: dict[str, Any]) -> None:
        if self.defect == "post_step_obs":
            self.transition.observations = obs  # the bug: the row after the step stored as the step's own
        if self.defect == "late_dones":
            late = getattr(self, "_late", None)
            self._late = dones.clone()
            dones = torch.zeros_like(dones) if late is None else late  # the bug: the previous step's dones
        super().process_env_step(obs, rewards, dones, extras)

    def compute_returns(self, obs: Any) -> None:
        if self.defect not in ("gae_across_episodes", "gae_lambda_as_gamma", "gae_across_envs"):
            super().compute_returns(obs)
            return
        st = self.storage
        last_values = self.critic(obs).detach()
        gamma, lam = (self.lam, self.lam) if self.defect == "gae_lambda_as_gamma" else (self.gamma, self.lam)
        rewards, values, dones = st.rewards, st.values, st.dones
        steps = st.num_transitions_per_env
        returns = torch.zeros_like(values)
        advantage = torch.zeros_like(values[0, 0])
        # the bug of gae_across_envs: one recursion over the sub-envs' rows laid end to end (sub-env
        # e's last row bootstraps from sub-env e + 1's first); the others keep each sub-env apart
        columns = [slice(None)] if self.defect != "gae_across_envs" else list(range(values.shape[1]))
        for k, column in enumerate(reversed(columns)):
            index = len(columns) - 1 - k
            advantage = torch.zeros_like(values[0, column]) if self.defect != "gae_across_envs" else advantage
            for step in reversed(range(steps)):
                if step < steps - 1:
                    next_values = values[step + 1, column]
                elif self.defect == "gae_across_envs" and index + 1 < len(columns):
                    next_values = values[0, index + 1]
                else:
                    next_values = last_values[column] if self.defect != "gae_across_envs" else last_values[-1]
                going = 1.0 - dones[step, column].float()
                if self.defect == "gae_across_episodes":
                    going = torch.ones_like(going)  # the bug: the recursion runs on across episode ends
                delta = rewards[step, column] + going * gamma * next_values - values[step, column]
                advantage = delta + going * gamma * lam * advantage
                returns[step, column] = advantage + values[step, column]
        st.returns = returns
        st.advantages = st.returns - st.values
        if not self.normalize_advantage_per_mini_batch:
            st.advantages = (st.advantages - st.advantages.mean()) / (st.advantages.std() + 1e-8)


class _FlagWrapper:
    """A VecEnv wrapper that rewrites ``extras["time_outs"]`` (every done, or none)."""

    def __init__(self, env: Any, defect: str) -> None:
        self.env = env
        self.defect = defect
        for name in ("num_envs", "num_actions", "max_episode_length", "device", "cfg"):
            setattr(self, name, getattr(env, name))

    @property
    def episode_length_buf(self) -> torch.Tensor:
        return self.env.episode_length_buf  # type: ignore[no-any-return]

    @episode_length_buf.setter
    def episode_length_buf(self, value: torch.Tensor) -> None:
        self.env.episode_length_buf = value

    def get_observations(self) -> Any:
        return self.env.get_observations()

    def step(self, actions: torch.Tensor) -> tuple[Any, torch.Tensor, torch.Tensor, dict[str, Any]]:
        obs, rewards, dones, extras = self.env.step(actions)
        extras = dict(extras)
        if self.defect == "time_outs_for_terminations":
            extras["time_outs"] = dones.bool()  # the bug: a termination handed on as a time-out
        else:
            extras.pop("time_outs", None)  # the bug: no time-out is bootstrapped
        return obs, rewards, dones, extras


def train_cfg(
    *,
    num_steps_per_env: int = 8,
    gamma: float = 0.99,
    lam: float = 0.95,
    obs_normalization: bool = False,
    normalize_advantage_per_mini_batch: bool = False,
    algorithm: Any = "PPO",
) -> dict[str, Any]:
    """A small ``train_cfg`` of RSL-RL 5's shape (what Isaac Lab's ``RslRlOnPolicyRunnerCfg.to_dict()`` gives)."""
    model = {"hidden_dims": [32, 32], "activation": "elu", "obs_normalization": obs_normalization}
    return {
        "num_steps_per_env": num_steps_per_env,
        "save_interval": 50,
        "obs_groups": {"actor": ["policy"], "critic": ["policy"]},
        "algorithm": {
            "class_name": algorithm,
            "gamma": gamma,
            "lam": lam,
            "num_learning_epochs": 1,
            "num_mini_batches": 1,
            "normalize_advantage_per_mini_batch": normalize_advantage_per_mini_batch,
        },
        "actor": {
            "class_name": "MLPModel",
            **model,
            "distribution_cfg": {"class_name": "GaussianDistribution", "init_std": 1.0},
        },
        "critic": {"class_name": "MLPModel", **model},
        "logger": "tensorboard",
    }


def make_runner(env: Any, *, defect: str = "", device: str | None = None, **cfg: Any) -> OnPolicyRunner:
    """``OnPolicyRunner(env, train_cfg(**cfg), log_dir=None, device=device)``, with ``defect`` planted
    (``device``: the env's unless given, as Isaac Lab's scripts pass the env's device)."""
    if defect and defect not in DEFECTS:
        raise ValueError(f"unknown defect {defect!r}; one of {', '.join(DEFECTS)}")
    algorithm: Any = "PPO"
    if defect in ("time_outs_for_terminations", "no_time_outs"):
        env = _FlagWrapper(env, defect)
    elif defect:
        algorithm = type("PlantedPPO", (_PlantedPPO,), {"defect": defect})
    device = str(getattr(env, "device", "cpu")) if device is None else device
    return OnPolicyRunner(env, train_cfg(algorithm=algorithm, **cfg), log_dir=None, device=device)


# module-level factories, so that ``rlconform check rlconform.libraries.rsl_rl.runner_planted:ppo
# --api rsl_rl.Runner`` shows a user's check
def ppo(env: Any) -> OnPolicyRunner:
    """RSL-RL's PPO as an Isaac Lab user builds its runner."""
    return make_runner(env)


def ppo_time_outs_for_terminations(env: Any) -> OnPolicyRunner:
    """The same behind a wrapper that hands every done on as a time-out (a planted bug)."""
    return make_runner(env, defect="time_outs_for_terminations")


def ppo_post_step_obs(env: Any) -> OnPolicyRunner:
    """A PPO that stores the observation after the step as the step's own (a planted bug)."""
    return make_runner(env, defect="post_step_obs")
