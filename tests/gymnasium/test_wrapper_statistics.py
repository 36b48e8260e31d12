"""Episode statistics and running normalizers in a single env's own wrapper chain (``--api
gymnasium.Wrapper``) are read by behaviour, as they are around each sub-env of a SyncVectorEnv
(issue 36): Gymnasium's RecordEpisodeStatistics and NormalizeReward were "keeps no episode
statistics" / "has no running normalizer" there, so FINDINGS G8 went unreported; a user's wrapper
that reports ``info["episode"]`` and does not restart its return on a manual reset passed."""

from __future__ import annotations

from typing import Any

import pytest

gymnasium = pytest.importorskip("gymnasium")

from rlconform.core.search import Verdict, check_spec  # noqa: E402
from rlconform.core.spec import get_spec  # noqa: E402
from rlconform.core.user import factory_system, probe  # noqa: E402


def record_episode_statistics(env: Any) -> Any:
    from gymnasium.wrappers import RecordEpisodeStatistics

    return RecordEpisodeStatistics(env)


def normalize_reward(env: Any) -> Any:
    from gymnasium.wrappers import NormalizeReward

    return NormalizeReward(env)


class EpisodeReturn(gymnasium.Wrapper):  # type: ignore[type-arg]
    """A user's recorder in Gymnasium's documented layout: info["episode"] = {"r", "l"} on the
    step that ends an episode; ``restart`` says whether a reset restarts the running sums."""

    restart = True

    def __init__(self, env: Any) -> None:
        super().__init__(env)
        self.total, self.length = 0.0, 0

    def reset(self, **kwargs: Any) -> Any:
        if self.restart:
            self.total, self.length = 0.0, 0
        return self.env.reset(**kwargs)

    def step(self, action: Any) -> Any:
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.total += float(reward)
        self.length += 1
        if terminated or truncated:
            info = {**info, "episode": {"r": self.total, "l": self.length}}
            self.total, self.length = 0.0, 0
        return obs, reward, terminated, truncated, info


class KeepsReturnOnReset(EpisodeReturn):
    """Planted: a manual reset does not restart the running sums."""

    restart = False


def own_recorder(env: Any) -> Any:
    return EpisodeReturn(env)


def own_recorder_keeping_its_return(env: Any) -> Any:
    return KeepsReturnOnReset(env)


def _verdict(factory: Any, spec_id: str, *intended: str) -> Verdict:
    import dataclasses

    system = probe(factory_system(factory, "gymnasium.Wrapper"))
    if intended:
        system = dataclasses.replace(system, intended=frozenset(intended))
    return check_spec(system, get_spec(spec_id), "ci")


@pytest.mark.parametrize("factory", [record_episode_statistics, own_recorder])
def test_a_correct_recorder_in_the_wrapper_chain_is_checked_and_passes(factory: Any) -> None:
    verdict = _verdict(factory, "statistics.episode")
    assert verdict.status == "pass" and verdict.checked > 0, verdict.message


def test_a_users_recorder_that_keeps_its_return_across_a_manual_reset_fails() -> None:
    verdict = _verdict(own_recorder_keeping_its_return, "statistics.episode")
    assert verdict.status == "fail", verdict.message


def test_normalize_reward_in_the_wrapper_chain_shows_g8() -> None:
    """NormalizeReward never zeroes its discounted return on reset (FINDINGS G8)."""
    verdict = _verdict(normalize_reward, "statistics.normalizer", "reward")
    assert verdict.status == "fail", verdict.message
    assert "discounted return" in verdict.message, verdict.message
