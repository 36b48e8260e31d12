"""Specs apply by behaviour, not by class name (issue 25).

- An episode recorder is anything that reports episode returns and lengths in the documented
  layouts (Gymnasium's ``info["episode"] = {"r", "l", "t"}`` under the mask ``info["_episode"]``,
  SB3's ``infos[i]["episode"]``). Before, ``statistics.episode`` applied to
  ``RecordEpisodeStatistics`` and ``VecMonitor`` by class name only: a user's own recorder that
  counts the reset step or reports lengths off by one was never checked. A stack with a layer of
  the user's own is now read ``BY_OUTPUT`` (``statistics.episode_statistics_reading``) and its
  statistics are held to what the library's are held to: a correct user recorder passes, the
  buggy ones fail, and the library's recorder gets the same verdict on the same stack.
- A reward normalizer is anything that behaves as one: ``seeding.reset_determinism`` compares
  two seeded runs' rewards in env units, and a reward that a running scale changed in both runs
  (the env's reward times a positive factor that moved between the runs) is no divergence. A
  user's own ``VecEnvWrapper`` normalizing rewards failed the spec where ``VecNormalize``, which
  behaves the same, passed; both pass now.

Each test drives a real stack on one fixed case and reads the specs directly (no search).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest

from rlconform.core.family import layer_chain
from rlconform.core.runner import execute
from rlconform.core.spec import Outcome, get_spec
from rlconform.core.system import System
from rlconform.core.user import factory_system
from rlconform.envs.driver import Run
from rlconform.envs.plan import Case, Reset, Step
from rlconform.envs.script import EnvScript, EpisodePlan
from rlconform.envs.spaces import BoxObs, DiscreteAction
from rlconform.specs.statistics import BY_OUTPUT, NOTHING_REPORTED, episode_statistics_reading

gymnasium = pytest.importorskip("gymnasium")

SCRIPT = EnvScript(
    obs=BoxObs(),
    action=DiscreteAction(n=2),
    episodes=(EpisodePlan(2, "terminated"), EpisodePlan(3, "truncated"), EpisodePlan(1, "terminated")),
)
CASE = Case(SCRIPT, 2, (Reset(seed=3), *(Step((i % 2, 1)) for i in range(12))))


def _run(system: System, case: Case = CASE) -> Run:
    run = execute(system, case, with_model=False)
    assert run.usable, run.build_error
    return run


def _check(run: Run, spec_id: str) -> Outcome:
    return get_spec(spec_id).check(run)


def _messages(outcome: Outcome) -> list[str]:
    return [v.render() for v in outcome.violations]


# --- the user's own vector recorder (module level: user factories are importable) ------------


class ReturnRecorder(gymnasium.vector.VectorWrapper):  # type: ignore[misc]
    """A user's episode recorder for a NextStep vector env, in Gymnasium's documented layout.

    ``counts_reset_step``: it also counts the reset step that follows an episode end (reward 0,
    action ignored) as a step of the next episode. ``length_offset``: it reports lengths off by it.
    """

    def __init__(self, env: Any, *, counts_reset_step: bool = False, length_offset: int = 0) -> None:
        super().__init__(env)
        self.counts_reset_step = counts_reset_step
        self.length_offset = length_offset
        self.returns = np.zeros(self.num_envs)
        self.lengths = np.zeros(self.num_envs, dtype=np.int64)
        self.ended = np.zeros(self.num_envs, dtype=bool)
        self.start = time.perf_counter()

    def reset(self, **kwargs: Any) -> Any:
        obs, infos = self.env.reset(**kwargs)
        mask = (kwargs.get("options") or {}).get("reset_mask")
        mask = np.ones(self.num_envs, dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
        self.returns[mask], self.lengths[mask], self.ended[mask] = 0.0, 0, False
        return obs, infos

    def step(self, actions: Any) -> Any:
        obs, rewards, terminated, truncated, infos = self.env.step(actions)
        real = np.ones(self.num_envs, dtype=bool) if self.counts_reset_step else ~self.ended
        self.returns += np.where(real, rewards, 0.0)
        self.lengths += real
        done = np.logical_or(terminated, truncated)
        if done.any():
            infos = dict(infos)
            infos["episode"] = {
                "r": np.where(done, self.returns, 0.0),
                "l": np.where(done, self.lengths + self.length_offset, 0),
                "t": np.where(done, round(time.perf_counter() - self.start, 6), 0.0),
            }
            infos["_episode"] = done
        self.returns[done], self.lengths[done] = 0.0, 0
        self.ended = done
        return obs, rewards, terminated, truncated, infos


def user_recorder(env_fns: Sequence[Callable[[], Any]]) -> Any:
    return ReturnRecorder(gymnasium.vector.SyncVectorEnv(list(env_fns)))


def user_recorder_counting_reset_steps(env_fns: Sequence[Callable[[], Any]]) -> Any:
    return ReturnRecorder(gymnasium.vector.SyncVectorEnv(list(env_fns)), counts_reset_step=True)


def user_recorder_length_off_by_one(env_fns: Sequence[Callable[[], Any]]) -> Any:
    return ReturnRecorder(gymnasium.vector.SyncVectorEnv(list(env_fns)), length_offset=1)


def library_recorder(env_fns: Sequence[Callable[[], Any]]) -> Any:
    from gymnasium.wrappers.vector import RecordEpisodeStatistics

    return RecordEpisodeStatistics(gymnasium.vector.SyncVectorEnv(list(env_fns)))


class ScaleRewards(gymnasium.vector.VectorWrapper):  # type: ignore[misc]
    """A user's layer that records nothing (it halves rewards)."""

    def step(self, actions: Any) -> Any:
        obs, rewards, terminated, truncated, infos = self.env.step(actions)
        return obs, rewards * 0.5, terminated, truncated, infos


def user_layer_without_statistics(env_fns: Sequence[Callable[[], Any]]) -> Any:
    return ScaleRewards(gymnasium.vector.SyncVectorEnv(list(env_fns)))


def user_recorder_above_a_scale(env_fns: Sequence[Callable[[], Any]]) -> Any:
    """The recorder above a reward change: it sums the rewards it is given, as a recorder does."""
    return ReturnRecorder(ScaleRewards(gymnasium.vector.SyncVectorEnv(list(env_fns))))


def library_recorder_above_a_scale(env_fns: Sequence[Callable[[], Any]]) -> Any:
    from gymnasium.wrappers.vector import RecordEpisodeStatistics

    return RecordEpisodeStatistics(ScaleRewards(gymnasium.vector.SyncVectorEnv(list(env_fns))))


def _families_read_by_output() -> bool:
    """Whether the vector families already read a stack with a user's layer as BY_OUTPUT."""
    run = _run(factory_system(user_layer_without_statistics, "gymnasium.vector"))
    return bool(run.semantics.get("episode_statistics") == BY_OUTPUT)


# --- the reading ----------------------------------------------------------------------------


def test_a_stack_with_a_layer_of_the_users_own_is_read_by_output() -> None:
    envs = gymnasium.vector.SyncVectorEnv([lambda: gymnasium.make("CartPole-v1")])
    assert episode_statistics_reading(layer_chain(envs, "env"), "RecordEpisodeStatistics") is None
    assert (
        episode_statistics_reading(
            layer_chain(library_recorder([lambda: gymnasium.make("CartPole-v1")]), "env"), "RecordEpisodeStatistics"
        )
        == "episode"
    )
    assert episode_statistics_reading(layer_chain(ScaleRewards(envs), "env"), "RecordEpisodeStatistics") == BY_OUTPUT
    assert episode_statistics_reading(layer_chain(ReturnRecorder(envs), "env"), "RecordEpisodeStatistics") == BY_OUTPUT


def test_the_vector_families_read_a_users_layer_by_output() -> None:
    """Before, a stack whose recorder was the user's own kept "no episode statistics" to the spec,
    and a recorder that counts reset steps passed unseen."""
    assert _families_read_by_output()


# --- statistics.episode: the user's recorder is checked -------------------------------------


def test_a_correct_user_recorder_passes_as_the_library_recorder_does() -> None:
    for factory in (user_recorder, library_recorder):
        outcome = _check(_run(factory_system(factory, "gymnasium.vector")), "statistics.episode")
        assert outcome.not_applicable is None, (factory.__name__, outcome.not_applicable)
        assert outcome.checked > 0 and outcome.violations == [], (factory.__name__, _messages(outcome))


def test_a_user_recorder_that_counts_the_reset_step_fails() -> None:
    messages = _messages(
        _check(_run(factory_system(user_recorder_counting_reset_steps, "gymnasium.vector")), "statistics.episode")
    )
    assert messages and all("is reported with length" in m for m in messages), messages
    # the first episode of each sub-env has no reset step before it and is counted right
    assert any("length 4; it had 3 real transitions" in m for m in messages), messages
    assert not any(m.startswith("env 0, agent step 2:") for m in messages), messages


def test_a_user_recorder_with_lengths_off_by_one_fails() -> None:
    messages = _messages(
        _check(_run(factory_system(user_recorder_length_off_by_one, "gymnasium.vector")), "statistics.episode")
    )
    assert any("is reported with length 3; it had 2 real transitions" in m for m in messages), messages


def test_a_user_layer_that_reports_no_statistics_is_not_applicable_with_the_reason() -> None:
    outcome = _check(_run(factory_system(user_layer_without_statistics, "gymnasium.vector")), "statistics.episode")
    assert outcome.not_applicable == NOTHING_REPORTED


def test_a_recorder_above_a_reward_change_sums_the_rewards_it_is_given_user_or_library() -> None:
    for factory in (user_recorder_above_a_scale, library_recorder_above_a_scale):
        outcome = _check(_run(factory_system(factory, "gymnasium.vector")), "statistics.episode")
        assert outcome.checked > 0 and outcome.violations == [], (factory.__name__, _messages(outcome))
        assert any("sum of the rewards the stack delivered" in n for n in outcome.notes), outcome.notes


# --- SB3: a user's VecEnvWrapper recorder and normalizer ------------------------------------


def _sb3_wrappers() -> tuple[type, type]:
    from stable_baselines3.common.vec_env import VecEnvWrapper

    class EpisodeRecorder(VecEnvWrapper):  # type: ignore[misc]
        """A user's recorder in SB3's layout; ``length_offset`` reports lengths off by it."""

        def __init__(self, venv: Any, length_offset: int = 0) -> None:
            super().__init__(venv)
            self.length_offset = length_offset
            self.returns = np.zeros(self.num_envs)
            self.lengths = np.zeros(self.num_envs, dtype=np.int64)

        def reset(self) -> Any:
            self.returns[:], self.lengths[:] = 0.0, 0
            return self.venv.reset()

        def step_wait(self) -> Any:
            obs, rewards, dones, infos = self.venv.step_wait()
            self.returns += rewards
            self.lengths += 1
            infos = [dict(info) for info in infos]
            for i in np.flatnonzero(dones):
                infos[i]["episode"] = {
                    "r": float(self.returns[i]),
                    "l": int(self.lengths[i]) + self.length_offset,
                    "t": 0.0,
                }
                self.returns[i], self.lengths[i] = 0.0, 0
            return obs, rewards, dones, infos

    class RewardNormalizer(VecEnvWrapper):  # type: ignore[misc]
        """A user's reward normalizer: rewards over the running std of the discounted return, as
        VecNormalize(norm_obs=False) scales them (no clipping). ``previous``: the scaler divides
        the previous step's reward (a real defect: r'_t = r_{t-1} / sigma)."""

        def __init__(self, venv: Any, gamma: float = 0.99, previous: bool = False) -> None:
            super().__init__(venv)
            self.gamma, self.previous = gamma, previous
            self.returns = np.zeros(self.num_envs)
            self.last = np.zeros(self.num_envs)
            self.mean, self.var, self.count = 0.0, 1.0, 1e-4

        def reset(self) -> Any:
            self.returns[:] = 0.0
            return self.venv.reset()

        def _update(self, batch: np.ndarray) -> None:
            mean, var, count = float(batch.mean()), float(batch.var()), batch.size
            delta, total = mean - self.mean, self.count + count
            m2 = self.var * self.count + var * count + delta**2 * self.count * count / total
            self.mean, self.var, self.count = self.mean + delta * count / total, m2 / total, total

        def step_wait(self) -> Any:
            obs, rewards, dones, infos = self.venv.step_wait()
            self.returns = self.returns * self.gamma + rewards
            self._update(self.returns)
            numerator = self.last if self.previous else rewards
            self.last = np.array(rewards, dtype=np.float64)
            scaled = (numerator / np.sqrt(self.var + 1e-8)).astype(np.float32)
            self.returns[dones] = 0.0
            return obs, scaled, dones, infos

    return EpisodeRecorder, RewardNormalizer


def sb3_user_recorder(env_fns: Sequence[Callable[[], Any]]) -> Any:
    from stable_baselines3.common.vec_env import DummyVecEnv

    return _sb3_wrappers()[0](DummyVecEnv(list(env_fns)))


def sb3_user_recorder_length_off_by_one(env_fns: Sequence[Callable[[], Any]]) -> Any:
    from stable_baselines3.common.vec_env import DummyVecEnv

    return _sb3_wrappers()[0](DummyVecEnv(list(env_fns)), length_offset=1)


def sb3_library_recorder(env_fns: Sequence[Callable[[], Any]]) -> Any:
    from stable_baselines3.common.vec_env import DummyVecEnv, VecMonitor

    return VecMonitor(DummyVecEnv(list(env_fns)))


def sb3_user_normalizer(env_fns: Sequence[Callable[[], Any]]) -> Any:
    from stable_baselines3.common.vec_env import DummyVecEnv

    return _sb3_wrappers()[1](DummyVecEnv(list(env_fns)))


def sb3_vec_normalize(env_fns: Sequence[Callable[[], Any]]) -> Any:
    from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

    return VecNormalize(DummyVecEnv(list(env_fns)), norm_obs=False, norm_reward=True)


def test_an_sb3_user_recorder_is_checked_as_vec_monitor_is() -> None:
    pytest.importorskip("stable_baselines3")
    for factory in (sb3_user_recorder, sb3_library_recorder):
        outcome = _check(_run(factory_system(factory, "sb3.VecEnv")), "statistics.episode")
        assert outcome.checked > 0 and outcome.violations == [], (factory.__name__, _messages(outcome))
    messages = _messages(
        _check(_run(factory_system(sb3_user_recorder_length_off_by_one, "sb3.VecEnv")), "statistics.episode")
    )
    assert any("episode 1 is reported with length 3; it had 2 real transitions" in m for m in messages), messages


#: the same actions after two resets with one seed: a running normalizer's scale moves in between
RESEED = Case(
    SCRIPT,
    2,
    (Reset(seed=5), *(Step((i % 2, 1)) for i in range(5)), Reset(seed=5), *(Step((i % 2, 1)) for i in range(5))),
)


@pytest.mark.parametrize("factory", [sb3_user_normalizer, sb3_vec_normalize], ids=["user", "VecNormalize"])
def test_a_users_reward_normalizer_gets_vec_normalizes_reset_determinism_verdict(factory: Any) -> None:
    """Before, the user's normalizer failed ("after reset(seed=5) the same calls returned ...
    here but ... after the earlier reset(seed=5)"): its rewards were compared as delivered, where
    VecNormalize's were read back in env units. Both pass now, with or without a declaration."""
    pytest.importorskip("stable_baselines3")
    outcome = _check(_run(factory_system(factory, "sb3.VecEnv"), RESEED), "seeding.reset_determinism")
    assert outcome.checked > 0 and outcome.violations == [], _messages(outcome)


def sb3_doubles_rewards_after_the_first_reset(env_fns: Sequence[Callable[[], Any]]) -> Any:
    """A layer whose rewards change with the number of resets made (state a seeded reset keeps)."""
    from stable_baselines3.common.vec_env import DummyVecEnv, VecEnvWrapper

    class DoublesAfterTheFirstReset(VecEnvWrapper):  # type: ignore[misc]
        def __init__(self, venv: Any) -> None:
            super().__init__(venv)
            self.resets = 0

        def reset(self) -> Any:
            self.resets += 1
            return self.venv.reset()

        def step_wait(self) -> Any:
            obs, rewards, dones, infos = self.venv.step_wait()
            return obs, rewards * (2.0 if self.resets > 1 else 1.0), dones, infos

    return DoublesAfterTheFirstReset(DummyVecEnv(list(env_fns)))


def test_a_reward_the_stack_gives_back_in_one_seeded_run_and_changes_in_the_other_still_fails() -> None:
    """The rescaling rule needs the stack to change the reward in both runs: a reward returned
    as the env's in one run and changed in the other is still a divergence."""
    pytest.importorskip("stable_baselines3")
    run = _run(factory_system(sb3_doubles_rewards_after_the_first_reset, "sb3.VecEnv"), RESEED)
    messages = _messages(_check(run, "seeding.reset_determinism"))
    assert messages and all("after reset(seed=5) the same calls returned" in m for m in messages), messages
