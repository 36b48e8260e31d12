"""Statistics kept inside sub-envs that run in worker processes are named as such (issue 24).

A ``RecordEpisodeStatistics`` (or a running normalizer) around each sub-env of an
``AsyncVectorEnv`` lives in the worker processes: rlconform cannot read its layers in-process, so
``statistics.episode`` and ``statistics.normalizer`` cannot check it, although its statistics do
arrive in the infos. The verdict said "the system keeps no episode statistics", which is false;
it now says where the statistics are and why they are not checked. The same stack under
``SyncVectorEnv`` is checked (and passes).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest

from rlconform.core.search import check_spec
from rlconform.core.spec import get_spec
from rlconform.core.user import factory_system, probe

gymnasium = pytest.importorskip("gymnasium")


def async_recorded(env_fns: Sequence[Callable[[], Any]]) -> Any:
    from gymnasium.wrappers import RecordEpisodeStatistics

    return gymnasium.vector.AsyncVectorEnv([lambda f=f: RecordEpisodeStatistics(f()) for f in env_fns])


def async_normalized(env_fns: Sequence[Callable[[], Any]]) -> Any:
    from gymnasium.wrappers import NormalizeObservation

    return gymnasium.vector.AsyncVectorEnv([lambda f=f: NormalizeObservation(f()) for f in env_fns])


def sync_recorded(env_fns: Sequence[Callable[[], Any]]) -> Any:
    from gymnasium.wrappers import RecordEpisodeStatistics

    return gymnasium.vector.SyncVectorEnv([lambda f=f: RecordEpisodeStatistics(f()) for f in env_fns])


def _verdict(factory: Callable[..., Any], spec_id: str) -> Any:
    system = probe(factory_system(factory, "gymnasium.vector"))
    return check_spec(system, get_spec(spec_id), "fast")


def test_a_recorder_inside_async_sub_envs_is_named_not_denied() -> None:
    verdict = _verdict(async_recorded, "statistics.episode")
    assert verdict.status == "not_applicable"
    assert verdict.message.startswith(
        "the stack keeps no episode statistics outside its sub-envs, and they run in AsyncVectorEnv's worker "
        "processes: statistics kept inside them (a RecordEpisodeStatistics or Monitor around each sub-env, "
        "whose statistics arrive in the infos) cannot be read from this process"
    ), verdict.message
    assert 'keeps no episode statistics"' not in verdict.message


def test_a_normalizer_inside_async_sub_envs_is_named_not_denied() -> None:
    verdict = _verdict(async_normalized, "statistics.normalizer")
    assert verdict.status == "not_applicable"
    assert "they run in AsyncVectorEnv's worker processes: a normalizer inside them" in verdict.message
    assert verdict.message != "the system has no running normalizer"


def test_the_same_recorder_in_process_is_checked() -> None:
    verdict = _verdict(sync_recorded, "statistics.episode")
    assert verdict.status == "pass", verdict.message
