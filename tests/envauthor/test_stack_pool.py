"""Env-author mode keeps the stacks it built across the examples of a search (issue 39), and no
verdict rests on that: a run on a reused stack counts only where it agrees with the bare env in
every way; anything else is run again on a fresh build, which is what the spec reads.

Before, every example built and closed eleven stacks around the env: a TorchRL ParallelEnv's
workers and Gymnasium's and SB3's worker processes were most of a small env's check.
"""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("gymnasium")

from rlconform.core.profiles import Profile
from rlconform.core.runner import RunCache
from rlconform.core.search import check_spec
from rlconform.core.spec import get_spec
from rlconform.core.user import user_system
from rlconform.libraries.envauthor import stack_pool
from rlconform.libraries.envauthor import stacks as envstacks
from rlconform.libraries.envauthor.case import EnvCase
from rlconform.libraries.envauthor.harness import execute_user_env

#: in-process stacks, and one whose workers are processes (its pooled workers must be closed)
STACKS = ("gymnasium.SyncVectorEnv.NextStep", "sb3.DummyVecEnv", "gymnasium.AsyncVectorEnv.SameStep")
SMALL = Profile("pool", 6, 6, True, "six derandomized examples", 20, 5, 10.0)


@pytest.fixture
def drives(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[Any]]:
    """Which runs were on a reused stack and which were fresh builds confirming a pooled one."""
    seen: dict[str, list[Any]] = {"pooled": [], "fresh": []}
    monkeypatch.setattr(envstacks, "STACKS", STACKS)
    pooled, fresh = stack_pool.drive_pooled, envstacks._drive

    def drive_pooled(owner: str, stack: Any, *args: Any) -> Any:
        run, reused = pooled(owner, stack, *args)
        seen["pooled"].append((stack.id, reused))
        return run, reused

    def drive(stack: Any, *args: Any) -> Any:
        seen["fresh"].append(stack.id)
        return fresh(stack, *args)

    monkeypatch.setattr(stack_pool, "drive_pooled", drive_pooled)
    monkeypatch.setattr(envstacks, "_drive", drive)
    return seen


def _examples(name: str, count: int) -> list[Any]:
    system = user_system(f"rlconform.libraries.envauthor.sample_envs:{name}", "gymnasium.Env")
    results = [
        execute_user_env(system, EnvCase(seed=i, action_seed=i, steps=12, num_envs=2)).stacks() for i in range(count)
    ]
    return [system, *results]


def test_a_correct_env_s_stacks_are_built_once_and_driven_again(drives: dict[str, list[Any]]) -> None:
    system, *examples = _examples("counter", 3)
    try:
        assert all(envstacks.agrees(result) for results in examples for result in results)
        assert [reused for _, reused in drives["pooled"]] == [False] * 3 + [True] * 6
        assert drives["fresh"] == []  # every reused run agreed: nothing to confirm
        assert stack_pool.pooled_count(system.id) == len(STACKS)
    finally:
        stack_pool.close_pool(system.id)
    assert stack_pool.pooled_count(system.id) == 0


def test_an_env_that_keeps_state_across_episodes_is_confirmed_on_fresh_builds_and_passes(
    drives: dict[str, list[Any]],
) -> None:
    system, *examples = _examples("curriculum", 2)
    try:
        # the second example's reused stacks ran episodes longer than a fresh env's: each was run
        # again on a fresh build, and that run, which agrees, is what the spec reads
        assert sorted(drives["fresh"]) == sorted(STACKS)
        assert all(envstacks.agrees(result) for results in examples for result in results)
    finally:
        stack_pool.close_pool(system.id)
    verdict = check_spec(system, get_spec("env.stack_equivalence"), SMALL, cache=RunCache())
    assert verdict.status == "pass", verdict.message
    assert stack_pool.pooled_count(system.id) == 0  # the search closed what it kept


def test_a_stack_that_disagrees_is_read_from_a_fresh_build_and_still_fails(drives: dict[str, list[Any]]) -> None:
    """SharedStateEnv's copies share class state: the in-process stacks differ from the bare env.
    The failure stands on fresh builds only: a disagreeing pooled stack is closed, never reused."""
    system = user_system("rlconform.libraries.envauthor.sample_envs:shared_state", "gymnasium.Env")
    verdict = check_spec(system, get_spec("env.stack_equivalence"), SMALL, cache=RunCache())
    assert verdict.status == "fail", verdict.message
    assert "gymnasium.SyncVectorEnv.NextStep: reward" in verdict.message, verdict.message
    # the in-process stacks disagreed in every example, so each of their runs was on a stack built
    # for it (the failing episode-end case, tried first, ends the search)
    in_process = [reused for stack, reused in drives["pooled"] if stack != "gymnasium.AsyncVectorEnv.SameStep"]
    assert in_process and not any(in_process)
    assert stack_pool.pooled_count(system.id) == 0


def test_a_search_drives_the_stacks_on_its_first_examples_only(drives: dict[str, list[Any]]) -> None:
    """Whatever the profile's number (twelve here), the search is the episode-end case and the
    next four drawn examples (``max_examples``), each driving the stacks: a drawn example after
    them would check nothing (take_stack_example, the test after this one, keeps the count where a
    search runs more), and the pass counts the examples driven through them."""
    system = user_system("rlconform.libraries.envauthor.sample_envs:counter", "gymnasium.Env")
    profile = Profile("twelve", 12, 12, True, "twelve derandomized examples", 20, 5, 10.0)
    verdict = check_spec(system, get_spec("env.stack_equivalence"), profile, cache=RunCache())
    assert verdict.status == "pass", verdict.message
    assert verdict.examples == stack_pool.STACK_EXAMPLES
    assert len(drives["pooled"]) == stack_pool.STACK_EXAMPLES * len(STACKS)
    assert f"examples driven through the stacks: {stack_pool.STACK_EXAMPLES}" in verdict.message, verdict.message
    assert "not exercised" not in verdict.message
    # the next search starts its count afresh
    verdict = check_spec(system, get_spec("env.stack_equivalence"), profile, cache=RunCache())
    assert len(drives["pooled"]) == 2 * stack_pool.STACK_EXAMPLES * len(STACKS)


def test_after_a_disagreement_every_example_of_the_search_drives_the_stacks() -> None:
    """A failure found on one of the first examples is shrunk through the stacks: every later
    candidate of that search drives them; the next search counts from zero again."""
    owner = "user:test-budget"
    try:
        assert [stack_pool.take_stack_example(owner) for _ in range(stack_pool.STACK_EXAMPLES + 2)] == [True] * (
            stack_pool.STACK_EXAMPLES
        ) + [False] * 2
        stack_pool.saw_disagreement(owner)
        assert all(stack_pool.take_stack_example(owner) for _ in range(3))
    finally:
        stack_pool.close_pool(owner)
    assert stack_pool.take_stack_example(owner)
    stack_pool.close_pool(owner)


HANG_STACKS = ("gymnasium.SyncVectorEnv.NextStep", "gymnasium.AsyncVectorEnv.SameStep")
#: two examples: the episode-end case and one drawn
TWO = Profile("two", 1, 1, True, "one drawn example", 20, 5, 10.0)


@pytest.fixture
def short_deadlines(monkeypatch: pytest.MonkeyPatch) -> None:
    """Calls time out after 2 s and a user stack's close after 3 s (instead of 30)."""
    from rlconform.core import watchdog

    monkeypatch.setenv("RLCONFORM_CALL_TIMEOUT", "2")
    monkeypatch.setattr(watchdog, "CLOSE_TIMEOUT", 3.0)
    monkeypatch.setattr(envstacks, "STACKS", HANG_STACKS)


@pytest.mark.usefixtures("short_deadlines")
def test_a_stack_whose_step_hangs_is_named_not_compared_and_blames_no_one() -> None:
    """The env answers every call bare; in an AsyncVectorEnv worker its step never returns. Before,
    the timed-out step was the stack's "error" and the env failed: a FAIL that may be the stack's."""
    system = user_system("rlconform.libraries.envauthor.sample_envs:async_step_hang", "gymnasium.Env")
    verdict = check_spec(system, get_spec("env.stack_equivalence"), TWO, cache=RunCache())
    assert verdict.status == "pass", verdict.message
    assert "gymnasium.AsyncVectorEnv.SameStep not compared: " in verdict.message, verdict.message
    assert "did not answer" in verdict.message and "the env answered every call bare" in verdict.message
    assert "the same transitions as the bare env through gymnasium.SyncVectorEnv.NextStep" in verdict.message
    assert "through gymnasium.SyncVectorEnv.NextStep, gymnasium.AsyncVectorEnv" not in verdict.message


@pytest.mark.usefixtures("short_deadlines")
def test_a_stack_whose_close_hangs_is_still_compared(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every step answered, then close() hung: the transitions are whole and compared (before, a
    hung run gave no pairs and the stack counted as agreeing on nothing). A pooled stack is closed
    when the search ends, unread; the runs on fresh builds (here every run: the pool refuses) close
    their stack, and that close is what hangs."""

    def no_pool(*args: Any) -> Any:
        raise RuntimeError("no pool in this test")

    monkeypatch.setattr(stack_pool, "drive_pooled", no_pool)
    system = user_system("rlconform.libraries.envauthor.sample_envs:async_close_hang", "gymnasium.Env")
    verdict = check_spec(system, get_spec("env.stack_equivalence"), TWO, cache=RunCache())
    assert verdict.status == "pass", verdict.message
    assert "gymnasium.AsyncVectorEnv.SameStep: close() " in verdict.message, verdict.message
    assert "episode ends crossed through gymnasium.AsyncVectorEnv.SameStep" in verdict.message, verdict.message
    assert "the same transitions as the bare env through gymnasium.SyncVectorEnv.NextStep, " in verdict.message
