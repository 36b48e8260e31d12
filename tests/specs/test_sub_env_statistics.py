"""Episode statistics and running normalizers the user puts inside each sub-env (issue 24):
CleanRL's ``SyncVectorEnv([lambda: RecordEpisodeStatistics(NormalizeObservation(make()))])`` and
SB3's ``make_vec_env``, which puts a ``Monitor`` in each env. Before this change
``statistics.episode`` and ``statistics.normalizer`` were not applicable to them (only vector
wrappers were found) and nothing was checked; now each sub-env's recorder is read where its
vectorizer documents a sub-env's step info, and each sub-env's normalizer is counted against
its own sub-env. Real defects (a vector wrapper that loses or moves one sub-env's statistics, a
normalizer that counts what it must not) fail with a message that says so.

Each test drives a real stack on one fixed case and reads the specs directly (no search).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from rlconform.core.runner import execute
from rlconform.core.spec import Outcome, get_spec
from rlconform.core.system import System
from rlconform.core.user import factory_system, with_intents
from rlconform.envs.driver import Run
from rlconform.envs.plan import Case, Reset, Step
from rlconform.envs.script import EnvScript, EpisodePlan
from rlconform.envs.spaces import BoxObs, DiscreteAction

gymnasium = pytest.importorskip("gymnasium")

#: episodes that terminate and are truncated by the env, of several lengths
SCRIPT = EnvScript(
    obs=BoxObs(),
    action=DiscreteAction(n=2),
    episodes=(EpisodePlan(2, "terminated"), EpisodePlan(3, "truncated"), EpisodePlan(1, "terminated")),
)
CASE = Case(SCRIPT, 2, (Reset(seed=3), *(Step((i % 2, 1)) for i in range(12))))
MODES = ("NextStep", "SameStep", "Disabled")


def _run(system: System, case: Case = CASE) -> Run:
    run = execute(system, case)
    assert run.usable, run.build_error
    return run


def _check(run: Run, spec_id: str) -> Outcome:
    return get_spec(spec_id).check(run)


def _messages(outcome: Outcome) -> list[str]:
    return [v.render() for v in outcome.violations]


# --- the stacks (module level: user factories are importable) ------------------------------


def statistics_per_env(env_fns: Any, autoreset_mode: Any = None) -> Any:
    """CleanRL's ``make_env``: ``RecordEpisodeStatistics`` around each env."""
    from gymnasium.vector import SyncVectorEnv
    from gymnasium.wrappers import RecordEpisodeStatistics

    kwargs = {} if autoreset_mode is None else {"autoreset_mode": autoreset_mode}
    return SyncVectorEnv([lambda fn=fn: RecordEpisodeStatistics(fn()) for fn in env_fns], **kwargs)


def _in_mode(factory: Any, mode: str) -> Any:
    from gymnasium.vector import AutoresetMode

    def build(env_fns: Any) -> Any:
        return factory(env_fns, autoreset_mode=AutoresetMode(mode))

    build.__name__ = build.__qualname__ = f"{factory.__name__}_{mode}"
    return build


def statistics_over_clip_per_env(env_fns: Any, **kwargs: Any) -> Any:
    """The recorder above a reward clip: it sums the clipped rewards, as it documents."""
    from gymnasium.vector import SyncVectorEnv
    from gymnasium.wrappers import ClipReward, RecordEpisodeStatistics

    return SyncVectorEnv(
        [lambda fn=fn: RecordEpisodeStatistics(ClipReward(fn(), min_reward=-0.5, max_reward=0.5)) for fn in env_fns],
        **kwargs,
    )


def _vector_wrapper(inner: Any, edit: Any) -> Any:
    """``inner`` under a vector wrapper whose ``step`` edits the info dict (a real defect)."""
    from gymnasium.vector import VectorWrapper

    class EditsInfos(VectorWrapper):  # type: ignore[misc]
        def step(self, actions: Any) -> Any:
            obs, rewards, terminated, truncated, infos = self.env.step(actions)
            return obs, rewards, terminated, truncated, edit(dict(infos))

    return EditsInfos(inner)


def _drop_env_1(infos: dict[str, Any]) -> dict[str, Any]:
    """Sub-env 1's statistics vanish (its mask cleared), where SyncVectorEnv puts them."""
    for holder in (infos, infos.get("final_info")):
        if isinstance(holder, dict) and "_episode" in holder:
            holder["_episode"] = np.array(holder["_episode"])
            holder["_episode"][1] = False
    return infos


def _move_to_env_0(infos: dict[str, Any]) -> dict[str, Any]:
    """Sub-env 1's statistics are handed to sub-env 0 (the batch index shifted by one)."""
    for holder in (infos, infos.get("final_info")):
        if isinstance(holder, dict) and "_episode" in holder and holder["_episode"][1]:
            mask = np.array(holder["_episode"])
            episode = {key: np.array(value) for key, value in holder["episode"].items()}
            for value in episode.values():
                value[0] = value[1]
            mask[0], mask[1] = True, False
            holder["_episode"], holder["episode"] = mask, episode
    return infos


def statistics_per_env_dropping_env_1(env_fns: Any, autoreset_mode: Any = None) -> Any:
    return _vector_wrapper(statistics_per_env(env_fns, autoreset_mode), _drop_env_1)


def statistics_per_env_moving_env_1(env_fns: Any, autoreset_mode: Any = None) -> Any:
    return _vector_wrapper(statistics_per_env(env_fns, autoreset_mode), _move_to_env_0)


def monitor_per_env(env_fns: Any) -> Any:
    """SB3's ``make_vec_env`` layout: a ``Monitor`` around each env, then DummyVecEnv."""
    from stable_baselines3.common.monitor import Monitor
    from stable_baselines3.common.vec_env import DummyVecEnv

    return DummyVecEnv([lambda fn=fn: Monitor(fn()) for fn in env_fns])


def monitor_rounding_to_4_decimals(env_fns: Any) -> Any:
    """A Monitor that rounds returns to 4 decimals, not the 6 SB3 documents."""
    from stable_baselines3.common.monitor import Monitor
    from stable_baselines3.common.vec_env import DummyVecEnv

    class CoarseMonitor(Monitor):  # type: ignore[misc]
        def step(self, action: Any) -> Any:
            obs, reward, terminated, truncated, info = super().step(action)
            if "episode" in info:
                info["episode"] = {**info["episode"], "r": round(info["episode"]["r"], 4)}
            return obs, reward, terminated, truncated, info

    return DummyVecEnv([lambda fn=fn: CoarseMonitor(fn()) for fn in env_fns])


def monitor_per_env_losing_env_1(env_fns: Any) -> Any:
    """A VecEnvWrapper that drops sub-env 1's ``info["episode"]`` (a real defect)."""
    from stable_baselines3.common.vec_env import VecEnvWrapper

    class DropsEnv1(VecEnvWrapper):  # type: ignore[misc]
        def reset(self) -> Any:
            return self.venv.reset()

        def step_wait(self) -> Any:
            obs, rewards, dones, infos = self.venv.step_wait()
            infos[1].pop("episode", None)
            return obs, rewards, dones, infos

    return DropsEnv1(monitor_per_env(env_fns))


def normalize_observation_per_env(env_fns: Any, autoreset_mode: Any = None) -> Any:
    from gymnasium.vector import SyncVectorEnv
    from gymnasium.wrappers import NormalizeObservation

    kwargs = {} if autoreset_mode is None else {"autoreset_mode": autoreset_mode}
    return SyncVectorEnv([lambda fn=fn: NormalizeObservation(fn()) for fn in env_fns], **kwargs)


def normalize_reward_per_env(env_fns: Any, autoreset_mode: Any = None) -> Any:
    from gymnasium.vector import SyncVectorEnv
    from gymnasium.wrappers import NormalizeReward

    kwargs = {} if autoreset_mode is None else {"autoreset_mode": autoreset_mode}
    return SyncVectorEnv([lambda fn=fn: NormalizeReward(fn(), gamma=0.99) for fn in env_fns], **kwargs)


def normalize_observation_counting_steps_twice(env_fns: Any) -> Any:
    """A NormalizeObservation that feeds each step's observation to its statistics twice."""
    from gymnasium.vector import SyncVectorEnv
    from gymnasium.wrappers import NormalizeObservation

    class CountsStepsTwice(NormalizeObservation):  # type: ignore[misc]
        def step(self, action: Any) -> Any:
            obs, reward, terminated, truncated, info = self.env.step(action)
            if self.update_running_mean:
                self.obs_rms.update(np.array([obs]))
            return self.observation(obs), reward, terminated, truncated, info

    return SyncVectorEnv([lambda fn=fn: CountsStepsTwice(fn()) for fn in env_fns])


def normalize_reward_counting_resets(env_fns: Any) -> Any:
    """A NormalizeReward that also takes a sample of its discounted return at each reset."""
    from gymnasium.vector import SyncVectorEnv
    from gymnasium.wrappers import NormalizeReward

    class CountsResets(NormalizeReward):  # type: ignore[misc]
        def reset(self, **kwargs: Any) -> Any:
            result = super().reset(**kwargs)
            self.return_rms.update(self.discounted_reward)
            return result

    return SyncVectorEnv([lambda fn=fn: CountsResets(fn(), gamma=0.99) for fn in env_fns])


# --- statistics.episode: RecordEpisodeStatistics in each sub-env ---------------------------


@pytest.mark.parametrize("mode", MODES)
def test_per_env_episode_statistics_are_checked_in_every_mode(mode: str) -> None:
    """NextStep and Disabled: the step info carries ``episode``; SameStep: the ended sub-env's
    ``final_info`` does, and the top level holds its reset info. Each is read where it is
    documented, and every ended episode is checked (before: not applicable, nothing checked)."""
    run = _run(factory_system(_in_mode(statistics_per_env, mode), "gymnasium.vector"))
    assert run.semantics["episode_statistics"] == "episode"
    outcome = _check(run, "statistics.episode")
    assert outcome.violations == [] and outcome.checked > 0, _messages(outcome)
    place = "the ended sub-env's final_info" if mode == "SameStep" else "the step's info"
    assert any(place in note for note in outcome.notes), outcome.notes


@pytest.mark.parametrize("mode", MODES)
def test_a_vector_wrapper_losing_one_sub_envs_statistics_fails(mode: str) -> None:
    run = _run(factory_system(_in_mode(statistics_per_env_dropping_env_1, mode), "gymnasium.vector"))
    messages = _messages(_check(run, "statistics.episode"))
    assert messages and all(m.startswith("env 1,") for m in messages), messages
    suffix = " in its final_info" if mode == "SameStep" else ""
    assert any(f"ended but no episode statistics were reported{suffix}" in m for m in messages), messages


@pytest.mark.parametrize("mode", MODES)
def test_a_vector_wrapper_moving_one_sub_envs_statistics_fails(mode: str) -> None:
    run = _run(factory_system(_in_mode(statistics_per_env_moving_env_1, mode), "gymnasium.vector"))
    messages = _messages(_check(run, "statistics.episode"))
    assert any(m.startswith("env 1,") and "no episode statistics were reported" in m for m in messages), messages
    assert any(
        m.startswith("env 0,") and ("reported while episode" in m or "is reported with" in m) for m in messages
    ), messages


def test_a_recorder_above_a_reward_clip_is_compared_on_lengths_only() -> None:
    """It sums the rewards ClipReward changed, as it documents: the returns are not the env's,
    and that is said, not reported; the lengths are still checked."""
    run = _run(with_intents(factory_system(statistics_over_clip_per_env, "gymnasium.vector"), "reward"))
    outcome = _check(run, "statistics.episode")
    assert outcome.violations == [] and outcome.checked > 0, _messages(outcome)
    assert any("ClipReward below it changed" in note for note in outcome.notes), outcome.notes


# --- statistics.episode: SB3's Monitor in each env -------------------------------------------


def test_per_env_monitor_statistics_are_checked_within_its_documented_rounding() -> None:
    pytest.importorskip("stable_baselines3")
    run = _run(factory_system(monitor_per_env, "sb3.VecEnv"))
    assert run.semantics["episode_statistics"] == "episode"
    outcome = _check(run, "statistics.episode")
    assert outcome.violations == [] and outcome.checked > 0, _messages(outcome)
    assert any("rounded to 6 decimals" in note for note in outcome.notes), outcome.notes


def test_a_monitor_rounding_more_coarsely_than_documented_fails() -> None:
    """The tolerance is Monitor's 6-decimal rounding and no looser: 4 decimals is a difference."""
    pytest.importorskip("stable_baselines3")
    messages = _messages(
        _check(_run(factory_system(monitor_rounding_to_4_decimals, "sb3.VecEnv")), "statistics.episode")
    )
    assert any("is reported with return" in m and "rounded to 6 decimals" in m for m in messages), messages


def test_a_vec_env_wrapper_losing_one_monitors_statistics_fails() -> None:
    pytest.importorskip("stable_baselines3")
    messages = _messages(_check(_run(factory_system(monitor_per_env_losing_env_1, "sb3.VecEnv")), "statistics.episode"))
    assert messages and all(m.startswith("env 1,") for m in messages), messages
    assert any("ended but no episode statistics were reported" in m for m in messages), messages


# --- statistics.normalizer: running normalizers in each sub-env ------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_per_env_observation_normalizers_count_their_own_sub_envs_observations(mode: str) -> None:
    """Each counts every observation its sub-env returned, reset observations included: the
    documented behaviour is stated, not flagged (before: not applicable, nothing checked)."""
    system = with_intents(
        factory_system(_in_mode(normalize_observation_per_env, mode), "gymnasium.vector"), "observation"
    )
    run = _run(system)
    assert "sub-env NormalizeObservation" in run.semantics["normalizers"]
    outcome = _check(run, "statistics.normalizer")
    assert outcome.violations == [] and outcome.checked > 0, _messages(outcome)
    assert any("from reset) included" in note for note in outcome.notes), outcome.notes


def test_an_observation_normalizer_counting_steps_twice_fails() -> None:
    system = with_intents(factory_system(normalize_observation_counting_steps_twice, "gymnasium.vector"), "observation")
    messages = _messages(_check(_run(system), "statistics.normalizer"))
    assert any(
        "the observation statistics of the sub-env's CountsStepsTwice count" in m and "observations" in m
        for m in messages
    ), messages


def _return_counts(outcome: Outcome) -> list[str]:
    return [m for m in _messages(outcome) if "the return statistics" in m]


@pytest.mark.parametrize("mode", MODES)
def test_per_env_reward_normalizers_count_their_sub_envs_real_steps(mode: str) -> None:
    """One sample per real step of its own sub-env, in every mode (a NextStep reset step is a
    reset of the sub-env, not a step). Its discounted return is another matter (next test)."""
    system = with_intents(factory_system(_in_mode(normalize_reward_per_env, mode), "gymnasium.vector"), "reward")
    outcome = _check(_run(system), "statistics.normalizer")
    assert outcome.checked > 0
    assert _return_counts(outcome) == []


def test_a_per_env_reward_normalizer_carries_its_return_into_the_next_episode() -> None:
    """Gymnasium 1.4.0's single-env NormalizeReward never zeroes ``discounted_reward`` on reset
    and multiplies by ``1 - terminated`` before adding the step's reward
    (``gymnasium/wrappers/stateful_reward.py``, ``NormalizeReward.step``): each new episode's
    return starts from the last one's, the single-env counterpart of FINDINGS G6. Reported."""
    system = with_intents(factory_system(normalize_reward_per_env, "gymnasium.vector"), "reward")
    messages = _messages(_check(_run(system), "statistics.normalizer"))
    assert any(
        "the discounted return of episode 2 after 1 step(s)" in m and "in the sub-env's NormalizeReward" in m
        for m in messages
    ), messages


def test_a_reward_normalizer_counting_resets_fails() -> None:
    system = with_intents(factory_system(normalize_reward_counting_resets, "gymnasium.vector"), "reward")
    counts = _return_counts(_check(_run(system), "statistics.normalizer"))
    assert any("of the sub-env's CountsResets count" in m and "real transitions" in m for m in counts), counts


# --- a recorder of the user's own around each sub-env (issue 25: by behaviour, not class) ----


class OwnEpisodeRecorder(gymnasium.Wrapper):  # type: ignore[misc]
    """A user's per-env recorder in Gymnasium's documented layout (``info["episode"]`` with ``r``,
    ``l``, ``t`` on the step that ends the episode). ``length_offset``: it reports lengths off by
    it (a real defect)."""

    def __init__(self, env: Any, length_offset: int = 0) -> None:
        super().__init__(env)
        self.length_offset = length_offset
        self.episode_return, self.episode_length = 0.0, 0

    def reset(self, **kwargs: Any) -> Any:
        self.episode_return, self.episode_length = 0.0, 0
        return self.env.reset(**kwargs)

    def step(self, action: Any) -> Any:
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.episode_return += float(reward)
        self.episode_length += 1
        if terminated or truncated:
            info = dict(info)
            info["episode"] = {"r": self.episode_return, "l": self.episode_length + self.length_offset, "t": 0.0}
        return obs, reward, terminated, truncated, info


def own_recorder_per_env(env_fns: Any, autoreset_mode: Any = None) -> Any:
    from gymnasium.vector import SyncVectorEnv

    kwargs = {} if autoreset_mode is None else {"autoreset_mode": autoreset_mode}
    return SyncVectorEnv([lambda fn=fn: OwnEpisodeRecorder(fn()) for fn in env_fns], **kwargs)


def own_recorder_per_env_off_by_one(env_fns: Any, autoreset_mode: Any = None) -> Any:
    from gymnasium.vector import SyncVectorEnv

    kwargs = {} if autoreset_mode is None else {"autoreset_mode": autoreset_mode}
    return SyncVectorEnv([lambda fn=fn: OwnEpisodeRecorder(fn(), length_offset=1) for fn in env_fns], **kwargs)


def sb3_own_recorder_per_env(env_fns: Any) -> Any:
    from stable_baselines3.common.vec_env import DummyVecEnv

    return DummyVecEnv([lambda fn=fn: OwnEpisodeRecorder(fn()) for fn in env_fns])


def sb3_own_recorder_per_env_off_by_one(env_fns: Any) -> Any:
    from stable_baselines3.common.vec_env import DummyVecEnv

    return DummyVecEnv([lambda fn=fn: OwnEpisodeRecorder(fn(), length_offset=1) for fn in env_fns])


@pytest.mark.parametrize("mode", ["NextStep", "SameStep"])
def test_a_users_own_recorder_per_sub_env_is_checked_as_record_episode_statistics_is(mode: str) -> None:
    """Before, a recorder of the user's own inside each sub-env was never read (statistics.episode:
    "the system keeps no episode statistics"): only RecordEpisodeStatistics and Monitor were
    found there, by class."""
    correct = _check(
        _run(factory_system(_in_mode(own_recorder_per_env, mode), "gymnasium.vector")), "statistics.episode"
    )
    assert correct.not_applicable is None and correct.checked > 0 and correct.violations == [], _messages(correct)
    library = _check(_run(factory_system(_in_mode(statistics_per_env, mode), "gymnasium.vector")), "statistics.episode")
    assert library.violations == [] and library.checked > 0
    wrong = _messages(
        _check(
            _run(factory_system(_in_mode(own_recorder_per_env_off_by_one, mode), "gymnasium.vector")),
            "statistics.episode",
        )
    )
    assert any("is reported with length 3; it had 2 real transitions" in m for m in wrong), wrong


def test_an_sb3_users_own_recorder_per_env_is_checked_as_monitor_is() -> None:
    pytest.importorskip("stable_baselines3")
    correct = _check(_run(factory_system(sb3_own_recorder_per_env, "sb3.VecEnv")), "statistics.episode")
    assert correct.not_applicable is None and correct.checked > 0 and correct.violations == [], _messages(correct)
    wrong = _messages(
        _check(_run(factory_system(sb3_own_recorder_per_env_off_by_one, "sb3.VecEnv")), "statistics.episode")
    )
    assert any("is reported with length 3; it had 2 real transitions" in m for m in wrong), wrong
