"""Family ``gymnasium.vector``: Gymnasium's VectorEnv API in its three autoreset modes.

Recipes, as Gymnasium documents them (https://farama.org/Vector-Autoreset-Mode):

* NEXT_STEP: the step after a sub-env ends is a reset step; its output is the first observation
  of the next episode and must not be stored as a transition.
* SAME_STEP: a sub-env that ends is reset within the same step; the true last observation is in
  ``infos["final_obs"][i]`` (mask ``infos["_final_obs"]``) and its info in ``infos["final_info"]``.
* DISABLED: nothing is reset automatically; the caller resets ended sub-envs with
  ``reset(options={"reset_mask": mask})`` before stepping them again.

Older releases (``gym_release``): 0.29 is SameStep only, with ``final_observation``; 1.0 is
NextStep only. A system whose mode a release lacks is skipped with that reason, and the recipe
reads the release's own keys, so each verdict means the same thing on every release.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from rlconform.core.family import FactoryShape, find_layer, layer_chain
from rlconform.core.system import Capabilities, EnvFn, System, SystemTable
from rlconform.envs.action_space import send_in_space
from rlconform.envs.batching import as_bool_list, as_float_list, missing_masks, split_batch, unbatch_infos
from rlconform.envs.driver import Contract, ReferenceEnvFamily
from rlconform.envs.plan import BadStep, Op, Reset, Step
from rlconform.envs.spaces import array_literal
from rlconform.envs.tap import sub_env_layers
from rlconform.envs.trace import CallRecord, CallView, Slot
from rlconform.libraries.gymnasium.model_selection import ModelMatch, match_vector_env_model
from rlconform.libraries.gymnasium.options import MODES
from rlconform.libraries.gymnasium.releases import installed as installed_release
from rlconform.libraries.gymnasium.releases import unavailable_unless
from rlconform.specs.families import GYMNASIUM_VECTOR
from rlconform.specs.own_normalizers import find_own_normalizer, own_normalizer_semantics
from rlconform.specs.statistics import (
    BY_OUTPUT,
    episode_statistics_reading,
    frozen_normalizer,
    is_a,
    sub_env_layers_of_class,
    sub_env_normalizer,
    sub_env_statistics,
    user_sub_env_layers,
)

#: this module's systems, read by the catalog (rlconform.core.catalog)
SYSTEMS = SystemTable()

#: the specs AsyncVectorEnv(shared_memory=False) fails in NEXT_STEP mode (FINDINGS G4)
_G4_SPECS = (
    "continuity.no_discarded_episode",
    "transitions.exact",
    "counts.env_steps",
    "seeding.reset_determinism",
    "model.outputs_match",
)

#: the Gymnasium layers that change the rewards they pass up (TransformReward and ClipReward are
#: RewardWrappers): an episode recorder or a reward normalizer above one sums changed rewards
REWARD_CHANGERS = ("RewardWrapper", "NormalizeReward")


def autoreset_mode_of(obj: Any) -> tuple[str, bool]:
    """(mode, declared): the mode a vector env declares in its metadata; NextStep if none, as
    Gymnasium's own wrappers assume. On a release without ``AutoresetMode`` (0.29, 1.0) every
    vector env has the release's one mode, so it counts as declared."""
    metadata = getattr(obj, "metadata", None) or {}
    mode = metadata.get("autoreset_mode")
    if mode is None:
        implied = installed_release().implied_mode()
        return (implied, True) if implied is not None else ("NextStep", False)
    value = getattr(mode, "value", mode)
    return str(value), True


def find_wrapper(obj: Any, class_name: str) -> Any | None:
    """The vector wrapper ``class_name`` in the stack (or its reference model)."""
    return find_layer(obj, class_name, "env")


class GymVectorFamily(ReferenceEnvFamily):
    name = GYMNASIUM_VECTOR
    api = "gymnasium.vector"
    claimed_classes = ("gymnasium.vector.vector_env.VectorEnv",)
    factory_shape = FactoryShape(
        returns=claimed_classes, return_names=("SyncVectorEnv", "AsyncVectorEnv", "VectorWrapper")
    )
    #: the Gymnasium defects the bundled systems show (FINDINGS.md): named on the bundled systems'
    #: own failures in every report (rlconform.core.findings), and on the failures a user's stack
    #: inherits from them (rlconform.core.inherited)
    findings = {
        ("gymnasium.*VectorEnv.*", "aliasing.caller_arguments"): "G1",
        ("gymnasium.*VectorEnv.*", "api.failed_call_no_side_effect"): "G2",
        ("gymnasium.AsyncVectorEnv.*", "lifecycle.responsive"): "G3",
        **{("gymnasium.AsyncVectorEnv.NextStep.noshm*", spec): "G4" for spec in _G4_SPECS},
        ("gymnasium.RecordEpisodeStatistics.SyncVectorEnv.*", "statistics.episode"): "G5",
        ("gymnasium.RecordEpisodeStatistics.SyncVectorEnv.*", "model.outputs_match"): "G5",
        ("gymnasium.NormalizeReward.SyncVectorEnv.*", "statistics.normalizer"): "G6",
        ("gymnasium.NormalizeReward.SyncVectorEnv.*", "model.outputs_match"): "G6",
        ("gymnasium.*VectorEnv.*nocopy", "aliasing.returned_objects"): "G7",
        # the compatibility matrix's rows: failures of older releases only (pass on the newest)
        ("gymnasium.*VectorEnv.*", "api.wrong_size_batch_rejected"): "M2",
        ("gymnasium.NormalizeObservation.SyncVectorEnv.*", "dtype.observations"): "M4",
    }

    def library_layers(self, obj: Any) -> list[str]:
        """The bundled Gymnasium systems under a user's stack: the vectorizer, in its autoreset mode
        and configuration, then the statistics wrapper or normalizer over it."""
        mode = autoreset_mode_of(obj)[0]
        if mode not in MODES:
            return []
        bases = []
        for layer in layer_chain(obj, "env"):
            name = type(layer).__name__
            if name in ("SyncVectorEnv", "AsyncVectorEnv") and type(layer).__module__.startswith("gymnasium."):
                suffix = ".noshm" if name == "AsyncVectorEnv" and not getattr(layer, "shared_memory", True) else ""
                suffix += "" if getattr(layer, "copy", True) else ".nocopy"
                bases.append(f"gymnasium.{name}.{mode}{suffix}")
        wrappers = [
            f"gymnasium.{name}.SyncVectorEnv.{mode}"
            for name in ("RecordEpisodeStatistics", "NormalizeReward")
            if bases == [f"gymnasium.SyncVectorEnv.{mode}"] and find_wrapper(obj, name) is not None
        ]
        # the vectorizer first: a defect of its own (G1) is named there, not on a wrapper over it
        return bases + wrappers

    factory_signature = "(env_fns: list[Callable[[], gymnasium.Env]], **kwargs) -> gymnasium.vector.VectorEnv"
    plain_build = "envs = {factory}(env_fns)"

    def user_capabilities(self) -> Capabilities:
        return Capabilities(partial_reset=True)

    contract = Contract(
        reward_dtype="float64", reward_precision="float64", step_arity=5, separate_flags=True, vectorized=True
    )

    def describe_semantics(self, obj: Any) -> dict[str, Any]:
        mode, declared = autoreset_mode_of(obj)
        raw_mode = (getattr(obj, "metadata", None) or {}).get("autoreset_mode")
        normalizers = [
            _normalizer_entry(name, wrapper)
            for name in ("NormalizeObservation", "NormalizeReward")
            if (wrapper := find_wrapper(obj, name)) is not None
        ]
        reward_norm = find_wrapper(obj, "NormalizeReward")
        semantics = {
            "autoreset_mode": mode,
            "autoreset_mode_declared": declared,
            "autoreset_mode_type": type(raw_mode).__name__,
            "num_envs": getattr(obj, "num_envs", None),
            "single_observation_space": getattr(obj, "single_observation_space", None),
            "single_action_space": getattr(obj, "single_action_space", None),
            "observation_space": getattr(obj, "observation_space", None),
            "episode_statistics": "episode" if find_wrapper(obj, "RecordEpisodeStatistics") is not None else None,
            "normalizers": normalizers,
            "normalizer_gamma": getattr(reward_norm, "gamma", None),
            # its sub-envs' layers (a recorder or normalizer around each) are in worker processes
            "sub_env_workers": "AsyncVectorEnv" if find_wrapper(obj, "AsyncVectorEnv") is not None else None,
        }
        if not normalizers:
            # no library normalizer over the sub-envs: a user's own layer that exposes running
            # statistics is checked as theirs are (rlconform.specs.own_normalizers)
            own = own_normalizer_semantics(find_own_normalizer(layer_chain(obj, "env")))
            semantics.update(own)
            normalizers = list(own.get("normalizers", []))
        sub_env = sub_env_layer_semantics(obj, mode, vector_statistics=semantics["episode_statistics"] is not None)
        semantics["normalizers"] = normalizers + sub_env.pop("normalizers", [])
        semantics.update(sub_env)
        if semantics["episode_statistics"] is None and "episode_statistics_envs" not in semantics:
            # no library recorder, over or inside the sub-envs: a user's own layer is checked by
            # what it reports (rlconform.specs.statistics.episode_statistics_reading)
            semantics["episode_statistics"] = episode_statistics_reading(
                layer_chain(obj, "env"), "RecordEpisodeStatistics"
            )
        return semantics

    def object_problems(self, semantics: dict[str, Any], num_envs: int) -> list[str]:
        problems = []
        if not semantics.get("autoreset_mode_declared"):
            problems.append("metadata has no 'autoreset_mode' entry (Gymnasium's wrappers then assume NextStep)")
        elif installed_release().has_autoreset_mode and semantics.get("autoreset_mode_type") != "AutoresetMode":
            problems.append(
                f"metadata['autoreset_mode'] is a {semantics.get('autoreset_mode_type')}, not a gymnasium.vector.AutoresetMode"
            )
        if semantics.get("num_envs") != num_envs:
            problems.append(f"num_envs is {semantics.get('num_envs')!r} for {num_envs} env factories")
        for name in ("single_observation_space", "single_action_space", "observation_space"):
            if semantics.get(name) is None:
                problems.append(f"no {name} attribute")
        return problems

    def api_problems(self, call: CallRecord, num_envs: int) -> list[str]:
        result = call.result_live
        problems: list[str] = []
        expected = 2 if isinstance(call.op, Reset) else 5
        if not isinstance(result, tuple) or len(result) != expected:
            length = len(result) if isinstance(result, tuple) else None
            return [
                f"returned a {type(result).__name__}{f' of length {length}' if length is not None else ''}; documented: a {expected}-tuple"
            ]
        infos = result[-1]
        if not isinstance(infos, dict):
            return [f"infos is a {type(infos).__name__}; documented: a dict of batched values with _key masks"]
        missing = missing_masks(infos)
        if missing:
            problems.append(f"info keys without their _mask entry: {missing}")
        return problems

    def begin(self, driver: Any, obj: Any) -> None:
        send_in_space(driver, getattr(obj, "single_action_space", None))
        driver.state["mode"] = autoreset_mode_of(obj)[0]
        driver.state["done"] = [False] * driver.num_envs

    def model_match(self, obj: Any) -> Any:
        mode = autoreset_mode_of(obj)[0]
        if mode not in MODES:
            return ModelMatch(None, f"no reference model of the autoreset mode {mode!r}")
        return match_vector_env_model(obj, mode)

    # ---------------------------------------------------------------------------------- driving
    def execute(self, driver: Any, obj: Any, op: Op) -> None:
        if isinstance(op, Reset):
            self._reset(driver, obj, op, implied=False)
            return
        assert isinstance(op, (Step, BadStep))
        done = driver.state["done"]
        if driver.state["mode"] == "Disabled" and any(done):
            self._reset(driver, obj, Reset(seed=None, mask=tuple(done)), implied=True)
        actions = driver.batch(op.actions)
        record = driver.call(
            op,
            f"envs.step({array_literal(actions)})",
            obj.step,
            (actions,),
            view=functools.partial(_view_step, driver.num_envs),
            obj=obj,
        )
        if record.view is not None and record.view.terminated is not None and record.view.truncated is not None:
            driver.state["done"] = [a or b for a, b in zip(record.view.terminated, record.view.truncated, strict=True)]

    def _reset(self, driver: Any, obj: Any, op: Reset, *, implied: bool) -> None:
        options = None if op.mask is None else {"reset_mask": np.asarray(op.mask, dtype=np.bool_)}
        source = f"envs.reset(seed={op.seed!r}" + (
            f", options={{'reset_mask': np.array({list(op.mask)})}})" if op.mask is not None else ")"
        )
        record = driver.call(
            op,
            source,
            lambda seed, opts: obj.reset(seed=seed, options=opts),
            (op.seed, options),
            implied=implied,
            view=functools.partial(_view_reset, driver.num_envs, op.mask),
            obj=obj,
        )
        if record.view is not None:
            touched = op.mask if op.mask is not None else (True,) * driver.num_envs
            driver.state["done"] = [False if t else d for d, t in zip(driver.state["done"], touched, strict=True)]

    def observe(self, obj: Any, record: CallRecord) -> None:
        """Read the normalizers' published statistics right after the call; with them the
        normalised outputs are mapped back to env units for comparison with ground truth."""
        view = record.view
        obs_norm = find_wrapper(obj, "NormalizeObservation")
        if obs_norm is not None:
            rms = obs_norm.obs_rms
            if _updating(obs_norm):
                record.extra["obs_rms"] = (
                    np.array(rms.mean, copy=True),
                    np.array(rms.var, copy=True),
                    float(rms.count),
                )
            if view is not None:
                scale = np.sqrt(np.asarray(rms.var, dtype=np.float64) + obs_norm.epsilon)
                mean = np.asarray(rms.mean, dtype=np.float64)
                view.env_obs = [np.asarray(o, dtype=np.float64) * scale + mean for o in view.obs]
        rew_norm = find_wrapper(obj, "NormalizeReward")
        if rew_norm is not None:
            rms = rew_norm.return_rms
            if _updating(rew_norm):
                record.extra["return_rms"] = (float(rms.mean), float(rms.var), float(rms.count))
                record.extra["accumulated_reward"] = np.array(rew_norm.accumulated_reward, copy=True)
            if view is not None and view.rewards is not None:
                scale = float(np.sqrt(rms.var + rew_norm.epsilon))
                view.env_rewards = [r * scale for r in view.rewards]
        if obs_norm is None and rew_norm is None:
            own = find_own_normalizer(layer_chain(obj, "env"))
            if own is not None:
                own.observe(record.extra, int(getattr(obj, "num_envs", 0) or 0))
        sub_env_stats = sub_env_normalizer_statistics(obj)
        if sub_env_stats:
            record.extra["sub_env_normalizers"] = sub_env_stats

    # ----------------------------------------------------------------------------------- recipe
    def recipe(self, calls: list[CallRecord], num_envs: int, semantics: dict[str, Any]) -> list[Slot]:
        mode = semantics.get("autoreset_mode", "NextStep")
        last_obs: list[Any] = [None] * num_envs
        prev_done = [False] * num_envs
        slots: list[Slot] = []
        for record in calls:
            view = record.view
            if record.failed or view is None:
                continue
            obs = view.obs_in_env_units()
            if view.kind == "reset":
                for j in range(num_envs):
                    if view.touched is None or view.touched[j]:
                        last_obs[j] = obs[j]
                        prev_done[j] = False
                continue
            assert view.rewards is not None and view.terminated is not None and view.truncated is not None
            rewards = view.rewards_in_env_units()
            assert rewards is not None
            finals = view.final_obs_in_env_units()
            actions = record.op.actions  # type: ignore[union-attr]
            for j in range(num_envs):
                action = actions[j] if j < len(actions) else None
                done = view.terminated[j] or view.truncated[j]
                info = view.infos[j] if view.infos is not None else None
                if mode == "NextStep" and prev_done[j]:
                    kind = "reset_step"
                    next_obs = obs[j]
                else:
                    kind = "transition"
                    next_obs = obs[j]
                    if mode == "SameStep" and done:
                        next_obs = finals[j] if finals is not None else None
                        if view.final_infos is not None:
                            info = view.final_infos[j]
                slots.append(
                    Slot(
                        env=j,
                        call=record.position,
                        agent_step=record.agent_step,
                        kind=kind,  # type: ignore[arg-type]
                        obs=last_obs[j],
                        action=action,
                        reward=rewards[j],
                        next_obs=next_obs,
                        terminated=view.terminated[j],
                        truncated=view.truncated[j],
                        info=info,
                    )
                )
                last_obs[j] = obs[j]
                prev_done[j] = done
        return slots


def sub_env_layer_semantics(
    obj: Any, mode: str, *, vector_statistics: bool, layers_by_env: dict[int, tuple[Any, ...]] | None = None
) -> dict[str, Any]:
    """What the user put inside each in-process sub-env (CleanRL's ``make_env`` thunks): an
    episode recorder, read where SyncVectorEnv documents a sub-env's step info (the step's info,
    or, in SameStep, the ended sub-env's ``final_info``), and running normalizers. A single env's
    own wrapper chain (``layers_by_env``: rlconform.envs.tap.single_env_layers) is read the same
    way, as its one sub-env: the same layer, the same verdict, in every family."""
    layers_by_env = sub_env_layers(obj) if layers_by_env is None else layers_by_env
    if not layers_by_env:
        return {}
    semantics: dict[str, Any] = {}
    recorders = sub_env_layers_of_class(layers_by_env, "RecordEpisodeStatistics")
    place = "final_info" if mode == "SameStep" else "info"
    if recorders and not vector_statistics:
        key = next(str(getattr(layer, "_stats_key", "episode")) for layer, _ in recorders.values())
        semantics.update(
            sub_env_statistics(recorders, key=key, place=place, decimals=None, reward_changers=REWARD_CHANGERS)
        )
    elif not vector_statistics and (own := user_sub_env_layers(layers_by_env)):
        # a layer of the user's own around each sub-env: a recorder if it reports statistics in
        # the documented layout, held to what RecordEpisodeStatistics there is held to
        semantics.update(
            sub_env_statistics(own, key=BY_OUTPUT, place=place, decimals=None, reward_changers=REWARD_CHANGERS)
        )
    entries = []
    for name in ("NormalizeObservation", "NormalizeReward"):
        found = sub_env_layers_of_class(layers_by_env, name)
        if found:
            entry = sub_env_normalizer(name)
            updating = any(_updating(layer) for layer, _ in found.values())
            entries.append(entry if updating else frozen_normalizer(entry, "update_running_mean=False"))
            if name == "NormalizeReward":
                semantics["sub_env_normalizer_gamma"] = {
                    env: float(layer.gamma) for env, (layer, _) in found.items() if hasattr(layer, "gamma")
                }
    if entries:
        semantics["normalizers"] = entries
    return semantics


def sub_env_normalizer_statistics(
    obj: Any, layers_by_env: dict[int, tuple[Any, ...]] | None = None
) -> dict[int, dict[str, Any]]:
    """The statistics of the running normalizers inside each in-process sub-env (or of a single
    env's own chain, ``layers_by_env``), right after a call: the samples each counted, and a
    reward normalizer's discounted return."""
    layers_by_env = sub_env_layers(obj) if layers_by_env is None else layers_by_env
    if not layers_by_env:
        return {}
    stats: dict[int, dict[str, Any]] = {}
    for env, (layer, _) in sub_env_layers_of_class(layers_by_env, "NormalizeObservation").items():
        rms = getattr(layer, "obs_rms", None)
        if _updating(layer) and rms is not None:
            stats.setdefault(env, {}).update(obs_count=float(rms.count), obs_layer=type(layer).__name__)
    for env, (layer, below) in sub_env_layers_of_class(layers_by_env, "NormalizeReward").items():
        rms = getattr(layer, "return_rms", None)
        if not _updating(layer) or rms is None:
            continue
        accumulated = getattr(layer, "discounted_reward", None)
        stats.setdefault(env, {}).update(
            return_count=float(rms.count),
            return_layer=type(layer).__name__,
            accumulated_reward=None if accumulated is None else float(np.asarray(accumulated).reshape(-1)[0]),
            rewards_changed_by=[type(b).__name__ for b in below if is_a(b, *REWARD_CHANGERS)],
        )
    return stats


def _updating(normalizer: Any) -> bool:
    """Whether a normalizer is updating its statistics: with ``update_running_mean = False`` they
    are frozen by design, so the normalizer statistics spec has no counts to check."""
    return bool(getattr(normalizer, "update_running_mean", True))


def _view_reset(num_envs: int, mask: tuple[bool, ...] | None, result: Any) -> CallView:
    obs, infos = result
    return CallView(
        kind="reset",
        obs=split_batch(obs, num_envs),
        infos=unbatch_infos(infos, num_envs),
        touched=list(mask) if mask is not None else [True] * num_envs,
    )


def _view_step(num_envs: int, result: Any) -> CallView:
    obs, rewards, terminated, truncated, infos = result
    per_info = unbatch_infos(infos, num_envs)
    return CallView(
        kind="step",
        obs=split_batch(obs, num_envs),
        rewards=as_float_list(rewards, num_envs),
        terminated=as_bool_list(terminated, num_envs),
        truncated=as_bool_list(truncated, num_envs),
        infos=per_info,
        final_obs=[info.get(installed_release().final_obs_key) for info in per_info],
        final_infos=[info.get("final_info") for info in per_info],
        touched=[True] * num_envs,
    )


FAMILY = GymVectorFamily()

# ------------------------------------------------------------------------------------- systems


def mode_kwargs(mode: str) -> dict[str, Any]:
    """The constructor argument that selects ``mode`` on the installed release: none on a release
    whose vector envs have one mode only (the registry skips the other modes there)."""
    if not installed_release().has_autoreset_mode:
        return {}
    from gymnasium.vector import AutoresetMode

    return {"autoreset_mode": AutoresetMode(mode)}


def mode_source(mode: str) -> str:
    """``mode_kwargs`` as reproducer source (a leading comma, or nothing)."""
    if not installed_release().has_autoreset_mode:
        return ""
    return f", autoreset_mode=gymnasium.vector.AutoresetMode({mode!r})"


def mode_availability(mode: str, *more: tuple[bool, str]) -> Callable[[], str | None]:
    """A System.availability: the installed release lacks ``mode`` or one of the ``more``
    (condition, what) features."""

    def availability() -> str | None:
        reason = installed_release().mode_unavailable(mode)
        if reason is not None:
            return reason
        for condition, what in more:
            reason = unavailable_unless(condition, what)
            if reason is not None:
                return reason
        return None

    return availability


def _capabilities(**kwargs: Any) -> Capabilities:
    """Partial resets (``reset_mask``) only where the installed release has them."""
    if not installed_release().reset_mask:
        kwargs["partial_reset"] = False
    return Capabilities(**kwargs)


def _sync(mode: str, copy: bool) -> System:
    def build(env_fns: Sequence[EnvFn]) -> Any:
        from gymnasium.vector import SyncVectorEnv

        return SyncVectorEnv(list(env_fns), copy=copy, **mode_kwargs(mode))

    suffix = "" if copy else ".nocopy"
    return System(
        id=f"gymnasium.SyncVectorEnv.{mode}{suffix}",
        family=GYMNASIUM_VECTOR,
        title=f"SyncVectorEnv(autoreset_mode={mode}, copy={copy})",
        build=build,
        source=f"gymnasium.vector.SyncVectorEnv(env_fns, copy={copy}{mode_source(mode)})",
        requires=("gymnasium",),
        capabilities=_capabilities(),
        availability=mode_availability(mode),
    )


def _async(mode: str, shared_memory: bool, copy: bool) -> System:
    def build(env_fns: Sequence[EnvFn]) -> Any:
        from gymnasium.vector import AsyncVectorEnv

        return AsyncVectorEnv(list(env_fns), shared_memory=shared_memory, copy=copy, **mode_kwargs(mode))

    suffix = ("" if shared_memory else ".noshm") + ("" if copy else ".nocopy")
    return System(
        id=f"gymnasium.AsyncVectorEnv.{mode}{suffix}",
        family=GYMNASIUM_VECTOR,
        title=f"AsyncVectorEnv(autoreset_mode={mode}, shared_memory={shared_memory}, copy={copy})",
        build=build,
        source=(
            f"gymnasium.vector.AsyncVectorEnv(env_fns, shared_memory={shared_memory}, copy={copy}{mode_source(mode)})"
        ),
        requires=("gymnasium",),
        out_of_process=True,
        capabilities=_capabilities(max_envs=3),
        availability=mode_availability(mode),
    )


def _wrapped(wrapper: str, mode: str, capabilities: Capabilities, model_suffix: str) -> System:
    def build(env_fns: Sequence[EnvFn]) -> Any:
        from gymnasium.vector import SyncVectorEnv
        from gymnasium.wrappers import vector as vector_wrappers

        inner = SyncVectorEnv(list(env_fns), **mode_kwargs(mode))
        return getattr(vector_wrappers, wrapper)(inner)

    return System(
        id=f"gymnasium.{wrapper}.SyncVectorEnv.{mode}",
        family=GYMNASIUM_VECTOR,
        title=f"wrappers.vector.{wrapper}(SyncVectorEnv(autoreset_mode={mode}))",
        build=build,
        source=f"gymnasium.wrappers.vector.{wrapper}(gymnasium.vector.SyncVectorEnv(env_fns{mode_source(mode)}))",
        requires=("gymnasium",),
        capabilities=capabilities,
        model=f"reference.gymnasium.vector.{mode}.{model_suffix}",
        availability=mode_availability(
            mode, (installed_release().vector_wrappers, "gymnasium.wrappers.vector (added in 1.0)")
        ),
    )


for _mode in MODES:
    for _copy in (True, False):
        SYSTEMS.add(_sync(_mode, _copy))
        for _shm in (True, False):
            SYSTEMS.add(_async(_mode, _shm, _copy))
    SYSTEMS.add(_wrapped("RecordEpisodeStatistics", _mode, _capabilities(), "RecordEpisodeStatistics"))
    SYSTEMS.add(_wrapped("NormalizeReward", _mode, _capabilities(), "NormalizeReward"))
SYSTEMS.add(
    _wrapped(
        "NormalizeObservation",
        "NextStep",
        Capabilities(
            obs_kinds=frozenset({"box"}),
            partial_reset=False,
            notes=("NormalizeObservation documents that it refuses partial resets and modes other than NextStep",),
        ),
        "NormalizeObservation",
    )
)


def _normalizer_entry(name: str, wrapper: Any) -> str:
    """``name``, or its frozen form when the wrapper's ``update_running_mean`` is off (Gymnasium's
    documented way to evaluate with fixed statistics: ``statistics.normalizer`` does not apply)."""
    return name if _updating(wrapper) else frozen_normalizer(name, "update_running_mean=False")
