"""TorchRL stacks in env-author mode, and the torchrl.EnvBase adapter's recipe against ground truth.

A correct user env must give the same transitions through TorchRL's GymWrapper, SerialEnv and
ParallelEnv as bare; an env whose Dict observation has an ``"action"`` entry (a meta-RL classic:
the previous action) collides with the key TorchRL reserves for the policy's action and is caught
by the TorchRL stacks only. The adapter itself is checked the way every adapter is: its recipe,
run on reference envs, must extract exactly the transitions the envs' logs record.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import numpy as np
import pytest

pytest.importorskip("torchrl")
pytest.importorskip("stable_baselines3")

from gymnasium import spaces

from rlconform.core.profiles import Profile
from rlconform.core.runner import RunCache, execute
from rlconform.core.search import check_spec
from rlconform.core.spec import get_spec
from rlconform.core.system import System, get_system
from rlconform.core.user import user_system
from rlconform.envs.plan import Case, Reset, Step
from rlconform.envs.script import EnvScript, EpisodePlan
from rlconform.libraries.envauthor import stacks as envstacks
from rlconform.libraries.envauthor.case import EnvCase
from rlconform.libraries.envauthor.harness import execute_user_env
from rlconform.libraries.envauthor.sample_envs import CounterEnv
from rlconform.libraries.torchrl.env_objects import SUB_ENV_RESETS

#: a few examples each: every example runs the env through every stack, several with workers
SMALL = Profile(
    "torchrl-tests", 3, 3, True, "a few derandomized examples", shrink_examples=30, shrink_examples_out_of_process=10
)
TORCHRL_STACKS = ("torchrl.GymWrapper", "torchrl.SerialEnv.GymWrapper", "torchrl.ParallelEnv.GymWrapper")
#: stacks that run the env in this process (the planted env below lives in this test module,
#: which worker processes need not be able to import)
IN_PROCESS_TORCHRL = ("torchrl.GymWrapper", "torchrl.SerialEnv.GymWrapper")
IN_PROCESS_OTHERS = (
    "gymnasium.SyncVectorEnv.NextStep",
    "gymnasium.SyncVectorEnv.SameStep",
    "gymnasium.SyncVectorEnv.Disabled",
    "sb3.DummyVecEnv",
)


@pytest.mark.parametrize(
    "reference",
    ["rlconform.libraries.envauthor.sample_envs:counter", "rlconform.libraries.envauthor.sample_envs:cartpole"],
)
def test_correct_user_env_is_equivalent_through_the_torchrl_stacks(reference: str) -> None:
    assert set(TORCHRL_STACKS) <= set(envstacks.STACKS)
    system = user_system(reference, "gymnasium.Env")
    verdict = check_spec(system, get_spec("env.stack_equivalence"), SMALL, cache=RunCache())
    assert verdict.status == "pass", verdict.message
    assert "not exercised" not in verdict.message  # every stack's library is installed here
    # the TorchRL stacks really ran and extracted transitions for every copy
    run = execute_user_env(system, EnvCase(seed=11, action_seed=5, steps=20, num_envs=2))
    results = {r.stack: r for r in run.stacks()}
    for stack_id in TORCHRL_STACKS:
        result = results[stack_id]
        assert result.error is None, f"{stack_id}: {result.error}"
        # the case's 20 steps, or more to cross every copy's first episode end (env-author mode)
        assert result.pairs and all(len(slots) == run.horizon >= 20 for slots, _ in result.pairs), stack_id


class PreviousActionEnv(CounterEnv):
    """A correct env that observes its previous action under the key ``"action"``.

    Bare, and through Gymnasium's and SB3's vectorizers, the observation at t carries a_{t-1}.
    TorchRL's GymWrapper puts Dict entries at the root of the TensorDict, where the caller writes
    the policy's action: the transition's root observation then carries a_t instead."""

    def __init__(self) -> None:
        super().__init__()
        self.observation_space = spaces.Dict(  # type: ignore[assignment]
            {"position": spaces.Box(-10.0, 10.0, (2,), np.float32), "action": spaces.Discrete(3)}
        )
        self._previous = 0

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Any:
        obs, info = super().reset(seed=seed, options=options)
        self._previous = 0
        return {"position": obs, "action": np.int64(0)}, info

    def step(self, action: Any) -> Any:
        obs, reward, terminated, truncated, info = super().step(action)
        self._previous = int(action)
        return {"position": obs, "action": np.int64(self._previous)}, reward, terminated, truncated, info


def previous_action() -> PreviousActionEnv:
    return PreviousActionEnv()


def _planted_system() -> System:
    base = user_system("rlconform.libraries.envauthor.sample_envs:counter", "gymnasium.Env")
    return dataclasses.replace(
        base,
        id="user:test_torchrl_stacks:previous_action",
        title="previous_action() (observes its previous action under 'action')",
        source="test_torchrl_stacks:previous_action",
        build=lambda env_fns: previous_action(),
        env_factory=previous_action,
    )


def test_observation_key_colliding_with_torchrl_action_key_is_caught_by_the_torchrl_stacks_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    system, spec = _planted_system(), get_spec("env.stack_equivalence")
    monkeypatch.setattr(envstacks, "STACKS", IN_PROCESS_OTHERS)
    others = check_spec(system, spec, SMALL, cache=RunCache())
    assert others.status == "pass", f"Gymnasium/SB3 stacks: {others.message}"
    monkeypatch.setattr(envstacks, "STACKS", IN_PROCESS_TORCHRL)
    verdict = check_spec(system, spec, SMALL, cache=RunCache())
    assert verdict.status == "fail", verdict.message
    assert re.search(r"torchrl\.[\w.]+: obs differs \(\['action'\]", verdict.message), verdict.message


def test_stacks_of_a_missing_library_are_named_in_the_verdict(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(envstacks, "STACKS", ("gymnasium.SyncVectorEnv.SameStep", *IN_PROCESS_TORCHRL))
    real = envstacks.stack_skip_reason
    monkeypatch.setattr(
        envstacks,
        "stack_skip_reason",
        lambda stack_id: "not installed: torchrl" if stack_id.startswith("torchrl.") else real(stack_id),
    )
    system = user_system("rlconform.libraries.envauthor.sample_envs:counter", "gymnasium.Env")
    verdict = check_spec(system, get_spec("env.stack_equivalence"), SMALL, cache=RunCache())
    assert verdict.status == "pass", verdict.message
    for stack_id in IN_PROCESS_TORCHRL:
        assert f"{stack_id} not run (not installed: torchrl)" in verdict.message, verdict.message


#: episodes that end by termination, by truncation, and by the TimeLimit (a "never" episode and a
#: 5-step one, cut at 4 steps); sub-envs start at different plans (env_stride), so they end apart
ENDINGS = EnvScript(
    episodes=(EpisodePlan(2, "terminated"), EpisodePlan(3, "truncated"), EpisodePlan(5, "never"), EpisodePlan(5)),
    env_stride=1,
    max_episode_steps=4,
)


def _case(num_envs: int, steps: int = 16) -> Case:
    return Case(
        ENDINGS, num_envs, (Reset(seed=3), *(Step(tuple((t + j) % 3 for j in range(num_envs))) for t in range(steps)))
    )


@pytest.mark.parametrize(
    ("system_id", "num_envs"),
    [
        ("torchrl.SerialEnv.GymWrapper", 3),
        ("torchrl.GymWrapper", 1),
        ("torchrl.ParallelEnv.GymWrapper", 2),
        ("torchrl.GymWrapper.SyncVectorEnv", 2),
    ],
)
def test_recipe_extracts_exactly_the_transitions_the_envs_made(system_id: str, num_envs: int) -> None:
    run = execute(get_system(system_id), _case(num_envs), with_model=False)
    assert run.usable, run.build_error
    assert not [c.describe() for c in run.calls if c.failed or "view_error" in c.extra]
    assert run.truth is not None
    ended = {episode.ended for env in run.truth.envs for episode in env.episodes}
    assert {"terminated", "truncated"} <= ended
    # a TimeLimit end: a truncation the env itself did not return
    assert any(t.truncated and t.next_obs.step == 4 for env in run.truth.envs for t in env.transitions)
    outcome = get_spec("transitions.exact").check(run)
    assert outcome.checked > 0
    assert not outcome.violations, [v.render() for v in outcome.violations]
    # the seeds the adapter says each sub-env received are the ones the envs logged
    recorded = run.calls[0].extra[SUB_ENV_RESETS]
    logged = [tuple(reset.seed for reset in env.resets[:2]) for env in run.truth.envs]
    assert [tuple(r) for r in recorded] == logged
