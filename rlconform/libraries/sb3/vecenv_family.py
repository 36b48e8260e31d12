"""Family ``sb3.VecEnv``: Stable-Baselines3's VecEnv API and its wrappers.

Recipe, as SB3's off-policy algorithms implement it (``OffPolicyAlgorithm._store_transition``):
``step`` returns ``(obs, rewards, dones, infos)``; a sub-env that ended was already reset, its
true last observation is ``infos[i]["terminal_observation"]`` and ``infos[i]["TimeLimit.truncated"]``
says whether the end was a time-out. Under ``VecNormalize`` the stored data are the original
observations and rewards (``get_original_obs()``, ``get_original_reward()``) and the terminal
observation passes through ``unnormalize_obs``. Seeds are set with ``seed(s)`` before ``reset()``.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import numpy as np

from rlconform.core.family import FactoryShape, find_layer, layer_chain
from rlconform.core.forkserver import preload
from rlconform.core.system import Capabilities, EnvFn, System, SystemTable
from rlconform.envs.action_space import send_in_space
from rlconform.envs.batching import as_bool_list, as_float_list, split_batch
from rlconform.envs.driver import Contract, ReferenceEnvFamily
from rlconform.envs.plan import BadStep, Op, Reset, Step
from rlconform.envs.same_step import same_step_slots
from rlconform.envs.spaces import array_literal
from rlconform.envs.tap import sub_env_layers
from rlconform.envs.trace import CallRecord, CallView, Slot, snapshot
from rlconform.libraries.gymnasium.model_selection import match_vec_env_model
from rlconform.specs.families import SB3_VECENV
from rlconform.specs.own_normalizers import find_own_normalizer, own_normalizer_semantics
from rlconform.specs.statistics import (
    BY_OUTPUT,
    episode_statistics_reading,
    frozen_normalizer,
    sub_env_layers_of_class,
    sub_env_statistics,
    user_sub_env_layers,
)

#: this module's systems, read by the catalog (rlconform.core.catalog)
SYSTEMS = SystemTable()

TERMINAL_KEY = "terminal_observation"
TIMEOUT_KEY = "TimeLimit.truncated"
#: the decimals SB3's Monitor rounds an episode's return to (``stable_baselines3/common/monitor.py``)
MONITOR_DECIMALS = 6
#: the Gymnasium layers that change the rewards they pass up, below a Monitor in a user's env
REWARD_CHANGERS = ("RewardWrapper", "NormalizeReward")


def venv_chain(obj: Any) -> list[Any]:
    return layer_chain(obj, "venv")


def find_venv_layer(obj: Any, class_name: str) -> Any | None:
    """The VecEnvWrapper ``class_name`` in the stack (or its reference model)."""
    return find_layer(obj, class_name, "venv")


class SB3Family(ReferenceEnvFamily):
    name = SB3_VECENV
    api = "sb3.VecEnv"
    claimed_classes = ("stable_baselines3.common.vec_env.base_vec_env.VecEnv",)
    factory_shape = FactoryShape(
        returns=claimed_classes,
        return_names=(
            *("DummyVecEnv", "SubprocVecEnv", "VecEnvWrapper", "VecNormalize", "VecFrameStack", "VecMonitor"),
            "VecTransposeImage",
        ),
    )
    #: the SB3 defects the bundled systems show (FINDINGS.md): named on the bundled systems' own
    #: failures (rlconform.core.findings) and on those a user's stack inherits from them
    #: (rlconform.core.inherited)
    findings = {
        # DummyVecEnv, and the wrappers over it (VecNormalize, VecFrameStack, VecMonitor)
        ("sb3.*DummyVecEnv", "api.wrong_size_batch_rejected"): "S1",
        ("sb3.*DummyVecEnv", "api.failed_call_no_side_effect"): "S1",
        ("sb3.SubprocVecEnv", "api.failed_call_no_side_effect"): "S2",
        ("sb3.VecNormalize.DummyVecEnv", "terminal.final_obs"): "S3",
        ("sb3.VecNormalize.DummyVecEnv", "transitions.exact"): "S3",
        ("sb3.VecNormalize.DummyVecEnv", "dtype.observations"): "S4",
        ("sb3.Vec*.DummyVecEnv", "infos.aligned"): "S5",
        ("sb3.VecFrameStack.DummyVecEnv", "aliasing.returned_objects"): "S6",
    }

    def library_layers(self, obj: Any) -> list[str]:
        """The bundled SB3 systems under a user's stack: the base VecEnv, then for each VecEnvWrapper
        layer over a DummyVecEnv the bundled wrapper of that class (any other VecEnvWrapper, a
        user's or SB3's, inherits the base class's reset-info defect, which VecMonitor shows: S5)."""
        chain = venv_chain(obj)
        base = type(chain[-1]).__name__
        if base not in ("DummyVecEnv", "SubprocVecEnv") or not type(chain[-1]).__module__.startswith(
            "stable_baselines3"
        ):
            return []
        found = []
        bundled = ("VecNormalize", "VecFrameStack", "VecMonitor")
        for layer in chain[:-1]:
            library = type(layer).__module__.startswith("stable_baselines3")
            # any other VecEnvWrapper (a user's, or SB3's VecCheckNan, VecTransposeImage, ...) inherits
            # the base class's reset-info defect, which the bundled VecMonitor shows (S5)
            name = type(layer).__name__ if library and type(layer).__name__ in bundled else "VecMonitor"
            if base == "DummyVecEnv":
                found.append(f"sb3.{name}.DummyVecEnv")
        # the base first: a defect of the base (S1) is named there, not on a wrapper that shows it too
        return [f"sb3.{base}", *dict.fromkeys(found)]

    factory_signature = "(env_fns: list[Callable[[], gymnasium.Env]]) -> stable_baselines3 VecEnv"
    libraries = ("gymnasium", "stable-baselines3")
    plain_build = "venv = {factory}(env_fns)"
    plain_object = "venv"

    def prepare_user_build(self) -> None:
        # a SubprocVecEnv the factory starts forks its workers from a server that has SB3
        # imported already: the probe's trials and every example build at fork speed
        preload_forkserver()

    contract = Contract(
        reward_dtype=None,
        reward_precision="float32",
        step_arity=4,
        separate_flags=False,
        vectorized=True,
        reward_position=1,
        flag_positions=(2,),
        truncation_survives_termination=False,
    )

    def describe_semantics(self, obj: Any) -> dict[str, Any]:
        normalize = find_venv_layer(obj, "VecNormalize")
        stack = find_venv_layer(obj, "VecFrameStack")
        n_stack = None
        if stack is not None:
            n_stack = getattr(getattr(stack, "stacked_obs", None), "n_stack", None) or getattr(stack, "n_stack", None)
        semantics = {
            "autoreset_mode": "SameStep",
            "num_envs": getattr(obj, "num_envs", None),
            "single_observation_space": getattr(obj, "observation_space", None),
            "single_action_space": getattr(obj, "action_space", None),
            "episode_statistics": "episode" if find_venv_layer(obj, "VecMonitor") is not None else None,
            "normalizers": [] if normalize is None else [_normalizer_entry(normalize)],
            "normalizer_gamma": getattr(normalize, "gamma", None),
            "frame_stack": n_stack,
            "layers": [type(layer).__name__ for layer in venv_chain(obj)],
            # its envs' layers (a Monitor around each) are in worker processes
            "sub_env_workers": "SubprocVecEnv" if find_venv_layer(obj, "SubprocVecEnv") is not None else None,
        }
        if normalize is None:
            # no VecNormalize: a user's own layer that exposes running statistics is checked as
            # VecNormalize is (rlconform.specs.own_normalizers)
            semantics.update(own_normalizer_semantics(find_own_normalizer(venv_chain(obj))))
        if semantics["episode_statistics"] is None:
            # a Monitor inside each env (make_vec_env's): its info["episode"] is the step info
            # the VecEnv returns for that env, the step that ends the episode
            layers_by_env = sub_env_layers(obj)
            monitors = sub_env_layers_of_class(layers_by_env, "Monitor")
            semantics.update(
                sub_env_statistics(
                    monitors, key="episode", place="info", decimals=MONITOR_DECIMALS, reward_changers=REWARD_CHANGERS
                )
            )
            if not monitors and (own := user_sub_env_layers(layers_by_env)):
                # a layer of the user's own around each env: a recorder if it reports statistics
                # in the documented layout, held to what Monitor there is held to
                semantics.update(
                    sub_env_statistics(own, key=BY_OUTPUT, place="info", decimals=None, reward_changers=REWARD_CHANGERS)
                )
        if semantics["episode_statistics"] is None and "episode_statistics_envs" not in semantics:
            # no VecMonitor or Monitor: a user's own VecEnvWrapper is checked by what it reports
            semantics["episode_statistics"] = episode_statistics_reading(venv_chain(obj), "VecMonitor")
        return semantics

    def begin(self, driver: Any, obj: Any) -> None:
        send_in_space(driver, getattr(obj, "action_space", None))

    def model_match(self, obj: Any) -> Any:
        return match_vec_env_model(obj)

    # ---------------------------------------------------------------------------------- driving
    def execute(self, driver: Any, obj: Any, op: Op) -> None:
        n = driver.num_envs
        if isinstance(op, Reset):
            if op.mask is not None:
                raise ValueError("SB3 VecEnvs have no partial reset")
            if op.seed is None:
                fn, source = (lambda: obj.reset()), "venv.reset()"
            else:
                seed = op.seed
                fn, source = (lambda: (obj.seed(seed), obj.reset())[1]), f"venv.seed({seed}); venv.reset()"
            driver.call(op, source, fn, (), view=functools.partial(_view_reset, n), obj=obj)
            return
        assert isinstance(op, (Step, BadStep))
        actions = driver.batch(op.actions)
        driver.call(
            op,
            f"venv.step({array_literal(actions)})",
            obj.step,
            (actions,),
            view=functools.partial(_view_step, n),
            obj=obj,
        )

    def observe(self, obj: Any, record: CallRecord) -> None:
        view = record.view
        if view is None:
            return
        if view.kind == "reset":
            infos = getattr(obj, "reset_infos", None)
            if isinstance(infos, (list, tuple)) and len(infos) == len(view.obs):
                view.infos = [dict(i) if isinstance(i, dict) else i for i in infos]
        normalize = find_venv_layer(obj, "VecNormalize")
        if normalize is None:
            own = find_own_normalizer(venv_chain(obj))
            if own is not None:
                own.observe(record.extra, len(view.obs))
            return
        # SB3's own recipe under VecNormalize stores the original data, and un-normalises the
        # terminal observation; the adapter does exactly that, right after the call.
        view.env_obs = split_batch(snapshot(normalize.get_original_obs()), len(view.obs))
        if view.kind == "step":
            view.env_rewards = as_float_list(snapshot(normalize.get_original_reward()), len(view.obs))
            if view.final_obs is not None:
                view.env_final_obs = [
                    None if f is None else snapshot(normalize.unnormalize_obs(f)) for f in view.final_obs
                ]
        if not getattr(normalize, "training", True):
            return  # frozen statistics (training=False) are not updated by design: nothing to count
        # VecNormalize creates obs_rms only with norm_obs=True (and for norm_obs_keys only)
        rms = getattr(normalize, "obs_rms", None) if getattr(normalize, "norm_obs", True) else None
        if isinstance(rms, dict):
            rms = rms[sorted(rms)[0]] if rms else None
        if rms is not None:
            record.extra["obs_rms"] = (np.array(rms.mean, copy=True), np.array(rms.var, copy=True), float(rms.count))
        ret = getattr(normalize, "ret_rms", None)
        if ret is not None:
            record.extra["return_rms"] = (float(ret.mean), float(ret.var), float(ret.count))
            returns = getattr(normalize, "returns", None)
            if returns is not None:
                record.extra["accumulated_reward"] = np.array(returns, copy=True)

    # ----------------------------------------------------------------------------------- recipe
    def recipe(self, calls: list[CallRecord], num_envs: int, semantics: dict[str, Any]) -> list[Slot]:
        return same_step_slots(calls, num_envs)

    def api_problems(self, call: CallRecord, num_envs: int) -> list[str]:
        result = call.result_live
        if isinstance(call.op, Reset):
            if isinstance(result, tuple) and len(result) == 2 and isinstance(result[1], (dict, list)):
                return ["returned an (obs, info) pair; SB3 documents reset() -> obs"]
            return []
        if not isinstance(result, tuple) or len(result) != 4:
            return [f"returned a {type(result).__name__}; documented: (obs, rewards, dones, infos)"]
        _, rewards, dones, infos = result
        problems = []
        if (
            not isinstance(infos, (list, tuple))
            or len(infos) != num_envs
            or not all(isinstance(i, dict) for i in infos)
        ):
            problems.append(f"infos is {type(infos).__name__}; documented: a list of {num_envs} dicts")
        for name, value in (("rewards", rewards), ("dones", dones)):
            if not isinstance(value, np.ndarray) or value.shape != (num_envs,):
                problems.append(
                    f"{name} is {type(value).__name__} of shape {getattr(value, 'shape', None)}; documented: an array of shape ({num_envs},)"
                )
        return problems

    def object_problems(self, semantics: dict[str, Any], num_envs: int) -> list[str]:
        problems = []
        if semantics.get("num_envs") != num_envs:
            problems.append(f"num_envs is {semantics.get('num_envs')!r} for {num_envs} env factories")
        for name in ("single_observation_space", "single_action_space"):
            if semantics.get(name) is None:
                problems.append(f"no {name.removeprefix('single_')} attribute")
        return problems


def _normalizer_entry(normalize: Any) -> str:
    """``VecNormalize``, or its frozen form under ``training=False`` (SB3's evaluation setup,
    which updates no running statistics on purpose: ``statistics.normalizer`` does not apply)."""
    name = type(normalize).__name__
    return name if getattr(normalize, "training", True) else frozen_normalizer(name)


def _view_reset(num_envs: int, result: Any) -> CallView:
    return CallView(kind="reset", obs=split_batch(result, num_envs), touched=[True] * num_envs)


def _view_step(num_envs: int, result: Any) -> CallView:
    obs, rewards, dones, infos = result
    done = as_bool_list(dones, num_envs)
    per_info = [dict(info) for info in infos]
    if len(per_info) != num_envs:
        raise ValueError(f"{len(per_info)} infos for {num_envs} sub-envs")
    truncated = [bool(info.get(TIMEOUT_KEY, False)) for info in per_info]
    return CallView(
        kind="step",
        obs=split_batch(obs, num_envs),
        rewards=as_float_list(rewards, num_envs),
        terminated=[d and not t for d, t in zip(done, truncated, strict=True)],
        truncated=truncated,
        infos=per_info,
        final_obs=[info.get(TERMINAL_KEY) if d else None for d, info in zip(done, per_info, strict=True)],
        touched=[True] * num_envs,
    )


FAMILY = SB3Family()

# ------------------------------------------------------------------------------------- systems

_BOX_OR_DICT = Capabilities(
    obs_kinds=frozenset({"box", "dict"}),
    composite_box_leaves_only=True,
    partial_reset=False,
)
N_STACK = 3


def _dummy(env_fns: Sequence[EnvFn]) -> Any:
    from stable_baselines3.common.vec_env import DummyVecEnv

    return DummyVecEnv(list(env_fns))


def preload_forkserver() -> None:
    """SubprocVecEnv's default start method is forkserver, whose workers re-import torch through
    SB3 (seconds per worker). Preloading SB3 and the reference env in the fork server keeps the
    default method, with the same semantics, at fork speed. It only takes effect if this process
    has not started its fork server yet."""
    preload(["stable_baselines3.common.vec_env.subproc_vec_env", "rlconform.envs.reference_env"])


def _subproc(env_fns: Sequence[EnvFn]) -> Any:
    from stable_baselines3.common.vec_env import SubprocVecEnv

    preload_forkserver()
    return SubprocVecEnv(list(env_fns))


def _wrapped(wrapper: str, **kwargs: Any) -> Any:
    def build(env_fns: Sequence[EnvFn]) -> Any:
        from stable_baselines3.common import vec_env

        return getattr(vec_env, wrapper)(_dummy(env_fns), **kwargs)

    return build


SYSTEMS.add(
    System(
        id="sb3.DummyVecEnv",
        family=SB3_VECENV,
        title="DummyVecEnv",
        build=_dummy,
        source="vec_env.DummyVecEnv(env_fns)",
        requires=("stable-baselines3",),
        capabilities=Capabilities(partial_reset=False),
    )
)
SYSTEMS.add(
    System(
        id="sb3.SubprocVecEnv",
        family=SB3_VECENV,
        title="SubprocVecEnv (default start method)",
        build=_subproc,
        source="vec_env.SubprocVecEnv(env_fns)",
        requires=("stable-baselines3",),
        out_of_process=True,
        capabilities=Capabilities(partial_reset=False, max_envs=3),
    )
)
SYSTEMS.add(
    System(
        id="sb3.VecNormalize.DummyVecEnv",
        family=SB3_VECENV,
        title="VecNormalize(DummyVecEnv)",
        build=_wrapped("VecNormalize"),
        source="vec_env.VecNormalize(vec_env.DummyVecEnv(env_fns))",
        requires=("stable-baselines3",),
        capabilities=Capabilities(
            obs_kinds=frozenset({"box", "dict"}),
            composite_box_leaves_only=True,
            partial_reset=False,
            notes=("VecNormalize documents Box and Dict-of-Box observations only",),
        ),
        model="reference.sb3.VecNormalize",
    )
)
SYSTEMS.add(
    System(
        id="sb3.VecFrameStack.DummyVecEnv",
        family=SB3_VECENV,
        title=f"VecFrameStack(DummyVecEnv, n_stack={N_STACK})",
        build=_wrapped("VecFrameStack", n_stack=N_STACK),
        source=f"vec_env.VecFrameStack(vec_env.DummyVecEnv(env_fns), n_stack={N_STACK})",
        requires=("stable-baselines3",),
        capabilities=Capabilities(
            obs_kinds=frozenset({"box", "dict"}),
            composite_box_leaves_only=True,
            partial_reset=False,
            notes=("VecFrameStack documents Box and Dict-of-Box observations only",),
        ),
        model="reference.sb3.VecFrameStack",
    )
)
SYSTEMS.add(
    System(
        id="sb3.VecMonitor.DummyVecEnv",
        family=SB3_VECENV,
        title="VecMonitor(DummyVecEnv)",
        build=_wrapped("VecMonitor"),
        source="vec_env.VecMonitor(vec_env.DummyVecEnv(env_fns))",
        requires=("stable-baselines3",),
        capabilities=Capabilities(partial_reset=False),
        model="reference.sb3.VecMonitor",
    )
)
