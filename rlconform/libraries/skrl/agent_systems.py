"""The bundled systems of family ``skrl.Agent``: skrl's PPO as Isaac Lab's skrl configs build it
(``time_limit_bootstrap: False``), with ``time_limit_bootstrap=True``, innocent variants (a 3-step
rollout, lambda 1, observation and value preprocessors, a reward shaper), and planted bugs
(:mod:`~rlconform.libraries.skrl.agent_planted`). Loaded where skrl is importable.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rlconform.core.system import System, SystemTable
from rlconform.envs.devices import cuda_reason
from rlconform.envs.learner_family import CAPS
from rlconform.libraries.isaaclab.learner_envs import CARTPOLE_ROUTES
from rlconform.libraries.isaaclab.learner_envs import capabilities as isaaclab_capabilities
from rlconform.libraries.skrl.agent_family import skrl_importable
from rlconform.specs.families import SKRL_AGENT

#: this module's systems, read by the catalog (rlconform.core.catalog)
SYSTEMS = SystemTable()
REQUIRES = ("skrl", "torch", "gymnasium")


def _register(system_id: str, title: str, build: Callable[[Any], Any], **kwargs: Any) -> None:
    SYSTEMS.add(
        System(
            id=system_id,
            family=SKRL_AGENT,
            title=title,
            build=build,
            source=title,
            **{"requires": REQUIRES, "capabilities": CAPS, "availability": skrl_importable, **kwargs},
        )
    )


def _agent(**overrides: Any) -> Callable[[Any], Any]:
    def make(env: Any) -> Any:
        from rlconform.libraries.skrl.agent_planted import make_agent

        return make_agent(env, **overrides)

    return make


#: skrl's PPO and variants: (id suffix, what differs, overrides of agent_planted.make_agent)
VARIANTS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("", "skrl's PPO as Isaac Lab's skrl configs build it (time_limit_bootstrap False), 8-step rollout", {}),
    (".time_limit_bootstrap", "time_limit_bootstrap=True", {"time_limit_bootstrap": True}),
    (".rollouts_3", "a 3-step rollout", {"rollouts": 3}),
    (".lambda_1", "lambda 1", {"gae_lambda": 1.0}),
    (
        ".preprocessors",
        "RunningStandardScaler for the observations and the values",
        {"observation_preprocessor": True, "value_preprocessor": True},
    ),
    (".rewards_shaper", "a reward shaper scaling rewards by 0.1", {"rewards_shaper_scale": 0.1}),
)
for _suffix, _what, _overrides in VARIANTS:
    _register(f"skrl.Agent.PPO{_suffix}", f"skrl PPO over skrl's Isaac Lab wrapper: {_what}", _agent(**_overrides))
# the same over Isaac Lab's own envs on the CPU: the bundled reference DirectRLEnv, the real Cartpole
# tasks (Newton physics); with time_limit_bootstrap, FINDINGS I4 on the real task
ISAACLAB_ROUTES = (
    ("", "isaaclab", "the bundled reference DirectRLEnv"),
    *((suffix, kind, f"gym.make({task!r})") for suffix, kind, task in CARTPOLE_ROUTES),
)
for _suffix, _kind, _env in (
    *((f".isaaclab{suffix}", kind, env) for suffix, kind, env in ISAACLAB_ROUTES),
    (".time_limit_bootstrap.isaaclab.Cartpole-Direct", "cartpole-direct", "gym.make('Isaac-Cartpole-Direct')"),
):
    _register(
        f"skrl.Agent.PPO{_suffix}",
        f"skrl PPO over wrap_env({_env}, wrapper='isaaclab')"
        + (
            ", time_limit_bootstrap=True"
            if "time_limit_bootstrap" in _suffix
            else ", as Isaac Lab's skrl configs build it"
        ),
        _agent(time_limit_bootstrap=True) if "time_limit_bootstrap" in _suffix else _agent(),
        requires=(*REQUIRES, "isaaclab"),
        options=(("env", _kind),),
        capabilities=isaaclab_capabilities(_kind),
        # an example builds and steps an Isaac Lab env (a physics simulation for Cartpole: about a
        # second on the CPU): the smaller example budget
        costly=_kind != "isaaclab",
    )


def _on_cuda() -> str | None:
    return skrl_importable() or cuda_reason()


# the same on CUDA (the env and the agent on the GPU): where there is none, the rows say so
_register(
    "skrl.Agent.PPO.cuda",
    "skrl PPO over skrl's Isaac Lab wrapper on cuda, as Isaac Lab's skrl configs build it",
    _agent(),
    options=(("device", "cuda"),),
    availability=_on_cuda,
)
_register(
    "skrl.Agent.PPO.isaaclab.cuda",
    "skrl PPO over wrap_env(the bundled reference DirectRLEnv on cuda, wrapper='isaaclab')",
    _agent(),
    requires=(*REQUIRES, "isaaclab"),
    options=(("env", "isaaclab"), ("device", "cuda")),
    capabilities=isaaclab_capabilities("isaaclab"),
    availability=_on_cuda,
)


def _a2c(env: Any) -> Any:
    from rlconform.libraries.skrl.agent_planted import a2c

    return a2c(env)


# skrl's A2C shares PPO's compute_gae (a2c.py:49), and K1 with it
_register("skrl.Agent.A2C", "skrl A2C over skrl's Isaac Lab wrapper: its defaults, 8-step rollout", _a2c)

# (time_limit_bootstrap=False is skrl's documented "no bootstrap at a time-out": learner.exact_targets
# reports the fork's departure as a documented approximation, known, citing skrl's config)
# the controls: a fork of skrl's PPO whose GAE ends at every episode end (the fix of K1), the base
# of the planted bugs below; and the same fork bootstrapping a time-out from the env's terminal
# observation (the fix of I4 too), which meets every learner spec exactly
_register(
    "reference.skrl.Agent.ExactPPO",
    "a fork of skrl's PPO whose GAE ends at time-outs and bootstraps them from extras['final_obs']",
    _agent(exact=True),
    kind="reference",
)
_register(
    "reference.skrl.Agent.ForkedPPO",
    "a fork of skrl's PPO whose GAE ends at time-outs too (time_limit_bootstrap False)",
    _agent(fork=True),
    kind="reference",
    known_violations=(
        (
            "learner.exact_targets",
            "documented (skrl 2.1.1 agents/torch/ppo/ppo_cfg.py:122, time_limit_bootstrap=False): a time-out is "
            "not bootstrapped",
        ),
    ),
)


def _planted(defect: str) -> Callable[[Any], Any]:
    return _agent(defect=defect)


EXACT = "learner.exact_targets"
#: planted bug -> (what it does, the specs it must fail), each planted on the fork (the control
#: reference.skrl.Agent.ForkedPPO passes learner.storage and learner.returns)
PLANTS: dict[str, tuple[str, tuple[str, ...]]] = {
    "gae_across_episodes": (
        "a PPO fork whose GAE ignores every end (carries the next episode's rewards back)",
        ("learner.returns", EXACT),
    ),
    "gae_lambda_as_gamma": ("a PPO fork whose GAE discounts by lambda where gamma is due", ("learner.returns", EXACT)),
    "gae_across_envs": (
        "a PPO fork whose GAE runs one recursion over the sub-envs' rows laid end to end",
        ("learner.returns", EXACT),
    ),
    "post_step_obs": ("a PPO that stores the observation after the step as the step's own", ("learner.storage",)),
    "late_flags": (
        "a PPO that stores each step's terminated and truncated one step late",
        ("learner.storage", "learner.returns", EXACT),
    ),
    "time_outs_for_terminations": (
        "a PPO that records every end as a time-out (terminated never set)",
        ("learner.storage",),
    ),
}
for _defect, (_what, _fails) in PLANTS.items():
    _register(
        f"planted.skrl.Agent.{''.join(p.title() for p in _defect.split('_'))}",
        f"planted bug: {_what}",
        _planted(_defect),
        kind="planted",
        plants=_fails,
    )
