"""``torchrl.transform_values``: the entries RewardSum, StepCounter and InitTracker add are checked
against ground truth per sub-env (issue 24), through ``step_and_maybe_reset``'s autoresets.

Each test drives a real stack on one fixed case (episodes of 2, 3 and 1 steps, so that every
sub-env autoresets several times, at different agent steps) and reads the spec directly.
"""

from __future__ import annotations

from typing import Any

import pytest

from rlconform.core.runner import execute
from rlconform.core.spec import Outcome, get_spec
from rlconform.core.system import System, get_system
from rlconform.core.user import factory_system
from rlconform.envs.plan import Case, Reset, Step
from rlconform.envs.script import EnvScript, EpisodePlan
from rlconform.envs.spaces import BoxObs, DiscreteAction

pytest.importorskip("torchrl")

SPEC = "torchrl.transform_values"
SCRIPT = EnvScript(
    obs=BoxObs(),
    action=DiscreteAction(n=2),
    episodes=(EpisodePlan(2, "terminated"), EpisodePlan(3, "truncated"), EpisodePlan(1, "terminated")),
)


def _case(num_envs: int, steps: int = 9) -> Case:
    return Case(
        SCRIPT, num_envs, (Reset(seed=3), *(Step(tuple((i + j) % 2 for j in range(num_envs))) for i in range(steps)))
    )


def _check(system: System, num_envs: int = 1) -> Outcome:
    run = execute(system, _case(num_envs), with_model=False)
    assert run.usable, run.build_error
    return get_spec(SPEC).check(run)


def _messages(outcome: Outcome) -> list[str]:
    return [v.render() for v in outcome.violations]


# --- correct stacks (module level: user factories are importable) ----------------------------


def reward_sum(env_fn: Any) -> Any:
    from torchrl.envs import GymWrapper, RewardSum, TransformedEnv

    return TransformedEnv(GymWrapper(env_fn()), RewardSum())


def reward_sum_custom_key(env_fn: Any) -> Any:
    from torchrl.envs import GymWrapper, RewardSum, TransformedEnv

    return TransformedEnv(GymWrapper(env_fn()), RewardSum(in_keys=["reward"], out_keys=["return_so_far"]))


def step_counter(env_fn: Any) -> Any:
    from torchrl.envs import GymWrapper, StepCounter, TransformedEnv

    return TransformedEnv(GymWrapper(env_fn()), StepCounter())


def step_counter_limit(env_fn: Any) -> Any:
    from torchrl.envs import GymWrapper, StepCounter, TransformedEnv

    return TransformedEnv(GymWrapper(env_fn()), StepCounter(max_steps=2))


def init_tracker(env_fn: Any) -> Any:
    from torchrl.envs import GymWrapper, InitTracker, TransformedEnv

    return TransformedEnv(GymWrapper(env_fn()), InitTracker())


def all_three_serial(env_fn: Any) -> Any:
    from torchrl.envs import Compose, GymWrapper, InitTracker, RewardSum, SerialEnv, StepCounter, TransformedEnv

    return TransformedEnv(
        SerialEnv(2, lambda: GymWrapper(env_fn())), Compose(StepCounter(), RewardSum(), InitTracker())
    )


def inside_each_sub_env(env_fn: Any) -> Any:
    from torchrl.envs import GymWrapper, RewardSum, SerialEnv, StepCounter, TransformedEnv

    return SerialEnv(2, lambda: TransformedEnv(GymWrapper(env_fn()), StepCounter()).append_transform(RewardSum()))


def reward_scaled_then_summed(env_fn: Any) -> Any:
    from torchrl.envs import Compose, GymWrapper, RewardScaling, RewardSum, TransformedEnv

    return TransformedEnv(GymWrapper(env_fn()), Compose(RewardScaling(loc=0.0, scale=2.0), RewardSum()))


def plain(env_fn: Any) -> Any:
    from torchrl.envs import GymWrapper

    return GymWrapper(env_fn())


CORRECT = [
    (reward_sum, 1, {"episode_reward"}),
    (reward_sum_custom_key, 1, {"return_so_far"}),
    (step_counter, 1, {"step_count"}),
    (step_counter_limit, 1, {"step_count"}),
    (init_tracker, 1, {"is_init"}),
    (all_three_serial, 2, {"step_count", "episode_reward", "is_init"}),
    (inside_each_sub_env, 2, {"step_count", "episode_reward"}),
    (reward_scaled_then_summed, 1, {"episode_reward"}),
]


@pytest.mark.parametrize(("factory", "num_envs", "keys"), CORRECT, ids=[f.__name__ for f, _, _ in CORRECT])
def test_correct_stacks_pass(factory: Any, num_envs: int, keys: set[str]) -> None:
    run = execute(factory_system(factory, "torchrl.EnvBase"), _case(num_envs), with_model=False)
    assert run.usable, run.build_error
    assert {e["name"] for e in run.semantics["added_entries"]} == keys
    outcome = get_spec(SPEC).check(run)
    assert outcome.not_applicable is None and outcome.violations == [], _messages(outcome)
    # every value read: a reset and two per transition, per entry and sub-env
    assert outcome.checked == len(keys) * num_envs * (1 + 2 * 9)


def test_the_bundled_control_passes() -> None:
    outcome = _check(get_system("torchrl.TransformedEnv.RewardSum.StepCounter.InitTracker.SerialEnv"), 3)
    assert outcome.not_applicable is None and outcome.violations == [], _messages(outcome)
    assert outcome.checked == 3 * 3 * (1 + 2 * 9)


def test_a_stack_without_these_transforms_is_not_applicable_with_the_reason() -> None:
    outcome = _check(factory_system(plain, "torchrl.EnvBase"))
    assert outcome.not_applicable is not None and "RewardSum, StepCounter or InitTracker" in outcome.not_applicable
    outcome = _check(get_system("torchrl.TransformedEnv.DoubleToFloat.SerialEnv"), 2)
    assert outcome.not_applicable is not None


# --- planted defects ------------------------------------------------------------------------


def test_a_reward_sum_carried_over_an_autoreset_fails() -> None:
    messages = _messages(_check(get_system("planted.torchrl_reward_sum_carries_over")))
    # episode 2 is truncated after 3 steps (rewards 1, 2.0625, 3): episode 3 starts from their sum
    assert (
        "env 0, agent step 4: episode_reward (CarriesOver) at the first observation of episode 3 is "
        "6.062500953674316; expected 0: the episode has had no reward yet"
    ) in messages, messages
    assert any(
        m.startswith("env 0, agent step 4: next/episode_reward (CarriesOver) at episode 3 after 1 step(s) is 7.125")
        and "expected 1.06250012, the sum of the episode's 1 real reward(s) so far [1.06250012]" in m
        for m in messages
    ), messages


def test_a_step_count_not_zeroed_by_an_autoreset_fails() -> None:
    messages = _messages(_check(get_system("planted.torchrl_step_counter_not_zeroed")))
    assert (
        "env 0, agent step 4: step_count (NotZeroed) at the first observation of episode 3 is 3; expected 0, "
        "the agent steps of the episode so far"
    ) in messages, messages
    assert (
        "env 0, agent step 4: next/step_count (NotZeroed) at episode 3 after 1 step(s) is 4; expected 1, "
        "the agent steps of the episode so far"
    ) in messages, messages


def test_an_autoreset_first_observation_left_unmarked_fails() -> None:
    messages = _messages(_check(get_system("planted.torchrl_init_tracker_plain_reset_only")))
    # the autoresets after agent steps 3, 4 and 6; env.reset()'s observation is marked
    assert messages == [
        f"env 0, agent step {step}: is_init (PlainResetOnly) at the first observation of episode {episode} is "
        "False; expected True (the first observation of an episode)"
        for step, episode in ((4, 3), (5, 4), (7, 5))
    ], messages
