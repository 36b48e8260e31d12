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

import dataclasses
import functools
import inspect
import mmap
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from rlconform.core.family import FactoryShape
from rlconform.core.forkserver import preload
from rlconform.core.isolation import run_isolated
from rlconform.core.system import Capabilities, EnvFn, System, SystemTable
from rlconform.core.user import BadInput, factory_error
from rlconform.core.watchdog import stderr_to
from rlconform.envs.driver import Contract, ReferenceEnvFamily
from rlconform.envs.plan import BadStep, Op, Reset, Step
from rlconform.envs.script import EnvScript
from rlconform.envs.trace import CallRecord, CallView, Slot
from rlconform.libraries.gymnasium.env_family import _partial_args, action_literal
from rlconform.libraries.gymnasium.vector_family import mode_availability, mode_kwargs, mode_source
from rlconform.libraries.torchrl.obs_transforms import ObsReading, obs_reading
from rlconform.libraries.torchrl.tensordicts import ObsLayout, UnsupportedSpaceError, per_env_scalars
from rlconform.specs.families import TORCHRL_ENVBASE

#: this module's systems, read by the catalog (rlconform.core.catalog)
SYSTEMS = SystemTable()

NAME = TORCHRL_ENVBASE
#: record.extra key: per sub-env, the seeds of the resets it received from ``set_seed(s); reset()``
SUB_ENV_RESETS = "sub_env_resets"


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


def _base(env: Any) -> Any:
    """The env under a TransformedEnv (GymWrapper around a vector env returns one)."""
    from torchrl.envs import TransformedEnv

    return env.base_env if isinstance(env, TransformedEnv) else env


def _is_batched_env(env: Any) -> bool:
    from torchrl.envs.batched_envs import BatchedEnvBase

    return isinstance(env, BatchedEnvBase)


def batch_shape(env: Any) -> tuple[int, ...]:
    return tuple(int(d) for d in env.batch_size)


def native_observation_space(env: Any) -> Any:
    """One sub-env's Gymnasium observation space, through the attribute access TorchRL documents:
    a GymWrapper forwards unknown attributes to the env it wraps; a batched env answers with one
    value per worker (a batched env must have been started)."""
    base = _base(env)
    policy = _isaaclab_policy_space(base)
    if policy is not None:
        return policy
    if _is_batched_env(base):
        if base.is_closed:
            # a user's factory may return a batched env not started yet (TorchRL starts it
            # lazily on the first reset): its workers answer attribute access only once started
            base.start()
        return next(iter(base.observation_space))
    if batch_shape(base):
        return base.single_observation_space
    return base.observation_space


def _isaaclab_policy_space(base: Any) -> Any | None:
    """An Isaac Lab env under a TorchRL wrapper: one sub-env observes its ``"policy"`` group.
    ``DirectRLEnv.single_observation_space`` is ``Dict(policy=...)`` while its observations are
    that group's tensor, which Isaac Lab's own wrapper returns under ``"policy"`` and TorchRL's
    ``IsaacLabWrapper`` (from the batched ``observation_space`` Box) under ``"observation"``."""
    if _is_batched_env(base):  # attribute access on a batched env asks its workers
        return None
    try:
        unwrapped = base.unwrapped  # Isaac Lab's wrapper defines it; a GymWrapper forwards it to its env
    except AttributeError:
        return None
    if unwrapped is None or not any(c.__module__.startswith("isaaclab.envs") for c in type(unwrapped).__mro__):
        return None
    return unwrapped.single_observation_space["policy"]


def observation_reading(env: Any) -> ObsReading | None:
    """How the stack's observation transforms are read back (None: observations rlconform does
    not read back leaf by leaf)."""
    try:
        layout = ObsLayout.of(native_observation_space(env), env.observation_spec, batch_shape(env))
    except (UnsupportedSpaceError, KeyError):
        return None
    return obs_reading(env, layout)


def declared_observation_space(env: Any) -> Any:
    """One sub-env's observation space as the stack declares it: each leaf rlconform reads back
    against the env's own observation spec (:mod:`rlconform.libraries.torchrl.declared_space`),
    which a transform (``DoubleToFloat``, ``CatFrames``) rewrites along with the data; the
    wrapped env's space where no leaf can be read back by its spec."""
    from rlconform.libraries.torchrl import declared_space

    native = native_observation_space(env)
    try:
        layout = ObsLayout.of(native, env.observation_spec, batch_shape(env))
    except (UnsupportedSpaceError, KeyError):
        return native
    return declared_space.declared_observation_space(layout, native)


def key_name(key: Any) -> str:
    """A TensorDict key as one string: ``"reward"``, ``"next/reward"``."""
    return "/".join(key) if isinstance(key, tuple) else str(key)


def leaf_specs(env: Any) -> dict[str, dict[str, Any]]:
    """What the env declares for each entry it returns, by :func:`key_name`: the ``kind`` of spec
    (observation, reward, done, action), its dtype, shape (with the batch dimensions) and device
    (None: the spec declares none). Recorded as strings and tuples, read by the specs later."""
    out: dict[str, dict[str, Any]] = {}
    parts = (
        ("observation", env.full_observation_spec),
        ("reward", env.full_reward_spec),
        ("done", env.full_done_spec),
        ("action", env.full_action_spec),
    )
    for kind, composite in parts:
        for key, leaf in composite.items(True, True):
            out[key_name(key)] = {
                "kind": kind,
                "dtype": str(leaf.dtype),
                "shape": tuple(int(d) for d in leaf.shape),
                "device": None if leaf.device is None else str(leaf.device),
            }
    return out


#: the transforms whose added entries ``torchrl.transform_values`` checks
ADDING_TRANSFORMS = ("RewardSum", "StepCounter", "InitTracker")


def _transforms_of(transform: Any) -> list[Any]:
    """A transform, or the transforms of a ``Compose`` (nested ones too), in the order they run."""
    from torchrl.envs import Compose

    if isinstance(transform, Compose):
        return [leaf for t in transform.transforms for leaf in _transforms_of(t)]
    return [transform]


def _layers_of(env: Any) -> list[Any]:
    """The transforms a stack runs on its data, innermost first: those of every ``TransformedEnv``
    in it and, for a ``SerialEnv`` (its sub-envs live in this process), those of its first sub-env,
    which every sub-env of a batched env shares by construction. A ``ParallelEnv``'s sub-envs live
    in worker processes: their transforms are not read."""
    from torchrl.envs import SerialEnv, TransformedEnv

    if isinstance(env, TransformedEnv):
        return [*_layers_of(env.base_env), *_transforms_of(env.transform)]
    if isinstance(env, SerialEnv):
        sub_envs = getattr(env, "_envs", None) or []  # set once the env is started
        return _layers_of(sub_envs[0]) if sub_envs else []
    return []


def added_entries(env: Any) -> list[dict[str, Any]]:
    """What the stack's ``RewardSum``, ``StepCounter`` and ``InitTracker`` transforms (or subclasses)
    write into its TensorDicts: for each entry, the ``transform`` kind (one of
    :data:`ADDING_TRANSFORMS`), its ``class`` name, the ``key`` as a list of its parts and its
    ``name`` (:func:`key_name`); a RewardSum's ``in_key`` and ``in_name`` too, a StepCounter's
    ``max_steps``. Read from the transforms' own key properties, so that custom keys are followed;
    never raises (a transform whose keys cannot be named adds nothing checked)."""
    entries: list[dict[str, Any]] = []
    try:
        layers = _layers_of(env)
    except Exception:
        return entries
    for transform in layers:
        try:
            entries.extend(_entries_of(transform))
        except Exception:
            continue
    return entries


def _parts(key: Any) -> list[str]:
    return [str(p) for p in key] if isinstance(key, tuple) else [str(key)]


def _entries_of(transform: Any) -> list[dict[str, Any]]:
    from torchrl.envs import InitTracker, RewardSum, StepCounter

    def entry(kind: str, key: Any, **more: Any) -> dict[str, Any]:
        parts = _parts(key)
        return {"transform": kind, "class": type(transform).__name__, "key": parts, "name": "/".join(parts), **more}

    if isinstance(transform, RewardSum):
        return [
            entry("RewardSum", out_key, in_key=_parts(in_key), in_name="/".join(_parts(in_key)))
            for in_key, out_key in zip(transform.in_keys, transform.out_keys, strict=True)
        ]
    if isinstance(transform, StepCounter):
        return [entry("StepCounter", key, max_steps=transform.max_steps) for key in transform.step_count_keys]
    if isinstance(transform, InitTracker):
        return [entry("InitTracker", key) for key in transform.init_keys]
    return []


def _read_added(
    td: Any, entries: Sequence[dict[str, Any]], shape: tuple[int, ...], *, in_keys: bool = False
) -> dict[str, list[Any] | str]:
    """Each added entry of ``td`` (a RewardSum's in_key too with ``in_keys``) as one Python scalar
    per sub-env, or the reason it could not be read; never raises (the recipe must not lose the
    transition over an entry only ``torchrl.transform_values`` reads)."""
    out: dict[str, list[Any] | str] = {}
    keys = [(e["name"], e["key"]) for e in entries]
    if in_keys:
        keys += [(e["in_name"], e["in_key"]) for e in entries if "in_key" in e]
    for name, parts in keys:
        try:
            if td.get(tuple(parts), None) is None:
                out[name] = "absent"
            else:
                out[name] = per_env_scalars(td, tuple(parts), shape)
        except Exception as exc:
            out[name] = f"{type(exc).__name__}: {exc}"
    return out


def sub_env_resets(env: Any, seed: int, num_envs: int) -> list[tuple[int | None, ...]]:
    """The ``reset(seed=...)`` calls each sub-env receives from ``env.set_seed(seed); env.reset()``
    (see the module docstring); the last one starts the episode the first transition comes from."""
    base = _base(env)
    if _is_batched_env(base):
        from torchrl._utils import seed_generator  # what EnvBase.set_seed returns as the next seed

        seeds = [seed]
        while len(seeds) < num_envs:
            seeds.append(int(seed_generator(seeds[-1])))
        return [(s, None) for s in seeds]
    if batch_shape(base):
        return [(seed + i, None) for i in range(num_envs)]
    return [(seed, None)]


# -------------------------------------------------------------------------------------- family


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
    #: the TorchRL defects the bundled systems show (FINDINGS.md), for failures a user's stack
    #: inherits from them (rlconform.core.inherited)
    findings = {
        ("torchrl.GymWrapper", "api.wrong_size_batch_rejected"): "E1",
        ("torchrl.GymWrapper", "dtype.actions_received"): "E1",
        ("torchrl.*GymWrapper", "api.valid_calls_succeed"): "E2",
        ("torchrl.ParallelEnv.GymWrapper", "lifecycle.responsive"): "E2",
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
        """Close once: a ParallelEnv's close() shuts its worker processes down (and raises if it
        is called on an env already closed)."""
        if not getattr(obj, "is_closed", False):
            obj.close()

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

# ------------------------------------------------------------------------------------- systems

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


# ------------------------------------------------------------------------------ user factories


class SubEnvFactory:
    """The ``env_fn`` a user's ``torchrl.EnvBase`` factory receives (``rlconform check --api
    torchrl.EnvBase``): each call builds a sub-env not in use, so that
    ``SerialEnv(n, lambda: GymWrapper(env_fn()))`` gets n distinct, separately logged envs.

    The factory chooses the number of sub-envs; rlconform reads it from the returned env's batch
    size (``[]`` is one env). A batched env first builds one env to read its specs and closes it:
    a sub-env closed hands its index back, so the next call builds that sub-env again. Asking for
    more sub-envs at once than rlconform made raises, naming the count.

    Worker processes: pickling the factory binds the copy to the next free sub-env
    (:class:`SubEnvFn`). A ``ParallelEnv`` (or an ``AsyncVectorEnv``) started with spawn or
    forkserver pickles its ``create_env_fn`` once per worker, in worker order, as it starts
    them, so worker k builds sub-env k, as in the bundled ``torchrl.ParallelEnv.GymWrapper``
    system. A worker started with fork gets a copy of this object, unpickled, as it was when the
    worker forked, and could not tell which sub-env is its own: such a copy refuses to build
    (:class:`ForkedEnvFn`) instead of building a sub-env another worker builds too.

    Envs built while the factory runs and closed before it returns were never handed to
    rlconform: ``ParallelEnv`` wraps a lambda in an ``EnvCreator``, which builds a "shadow" env in
    this process, resets it, takes a random step and closes it to read the specs. Their log
    records are held back until :meth:`built` and dropped when the env closes first, so that
    the ground truth holds the envs the system runs, not its throwaway copy. A system that
    returned data from such a copy still fails: its transitions are in no env's log."""

    def __init__(self, env_fns: Sequence[EnvFn]) -> None:
        self._env_fns = list(env_fns)
        self._free = list(range(len(self._env_fns)))
        self._owner = os.getpid()
        #: one byte shared with forked copies: set when one refused to build (see :meth:`refused_fork`)
        self._fork_refusals = mmap.mmap(-1, 1)
        #: logs held back while the factory builds (None once it has returned)
        self._held: list[_HeldLog] | None = []

    def built(self) -> None:
        """The factory returned its env: the logs of envs still open are written out, and every
        record from now on is written as it comes."""
        for held in self._held or []:
            held.write_out()
        self._held = None

    def _take(self) -> int:
        if not self._free:
            raise IndexError(
                f"the factory asked env_fn for more than {len(self._env_fns)} sub-envs at once (the batch size of "
                "the env the factory returned when rlconform probed it)"
            )
        return self._free.pop(0)

    def release(self, index: int) -> None:
        if index not in self._free:
            self._free.append(index)
            self._free.sort()

    def refused_fork(self) -> bool:
        """Whether a copy of this object in a forked worker was asked for a sub-env: the worker's
        error reaches this process as whatever the library makes of a dead worker (EOFError)."""
        return self._fork_refusals[0] != 0

    def __call__(self) -> Any:
        if os.getpid() != self._owner:
            self._fork_refusals[0] = 1
            raise ForkedEnvFn(FORKED_ENV_FN)
        index = self._take()
        env = self._env_fns[index]()
        held = _HeldLog.hold(env) if self._held is not None else None
        if held is not None:
            self._held.append(held)  # type: ignore[union-attr]
        return _closing_with(env, functools.partial(self._closed, index, held))

    def _closed(self, index: int, held: _HeldLog | None) -> None:
        if held is not None and self._held is not None:
            held.drop()  # closed before the factory returned: a throwaway copy (see the class)
            self._held.remove(held)
        self.release(index)

    def __deepcopy__(self, memo: dict[int, Any]) -> SubEnvFactory:
        """The same factory: a copy handing out the same sub-envs again would build each twice.
        Gymnasium deep-copies an env's spec, whose ``entry_point`` is this factory when the user
        registers it (``gymnasium.register(id, entry_point=env_fn)`` then ``GymEnv(id)``); refusing
        the copy made ``gymnasium.make`` fail its bare ``assert env.spec is not None``."""
        return self

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        """Sent to a worker process: a copy bound to the next free sub-env (see the class)."""
        if os.getpid() != self._owner:
            raise ForkedEnvFn(FORKED_ENV_FN)
        index = self._take()
        return SubEnvFn, (self._env_fns[index], index)


#: why a forked copy of :class:`SubEnvFactory` refuses to build (one line: it is the bad-input reason)
FORKED_ENV_FN = (
    "a worker process started with fork called rlconform's env_fn: forked workers get copies of it that cannot "
    "tell which sub-env is theirs; start the workers with spawn or forkserver (TorchRL's default, "
    "ParallelEnv(mp_start_method='spawn'))"
)


class ForkedEnvFn(RuntimeError):
    """A copy of :class:`SubEnvFactory` made by fork was asked for a sub-env."""

    #: rlconform's own refusal, whose message says all there is: bad input in one line, with no
    #: traceback of the factory under it (rlconform.core.user.factory_error)
    explains_itself = True


class SubEnvFn:
    """The ``env_fn`` a worker process unpickles: it builds sub-env ``index``, one at a time (a
    worker closing its env and building it again gets the same sub-env)."""

    def __init__(self, env_fn: EnvFn, index: int) -> None:
        self.env_fn = env_fn
        self.index = index
        self._open = False

    def __call__(self) -> Any:
        if self._open:
            raise IndexError(
                f"the worker building sub-env {self.index} asked env_fn for a second env while the first is open"
            )
        self._open = True
        return _closing_with(self.env_fn(), self._closed)

    def _closed(self) -> None:
        self._open = False


class _HeldLog:
    """A reference env's log sink that keeps its records in memory until :meth:`write_out`."""

    def __init__(self, sink: Any) -> None:
        self.sink = sink
        self.records: list[Any] | None = []

    @classmethod
    def hold(cls, env: Any) -> _HeldLog | None:
        """Hold back the log of ``env`` if it is a reference env (rlconform's ``env_fns``)."""
        from rlconform.envs.reference_env import ReferenceEnv

        reference = getattr(env, "unwrapped", None)
        if not isinstance(reference, ReferenceEnv):
            return None
        held = cls(reference.sink)
        reference.sink = held
        return held

    def write(self, record: Any) -> None:
        if self.records is None:
            self.sink.write(record)
        else:
            self.records.append(record)

    def read(self) -> list[Any]:
        return [*self.sink.read(), *(self.records or [])]

    def write_out(self) -> None:
        for record in self.records or []:
            self.sink.write(record)
        self.records = None

    def drop(self) -> None:
        self.records = []

    def close(self) -> None:
        close = getattr(self.sink, "close", None)
        if callable(close):
            close()


def _closing_with(env: Any, on_close: Callable[[], None]) -> Any:
    """``env`` in a wrapper that calls ``on_close`` after closing it (hands a sub-env back)."""
    import gymnasium

    class Released(gymnasium.Wrapper):  # type: ignore[type-arg]
        def close(self) -> None:
            super().close()
            on_close()

    return Released(env)


def build_user_env(factory: Callable[[SubEnvFactory], Any], env_fns: Sequence[EnvFn]) -> Any:
    """``factory(env_fn)`` for a user's ``torchrl.EnvBase`` system, its workers started.

    A batched env is started here, as the bundled systems start theirs, so that its workers are
    built while the runner sends their stderr to a file and a worker that cannot start is a build
    error, not a failed first reset."""
    env_fn = SubEnvFactory(env_fns)
    try:
        env = factory(env_fn)
    except Exception:
        if env_fn.refused_fork():
            raise ForkedEnvFn(FORKED_ENV_FN) from None
        raise
    base = _base(env)
    if _is_batched_env(base) and base.is_closed:
        try:
            base.start()
        except BaseException as exc:
            FAMILY.close(env)
            if env_fn.refused_fork() and isinstance(exc, Exception):
                raise ForkedEnvFn(FORKED_ENV_FN) from None
            raise
    env_fn.built()
    return env


def user_num_envs(factory: Any, max_envs: int = 8) -> int:
    """Build ``factory(SubEnvFactory(...))`` once around unlogged reference envs and return its
    number of sub-envs (run it isolated: the env may start worker processes)."""
    from rlconform.envs.reference_env import make_reference_env

    script = EnvScript()
    # the worker processes' tracebacks would bury the one-line reason a failed build gets
    with stderr_to(os.devnull):
        env = build_user_env(factory, [functools.partial(make_reference_env, script, i) for i in range(max_envs)])
        try:
            shape = batch_shape(env)
        finally:
            FAMILY.close(env)
    if len(shape) > 1:
        raise ValueError(f"the env's batch size is {list(shape)}; rlconform drives one batch dimension")
    return shape[0] if shape else 1


def user_capabilities(num_envs: int) -> Capabilities:
    """What a user's TorchRL env is driven with: the observation kinds GymWrapper maps (see the
    notes) and exactly the number of sub-envs the factory builds."""
    caps = _capabilities(max_envs=num_envs)
    return Capabilities(
        obs_kinds=caps.obs_kinds,
        composite_box_leaves_only=caps.composite_box_leaves_only,
        partial_reset=False,
        max_envs=num_envs,
        min_envs=num_envs,
        notes=caps.notes,
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
    # the module of gym_wrapper, which every ParallelEnv worker calls: imported in each worker
    # otherwise (a third of a ParallelEnv build)
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


# ------------------------------------------------------------------------- a user's factory


def _torchrl_system(fn: Callable[..., Any], reference: str) -> System:
    """A ``torchrl.EnvBase`` factory: it gets one ``env_fn`` whose k-th call builds sub-env k and
    picks the number of sub-envs itself; one isolated build reads that number off the returned
    env's batch size, and every case is drawn with exactly that many sub-envs."""
    outcome = run_isolated(_user_num_envs, fn, reference, timeout=120.0)
    if outcome.failure is not None:
        raise BadInput(f"building {reference} as {NAME}: {outcome.failure}")
    kind, value = outcome.value
    if kind == "bad":
        raise BadInput(value)
    num_envs = int(value)

    def build(env_fns: Sequence[EnvFn]) -> Any:
        return build_user_env(fn, env_fns)

    return System(
        id=f"user:{reference}",
        family=NAME,
        title=f"{reference}(env_fn)",
        build=build,
        source=reference,
        kind="user",
        out_of_process=True,
        capabilities=user_capabilities(num_envs),
        description=f"a user's TorchRL env factory ({num_envs} sub-env(s), read from its batch size)",
    )


def _user_num_envs(fn: Callable[..., Any], reference: str) -> tuple[str, Any]:
    """``user_num_envs`` in the isolated child: a factory that raises is bad input
    with its own traceback (the child's generic failure line would keep the first line only)."""

    try:
        return "ok", user_num_envs(fn)
    except Exception as exc:
        return "bad", factory_error(f"building {reference} as {NAME}", exc)
