"""Single envs (issue 25): episode ends however long the episodes, actions at the edges of the
action space, and the random stream across resets without a seed.

Before, env-author mode drove each copy at most 40 steps per example: a 200-step episode never
ended inside a stack, and an observation that leaves its space only on the last step passed every
spec. Its actions were ``action_space.sample()``, which never lands on a Box bound; and it reset
with one seed, so an env that reseeds itself with a constant on every reset without a seed passed.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

pytest.importorskip("gymnasium")

from gymnasium import spaces

from rlconform.core.compare import first_difference
from rlconform.core.profiles import get_profile
from rlconform.core.runner import RunCache
from rlconform.core.search import Verdict, check_spec, edge_cases_for
from rlconform.core.spec import get_spec
from rlconform.core.user import user_system
from rlconform.envs.plan import Step
from rlconform.libraries.envauthor import harness, stack_pool
from rlconform.libraries.envauthor import stacks as envstacks
from rlconform.libraries.envauthor.case import EnvCase
from rlconform.libraries.envauthor.harness import execute_user_env
from rlconform.libraries.envauthor.probes import edge_actions

#: stacks that run the env in this process: enough to see the ends cross a stack, and cheap
IN_PROCESS = ("gymnasium.SyncVectorEnv.NextStep", "gymnasium.SyncVectorEnv.SameStep", "sb3.DummyVecEnv")


def _verdict(name: str, spec_id: str) -> Verdict:
    system = user_system(f"rlconform.libraries.envauthor.sample_envs:{name}", "gymnasium.Env")
    return check_spec(system, get_spec(spec_id), get_profile("ci"), cache=RunCache())


# ------------------------------------------------------------------------------ long episodes


def test_an_observation_out_of_space_on_the_last_of_200_steps_fails() -> None:
    verdict = _verdict("last_step_out_of_space", "env.observations_in_space")
    assert verdict.status == "fail", verdict.message
    assert "call 200: the observation returned by env.step(" in verdict.message, verdict.message
    assert "is outside Box(-1.0, 1.0, (3,), float32)" in verdict.message


def test_the_episode_end_case_is_driven_past_every_copy_s_first_episode_end() -> None:
    system = user_system("rlconform.libraries.envauthor.sample_envs:swing", "gymnasium.Env")
    run = execute_user_env(system, EnvCase(seed=3, action_seed=4, steps=5, num_envs=2, to_end=True))
    assert run.first_ends == [200, 200]
    assert run.horizon == 200 + 1 + harness.PAST_THE_END
    assert len(run.actions[0]) == run.horizon
    assert harness.episode_ends(run.first) == 2  # each of the two seeded runs ends once
    assert run.second is not None and harness.episode_ends(run.second) == 1


def test_a_drawn_case_keeps_its_own_steps_and_every_search_tries_the_episode_end_case_first() -> None:
    """Driving every drawn example to its ends cost an episode per copy through every stack (issue
    39): one case per search, tried first, crosses them."""
    system = user_system("rlconform.libraries.envauthor.sample_envs:swing", "gymnasium.Env")
    run = execute_user_env(system, EnvCase(seed=3, action_seed=4, steps=5, num_envs=2))
    assert run.horizon == 5 and run.first_ends == [] and harness.episode_ends(run.first) == 0
    assert run.after_end["ended"]  # the step past the end is still probed in every example
    (first,) = edge_cases_for(system, get_spec("env.api_shape"))
    assert first == EnvCase(0, 0, 40, system.capabilities.max_envs, to_end=True)
    (first,) = edge_cases_for(system, get_spec("env.stack_equivalence"))
    assert first == EnvCase(0, 0, 40, system.capabilities.max_envs, to_end=True, stacks_only=True)


def test_the_stacks_cases_drive_the_bare_env_once_as_far_as_the_stacks_go() -> None:
    """env.stack_equivalence's runs (EnvCase.stacks_only) make one bare pass, to see the env usable
    and answering: the stacks replay the bare env themselves, and nothing else reads those runs
    (issue 39). The episode-end case still finds the ends, and drives the copies as far."""
    system = user_system("rlconform.libraries.envauthor.sample_envs:swing", "gymnasium.Env")
    drawn = execute_user_env(system, EnvCase(seed=3, action_seed=4, steps=5, num_envs=2, stacks_only=True))
    assert drawn.usable and drawn.second is None and drawn.after_end == {}
    assert [type(call.op).__name__ for call in drawn.first.calls] == ["Reset"] + ["Step"] * 5
    assert drawn.stack_steps == 5 and len(drawn.actions) == 2
    whole = execute_user_env(system, EnvCase(seed=3, action_seed=4, steps=5, num_envs=2, to_end=True))
    light = execute_user_env(system, EnvCase(seed=3, action_seed=4, steps=5, num_envs=2, to_end=True, stacks_only=True))
    assert light.first_ends == whole.first_ends == [200, 200]
    assert light.horizon == light.stack_steps == whole.horizon
    assert np.array_equal(np.asarray(light.actions), np.asarray(whole.actions))
    assert light.second is None
    assert sum(isinstance(call.op, Step) for call in light.first.calls) == light.horizon  # one pass
    assert harness.episode_ends(light.first) == 1


def test_every_stack_crosses_the_episode_end_of_a_long_episode(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(envstacks, "STACKS", IN_PROCESS)
    verdict = _verdict("swing", "env.stack_equivalence")
    assert verdict.status == "pass", verdict.message
    assert "each copy crossed an episode end through every stack that agreed" in verdict.message
    assert "not exercised" not in verdict.message


def test_episodes_that_never_end_are_named_not_exercised_in_the_stacks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RLCONFORM_EPISODE_SECONDS", "0.25")
    monkeypatch.setattr(harness, "_NO_END", {})
    monkeypatch.setattr(envstacks, "STACKS", IN_PROCESS[:1])
    verdict = _verdict("endless", "env.stack_equivalence")
    assert verdict.status == "not_exercised", verdict.message
    assert "but an episode end crossed through a stack in none of them" in verdict.message
    assert "no episode end crossed a copy of gymnasium.SyncVectorEnv.NextStep" in verdict.message
    assert "no episode ended within 0.25 s of random actions" in verdict.message
    assert "declares no time limit" in verdict.message
    bare = _verdict("endless", "env.observations_in_space")
    assert bare.status == "pass" and "not exercised" not in bare.message, bare.message
    assert (
        "no episode end in the bare env's runs, so no step around one was checked: no episode ended within 0.25 s"
        in (bare.message)
    )
    after = _verdict("endless", "env.step_after_end")
    assert after.status == "not_exercised", after.message
    assert "an episode end in none of them: no episode ended within 0.25 s" in after.message


def test_an_example_of_images_records_a_bounded_number_of_steps(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(harness, "MAX_RECORDED_BYTES", 12 * 150)  # 150 observations of 3 float32
    system = user_system("rlconform.libraries.envauthor.sample_envs:swing", "gymnasium.Env")
    run = execute_user_env(system, EnvCase(seed=3, action_seed=4, steps=5, num_envs=1, to_end=True))
    assert run.horizon == 5
    assert run.ends_missed is not None and "past the 150 steps an example records" in run.ends_missed


# ------------------------------------------------------------------------------ edge actions


def test_the_edges_of_each_kind_of_space() -> None:
    discrete = edge_actions(spaces.Discrete(3, start=-1))
    assert [int(a) for _, a in discrete] == [-1, 0, 1]
    large = edge_actions(spaces.Discrete(1000))
    assert len(large) == 64 and int(large[-1][1]) == 999
    multi = dict(edge_actions(spaces.MultiDiscrete([3, 4], start=[0, 1])))
    assert multi["each component's least value"].tolist() == [0, 1]
    assert multi["each component's greatest value"].tolist() == [2, 4]
    box = dict(edge_actions(spaces.Box(np.array([-2.0, -np.inf]), np.array([2.0, 0.0]), dtype=np.float32)))
    assert box["the high bound"].tolist() == [2.0, 0.0]
    assert box["the low bound"].tolist() == [-2.0, -1e6]
    assert box["the low bound and the high bound alternating"].tolist() == [-2.0, 0.0]
    combined = edge_actions(spaces.Dict({"move": spaces.Discrete(2), "push": spaces.MultiBinary(2)}))
    assert len(combined) == 4 and all(
        spaces.Dict({"move": spaces.Discrete(2), "push": spaces.MultiBinary(2)}).contains(a) for _, a in combined
    )
    assert edge_actions(spaces.Text(5)) == []


def test_an_env_that_rejects_its_own_bounds_fails_edge_actions() -> None:
    verdict = _verdict("edge_rejecting", "env.edge_actions")
    assert verdict.status == "fail", verdict.message
    assert "the low bound of Box(-2.0, 2.0, (1,), float32), raised ValueError: torque -2.0 out of range" in (
        verdict.message
    )


@pytest.mark.parametrize("name", ["counter", "swing", "grid_moves", "offset_discrete", "dict_obs"])
def test_correct_envs_accept_every_edge(name: str) -> None:
    verdict = _verdict(name, "env.edge_actions")
    assert verdict.status == "pass", verdict.message


# ------------------------------------------------------------------------------ seeding streams


def test_an_env_that_reseeds_with_a_constant_fails_seed_stream() -> None:
    verdict = _verdict("constant_reseed", "env.seed_stream")
    assert verdict.status == "fail", verdict.message
    assert "every second episode was the same" in verdict.message
    assert "reseeds itself with a constant on a reset without a seed" in verdict.message


@pytest.mark.parametrize("name", ["counter", "stream_reseed", "swing"])
def test_envs_that_continue_their_stream_pass_seed_stream(name: str) -> None:
    verdict = _verdict(name, "env.seed_stream")
    assert verdict.status == "pass", verdict.message
    assert "too little randomness" not in verdict.message


def test_an_env_without_randomness_passes_seed_stream_saying_why_it_cannot_tell() -> None:
    verdict = _verdict("clockwork", "env.seed_stream")
    assert verdict.status == "pass", verdict.message
    assert "too little randomness there to tell" in verdict.message


def test_a_stacks_only_bare_pass_is_kept_as_copy_0_s_replay(
    monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    """Gymnasium's and SB3's stacks ask for copy 0 replayed from seed + 0 with its actions, which is
    the stacks_only run's bare pass: kept, it is not made again (issue 39), and it is what the
    replay would have made. Not kept where the pass differs from a replay (an odd seed's reset has
    options={}), and then the stacks replay copy 0 as before."""
    system = user_system("rlconform.libraries.envauthor.sample_envs:swing", "gymnasium.Env")
    made: list[tuple[Any, ...]] = []
    replay = envstacks._replay

    def counted(factory: Any, resets: tuple[Any, ...], actions: list[Any]) -> list[dict[str, Any]]:
        made.append(resets)
        return replay(factory, resets, actions)

    monkeypatch.setattr(envstacks, "_replay", counted)
    monkeypatch.setattr(envstacks, "STACKS", ("gymnasium.SyncVectorEnv.NextStep", "sb3.DummyVecEnv"))
    stack_pool.close_pool(system.id)  # a search of its own: its examples drive the stacks
    request.addfinalizer(lambda: stack_pool.close_pool(system.id))
    run = execute_user_env(system, EnvCase(seed=4, action_seed=5, steps=12, num_envs=2, stacks_only=True))
    (kept,) = run._replays.values()
    made_again = replay(run.system.env_factory, (4,), list(run.actions[0][:12]))
    assert len(kept) == len(made_again) == 12
    for mine, theirs in zip(kept, made_again, strict=True):
        assert first_difference(mine, theirs) is None
    results = run.stacks()
    assert all(envstacks.agrees(result) for result in results), [envstacks.stack_difference(r) for r in results]
    assert made == [(5,)]  # copy 1 only: copy 0 was the bare pass, for both stacks
    odd = execute_user_env(system, EnvCase(seed=3, action_seed=5, steps=12, num_envs=2, stacks_only=True))
    assert odd._replays == {}
    made.clear()
    assert all(envstacks.agrees(result) for result in odd.stacks())
    assert made == [(3,), (4,)]


def test_two_factories_of_one_name_each_read_their_own_env() -> None:
    """The env is built once per check to read its spaces (harness._PROBED): a second factory of
    the same name (two functools.partial, say) must not be read as the first."""
    from rlconform.core.user import factory_system
    from rlconform.libraries.envauthor import sample_envs

    counter = factory_system(sample_envs.counter, "gymnasium.Env", reference="tests:same_name")
    swing = factory_system(sample_envs.swing, "gymnasium.Env", reference="tests:same_name")
    assert counter.id == swing.id
    first = execute_user_env(counter, EnvCase(seed=1, action_seed=2, steps=3, num_envs=1))
    second = execute_user_env(swing, EnvCase(seed=1, action_seed=2, steps=3, num_envs=1))
    assert first.action_space == sample_envs.counter().action_space
    assert second.action_space == sample_envs.swing().action_space != first.action_space


def test_an_endless_env_s_budget_is_not_read_for_another_factory_of_its_name(monkeypatch: pytest.MonkeyPatch) -> None:
    """An env found not to end within the budget is not searched again (harness._NO_END), but only
    for that factory: another of the same name still has its episode ends found."""
    from rlconform.core.user import factory_system
    from rlconform.libraries.envauthor import sample_envs

    monkeypatch.setenv("RLCONFORM_EPISODE_SECONDS", "0.25")
    monkeypatch.setattr(harness, "_NO_END", {})
    endless = factory_system(sample_envs.endless, "gymnasium.Env", reference="tests:same_name_ends")
    swing = factory_system(sample_envs.swing, "gymnasium.Env", reference="tests:same_name_ends")
    case = EnvCase(seed=3, action_seed=4, steps=5, num_envs=1, to_end=True)
    assert execute_user_env(endless, case).ends_missed is not None
    assert execute_user_env(swing, case).first_ends == [200]
