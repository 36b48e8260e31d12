"""The bundled systems of family ``rsl_rl.Runner``: RSL-RL's own PPO over rlconform's torch env,
innocent variants of it (other horizons, lambda 1, observation normalization, per-mini-batch
advantages), and planted bugs of the kinds a fork of RSL-RL's storage or GAE, or a wrapper between
the env and the runner, makes (:mod:`~rlconform.libraries.rsl_rl.runner_planted`).

Loaded where RSL-RL is importable (``rlconform.libraries.rsl_rl.LIBRARY``): its learners' specs and
systems mean nothing without it. Nothing here imports torch or RSL-RL at import time.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rlconform.core.system import System, SystemTable
from rlconform.envs.devices import cuda_reason
from rlconform.envs.learner_family import CAPS
from rlconform.libraries.isaaclab.learner_envs import CARTPOLE_ROUTES
from rlconform.libraries.isaaclab.learner_envs import capabilities as isaaclab_capabilities
from rlconform.libraries.rsl_rl.runner_family import runner_importable
from rlconform.specs.families import RSL_RL_RUNNER

#: this module's systems, read by the catalog (rlconform.core.catalog)
SYSTEMS = SystemTable()
#: what the bundled systems need installed
REQUIRES = ("rsl-rl-lib", "tensordict", "torch")


EXACT = "learner.exact_targets"
# RSL-RL's PPO bootstraps a time-out from V(s_t): learner.exact_targets reports it as the documented
# approximation it is (known, citing rsl_rl/algorithms/ppo.py; FINDINGS R1)


def _register(system_id: str, title: str, build: Callable[[Any], Any], **kwargs: Any) -> None:
    SYSTEMS.add(
        System(
            id=system_id,
            family=RSL_RL_RUNNER,
            title=title,
            build=build,
            source=title,
            **{"requires": REQUIRES, "capabilities": CAPS, "availability": runner_importable, **kwargs},
        )
    )


def _ppo(**overrides: Any) -> Callable[[Any], Any]:
    def make(env: Any) -> Any:
        from rlconform.libraries.rsl_rl.runner_planted import make_runner

        return make_runner(env, **overrides)

    return make


#: innocent variants of RSL-RL's PPO: (id suffix, what differs, overrides of runner_planted.make_runner)
VARIANTS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("", "RSL-RL's PPO, 8 steps per env, gamma 0.99, lambda 0.95", {}),
    (".horizon_3", "a 3-step rollout", {"num_steps_per_env": 3}),
    (".horizon_24", "a 24-step rollout", {"num_steps_per_env": 24}),
    (".lambda_1", "lambda 1 (Monte Carlo returns bootstrapped at the rollout's end)", {"lam": 1.0}),
    (".obs_normalization", "observation normalization in the actor and critic", {"obs_normalization": True}),
    (
        ".per_mini_batch_advantages",
        "advantages standardized per mini-batch (stored raw)",
        {"normalize_advantage_per_mini_batch": True},
    ),
)
for _suffix, _what, _overrides in VARIANTS:
    _register(
        f"rsl_rl.Runner.PPO{_suffix}",
        f"OnPolicyRunner(env, train_cfg, log_dir=None): {_what}",
        _ppo(**_overrides),
    )


# RSL-RL's PPO over Isaac Lab's own RslRlVecEnvWrapper around the bundled reference DirectRLEnv,
# as an Isaac Lab workflow builds it (FINDINGS I3 reaches the storage: a termination on the time
# limit is handed on as a time-out and bootstrapped)
_register(
    "rsl_rl.Runner.PPO.isaaclab",
    "OnPolicyRunner(RslRlVecEnvWrapper(reference DirectRLEnv), train_cfg, log_dir=None): RSL-RL's PPO through "
    "Isaac Lab's wrapper",
    _ppo(),
    requires=(*REQUIRES, "isaaclab"),
    options=(("env", "isaaclab"),),
    capabilities=isaaclab_capabilities("isaaclab"),
)
# the same over Isaac Lab's real Cartpole tasks on the CPU (Newton physics)
for _suffix, _kind, _task in CARTPOLE_ROUTES:
    _register(
        f"rsl_rl.Runner.PPO.isaaclab{_suffix}",
        f"OnPolicyRunner(RslRlVecEnvWrapper(gym.make({_task!r})), train_cfg, log_dir=None): RSL-RL's PPO on the "
        "real task",
        _ppo(),
        requires=(*REQUIRES, "isaaclab"),
        options=(("env", _kind),),
        capabilities=isaaclab_capabilities(_kind),
        # an example builds and steps a physics simulation (about a second on the CPU): the
        # smaller example budget
        costly=True,
    )


def _on_cuda() -> str | None:
    return runner_importable() or cuda_reason()


# the same on CUDA (rlconform's env and the runner on the GPU): where there is none, the rows say so
_register(
    "rsl_rl.Runner.PPO.cuda",
    "OnPolicyRunner(env, train_cfg, log_dir=None, device='cuda'): RSL-RL's PPO on CUDA",
    _ppo(),
    options=(("device", "cuda"),),
    availability=_on_cuda,
)
_register(
    "rsl_rl.Runner.PPO.isaaclab.cuda",
    "OnPolicyRunner(RslRlVecEnvWrapper(reference DirectRLEnv on cuda), train_cfg, log_dir=None, device='cuda')",
    _ppo(),
    requires=(*REQUIRES, "isaaclab"),
    options=(("env", "isaaclab"), ("device", "cuda")),
    capabilities=isaaclab_capabilities("isaaclab"),
    availability=_on_cuda,
)


def _planted(defect: str) -> Callable[[Any], Any]:
    def make(env: Any) -> Any:
        from rlconform.libraries.rsl_rl.runner_planted import make_runner

        return make_runner(env, defect=defect)

    return make


#: planted bug -> (what it does, the specs it must fail: a wrong return or stored reward is neither
#: the exact target nor RSL-RL's documented recipe, so learner.exact_targets fails with them)
PLANTS: dict[str, tuple[str, tuple[str, ...]]] = {
    "gae_across_episodes": (
        "a PPO whose GAE ignores the dones (carries the next episode's rewards back)",
        ("learner.returns", EXACT),
    ),
    "gae_lambda_as_gamma": ("a PPO whose GAE discounts by lambda where gamma is due", ("learner.returns", EXACT)),
    "gae_across_envs": (
        "a PPO whose GAE runs one recursion over the sub-envs' rows laid end to end",
        ("learner.returns", EXACT),
    ),
    "post_step_obs": (
        "a PPO that stores the observation after the step as the step's own",
        ("learner.storage",),
    ),
    "late_dones": (
        "a storage that keeps each step's dones one step late",
        ("learner.storage", "learner.returns", EXACT),
    ),
    "time_outs_for_terminations": (
        "a wrapper that hands RSL-RL every done as a time-out (terminations bootstrapped)",
        ("learner.storage", EXACT),
    ),
    "no_time_outs": (
        "a wrapper that drops extras['time_outs'] (time-outs not bootstrapped)",
        ("learner.storage", EXACT),
    ),
}
for _defect, (_what, _fails) in PLANTS.items():
    _register(
        f"planted.rsl_rl.Runner.{''.join(p.title() for p in _defect.split('_'))}",
        f"planted bug: {_what}",
        _planted(_defect),
        kind="planted",
        plants=_fails,
    )
