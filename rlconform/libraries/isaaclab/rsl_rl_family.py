"""Family ``isaaclab.rsl_rl``: Isaac Lab's ``RslRlVecEnvWrapper``, the env API RSL-RL trains on.

The contract (isaaclab 3.0.0, ``isaaclab_rl/rsl_rl/vecenv_wrapper.py``):

* ``__init__`` calls ``env.reset()`` (the RSL-RL runner never resets; lines 73-74).
* ``step(actions)`` (155-168) returns ``(obs, rewards, dones, extras)``: ``obs`` a ``TensorDict`` of
  the observation groups (``"policy"``), ``dones = (terminated | truncated).long()``, and, unless
  ``cfg.is_finite_horizon``, ``extras["time_outs"] = truncated`` (the env's own flag buffer).
* ``reset()`` returns ``(TensorDict, extras)``; ``seed(s)`` seeds the env (``unwrapped.seed``).

The recipe, as RSL-RL's PPO reads a step (``rsl_rl/algorithms/ppo.py:139-162``): the transition
from the previous observation row with the step's reward; it ended when ``dones`` is set, by a
time-out when ``time_outs`` is (PPO then bootstraps with ``values * time_outs``), so
``terminated = dones & ~time_outs`` and ``truncated = time_outs``. RSL-RL keeps no next
observation: the row after an ending step is the next episode's first (the env reset it in the
same step), and that is what the recipe's next observation is. ``terminal.final_obs`` does not
apply (there is no terminal observation in RSL-RL's data); ``transitions.exact`` checks the rest.

A finding the recipe exposes (``flags.terminated``): DirectRLEnv returns terminated and time-out
unmasked (``direct_rl_env.py:423``; both can be set), and the wrapper's ``dones`` (162) and
``time_outs`` (165-166) cannot say "terminated and timed out": such a step reads as a time-out only,
and PPO bootstraps it (``values * time_outs``, ``rsl_rl/algorithms/ppo.py:154-158``).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence
from typing import Any

from rlconform.core.system import EnvFn, System, SystemTable
from rlconform.envs.driver import Contract
from rlconform.envs.plan import BadStep, Op, Reset, Step
from rlconform.envs.trace import CallRecord, CallView
from rlconform.libraries.isaaclab.direct_family import CAPABILITIES, IsaacLabFamily, _rows
from rlconform.specs.families import ISAACLAB_RSL_RL

#: this module's systems, read by the catalog (rlconform.core.catalog)
SYSTEMS = SystemTable()

NAME = ISAACLAB_RSL_RL
DEVICE = "cpu"
TIME_OUTS_KEY = "time_outs"


def _policy(obs: Any) -> Any:
    if type(obs).__name__ != "TensorDict" or "policy" not in obs:
        raise ValueError(f"observations are a {type(obs).__name__}, not a TensorDict with a 'policy' entry")
    return obs["policy"]


def _view_reset(num_envs: int, result: Any) -> CallView:
    obs, _extras = result
    return CallView(kind="reset", obs=_rows(_policy(obs), num_envs), touched=[True] * num_envs)


def _view_step(num_envs: int, result: Any) -> CallView:
    obs, rewards, dones, extras = result
    done = [bool(d) for d in _rows(dones, num_envs)]
    time_outs = extras.get(TIME_OUTS_KEY) if isinstance(extras, dict) else None
    outs = [False] * num_envs if time_outs is None else [bool(t) for t in _rows(time_outs, num_envs)]
    return CallView(
        kind="step",
        obs=_rows(_policy(obs), num_envs),
        rewards=[float(r) for r in _rows(rewards, num_envs)],
        terminated=[d and not t for d, t in zip(done, outs, strict=True)],
        truncated=outs,
        touched=[True] * num_envs,
    )


class RslRlFamily(IsaacLabFamily):
    name = NAME
    #: a step that terminated and timed out reads as a time-out only (dones & ~time_outs)
    findings = {("isaaclab.RslRlVecEnvWrapper", "flags.terminated"): "I3"}
    libraries = ("gymnasium", "torch", "isaaclab", "rsl-rl-lib")
    contract = Contract(
        reward_dtype="float32",
        reward_precision="float32",
        step_arity=4,
        separate_flags=False,
        vectorized=True,
        reward_position=1,
        flag_positions=(2,),
        array_namespace="torch",
        dtypes_checked_by="RslRlVecEnvWrapper returns torch tensors (dones int64): the family's api_problems check them",
        no_terminal_obs=(
            "RSL-RL keeps no terminal observation: RslRlVecEnvWrapper.step returns the post-reset observation and PPO "
            "bootstraps time-outs from the current one (rsl_rl/algorithms/ppo.py:154-158)"
        ),
    )

    def describe_semantics(self, obj: Any) -> dict[str, Any]:
        semantics = super().describe_semantics(obj.unwrapped)
        semantics["is_finite_horizon"] = getattr(obj.unwrapped.cfg, "is_finite_horizon", None)
        return semantics

    def api_problems(self, call: CallRecord, num_envs: int) -> list[str]:
        result = call.result_snapshot
        expected = 2 if isinstance(call.op, Reset) else 4
        if not isinstance(result, tuple) or len(result) != expected:
            return [f"returned a {type(result).__name__}; documented: a {expected}-tuple"]
        problems = []
        if type(result[0]).__name__ != "TensorDict" or "policy" not in result[0]:
            problems.append("observations are not a TensorDict with a 'policy' entry")
        if not isinstance(result[-1], dict):
            problems.append(f"extras is a {type(result[-1]).__name__}; documented: a dict")
        elif expected == 4 and TIME_OUTS_KEY not in result[-1]:
            problems.append("extras has no 'time_outs' (the wrapper writes it unless cfg.is_finite_horizon)")
        if expected == 4 and str(getattr(result[2], "dtype", None)) != "torch.int64":
            problems.append(f"dones has dtype {getattr(result[2], 'dtype', None)}; documented: torch.int64 (long)")
        return problems

    def execute(self, driver: Any, obj: Any, op: Op) -> None:
        if isinstance(op, Reset):
            if op.mask is not None:
                raise ValueError("RslRlVecEnvWrapper.reset has no partial reset; the system's capabilities exclude it")
            seed = op.seed
            if seed is None:
                fn, source = (lambda: obj.reset()), "env.reset()"
            else:
                fn, source = (lambda: (obj.seed(seed), obj.reset())[1]), f"env.seed({seed}); env.reset()"
            driver.call(op, source, fn, (), view=functools.partial(_view_reset, driver.num_envs), obj=obj)
            return
        assert isinstance(op, (Step, BadStep))
        self.call_step(driver, obj, op)

    def view_step(self, num_envs: int, result: Any) -> CallView:
        return _view_step(num_envs, result)

    def begin(self, driver: Any, obj: Any) -> None:
        super().begin(driver, obj.unwrapped)

    def observe(self, obj: Any, record: CallRecord) -> None:
        super().observe(obj.unwrapped, record)

    # recipe: the parent's; the views have no final observation, so next_obs is the returned row


FAMILY = RslRlFamily()

_CAPS = dataclasses.replace(
    CAPABILITIES,
    notes=(
        "Box float32 observations and Box actions: the DirectRLEnv 'policy' tensor and its action space",
        "no partial resets: RslRlVecEnvWrapper.reset resets every sub-env",
        "the wrapper resets the env once when it is built (vecenv_wrapper.py:73-74)",
    ),
)
#: RSL-RL's data has no next observation: after an ending step it is the next episode's first
_NO_NEXT_OBS = (
    "RSL-RL design: its transitions carry no terminal observation; RslRlVecEnvWrapper.step returns the env's "
    "post-reset observation (isaaclab_rl/rsl_rl/vecenv_wrapper.py:160-168, isaaclab 3.0.0) and PPO bootstraps a "
    "time-out from the value of the current observation, values * time_outs (rsl_rl/algorithms/ppo.py:154-158)"
)


def make(env_fns: Sequence[EnvFn], *, compute_final_obs: bool = True) -> Any:
    from isaaclab_rl.rsl_rl import RslRlVecEnvWrapper

    from rlconform.libraries.isaaclab.reference_env import make_isaaclab_reference_env

    return RslRlVecEnvWrapper(make_isaaclab_reference_env(env_fns, device=DEVICE, compute_final_obs=compute_final_obs))


SYSTEMS.add(
    System(
        id="isaaclab.RslRlVecEnvWrapper",
        family=NAME,
        title="RslRlVecEnvWrapper(DirectRLEnv(compute_final_obs=True))",
        build=make,
        source=f"RslRlVecEnvWrapper(make_isaaclab_reference_env(env_fns, device={DEVICE!r}, compute_final_obs=True))",
        requires=("isaaclab", "torch", "rsl-rl-lib"),
        capabilities=_CAPS,
        known_violations=(("transitions.exact", _NO_NEXT_OBS),),
        description="Isaac Lab's RSL-RL VecEnv wrapper around the reference DirectRLEnv",
        torch_native=DEVICE,
    )
)
