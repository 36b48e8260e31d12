"""A user's own running normalizer is checked by ``statistics.normalizer`` as the library's are
(issue 25: "a normalizer is anything that declares itself one").

Before, the spec applied to ``VecNormalize`` and Gymnasium's ``NormalizeObservation`` /
``NormalizeReward`` by class name: a user's SB3 ``VecEnvWrapper`` or Gymnasium ``VectorWrapper``
that counts the reset step in its return statistics, or the observations of sub-envs it did not
reset, was "not applicable: the system has no running normalizer". A layer that exposes its running
statistics as the libraries do (``obs_rms``, ``ret_rms``/``return_rms`` with mean, var and count)
is now read (rlconform.specs.own_normalizers): the correct one passes, with facts checked; the
planted bugs fail with the count they took and the count that was due; an innocent variant whose
statistics start from 0 (its own RunningMeanStd, not the libraries' epsilon) passes; a layer that
keeps its statistics under other names is still not applicable, and says so.

Each test drives a real stack on one fixed case and reads the spec directly (no search).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest

from rlconform.core.runner import execute
from rlconform.core.spec import Outcome, get_spec
from rlconform.core.user import factory_system
from rlconform.envs.plan import Case, Reset, Step
from rlconform.envs.script import EnvScript, EpisodePlan
from rlconform.envs.spaces import BoxObs, DiscreteAction

gymnasium = pytest.importorskip("gymnasium")

SCRIPT = EnvScript(
    obs=BoxObs(),
    action=DiscreteAction(n=2),
    episodes=(EpisodePlan(2, "terminated"), EpisodePlan(3, "truncated"), EpisodePlan(1, "terminated")),
)
CASE = Case(SCRIPT, 2, (Reset(seed=3), *(Step((i % 2, 1)) for i in range(9))))
#: with a partial reset: a vector normalizer must count the observations of the reset sub-env only
PARTIAL = Case(
    SCRIPT,
    2,
    (Reset(seed=3), Step((0, 1)), Reset(seed=None, mask=(True, False)), *(Step((1, 0)) for _ in range(6))),
)


def _normalizer(system_factory: Callable[..., Any], api: str, case: Case = CASE) -> Outcome:
    system = factory_system(system_factory, api)
    run = execute(system, case, with_model=False)
    assert run.usable, run.build_error
    outcome = get_spec("statistics.normalizer").check(run)
    assert outcome.not_applicable is None, outcome.not_applicable
    return outcome


def _messages(outcome: Outcome) -> list[str]:
    return [v.render() for v in outcome.violations]


# --- an SB3 user's reward and observation normalizer ------------------------------------------


class _Zeroed:
    """A user's own running statistics that start from nothing (count 0, not epsilon)."""

    def __init__(self, shape: tuple[int, ...] = ()) -> None:
        self.mean, self.var, self.count = np.zeros(shape), np.ones(shape), 0.0

    def update(self, batch: np.ndarray) -> None:
        mean, var, count = batch.mean(axis=0), batch.var(axis=0), batch.shape[0]
        delta, total = mean - self.mean, self.count + count
        m2 = self.var * self.count + var * count + delta**2 * self.count * count / total
        self.mean, self.var, self.count = self.mean + delta * count / total, m2 / total, total


def _sb3_normalizer_class() -> Any:
    from stable_baselines3.common.running_mean_std import RunningMeanStd
    from stable_baselines3.common.vec_env import VecEnvWrapper

    class RunningNormalizer(VecEnvWrapper):  # type: ignore[misc]
        """Scales rewards by the std of the discounted return and records the observations it
        returns, in SB3's attribute names. ``counts_reset``: the return statistics also take in
        the discounted returns at every reset (a bug); ``zeroed``: statistics of its own that start
        at count 0 (innocent)."""

        def __init__(self, venv: Any, *, counts_reset: bool = False, zeroed: bool = False) -> None:
            super().__init__(venv)
            shape = venv.observation_space.shape
            self.ret_rms = _Zeroed() if zeroed else RunningMeanStd(shape=())
            self.obs_rms = _Zeroed(shape) if zeroed else RunningMeanStd(shape=shape)
            self.gamma, self.counts_reset = 0.99, counts_reset
            self.returns = np.zeros(self.num_envs)

        def reset(self) -> Any:
            obs = self.venv.reset()
            if self.counts_reset:
                self.ret_rms.update(self.returns)
            self.returns[:] = 0.0
            self.obs_rms.update(np.asarray(obs, dtype=np.float64))
            return obs

        def step_wait(self) -> Any:
            obs, rewards, dones, infos = self.venv.step_wait()
            self.returns = self.returns * self.gamma + rewards
            self.ret_rms.update(self.returns)
            self.obs_rms.update(np.asarray(obs, dtype=np.float64))
            self.returns[dones] = 0.0
            return obs, rewards / np.sqrt(float(np.asarray(self.ret_rms.var)) + 1e-8), dones, infos

    return RunningNormalizer


def sb3_own_normalizer(env_fns: Sequence[Callable[[], Any]]) -> Any:
    from stable_baselines3.common.vec_env import DummyVecEnv

    return _sb3_normalizer_class()(DummyVecEnv(list(env_fns)))


def sb3_own_normalizer_counting_resets(env_fns: Sequence[Callable[[], Any]]) -> Any:
    from stable_baselines3.common.vec_env import DummyVecEnv

    return _sb3_normalizer_class()(DummyVecEnv(list(env_fns)), counts_reset=True)


def sb3_own_normalizer_from_zero(env_fns: Sequence[Callable[[], Any]]) -> Any:
    from stable_baselines3.common.vec_env import DummyVecEnv

    return _sb3_normalizer_class()(DummyVecEnv(list(env_fns)), zeroed=True)


def sb3_statistics_under_other_names(env_fns: Sequence[Callable[[], Any]]) -> Any:
    from stable_baselines3.common.vec_env import DummyVecEnv

    venv = _sb3_normalizer_class()(DummyVecEnv(list(env_fns)))
    venv.reward_statistics, venv.observation_statistics = venv.ret_rms, venv.obs_rms
    del venv.ret_rms, venv.obs_rms  # kept under names no library uses: nothing to read
    return venv


@pytest.mark.parametrize("factory", [sb3_own_normalizer, sb3_own_normalizer_from_zero], ids=["sb3-rms", "from-zero"])
def test_a_correct_sb3_user_normalizer_passes_with_its_counts_checked(factory: Any) -> None:
    pytest.importorskip("stable_baselines3")
    outcome = _normalizer(factory, "sb3.VecEnv")
    assert outcome.checked > 0 and outcome.violations == [], _messages(outcome)


def test_an_sb3_user_normalizer_counting_resets_fails() -> None:
    pytest.importorskip("stable_baselines3")
    messages = _messages(_normalizer(sb3_own_normalizer_counting_resets, "sb3.VecEnv"))
    assert any(
        "the return statistics of your RunningNormalizer count" in m and "real transitions had been made" in m
        for m in messages
    ), messages


def test_an_sb3_user_normalizer_is_named_in_the_stack_semantics() -> None:
    pytest.importorskip("stable_baselines3")
    system = factory_system(sb3_own_normalizer, "sb3.VecEnv")
    run = execute(system, CASE, with_model=False)
    assert run.semantics["normalizers"] == ["RunningNormalizer (your normalizer: obs_rms, ret_rms)"]
    assert run.semantics["normalizer_gamma"] == 0.99
    assert run.semantics["normalizer_base_counts"] == {"obs_rms": 1e-4, "return_rms": 1e-4}


def test_statistics_under_other_names_are_not_read_and_the_spec_says_so() -> None:
    pytest.importorskip("stable_baselines3")
    system = factory_system(sb3_statistics_under_other_names, "sb3.VecEnv")
    run = execute(system, CASE, with_model=False)
    outcome = get_spec("statistics.normalizer").check(run)
    assert outcome.violations == [] and outcome.checked == 0
    assert "no running normalizer" in str(outcome.not_applicable), outcome


# --- a Gymnasium user's vector observation normalizer -----------------------------------------


class ObservationRecorder(gymnasium.vector.VectorWrapper):  # type: ignore[misc]
    """A user's vector wrapper that keeps Gymnasium's running observation statistics (``obs_rms``)
    over the observations it returns, passing them through unchanged. ``counts_all_on_partial``:
    on a partial reset it takes in every sub-env's observation, the masked ones and the others (a
    bug: the others were returned by the previous call already)."""

    def __init__(self, env: Any, *, counts_all_on_partial: bool = False) -> None:
        from gymnasium.wrappers.utils import RunningMeanStd

        super().__init__(env)
        self.obs_rms = RunningMeanStd(shape=self.single_observation_space.shape)
        self.counts_all_on_partial = counts_all_on_partial

    def reset(self, **kwargs: Any) -> Any:
        # read before the call: SyncVectorEnv pops reset_mask from the caller's options (FINDINGS G1)
        mask = (kwargs.get("options") or {}).get("reset_mask")
        obs, infos = self.env.reset(**kwargs)
        taken = obs if mask is None or self.counts_all_on_partial else obs[np.asarray(mask, dtype=bool)]
        self.obs_rms.update(np.asarray(taken, dtype=np.float64))
        return obs, infos

    def step(self, actions: Any) -> Any:
        obs, rewards, terminated, truncated, infos = self.env.step(actions)
        self.obs_rms.update(np.asarray(obs, dtype=np.float64))
        return obs, rewards, terminated, truncated, infos


def gym_own_observation_normalizer(env_fns: Sequence[Callable[[], Any]]) -> Any:
    return ObservationRecorder(gymnasium.vector.SyncVectorEnv(list(env_fns)))


def gym_own_observation_normalizer_counting_all(env_fns: Sequence[Callable[[], Any]]) -> Any:
    return ObservationRecorder(gymnasium.vector.SyncVectorEnv(list(env_fns)), counts_all_on_partial=True)


def test_a_correct_gymnasium_user_normalizer_passes_with_its_counts_checked() -> None:
    outcome = _normalizer(gym_own_observation_normalizer, "gymnasium.vector", PARTIAL)
    assert outcome.checked > 0 and outcome.violations == [], _messages(outcome)


def test_a_gymnasium_user_normalizer_counting_unreset_sub_envs_fails() -> None:
    messages = _messages(_normalizer(gym_own_observation_normalizer_counting_all, "gymnasium.vector", PARTIAL))
    assert any(
        "the observation statistics of your ObservationRecorder count" in m and "observations had been returned" in m
        for m in messages
    ), messages
