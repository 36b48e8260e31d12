"""Family ``torchrl.EnvBase``: TorchRL environments, driven with TensorDicts.

Recipe, as TorchRL documents a manual loop (``EnvBase.step_and_maybe_reset``, the loop of
``EnvBase.rollout`` and of its collectors): ``td = env.reset()``; then for each step the caller
writes the action into ``td["action"]`` and calls ``data, td = env.step_and_maybe_reset(td)``.
``data`` *is* the transition: its root entries are the observation at t and the action, its
``("next", ...)`` entries the next observation, the reward (shape ``[..., 1]``) and the
``done``/``terminated``/``truncated`` flags (bool, ``[..., 1]``). ``td`` is ``step_mdp(data)``
where sub-envs that ended were reset through a ``"_reset"`` mask: the root the next step starts
from. Seeds are set with ``env.set_seed(seed)`` before ``env.reset()``.

What TorchRL does with seeds, read from its source (torchrl 0.14) and checked against the
reference envs' logs by the tests: ``GymWrapper.set_seed(s)`` calls the wrapped env's
``reset(seed=s)`` at once, so the ``reset()`` that follows starts a second, unseeded episode; a
``SerialEnv``/``ParallelEnv`` seeds sub-env 0 with ``s`` and each next one with
``torchrl._utils.seed_generator`` of the previous seed (not ``s + i``); a GymWrapper around a
Gymnasium vector env passes ``s`` to the vector env, which seeds sub-env i with ``s + i``. The
adapter records these reset seeds with the call (``record.extra["sub_env_resets"]``) so that a
comparison with the bare env can replay them; it changes nothing in what TorchRL returns.

The observations are read back into the env's native structure (:mod:`rlconform.libraries.torchrl.tensordicts`)
so that transitions compare with a bare Gymnasium env's; through the user's ``ObservationNorm``
into the env's units, and a ``CatFrames`` is described as frame stacking
(:mod:`rlconform.libraries.torchrl.obs_transforms`). The entries a ``RewardSum``, ``StepCounter`` or
``InitTracker`` in the stack adds (:func:`added_entries`) are read from the same snapshots into the
views, for ``torchrl.transform_values`` (:mod:`rlconform.libraries.torchrl.transform_values`).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from rlconform.core.family import FactoryShape
from rlconform.core.system import System
from rlconform.envs.driver import Contract, ReferenceEnvFamily
from rlconform.envs.plan import BadStep, Op, Reset, Step
from rlconform.envs.trace import CallRecord, CallView, Slot
from rlconform.libraries.gymnasium.env_family import action_literal
from rlconform.libraries.torchrl.env_objects import (
    NAME,
    SUB_ENV_RESETS,
    _base,
    _read_added,
    added_entries,
    batch_shape,
    close_env,
    declared_observation_space,
    leaf_specs,
    native_observation_space,
    observation_reading,
    sub_env_resets,
)
from rlconform.libraries.torchrl.env_systems import gym_wrapper, torch_native_stack
from rlconform.libraries.torchrl.env_user import (
    ForkedEnvFn,
    SubEnvFactory,
    SubEnvFn,
    _torchrl_system,
    build_user_env,
    user_capabilities,
    user_num_envs,
)
from rlconform.libraries.torchrl.obs_transforms import ObsReading, obs_reading
from rlconform.libraries.torchrl.tensordicts import ObsLayout, per_env_scalars


@dataclass
class TransitionView(CallView):
    """A ``step_and_maybe_reset`` call. ``obs`` is the root the next step starts from (after the
    resets of ended sub-envs); ``root_obs``/``next_obs`` are the transition's own entries, and
    ``env_root_obs``/``env_next_obs`` the same in env units where the stack's transforms are
    inverted (``ObservationNorm``; None: as returned)."""

    root_obs: list[Any] = field(default_factory=list)
    next_obs: list[Any] = field(default_factory=list)
    env_root_obs: list[Any] | None = None
    env_next_obs: list[Any] | None = None
    #: the entries the stack's transforms add (:func:`added_entries`), by key name: one Python
    #: scalar per sub-env at the transition's root and under ``"next"``, or why none could be read
    added_root: dict[str, list[Any] | str] = field(default_factory=dict)
    added_next: dict[str, list[Any] | str] = field(default_factory=dict)


@dataclass
class ResetView(CallView):
    """An ``env.reset()`` call; ``added`` holds the entries the stack's transforms add, read from
    the returned root as :attr:`TransitionView.added_root` is."""

    added: dict[str, list[Any] | str] = field(default_factory=dict)


# ------------------------------------------------------------------------------ TorchRL objects
# -------------------------------------------------------------------------------------- family


#: the specs each FINDINGS.md row of a bundled TorchRL env fails (its "Spec" column; where two rows
#: name one spec on one system, the row whose defect the search's minimal case shows)
_E3_SPECS = ("continuity.no_discarded_episode", "transitions.exact", "counts.env_steps")
_E4_SPECS = ("api.valid_calls_succeed", "api.failed_call_no_side_effect", "terminal.final_obs", "flags.terminated")
_E6_SPECS = ("terminal.final_obs", "transitions.exact", "counts.env_steps", "seeding.reset_determinism")
_E9_SPECS = (
    *("terminal.final_obs", "transitions.exact", "counts.env_steps", "flags.terminated", "flags.truncated"),
    *("continuity.fresh_first_obs", "lifecycle.no_step_after_end"),
)
_E10_SPECS = ("api.valid_calls_succeed", "api.failed_call_no_side_effect")
_E11_SPECS = ("continuity.fresh_first_obs", "seeding.reset_determinism")


class TorchRLFamily(ReferenceEnvFamily):
    name = NAME
    api = NAME
    # env_fn's k-th call builds sub-env k; the returned env's batch size is the number of
    # sub-envs (SubEnvFactory)
    factory_signature = "(env_fn: Callable[[], gymnasium.Env]) -> EnvBase"
    claimed_classes = ("torchrl.envs.common.EnvBase",)
    factory_shape = FactoryShape(
        returns=claimed_classes, return_names=("TransformedEnv", "SerialEnv", "ParallelEnv", "GymWrapper", "GymEnv")
    )
    #: the TorchRL defects the bundled systems show (FINDINGS.md): named on the bundled systems'
    #: own failures (rlconform.core.findings) and on those a user's stack inherits from them
    #: (rlconform.core.inherited)
    findings = {
        ("torchrl.GymWrapper", "api.wrong_size_batch_rejected"): "E1",
        ("torchrl.GymWrapper", "dtype.actions_received"): "E1",
        ("torchrl.*GymWrapper", "api.valid_calls_succeed"): "E2",
        ("torchrl.ParallelEnv.GymWrapper", "lifecycle.responsive"): "E2",
        # the bundled systems' own failures (rlconform.core.findings); no user's stack is read as
        # one of these systems (library_layers), so they name no inherited failure
        ("torchrl.TransformedEnv.*SerialEnv", "api.valid_calls_succeed"): "E2",
        **{("torchrl.GymWrapper.SyncVectorEnv.SameStep", spec): "E3" for spec in _E3_SPECS},
        **{("torchrl.GymWrapper.SyncVectorEnv.SameStep", spec): "E4" for spec in _E4_SPECS},
        **{("torchrl.GymWrapper.SyncVectorEnv.SameStep", spec): "E11" for spec in _E11_SPECS},
        **{("torchrl.GymEnv.num_envs", spec): "E6" for spec in _E6_SPECS},
        ("torchrl.GymEnv.num_envs", "continuity.no_discarded_episode"): "E7",
        ("torchrl.GymWrapper.SyncVectorEnv.NoCopy", "aliasing.torchrl_returned_data"): "E8",
        **{("torchrl.GymWrapper.SyncVectorEnv.NoCopy", spec): "E9" for spec in _E9_SPECS},
        **{("torchrl.GymWrapper.SyncVectorEnv.NoCopy", spec): "E10" for spec in _E10_SPECS},
        # GymWrapper over a torch-native env: GymWrapper's own E1 and E2, and N1, N2
        ("torchrl.GymWrapper.TorchNative*", "api.wrong_size_batch_rejected"): "E1",
        ("torchrl.GymWrapper.TorchNative*", "api.valid_calls_succeed"): "E2",
        ("torchrl.GymWrapper.TorchNative.tensor_actions", "torchrl.actions_reach_env_natively"): "N1",
        ("torchrl.GymWrapper.TorchNative.tensor_actions", "transitions.exact"): "N1",
        ("torchrl.GymWrapper.TorchNative*", "dtype.rewards_flags"): "N2",
    }

    def library_layers(self, obj: Any) -> list[str]:
        """The bundled TorchRL system under a user's stack: the batched env of GymWrappers, or
        the one GymWrapper (over a single env), that the user's transforms wrap."""
        from torchrl.envs import GymWrapper, ParallelEnv, SerialEnv

        base = _base(obj)
        if isinstance(base, ParallelEnv):
            return ["torchrl.ParallelEnv.GymWrapper"]
        if isinstance(base, SerialEnv):
            return ["torchrl.SerialEnv.GymWrapper"]
        if isinstance(base, GymWrapper) and not hasattr(getattr(base, "_env", None), "num_envs"):
            return ["torchrl.GymWrapper"]
        return []

    factory_argument = "env_fn"
    one_env_fn = True
    required_attributes = ("reset", "step", "step_and_maybe_reset", "batch_size")
    quiet_loggers = ("torchrl",)
    libraries = ("gymnasium", "torch", "torchrl", "tensordict")
    uses_accelerator = True
    plain_build = "env = {factory}(SubEnvFactory(env_fns))"
    plain_object = "env"
    plain_imports = ("SubEnvFactory",)

    def check_factory(self, signature: inspect.Signature) -> None:
        signature.bind(lambda: None)

    def user_system(self, fn: Callable[..., Any], reference: str, **options: Any) -> System:
        return _torchrl_system(fn, reference)

    def probe_num_envs(self, system: System) -> int:
        return system.capabilities.min_envs

    def refuse_shared_sub_envs(self, system: System, reason: str) -> str | None:
        return (
            f"{system.source} builds its sub-envs in worker processes, each with its own copy of env_fn "
            f"({reason}); rlconform's env_fn hands out distinct sub-envs in this process only, so "
            "this factory cannot be checked as torchrl.EnvBase: build the sub-envs in this process "
            "(SerialEnv, GymWrapper over a vector env), or check the vector env it wraps with --api gymnasium.vector"
        )

    def close_probe(self, obj: Any) -> None:
        self.close(obj)  # a batched env not started is already closed

    # step_arity/reward_position/flag_positions describe tuples; a TorchRL step returns
    # TensorDicts, and no tuple-reading spec applies to this family
    contract = Contract(
        reward_dtype="float32",
        reward_precision="float32",
        step_arity=2,
        separate_flags=True,
        vectorized=True,
        reward_position=0,
        flag_positions=(0,),
        array_namespace="torch",
        # TorchRL documents no fixed dtype: each env declares its own in reward_spec/done_spec
        dtypes="declared",
    )

    def describe_semantics(self, obj: Any) -> dict[str, Any]:
        base = _base(obj)
        shape = batch_shape(obj)
        layers = [type(obj).__name__] + ([type(base).__name__] if base is not obj else [])
        reading = observation_reading(obj)
        return {
            # step_and_maybe_reset resets ended sub-envs in the same call and keeps their last
            # observation under ("next", ...): same-step semantics, read from the TensorDicts
            "autoreset_mode": "SameStep",
            "recipe": "step_and_maybe_reset",
            "batch_size": shape,
            "num_envs": shape[0] if shape else 1,
            "single_observation_space": declared_observation_space(obj),
            "observation_keys": [str(k) for k in obj.observation_spec.keys(True, True)],
            "action_keys": [str(k) for k in obj.action_keys],
            "done_keys": [str(k) for k in obj.done_keys],
            "layers": layers,
            # what the specs compare each returned leaf with (torchrl.device, dtype.rewards_flags)
            "device": None if obj.device is None else str(obj.device),
            "leaf_specs": leaf_specs(obj),
            # the entries RewardSum, StepCounter and InitTracker add (torchrl.transform_values)
            "added_entries": added_entries(obj),
            # a CatFrames the observations are read through (frame_stack and its padding), as
            # SB3's VecFrameStack is (rlconform.envs.decode.decode_stacked)
            **(reading.stacking() if reading is not None else {}),
        }

    def begin(self, driver: Any, obj: Any) -> None:
        shape = batch_shape(obj)
        layout = ObsLayout.of(native_observation_space(obj), obj.observation_spec, shape)
        driver.state["layout"] = layout
        driver.state["reading"] = obs_reading(obj, layout)
        driver.state["td"] = None
        driver.state["added"] = added_entries(obj)

    # ---------------------------------------------------------------------------------- driving
    def execute(self, driver: Any, obj: Any, op: Op) -> None:
        layout: ObsLayout = driver.state["layout"]
        reading: ObsReading = driver.state["reading"]
        added: list[dict[str, Any]] = driver.state["added"]
        if isinstance(op, Reset):
            if op.mask is not None:
                raise ValueError("the torchrl systems are driven without partial resets")
            seed = op.seed
            if seed is None:
                fn, source = (lambda: obj.reset()), "td = env.reset()"
            else:
                fn, source = (lambda: (obj.set_seed(seed), obj.reset())[1]), f"env.set_seed({seed}); td = env.reset()"
            record = driver.call(
                op, source, fn, (), view=functools.partial(_view_reset, layout, reading, added), obj=obj
            )
            if not record.failed:
                driver.state["td"] = record.result_live
                if seed is not None:
                    record.extra[SUB_ENV_RESETS] = sub_env_resets(obj, seed, layout.num_envs)
            return
        assert isinstance(op, (Step, BadStep))
        if not layout.batch_shape and len(op.actions) == 1:
            action = driver.single(op.actions[0])
        else:
            action = driver.batch(op.actions)
        td = driver.state["td"]
        if td is None:
            from tensordict import TensorDict

            td = TensorDict({}, batch_size=obj.batch_size)
        record = driver.call(
            op,
            f'td["action"] = env.action_spec.encode({_literal(action)}); data, td = env.step_and_maybe_reset(td)',
            functools.partial(_step, obj),
            (td, action),
            view=functools.partial(_view_step, layout, reading, added),
            obj=obj,
        )
        if not record.failed:
            driver.state["td"] = record.result_live[1]

    def close(self, obj: Any) -> None:
        close_env(obj)

    # ----------------------------------------------------------------------------------- recipe
    def recipe(self, calls: list[CallRecord], num_envs: int, semantics: dict[str, Any]) -> list[Slot]:
        """Each ``step_and_maybe_reset`` result is the transition: root = obs at t, ``next`` = the
        rest; nothing carries over from one call to the next. The action is the one the driver
        wrote into ``td["action"]`` (the plan's action, as in the other families' recipes)."""
        slots: list[Slot] = []
        for record in calls:
            view = record.view
            if record.failed or not isinstance(view, TransitionView):
                continue
            assert view.rewards is not None and view.terminated is not None and view.truncated is not None
            actions = record.op.actions  # type: ignore[union-attr]
            root_obs = view.env_root_obs if view.env_root_obs is not None else view.root_obs
            next_obs = view.env_next_obs if view.env_next_obs is not None else view.next_obs
            for j in range(num_envs):
                slots.append(
                    Slot(
                        env=j,
                        call=record.position,
                        agent_step=record.agent_step,
                        kind="transition",
                        obs=root_obs[j],
                        action=actions[j] if j < len(actions) else None,
                        reward=view.rewards[j],
                        next_obs=next_obs[j],
                        terminated=view.terminated[j],
                        truncated=view.truncated[j],
                    )
                )
        return slots


def _step(env: Any, td: Any, action: Any) -> Any:
    td.set("action", env.action_spec.encode(action))
    return env.step_and_maybe_reset(td)


def _literal(action: Any) -> str:
    return action_literal(action)


def _view_reset(layout: ObsLayout, reading: ObsReading, added: list[dict[str, Any]], td: Any) -> CallView:
    obs = layout.read(td)
    return ResetView(
        kind="reset",
        obs=obs,
        touched=[True] * layout.num_envs,
        env_obs=_env_units(reading, obs),
        added=_read_added(td, added, layout.batch_shape),
    )


def _env_units(reading: ObsReading, values: list[Any]) -> list[Any] | None:
    """``values`` through the inverses of the stack's observation transforms; None where there is none."""
    if reading.identity:
        return None
    return [reading.to_env_units(v) for v in values]


def _view_step(layout: ObsLayout, reading: ObsReading, added: list[dict[str, Any]], result: Any) -> CallView:
    data, after = result
    shape = layout.batch_shape
    nxt = data.get("next")
    terminated = [bool(v) for v in per_env_scalars(nxt, ("terminated",), shape)]
    truncated = [bool(v) for v in per_env_scalars(nxt, ("truncated",), shape)]
    next_obs = layout.read(nxt)
    root_obs = layout.read(data)
    env_next_obs = _env_units(reading, next_obs)
    ended = [t or u for t, u in zip(terminated, truncated, strict=True)]
    obs = layout.read(after)
    return TransitionView(
        kind="step",
        obs=obs,
        rewards=[float(v) for v in per_env_scalars(nxt, ("reward",), shape)],
        terminated=terminated,
        truncated=truncated,
        final_obs=[o if e else None for o, e in zip(next_obs, ended, strict=True)],
        touched=[True] * layout.num_envs,
        root_obs=root_obs,
        next_obs=next_obs,
        env_obs=_env_units(reading, obs),
        env_final_obs=None
        if env_next_obs is None
        else [o if e else None for o, e in zip(env_next_obs, ended, strict=True)],
        env_root_obs=_env_units(reading, root_obs),
        env_next_obs=env_next_obs,
        added_root=_read_added(data, added, shape),
        added_next=_read_added(nxt, added, shape, in_keys=True),
    )


FAMILY = TorchRLFamily()


# kept for one release: the names code imported from this module before the family was split by
# role (rlconform.libraries.torchrl.env_objects, env_systems, env_user)
__all__ = [
    "FAMILY",
    "NAME",
    "SUB_ENV_RESETS",
    "ForkedEnvFn",
    "SubEnvFactory",
    "SubEnvFn",
    "TorchRLFamily",
    "build_user_env",
    "gym_wrapper",
    "torch_native_stack",
    "user_capabilities",
    "user_num_envs",
]
