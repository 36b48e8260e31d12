"""The bundled systems of family ``torchrl.EnvBase``: GymWrapper over one env or a Gymnasium vector env,
SerialEnv and ParallelEnv of GymWrappers, GymEnv(id, num_envs=N) and TransformedEnv stacks, as a
``SystemTable``; and the builds env-author mode runs a torch-native env through
(:func:`torch_native_stack`).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence
from typing import Any

from rlconform.core.forkserver import preload
from rlconform.core.system import Capabilities, EnvFn, System, SystemTable
from rlconform.libraries.gymnasium.env_family import _partial_args
from rlconform.libraries.gymnasium.vector_family import mode_availability, mode_kwargs, mode_source
from rlconform.libraries.torchrl.env_objects import NAME

#: this module's systems, read by the catalog (rlconform.core.catalog)
SYSTEMS = SystemTable()


#: GymWrapper refuses what it cannot map; recorded here, never hidden
_NO_TUPLE = "GymWrapper stacks a Tuple observation into one tensor and rejects Tuples of mixed leaves ('Stacking specs cannot occur: Found more than one type of specs in the list.'); the reference env's Tuples mix leaves, so Tuple observations are left out"
_NEXT_STEP_REJECTED = "GymWrapper rejects a Gymnasium vector env in NextStep mode: 'The auto-reset mode must be one of SAME_STEP or DISABLED (which is preferred). Got autoreset_mode=AutoresetMode.NEXT_STEP.'"
_ONE_HOT = "GymWrapper one-hot encodes Discrete observations (n entries each): the reference env's stamp-packing Discrete (n about 2**40) is left out and the small Discrete(1025) is used instead (its code decodes through the run's log); Dict leaves other than Box are left out"
_OBS_KINDS = frozenset({"box", "multidiscrete", "multibinary", "dict", "small_discrete"})


_ONE_HOT_FINAL = (
    "over a SameStep vector env, GymWrapper's final-observation entry of a sub-env that did not end is all zeros, "
    "which the OneHot spec of a Discrete observation rejects: check_env_specs fails while the wrapper is built "
    "(FINDINGS E12), so Discrete observations are left out"
)


def _capabilities(*notes: str, max_envs: int = 4, one_hot: bool = True) -> Capabilities:
    return Capabilities(
        obs_kinds=_OBS_KINDS if one_hot else _OBS_KINDS - {"small_discrete"},
        composite_box_leaves_only=True,
        partial_reset=False,
        max_envs=max_envs,
        notes=(_NO_TUPLE, _ONE_HOT, *notes),
    )


def gym_wrapper(env_fn: EnvFn, **kwargs: Any) -> Any:
    """``GymWrapper(env_fn(), **kwargs)``: picklable (via functools.partial) for ParallelEnv's workers."""
    from torchrl.envs import GymWrapper

    return GymWrapper(env_fn(), **kwargs)


def _single(env_fns: Sequence[EnvFn], **kwargs: Any) -> Any:
    return gym_wrapper(env_fns[0], **kwargs)


def _serial(env_fns: Sequence[EnvFn], **kwargs: Any) -> Any:
    from torchrl.envs import SerialEnv

    env = SerialEnv(len(env_fns), [functools.partial(gym_wrapper, fn, **kwargs) for fn in env_fns])
    env.start()
    return env


#: ParallelEnv's start method. TorchRL's default is spawn, which re-imports torch and TorchRL in
#: every worker (seconds per build); forkserver keeps workers out of this process's threads, as
#: spawn does, and with TorchRL preloaded in the fork server a build takes a fraction of a second
MP_START_METHOD = "forkserver"


#: what the fork server imports once for all its workers. A process has one fork server, which
#: keeps the list of whoever starts it: SB3's SubprocVecEnv workers are served too (the server
#: skips a module that is not installed)
FORKSERVER_PRELOAD = (
    "torchrl.envs",
    "stable_baselines3.common.vec_env.subproc_vec_env",
    "rlconform.envs.reference_env",
    # the family, which imports env_systems (gym_wrapper, which every ParallelEnv worker calls)
    # and env_user (SubEnvFn, which a user's ParallelEnv workers unpickle): imported in each
    # worker otherwise (a third of a ParallelEnv build)
    "rlconform.libraries.torchrl.env_family",
)


def _preload_forkserver() -> None:
    """As sb3's SubprocVecEnv system does: preload the workers' imports in the fork server. It
    only takes effect if this process has not started its fork server yet."""
    preload(FORKSERVER_PRELOAD)


def _parallel(env_fns: Sequence[EnvFn], **kwargs: Any) -> Any:
    import multiprocessing

    from torchrl.envs import ParallelEnv

    method = MP_START_METHOD if MP_START_METHOD in multiprocessing.get_all_start_methods() else None
    _preload_forkserver()
    wrap = [functools.partial(gym_wrapper, fn, **kwargs) for fn in env_fns]
    env = ParallelEnv(len(env_fns), wrap, mp_start_method=method)
    try:
        # start the workers here, while the runner sends their stderr to a file
        env.start()
    except BaseException:
        if not env.is_closed:
            env.close(raise_if_closed=False)
        raise
    return env


#: the env-author stacks' builds, by system id (see :func:`torch_native_stack`)
_ENV_AUTHOR_BUILDS = {
    "torchrl.GymWrapper": _single,
    "torchrl.SerialEnv.GymWrapper": _serial,
    "torchrl.ParallelEnv.GymWrapper": _parallel,
}


def torch_native_stack(system: System, device: str) -> System | None:
    """An env-author stack as it takes a torch-native env (tensors in and out, on ``device``):
    GymWrapper with ``convert_actions_to_numpy=False``, so that the env's ``step`` gets the action
    tensor (TorchRL's documented switch for such envs; the default hands it a NumPy array), and
    ``device=device``, so that the action tensor is on the env's device. None for a stack that has
    no such switch."""
    build = _ENV_AUTHOR_BUILDS.get(system.id)
    if build is None:
        return None
    kwargs = f"convert_actions_to_numpy=False, device={device!r}"
    return dataclasses.replace(
        system,
        id=f"{system.id}.convert_actions_to_numpy=False",
        title=f"{system.title} with {kwargs}",
        build=functools.partial(build, convert_actions_to_numpy=False, device=device),
        source=system.source.replace("())", f"(), {kwargs})").replace(
            "gym_wrapper, fn)", f"gym_wrapper, fn, {kwargs})"
        ),
    )


def _gym_vector(mode: str, *, copy: bool = True) -> Any:
    def build(env_fns: Sequence[EnvFn]) -> Any:
        from gymnasium.vector import SyncVectorEnv
        from torchrl.envs import GymWrapper

        return GymWrapper(SyncVectorEnv(list(env_fns), copy=copy, **mode_kwargs(mode)))

    return build


_REQUIRES = ("torchrl", "tensordict", "gymnasium")
_WRAP = "[functools.partial(gym_wrapper, fn) for fn in env_fns]"

SYSTEMS.add(
    System(
        id="torchrl.GymWrapper",
        family=NAME,
        title="GymWrapper(env)",
        build=_single,
        source="GymWrapper(env_fns[0]())",
        requires=_REQUIRES,
        capabilities=_capabilities(max_envs=1),
        description="one Gymnasium env in TorchRL's GymWrapper (batch_size [])",
    )
)
SYSTEMS.add(
    System(
        id="torchrl.SerialEnv.GymWrapper",
        family=NAME,
        title="SerialEnv(n, [GymWrapper(env_fn()) ...])",
        build=_serial,
        source=f"torchrl.envs.SerialEnv(len(env_fns), {_WRAP})",
        requires=_REQUIRES,
        capabilities=_capabilities(),
    )
)
SYSTEMS.add(
    System(
        id="torchrl.ParallelEnv.GymWrapper",
        family=NAME,
        title=f"ParallelEnv(n, [GymWrapper(env_fn()) ...], mp_start_method={MP_START_METHOD!r})",
        build=_parallel,
        source=f"torchrl.envs.ParallelEnv(len(env_fns), {_WRAP}, mp_start_method={MP_START_METHOD!r})",
        requires=_REQUIRES,
        out_of_process=True,
        capabilities=_capabilities(max_envs=3),
    )
)
SYSTEMS.add(
    System(
        id="torchrl.GymWrapper.SyncVectorEnv",
        family=NAME,
        title="GymWrapper(SyncVectorEnv(autoreset_mode=Disabled))",
        build=_gym_vector("Disabled"),
        availability=mode_availability("Disabled"),
        source=f"GymWrapper(gymnasium.vector.SyncVectorEnv(env_fns{mode_source('Disabled')}))",
        requires=_REQUIRES,
        capabilities=_capabilities(_NEXT_STEP_REJECTED, "Disabled is the mode TorchRL prefers"),
    )
)
SYSTEMS.add(
    System(
        id="torchrl.GymWrapper.SyncVectorEnv.NoCopy",
        family=NAME,
        title="GymWrapper(SyncVectorEnv(copy=False, autoreset_mode=Disabled))",
        build=_gym_vector("Disabled", copy=False),
        availability=mode_availability("Disabled"),
        source=f"GymWrapper(gymnasium.vector.SyncVectorEnv(env_fns, copy=False{mode_source('Disabled')}))",
        requires=_REQUIRES,
        capabilities=_capabilities(
            _NEXT_STEP_REJECTED,
            "copy=False: the vector env returns its own observation buffer, which its next step overwrites",
        ),
        description="a vector env that reuses its observation buffer (copy=False) under GymWrapper",
    )
)
SYSTEMS.add(
    System(
        id="torchrl.GymWrapper.SyncVectorEnv.SameStep",
        family=NAME,
        title="GymWrapper(SyncVectorEnv(autoreset_mode=SameStep))",
        build=_gym_vector("SameStep"),
        availability=mode_availability("SameStep"),
        source=f"GymWrapper(gymnasium.vector.SyncVectorEnv(env_fns{mode_source('SameStep')}))",
        requires=_REQUIRES,
        capabilities=_capabilities(
            _NEXT_STEP_REJECTED,
            "GymWrapper registers a terminal-observation info reader and checks it with random rollouts "
            "(auto_register_info_dict, check_env_specs) while it is built: the envs are stepped before the first call",
            _ONE_HOT_FINAL,
            one_hot=False,
        ),
    )
)

# ------------------------------------------------------------------- GymEnv(id, num_envs=N)

_GYM_ENV_KWARGS = (
    "GymEnv(id, num_envs=N) makes every sub-env with the same kwargs ([make_fn] * num_envs), so the reference "
    "envs could not be told apart (one index, one log): this system runs GymEnv's own construction with its "
    "AsyncVectorEnv built from the N distinct reference env factories instead (GymEnv._async_env), in "
    "Gymnasium's default mode, NEXT_STEP; GymEnv accepts that mode although GymWrapper rejects it (GymEnv builds "
    "the vector env after GymWrapper's mode check)"
)


def _gym_env_num_envs(env_fns: Sequence[EnvFn]) -> Any:
    """``GymEnv("rlconform/Reference-v0", num_envs=N, ...)`` with distinct sub-envs (see the note)."""
    import gymnasium
    from torchrl.envs import GymEnv

    from rlconform.envs.reference_env import register_reference_env

    fns = list(env_fns)

    class ReferenceGymEnv(GymEnv):  # type: ignore[misc]
        def _async_env(self, *args: Any, **kwargs: Any) -> Any:
            return gymnasium.vector.AsyncVectorEnv(fns, **kwargs)

    script, _, sink = _partial_args(fns[0])
    return ReferenceGymEnv(
        register_reference_env(),
        num_envs=len(fns),
        script=script,
        index=0,
        sink=sink,
        max_episode_steps=script.max_episode_steps,
    )


SYSTEMS.add(
    System(
        id="torchrl.GymEnv.num_envs",
        family=NAME,
        title='GymEnv("rlconform/Reference-v0", num_envs=n)',
        build=_gym_env_num_envs,
        source='GymEnv("rlconform/Reference-v0", num_envs=len(env_fns), script=script)',
        requires=_REQUIRES,
        out_of_process=True,
        capabilities=_capabilities(_GYM_ENV_KWARGS, max_envs=3),
        description="TorchRL's GymEnv with num_envs: an AsyncVectorEnv in Gymnasium's default mode under GymWrapper",
    )
)

# ---------------------------------------------------------------------------- TransformedEnv


def _step_counter(env_fns: Sequence[EnvFn]) -> Any:
    from torchrl.envs import StepCounter, TransformedEnv

    return TransformedEnv(_serial(env_fns), StepCounter())


SYSTEMS.add(
    System(
        id="torchrl.TransformedEnv.StepCounter.SerialEnv",
        family=NAME,
        title="TransformedEnv(SerialEnv(n, [GymWrapper(env_fn()) ...]), StepCounter())",
        build=_step_counter,
        source=f"TransformedEnv(torchrl.envs.SerialEnv(len(env_fns), {_WRAP}), StepCounter())",
        requires=_REQUIRES,
        capabilities=_capabilities(),
        description="a transform that adds an entry (step_count) and must leave the transitions as they are",
    )
)


def _episode_entries(env_fns: Sequence[EnvFn]) -> Any:
    from torchrl.envs import Compose, InitTracker, RewardSum, StepCounter, TransformedEnv

    return TransformedEnv(_serial(env_fns), Compose(StepCounter(), RewardSum(), InitTracker()))


SYSTEMS.add(
    System(
        id="torchrl.TransformedEnv.RewardSum.StepCounter.InitTracker.SerialEnv",
        family=NAME,
        title="TransformedEnv(SerialEnv(n, [GymWrapper(env_fn()) ...]), Compose(StepCounter(), RewardSum(), InitTracker()))",
        build=_episode_entries,
        source=(
            f"TransformedEnv(torchrl.envs.SerialEnv(len(env_fns), {_WRAP}), "
            "Compose(StepCounter(), RewardSum(), InitTracker()))"
        ),
        requires=_REQUIRES,
        capabilities=_capabilities(),
        description="transforms that add per-episode entries (step_count, episode_reward, is_init) to the data",
    )
)


def _double_to_float(env_fns: Sequence[EnvFn]) -> Any:
    from torchrl.envs import DoubleToFloat, TransformedEnv

    return TransformedEnv(_serial(env_fns), DoubleToFloat())


SYSTEMS.add(
    System(
        id="torchrl.TransformedEnv.DoubleToFloat.SerialEnv",
        family=NAME,
        title="TransformedEnv(SerialEnv(n, [GymWrapper(env_fn()) ...]), DoubleToFloat())",
        build=_double_to_float,
        source=f"TransformedEnv(torchrl.envs.SerialEnv(len(env_fns), {_WRAP}), DoubleToFloat())",
        requires=_REQUIRES,
        capabilities=dataclasses.replace(
            _capabilities("float64 Box observations only: the dtype the transform exists for"),
            obs_kinds=frozenset({"box"}),
            box_dtypes=frozenset({"float64"}),
        ),
        description="a dtype transform: float64 observations become float32, as its observation spec declares",
    )
)
