"""Planted bugs in what a vector env or a wrapper returns across steps and episodes: transitions,
the autoreset mode, the termination and truncation flags, infos, seeding, and the reset step
(vector statistics wrappers, the single-env Autoreset).

Every spec must catch at least one planted bug of its kind (``plants`` names the specs a bug must
be caught by); the suite's own tests check that it does, and the benchmark measures how fast.
Each bug is the smallest change to a correct model that reproduces a mistake real libraries make.
Bugs in how calls are handled are :mod:`.planted_calls`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from rlconform.core.system import Capabilities, EnvFn, SystemTable
from rlconform.envs.stacking import stack_obs
from rlconform.libraries.gymnasium.env_model import ModelAutoreset
from rlconform.libraries.gymnasium.infos import final_entries, final_obs_entries, merge_info
from rlconform.libraries.gymnasium.planting import _EXACT, _MODEL, _vector, plant
from rlconform.libraries.gymnasium.vector_model import (
    ModelNormalizeReward,
    ModelRecordEpisodeStatistics,
    ModelVectorEnv,
    _rows,
    declared_mode,
)
from rlconform.libraries.gymnasium.vector_model import ModelVectorEnv as Correct
from rlconform.specs.families import GYMNASIUM_ENV

#: this module's systems, read by the catalog (rlconform.core.catalog)
SYSTEMS = SystemTable()


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


class RewardingAutoreset(ModelAutoreset):
    """Single-env Autoreset whose reset step repeats the episode's last reward."""

    def step(self, action: Any) -> Any:
        resetting = self._ended
        obs, reward, terminated, truncated, info = super().step(action)
        if resetting:
            reward = getattr(self, "_last", 0.0)
        self._last = reward
        return obs, reward, terminated, truncated, info


def _register() -> None:
    same, nxt = "SameStep", "NextStep"
    plant(
        "shifted_reward",
        _vector(ShiftedReward, same),
        ("transitions.exact",),
        ShiftedReward.__doc__ or "",
        table=SYSTEMS,
    )
    plant(
        "mislabelled_mode",
        lambda fns: MislabelledMode(list(fns)),
        ("transitions.exact",),
        MislabelledMode.__doc__ or "",
        table=SYSTEMS,
    )
    plant("double_step", _vector(DoubleStep, same), ("counts.env_steps",), DoubleStep.__doc__ or "", table=SYSTEMS)
    plant(
        "reset_all_on_end",
        _vector(ResetAllOnEnd, same),
        ("continuity.no_discarded_episode",),
        ResetAllOnEnd.__doc__ or "",
        table=SYSTEMS,
    )
    plant(
        "stale_first_obs",
        _vector(StaleFirstObs, same),
        ("continuity.fresh_first_obs",),
        StaleFirstObs.__doc__ or "",
        table=SYSTEMS,
    )
    plant(
        "wrong_final_obs",
        _vector(WrongFinalObs, same),
        ("terminal.final_obs",),
        WrongFinalObs.__doc__ or "",
        table=SYSTEMS,
    )
    plant(
        "truncation_hides_termination",
        _vector(TruncationHidesTermination, same),
        ("flags.terminated",),
        TruncationHidesTermination.__doc__ or "",
        table=SYSTEMS,
    )
    plant(
        "drops_truncation",
        _vector(DropsTruncation, same),
        ("flags.truncated",),
        DropsTruncation.__doc__ or "",
        table=SYSTEMS,
    )
    plant(
        "rewarding_reset_step",
        _vector(RewardingResetStep, nxt),
        ("reset_step.neutral",),
        RewardingResetStep.__doc__ or "",
        mode=nxt,
        table=SYSTEMS,
    )
    plant(
        "reversed_infos", _vector(ReversedInfos, same), ("infos.aligned",), ReversedInfos.__doc__ or "", table=SYSTEMS
    )
    plant(
        "forgets_truncated_reset",
        _vector(ForgetsTruncatedReset, same),
        ("lifecycle.no_step_after_end",),
        ForgetsTruncatedReset.__doc__ or "",
        table=SYSTEMS,
    )
    plant(
        "same_seed_everywhere",
        _vector(SameSeedEverywhere, same),
        ("seeding.seed_plus_i", "seeding.distinct_subenv_seeds"),
        SameSeedEverywhere.__doc__ or "",
        table=SYSTEMS,
    )
    plant(
        "seeds_only_once",
        _vector(SeedsOnlyOnce, same),
        ("seeding.reset_determinism",),
        SeedsOnlyOnce.__doc__ or "",
        table=SYSTEMS,
    )
    plant(
        "counts_reset_steps",
        lambda fns: CountsResetSteps(Correct(list(fns), nxt)),
        ("statistics.episode",),
        CountsResetSteps.__doc__ or "",
        model="reference.gymnasium.vector.NextStep.RecordEpisodeStatistics",
        table=SYSTEMS,
    )
    plant(
        "normalizes_reset_steps",
        lambda fns: NormalizesResetSteps(Correct(list(fns), nxt)),
        ("statistics.normalizer",),
        NormalizesResetSteps.__doc__ or "",
        model="reference.gymnasium.vector.NextStep.NormalizeReward",
        table=SYSTEMS,
    )
    plant(
        "rewarding_autoreset",
        lambda fns: RewardingAutoreset(fns[0]),
        ("reset_step.neutral",),
        RewardingAutoreset.__doc__ or "",
        family=GYMNASIUM_ENV,
        capabilities=Capabilities(partial_reset=False, max_envs=1),
        table=SYSTEMS,
    )


_register()


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
        "forgets_truncated_reset": ("lifecycle.no_step_after_end", _EXACT, _MODEL),
        # a recipe that trusts the declared mode reads every reset step as a transition
        "mislabelled_mode": ("counts.env_steps", "infos.aligned", "terminal.final_obs", _EXACT, _MODEL),
        "normalizes_reset_steps": ("statistics.normalizer", _MODEL),
        "reset_all_on_end": ("continuity.no_discarded_episode", _EXACT, _MODEL),
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
        "truncation_hides_termination": ("flags.terminated", _EXACT, _MODEL),
        "wrong_final_obs": ("terminal.final_obs", _EXACT, _MODEL),
    }.items()
}
