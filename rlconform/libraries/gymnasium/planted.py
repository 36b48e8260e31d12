"""Planted bugs: reference models with one deliberate defect each.

Every spec must catch at least one planted bug of its kind (``plants`` names the specs a bug must
be caught by); the suite's own tests check that it does, and the benchmark measures how fast.
Each bug is the smallest change to a correct model that reproduces a mistake real libraries make.
"""

from __future__ import annotations

import multiprocessing
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from rlconform.core.system import Capabilities, EnvFn, System, SystemTable
from rlconform.envs.stacking import stack_obs
from rlconform.libraries.gymnasium.env_model import ModelAutoreset
from rlconform.libraries.gymnasium.infos import final_entries, final_obs_entries, merge_info
from rlconform.libraries.gymnasium.vector_model import (
    ModelNormalizeReward,
    ModelRecordEpisodeStatistics,
    ModelVectorEnv,
    _rows,
    declared_mode,
)
from rlconform.libraries.gymnasium.vector_model import ModelVectorEnv as Correct
from rlconform.specs.families import GYMNASIUM_ENV, GYMNASIUM_VECTOR, SB3_VECENV

#: this module's systems, read by the catalog (rlconform.core.catalog)
SYSTEMS = SystemTable()

# --------------------------------------------------------------------------- gymnasium.vector bugs


class ShiftedReward(ModelVectorEnv):
    """Returns each sub-env's previous reward (an off-by-one in a reward buffer)."""

    def step(self, actions: Any) -> Any:
        obs, rewards, terminated, truncated, infos = super().step(actions)
        previous = getattr(self, "_previous", np.zeros_like(rewards))
        self._previous = rewards.copy()
        return obs, previous, terminated, truncated, infos


class MislabelledMode(ModelVectorEnv):
    """Behaves as next-step autoreset but declares same-step: a recipe that trusts the metadata
    records every reset step as a transition."""

    def __init__(self, env_fns: Sequence[EnvFn]) -> None:
        super().__init__(env_fns, "NextStep")
        self.metadata["autoreset_mode"] = declared_mode("SameStep")


class DoubleStep(ModelVectorEnv):
    """Steps every sub-env twice per call and returns the second result (a retried call)."""

    def step(self, actions: Any) -> Any:
        rows = _rows(actions)
        for i, env in enumerate(self.envs):
            if not self._ended[i]:
                _, _, term, trunc, _ = env.step(rows[i])
                if term or trunc:
                    env.reset()
        return super().step(actions)


class ResetAllOnEnd(ModelVectorEnv):
    """Same-step autoreset that resets every sub-env when any one ends (discarding episodes)."""

    def step(self, actions: Any) -> Any:
        obs, rewards, terminated, truncated, infos = super().step(actions)
        ended = np.logical_or(terminated, truncated)
        if ended.any():
            for i, env in enumerate(self.envs):
                if not ended[i]:
                    self._obs[i], _ = env.reset()
            obs = stack_obs(self.single_observation_space, self._obs)
        return obs, rewards, terminated, truncated, infos


class StaleFirstObs(ModelVectorEnv):
    """Same-step autoreset that returns the terminal observation instead of the reset one, so the
    next episode starts from the old episode's last observation."""

    def step(self, actions: Any) -> Any:
        obs, rewards, terminated, truncated, infos = super().step(actions)
        finals, mask = final_obs_entries(infos)
        if finals is not None and mask is not None:
            for i, final in enumerate(finals):
                if mask[i]:
                    self._obs[i] = final
            obs = stack_obs(self.single_observation_space, self._obs)
        return obs, rewards, terminated, truncated, infos


class WrongFinalObs(ModelVectorEnv):
    """Same-step autoreset whose final_obs is the reset observation (the true last one is lost)."""

    def step(self, actions: Any) -> Any:
        obs, rewards, terminated, truncated, infos = super().step(actions)
        finals, mask = final_obs_entries(infos)
        if finals is not None and mask is not None:
            for i in range(self.num_envs):
                if mask[i]:
                    finals[i] = self._obs[i]
        return obs, rewards, terminated, truncated, infos


class TruncationHidesTermination(ModelVectorEnv):
    """Reports terminated=False whenever the same step also truncated (time-out wins)."""

    def step(self, actions: Any) -> Any:
        obs, rewards, terminated, truncated, infos = super().step(actions)
        return obs, rewards, terminated & ~truncated, truncated, infos


class DropsTruncation(ModelVectorEnv):
    """Never reports truncated (folds it away)."""

    def step(self, actions: Any) -> Any:
        obs, rewards, terminated, truncated, infos = super().step(actions)
        return obs, rewards, terminated, np.zeros_like(truncated), infos


class RewardingResetStep(ModelVectorEnv):
    """Next-step autoreset whose reset step repeats the last reward of the ended episode."""

    def step(self, actions: Any) -> Any:
        resetting = list(self._ended)
        obs, rewards, terminated, truncated, infos = super().step(actions)
        last = getattr(self, "_last", np.zeros_like(rewards))
        out = np.where(resetting, last, rewards)
        self._last = rewards.copy()
        return obs, out, terminated, truncated, infos


class ReversedInfos(ModelVectorEnv):
    """Batches infos in reverse sub-env order (an index error in the info merge)."""

    def step(self, actions: Any) -> Any:
        obs, rewards, terminated, truncated, infos = super().step(actions)
        return obs, rewards, terminated, truncated, _reverse(infos)


def _reverse(infos: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in infos.items():
        if isinstance(value, dict):
            out[key] = _reverse(value)
        elif isinstance(value, np.ndarray):
            out[key] = value[::-1].copy()
        else:
            out[key] = value
    return out


class ForgetsTruncatedReset(ModelVectorEnv):
    """Same-step autoreset that forgets to reset a sub-env whose episode was only truncated: the
    next step steps an ended episode."""

    def step(self, actions: Any) -> Any:
        rows = _rows(actions)
        if len(rows) != self.num_envs:
            raise ValueError(f"{len(rows)} actions for {self.num_envs} sub-envs")
        rewards = np.zeros(self.num_envs)
        terminated = np.zeros(self.num_envs, dtype=bool)
        truncated = np.zeros(self.num_envs, dtype=bool)
        infos: dict[str, Any] = {}
        for i, env in enumerate(self.envs):
            obs, reward, term, trunc, info = env.step(rows[i])
            rewards[i], terminated[i], truncated[i] = reward, term, trunc
            if term:
                merge_info(infos, final_entries(obs, info), i, self.num_envs)
                obs, info = env.reset()
            elif trunc:
                merge_info(infos, final_entries(obs, info), i, self.num_envs)
            self._obs[i] = obs
            merge_info(infos, info, i, self.num_envs)
        return stack_obs(self.single_observation_space, self._obs), rewards, terminated, truncated, infos


class SameSeedEverywhere(ModelVectorEnv):
    """Passes the caller's seed unchanged to every sub-env (identical, correlated sub-envs)."""

    def reset(self, *, seed: Any = None, options: dict[str, Any] | None = None) -> Any:
        if isinstance(seed, int):
            seed = [seed] * self.num_envs
        return super().reset(seed=seed, options=options)


class SeedsOnlyOnce(ModelVectorEnv):
    """Applies a seed only the first time it is given; later seeded resets continue the RNG."""

    def reset(self, *, seed: Any = None, options: dict[str, Any] | None = None) -> Any:
        if seed is not None and getattr(self, "_seeded", False):
            seed = None
        if seed is not None:
            self._seeded = True
        return super().reset(seed=seed, options=options)


class ReusesBuffer(ModelVectorEnv):
    """Returns its internal observation buffer and overwrites it on the next call."""

    def _fill(self, obs: Any) -> Any:
        if not hasattr(self, "_buffer"):
            self._buffer = obs
            return obs
        return _copy_into(self._buffer, obs)

    def reset(self, *, seed: Any = None, options: dict[str, Any] | None = None) -> Any:
        obs, infos = super().reset(seed=seed, options=options)
        return self._fill(obs), infos

    def step(self, actions: Any) -> Any:
        obs, *rest = super().step(actions)
        return (self._fill(obs), *rest)


def _copy_into(buffer: Any, obs: Any) -> Any:
    """Write ``obs`` into ``buffer`` leaf by leaf (Dict and Tuple observations too: a planted bug
    that raised on them would be blamed by every spec that reads the call)."""
    if isinstance(buffer, dict):
        for key in buffer:
            buffer[key] = _copy_into(buffer[key], obs[key])
        return buffer
    if isinstance(buffer, tuple):
        return tuple(_copy_into(b, o) for b, o in zip(buffer, obs, strict=True))
    np.copyto(buffer, obs)
    return buffer


class PopsOptions(ModelVectorEnv):
    """Removes reset_mask from the caller's options dict."""

    def reset(self, *, seed: Any = None, options: dict[str, Any] | None = None) -> Any:
        out = super().reset(seed=seed, options=options)
        if options is not None:
            options.pop("reset_mask", None)
        return out


class Float64Observations(ModelVectorEnv):
    """Returns observations as float64 whatever the declared dtype."""

    def reset(self, *, seed: Any = None, options: dict[str, Any] | None = None) -> Any:
        obs, infos = super().reset(seed=seed, options=options)
        return _as_float64(obs), infos

    def step(self, actions: Any) -> Any:
        obs, *rest = super().step(actions)
        return (_as_float64(obs), *rest)


def _as_float64(obs: Any) -> Any:
    if isinstance(obs, dict):
        return {k: _as_float64(v) for k, v in obs.items()}
    if isinstance(obs, tuple):
        return tuple(_as_float64(v) for v in obs)
    return np.asarray(obs, dtype=np.float64)


class Float32Rewards(ModelVectorEnv):
    """Returns rewards as float32 (Gymnasium documents float64)."""

    def step(self, actions: Any) -> Any:
        obs, rewards, *rest = super().step(actions)
        return (obs, rewards.astype(np.float32), *rest)


class ListActions(ModelVectorEnv):
    """Hands each sub-env its action converted to a Python list."""

    def step(self, actions: Any) -> Any:
        rows = _rows(actions)
        converted = [np.asarray(r).tolist() for r in rows]

        class _Batch(list):  # type: ignore[type-arg]
            pass

        return super().step(_Batch(converted))


class NoInfoMasks(ModelVectorEnv):
    """Returns infos without their ``_key`` masks."""

    def step(self, actions: Any) -> Any:
        obs, rewards, terminated, truncated, infos = super().step(actions)
        return obs, rewards, terminated, truncated, {k: v for k, v in infos.items() if not k.startswith("_")}


class TruncatesBatch(ModelVectorEnv):
    """Silently uses the first num_envs actions of a longer batch."""

    def step(self, actions: Any) -> Any:
        rows = _rows(actions)
        if len(rows) > self.num_envs:
            actions = np.asarray(actions)[: self.num_envs]
        return super().step(actions)


class StepsBeforeValidating(ModelVectorEnv):
    """Steps the sub-envs it has actions for, then raises on a short batch."""

    def step(self, actions: Any) -> Any:
        rows = _rows(actions)
        if len(rows) < self.num_envs:
            for i, row in enumerate(rows):
                if not self._ended[i]:
                    self.envs[i].step(row)
        return super().step(actions)


class RaisesOnValidAction(ModelVectorEnv):
    """Raises on a well-formed batch whose first action is the space's last value (a conversion
    that only handles some values, as an int() of an array does)."""

    def step(self, actions: Any) -> Any:
        rows = _rows(actions)
        space = self.single_action_space
        if (
            len(rows) == self.num_envs
            and hasattr(space, "n")
            and int(np.asarray(rows[0]).reshape(-1)[0]) == space.n - 1
        ):
            raise TypeError(f"cannot convert action {rows[0]!r}")
        return super().step(actions)


def _sleep_forever() -> None:  # pragma: no cover - runs in the leaked process
    while True:
        time.sleep(60)


class LeaksWorker(ModelVectorEnv):
    """Starts a worker process and never stops it."""

    def __init__(self, env_fns: Sequence[EnvFn], mode: str) -> None:
        super().__init__(env_fns, mode)
        self._worker = multiprocessing.get_context("fork").Process(target=_sleep_forever, daemon=True)
        self._worker.start()


class ExtraInfoKey(ModelVectorEnv):
    """Adds an undocumented info key; only the reference model notices."""

    def step(self, actions: Any) -> Any:
        obs, rewards, terminated, truncated, infos = super().step(actions)
        merge_info(infos, {"planted": 1}, 0, self.num_envs)
        return obs, rewards, terminated, truncated, infos


class CountsResetSteps(ModelRecordEpisodeStatistics):
    """Episode statistics that count the reset step of next-step autoreset."""

    def step(self, actions: Any) -> Any:
        self._reset_step = np.zeros(self.num_envs, dtype=bool)
        return super().step(actions)


class NormalizesResetSteps(ModelNormalizeReward):
    """Reward statistics that also sample the reset step of next-step autoreset."""

    def step(self, actions: Any) -> Any:
        self._reset_step = np.zeros(self.num_envs, dtype=bool)
        return super().step(actions)


# ------------------------------------------------------------------------------ other families


class RewardingAutoreset(ModelAutoreset):
    """Single-env Autoreset whose reset step repeats the episode's last reward."""

    def step(self, action: Any) -> Any:
        resetting = self._ended
        obs, reward, terminated, truncated, info = super().step(action)
        if resetting:
            reward = getattr(self, "_last", 0.0)
        self._last = reward
        return obs, reward, terminated, truncated, info


# ---------------------------------------------------------------------------------- registration


def plant(
    name: str,
    build: Callable[[Sequence[EnvFn]], Any],
    plants: tuple[str, ...],
    description: str,
    *,
    family: str = GYMNASIUM_VECTOR,
    capabilities: Capabilities | None = None,
    model: str | None = None,
    source: str | None = None,
    mode: str = "SameStep",
    table: SystemTable = SYSTEMS,
) -> None:
    """Add the planted bug ``planted.<name>`` to ``table`` (default: this module's systems)."""
    # a planted bug is its correct model plus one defect: it names that model, since no stack of
    # library classes is there to be recognised (a user's system gets the model of its stack)
    model = model or {
        GYMNASIUM_VECTOR: f"reference.gymnasium.vector.{mode}",
        SB3_VECENV: "reference.sb3.VecEnv",
    }.get(family)
    table.add(
        System(
            id=f"planted.{name}",
            family=family,
            title=f"planted bug: {description}",
            build=build,
            source=source or f"planted.{name}(env_fns)",
            requires=("stable-baselines3",) if family == SB3_VECENV else ("gymnasium",),
            kind="planted",
            capabilities=capabilities or Capabilities(),
            model=model,
            plants=plants,
            description=description,
        )
    )


def _vector(cls: type[ModelVectorEnv], mode: str) -> Callable[[Sequence[EnvFn]], Any]:
    return lambda env_fns: cls(list(env_fns), mode)


def _register() -> None:
    same, nxt = "SameStep", "NextStep"
    plant("shifted_reward", _vector(ShiftedReward, same), ("transitions.exact",), ShiftedReward.__doc__ or "")
    plant(
        "mislabelled_mode",
        lambda fns: MislabelledMode(list(fns)),
        ("transitions.exact",),
        MislabelledMode.__doc__ or "",
    )
    plant("double_step", _vector(DoubleStep, same), ("counts.env_steps",), DoubleStep.__doc__ or "")
    plant(
        "reset_all_on_end",
        _vector(ResetAllOnEnd, same),
        ("continuity.no_discarded_episode",),
        ResetAllOnEnd.__doc__ or "",
    )
    plant("stale_first_obs", _vector(StaleFirstObs, same), ("continuity.fresh_first_obs",), StaleFirstObs.__doc__ or "")
    plant("wrong_final_obs", _vector(WrongFinalObs, same), ("terminal.final_obs",), WrongFinalObs.__doc__ or "")
    plant(
        "truncation_hides_termination",
        _vector(TruncationHidesTermination, same),
        ("flags.terminated",),
        TruncationHidesTermination.__doc__ or "",
    )
    plant("drops_truncation", _vector(DropsTruncation, same), ("flags.truncated",), DropsTruncation.__doc__ or "")
    plant(
        "rewarding_reset_step",
        _vector(RewardingResetStep, nxt),
        ("reset_step.neutral",),
        RewardingResetStep.__doc__ or "",
        mode=nxt,
    )
    plant("reversed_infos", _vector(ReversedInfos, same), ("infos.aligned",), ReversedInfos.__doc__ or "")
    plant(
        "forgets_truncated_reset",
        _vector(ForgetsTruncatedReset, same),
        ("lifecycle.no_step_after_end",),
        ForgetsTruncatedReset.__doc__ or "",
    )
    plant(
        "same_seed_everywhere",
        _vector(SameSeedEverywhere, same),
        ("seeding.seed_plus_i", "seeding.distinct_subenv_seeds"),
        SameSeedEverywhere.__doc__ or "",
    )
    plant("seeds_only_once", _vector(SeedsOnlyOnce, same), ("seeding.reset_determinism",), SeedsOnlyOnce.__doc__ or "")
    plant("reuses_buffer", _vector(ReusesBuffer, same), ("aliasing.returned_objects",), ReusesBuffer.__doc__ or "")
    plant("pops_options", _vector(PopsOptions, same), ("aliasing.caller_arguments",), PopsOptions.__doc__ or "")
    plant(
        "float64_observations",
        _vector(Float64Observations, same),
        ("dtype.observations",),
        Float64Observations.__doc__ or "",
        capabilities=Capabilities(box_dtypes=frozenset({"float32", "uint8", "int64"})),
    )
    plant("float32_rewards", _vector(Float32Rewards, same), ("dtype.rewards_flags",), Float32Rewards.__doc__ or "")
    plant(
        "list_actions",
        _vector(ListActions, same),
        ("dtype.actions_received",),
        ListActions.__doc__ or "",
        capabilities=Capabilities(action_kinds=frozenset({"box", "multidiscrete"})),
    )
    plant("no_info_masks", _vector(NoInfoMasks, same), ("api.shape",), NoInfoMasks.__doc__ or "")
    plant(
        "truncates_batch",
        _vector(TruncatesBatch, same),
        ("api.wrong_size_batch_rejected",),
        TruncatesBatch.__doc__ or "",
    )
    plant(
        "steps_before_validating",
        _vector(StepsBeforeValidating, same),
        ("api.failed_call_no_side_effect",),
        StepsBeforeValidating.__doc__ or "",
    )
    plant(
        "raises_on_valid_action",
        _vector(RaisesOnValidAction, same),
        ("api.valid_calls_succeed",),
        RaisesOnValidAction.__doc__ or "",
    )
    plant("leaks_worker", _vector(LeaksWorker, same), ("lifecycle.responsive",), LeaksWorker.__doc__ or "")
    plant("extra_info_key", _vector(ExtraInfoKey, same), ("model.outputs_match",), ExtraInfoKey.__doc__ or "")
    plant(
        "counts_reset_steps",
        lambda fns: CountsResetSteps(Correct(list(fns), nxt)),
        ("statistics.episode",),
        CountsResetSteps.__doc__ or "",
        model="reference.gymnasium.vector.NextStep.RecordEpisodeStatistics",
    )
    plant(
        "normalizes_reset_steps",
        lambda fns: NormalizesResetSteps(Correct(list(fns), nxt)),
        ("statistics.normalizer",),
        NormalizesResetSteps.__doc__ or "",
        model="reference.gymnasium.vector.NextStep.NormalizeReward",
    )
    plant(
        "rewarding_autoreset",
        lambda fns: RewardingAutoreset(fns[0]),
        ("reset_step.neutral",),
        RewardingAutoreset.__doc__ or "",
        family=GYMNASIUM_ENV,
        capabilities=Capabilities(partial_reset=False, max_envs=1),
    )


_register()


# ------------------------------------------------------------------------------- specificity

#: why a planted bug fails specs beyond the ones it plants: the same defect, seen from another side
_MODEL = "model.outputs_match"  # the reference model sees every change of output
_EXACT = "transitions.exact"  # the recipe extracts the changed transitions

#: For every planted bug (of every module), the exact set of specs it fails; every other spec
#: that applies must pass. One defect may be seen by several specs (a lost terminal observation
#: is also a wrong transition and a departure from the model), but a spec outside this set that
#: fails blames the planted bug for something it does not do (tests/test_specificity.py).
MUST_FAIL: dict[str, frozenset[str]] = {
    f"planted.{name}": frozenset(specs)
    for name, specs in {
        "counts_reset_steps": ("statistics.episode", _MODEL),
        # every sub-env stepped twice: every transition, flag, count and final observation is off
        "double_step": (
            "counts.env_steps",
            "api.failed_call_no_side_effect",  # a rejected batch still steps every env once
            "continuity.fresh_first_obs",
            "flags.terminated",
            "flags.truncated",
            "infos.aligned",
            "terminal.final_obs",
            _EXACT,
            _MODEL,
        ),
        # a truncated episode ends unreported: its final_obs/infos are for an env that did not end
        "drops_truncation": ("flags.truncated", "infos.aligned", "terminal.final_obs", _EXACT, _MODEL),
        "extra_info_key": (_MODEL,),
        # float32 rounding is in the rewards a training loop stores
        "float32_rewards": ("dtype.rewards_flags", _EXACT),
        "float64_observations": ("dtype.observations", _MODEL),
        "forgets_truncated_reset": ("lifecycle.no_step_after_end", _EXACT, _MODEL),
        "leaks_worker": ("lifecycle.responsive",),
        "list_actions": ("dtype.actions_received",),
        # a recipe that trusts the declared mode reads every reset step as a transition
        "mislabelled_mode": ("counts.env_steps", "infos.aligned", "terminal.final_obs", _EXACT, _MODEL),
        "no_info_masks": ("api.shape", _MODEL),
        "normalizes_reset_steps": ("statistics.normalizer", _MODEL),
        "pops_options": ("aliasing.caller_arguments",),
        "raises_on_valid_action": ("api.valid_calls_succeed", _MODEL),
        "reset_all_on_end": ("continuity.no_discarded_episode", _EXACT, _MODEL),
        "reuses_buffer": ("aliasing.returned_objects",),
        # infos of sub-env i land at n-1-i: final observations and first observations are swapped
        "reversed_infos": ("infos.aligned", "continuity.fresh_first_obs", "terminal.final_obs", _EXACT, _MODEL),
        "rewarding_autoreset": ("reset_step.neutral", _MODEL),
        "rewarding_reset_step": ("reset_step.neutral", _MODEL),
        "same_seed_everywhere": ("seeding.seed_plus_i", "seeding.distinct_subenv_seeds", _MODEL),
        # the second seeded reset is unseeded: it neither reproduces nor gives seed+i
        "seeds_only_once": (
            "seeding.reset_determinism",
            "seeding.seed_plus_i",
            "seeding.distinct_subenv_seeds",
            _MODEL,
        ),
        # the reward buffer survives reset(seed): the first reward after it is the old episode's
        "shifted_reward": (_EXACT, "seeding.reset_determinism", _MODEL),
        "stale_first_obs": ("continuity.fresh_first_obs", _EXACT, _MODEL),
        "steps_before_validating": ("api.failed_call_no_side_effect",),
        "truncates_batch": ("api.wrong_size_batch_rejected",),
        "truncation_hides_termination": ("flags.terminated", _EXACT, _MODEL),
        "wrong_final_obs": ("terminal.final_obs", _EXACT, _MODEL),
    }.items()
}
