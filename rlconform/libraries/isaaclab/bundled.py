"""The bundled systems of the torch tier (family ``isaaclab``): the torch-vectorized reference env, alone and through
every wrapper, its planted bugs, on the CPU and on CUDA when there is one.

Registered only where isaaclab is installed (the reference env subclasses its DirectRLEnv);
elsewhere the ``isaaclab`` family's rows already say "not installed: isaaclab". A CUDA system
without a CUDA device is registered with its reason, so the report says "skipped: no CUDA
device" instead of leaving the GPU path out silently.
"""

from __future__ import annotations

import functools
from typing import Any

from rlconform.core.system import System, SystemTable
from rlconform.envs.devices import cuda_reason
from rlconform.libraries.isaaclab import monitor as mon
from rlconform.libraries.isaaclab import wrappers as wr
from rlconform.libraries.isaaclab.monitor import FINAL_OBS, STABLE
from rlconform.libraries.isaaclab.torch_run import Target
from rlconform.libraries.isaaclab.torch_specs import NAME, TARGETS
from rlconform.libraries.isaaclab.wrapper_systems import TORCHRL_LIB_NAN
from rlconform.libraries.isaaclab.wrappers import DRIVERS, TERMINAL, driver_for

#: this module's systems, read by the catalog (rlconform.core.catalog)
SYSTEMS = SystemTable()

#: sub-envs of the reference env checked alone (the scale the checks are built for), and through
#: a wrapper (SB3's and skrl's APIs cost Python work per sub-env themselves)
SCALE = 1024
WRAPPED = 64
_REUSE = (
    "DirectRLEnv.step returns its persistent reset_terminated/reset_time_outs buffers "
    "(direct_rl_env.py:423,468, isaaclab 3.0.0): the next step rewrites them in place"
)
#: what a wrapper documents itself, by driver name
_WRAPPER_KNOWN = {"torchrl_lib": ((TERMINAL, TORCHRL_LIB_NAN),)}
_NO_FINAL = "DirectRLEnvCfg.compute_final_obs defaults to False (direct_rl_env_cfg.py:82); documented"


def _factory(num_envs: int, device: str, **kwargs: Any) -> Any:
    from rlconform.libraries.isaaclab.batch_env import make_batch_stamp_env

    return make_batch_stamp_env(num_envs, device, **kwargs)


def _model(env: Any) -> Any:
    from rlconform.libraries.isaaclab.batch_env import BatchStampModel

    return BatchStampModel.for_env(env)


def _build(factory: Any, num_envs: int, device: str, env_fns: Any) -> Any:
    return factory(num_envs, device)


def _add(
    system_id: str,
    title: str,
    *,
    num_envs: int,
    device: str = "cpu",
    wrapper: str | None = None,
    kwargs: dict[str, Any] | None = None,
    **extra: Any,
) -> None:
    kwargs = dict(kwargs or {})
    factory = functools.partial(_factory, **kwargs)
    if device == "cuda":
        system_id, title = f"{system_id}.cuda", f"{title} on cuda"
        extra.setdefault("availability", cuda_reason)
    TARGETS[system_id] = Target(factory, num_envs, device, wrapper, _model)
    args = "".join(f", {k}={v!r}" for k, v in kwargs.items())
    source = f"make_batch_stamp_env({num_envs}, {device!r}{args})"
    requires: tuple[str, ...] = ("isaaclab", "torch")
    if wrapper is not None:
        driver = driver_for(wrapper)
        source = f"{driver.title}({source})"
        requires += driver.requires
    SYSTEMS.add(
        System(
            id=system_id,
            family=NAME,
            title=title,
            build=functools.partial(_build, factory, num_envs, device),
            source=source,
            requires=requires,
            **extra,
        )
    )


def _add_bundled() -> None:
    for device in ("cpu", "cuda"):
        _add(
            "isaaclab.torch.DirectRLEnv",
            f"DirectRLEnv(compute_final_obs=True), {SCALE} stamp sub-envs",
            num_envs=SCALE,
            device=device,
            kind="reference",
            known_violations=((STABLE, _REUSE),),
            description="the torch-vectorized reference env through Isaac Lab's real DirectRLEnv step/reset",
        )
        _add(
            "isaaclab.torch.DirectRLEnv.no_final_obs",
            f"DirectRLEnv(compute_final_obs=False), {SCALE} stamp sub-envs",
            num_envs=SCALE,
            device=device,
            kwargs={"compute_final_obs": False},
            kind="reference",
            known_violations=((STABLE, _REUSE), (FINAL_OBS, _NO_FINAL)),
            description="the reference env with Isaac Lab's default compute_final_obs=False",
        )
        for name, driver in DRIVERS.items():
            _add(
                f"isaaclab.torch.{name}",
                f"{driver().title} over DirectRLEnv(compute_final_obs=True)",
                num_envs=WRAPPED,
                device=device,
                wrapper=name,
                known_violations=((STABLE, _REUSE), *_WRAPPER_KNOWN.get(name, ())),
                availability=None if device == "cpu" else cuda_reason,
                description=f"{driver().title} around the torch-vectorized reference env",
            )
        if device == "cuda":
            continue  # without terminal observations: the CPU rows say it all
        for name in ("sb3", "torchrl_isaaclab"):
            _add(
                f"isaaclab.torch.{name}.no_final_obs",
                f"{DRIVERS[name]().title} over DirectRLEnv(compute_final_obs=False)",
                num_envs=WRAPPED,
                device=device,
                wrapper=name,
                kwargs={"compute_final_obs": False},
                known_violations=((STABLE, _REUSE), (FINAL_OBS, _NO_FINAL), (TERMINAL, _NO_FINAL)),
                availability=None if device == "cpu" else cuda_reason,
                description=f"{DRIVERS[name]().title} around the reference env without terminal observations",
            )
    for variant, plants, doc in (
        ("early_time_out", ("isaaclab.flags",), "times out one step before max_episode_length"),
        ("stale_final_obs", (FINAL_OBS,), "puts the previous step's observation in final_obs"),
        ("rolled_actions", ("isaaclab.transitions",), "applies each sub-env's action to its neighbour"),
        ("float64_rewards", (mon.OUTPUTS,), "computes float64 rewards"),
        ("numpy_actions", (mon.ACTIONS,), "takes every action through NumPy"),
        ("no_time_limit", (mon.TIME_LIMIT,), "never times out"),
        ("kept_episode_length", (mon.AUTORESET,), "keeps episode_length_buf over an autoreset"),
        ("four_tuple", (mon.API,), "returns Gym's old four-tuple from step"),
        ("time_out_as_termination", (mon.TIME_OUTS,), "reports its time-outs as terminations"),
        ("reward_after_reset", (mon.REWARD_ORDER,), "computes an ending sub-env's reward after its reset"),
        ("stale_reset_obs", (mon.AUTORESET,), "returns an ending sub-env's pre-reset observation"),
    ):
        _add(
            f"planted.isaaclab.torch.{variant}",
            f"planted bug: DirectRLEnv task that {doc}",
            num_envs=WRAPPED,
            kwargs={"variant": variant},
            kind="planted",
            plants=plants,
            known_violations=((STABLE, _REUSE),),
            description=f"a reference env task that {doc}",
        )
    wrapper_plants: tuple[tuple[str, tuple[str, ...]], ...] = (
        ("planted_lagging", (wr.OBS, wr.REWARDS)),
        ("planted_no_time_outs", (wr.FLAGS,)),
        ("planted_reset_obs_terminal", (TERMINAL,)),
    )
    for name, wrapper_plant in wrapper_plants:
        title = driver_for(name).title
        _add(
            f"planted.isaaclab.torch.{name.removeprefix('planted_')}",
            f"{title} over DirectRLEnv(compute_final_obs=True)",
            num_envs=WRAPPED,
            wrapper=name,
            kind="planted",
            plants=wrapper_plant,
            known_violations=((STABLE, _REUSE),),
            description=title,
        )


_add_bundled()
