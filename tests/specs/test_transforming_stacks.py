"""Correct stacks that transform what the reference envs return must not be blamed for it
(issue 24, causes 2-4): a TimeLimit the user adds around each sub-env is modelled with its own
limit; an observation transform inside each sub-env that hides the stamp leaves the infos to be
identified by their own stamps; a stateless clip that hides the lifetime episode counter in one
seeded run and not in the other is no irreproducibility. Real defects behind the same
transforms still fail.

Each test drives a real stack on one fixed case and reads the specs directly: no Hypothesis
search, so they stay cheap.
"""

from __future__ import annotations

import dataclasses
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
from rlconform.envs.spaces import BoxObs, DiscreteAction, MultiDiscreteObs

gymnasium = pytest.importorskip("gymnasium")

#: a terminated episode of 2 steps, then one the env never ends: only a time limit ends it
SCRIPT = EnvScript(
    obs=BoxObs(), action=DiscreteAction(n=2), episodes=(EpisodePlan(2, "terminated"), EpisodePlan(6, "never"))
)
USER_LIMIT = 3


def _run(system: System, case: Case, *, with_model: bool = False) -> Run:
    run = execute(system, case, with_model=with_model)
    assert run.usable, run.build_error
    return run


def _check(run: Run, spec_id: str) -> Outcome:
    return get_spec(spec_id).check(run)


def _messages(outcome: Outcome) -> list[str]:
    return [v.render() for v in outcome.violations]


# --- the stacks (module level: user factories are importable) ------------------------------


def gym_time_limit(env_fns: Any, **kwargs: Any) -> Any:
    """CleanRL's pattern: ``TimeLimit(env, N)`` inside each env thunk, then SyncVectorEnv."""
    from gymnasium.vector import SyncVectorEnv
    from gymnasium.wrappers import TimeLimit

    return SyncVectorEnv([lambda fn=fn: TimeLimit(fn(), USER_LIMIT) for fn in env_fns], **kwargs)


def sb3_time_limit(env_fns: Any) -> Any:
    """``make_vec_env(..., wrapper_class=TimeLimit)`` without its Monitor: a TimeLimit inside
    each env, then DummyVecEnv."""
    from gymnasium.wrappers import TimeLimit
    from stable_baselines3.common.vec_env import DummyVecEnv

    return DummyVecEnv([lambda fn=fn: TimeLimit(fn(), USER_LIMIT) for fn in env_fns])


def gym_time_limit_per_index(env_fns: Any, **kwargs: Any) -> Any:
    """Sub-envs with different limits: no one model describes them."""
    from gymnasium.vector import SyncVectorEnv
    from gymnasium.wrappers import TimeLimit

    return SyncVectorEnv([lambda fn=fn, i=i: TimeLimit(fn(), 2 + i) for i, fn in enumerate(env_fns)], **kwargs)


def frame_stack_per_env(env_fns: Any, **kwargs: Any) -> Any:
    from gymnasium.vector import SyncVectorEnv
    from gymnasium.wrappers import FrameStackObservation

    return SyncVectorEnv([lambda fn=fn: FrameStackObservation(fn(), 2) for fn in env_fns], **kwargs)


def normalize_per_env(env_fns: Any, **kwargs: Any) -> Any:
    from gymnasium.vector import SyncVectorEnv
    from gymnasium.wrappers import NormalizeObservation

    return SyncVectorEnv([lambda fn=fn: NormalizeObservation(fn()) for fn in env_fns], **kwargs)


def _swapped_reset_infos(envs: Any) -> Any:
    """A vector wrapper that hands env 1's reset info to env 0 and back (a real defect)."""
    from gymnasium.vector import VectorWrapper

    class SwapsResetInfos(VectorWrapper):  # type: ignore[misc]
        def reset(self, **kwargs: Any) -> Any:
            obs, infos = self.env.reset(**kwargs)
            return obs, {key: value[::-1] if isinstance(value, np.ndarray) else value for key, value in infos.items()}

    return SwapsResetInfos(envs)


def normalize_per_env_swapping_infos(env_fns: Any, **kwargs: Any) -> Any:
    return _swapped_reset_infos(normalize_per_env(env_fns, **kwargs))


def _clip(env: Any) -> Any:
    from gymnasium.wrappers import TransformObservation

    return TransformObservation(env, lambda obs: np.clip(obs, -10, 10), env.observation_space)


def clip_per_env(env_fns: Any, **kwargs: Any) -> Any:
    """CleanRL's ``np.clip(obs, -10, 10)`` per env: stateless and deterministic."""
    from gymnasium.vector import SyncVectorEnv

    return SyncVectorEnv([lambda fn=fn: _clip(fn()) for fn in env_fns], **kwargs)


def _seeding_once(envs: Any) -> Any:
    """A vector wrapper that passes the seed on only the first time (a real defect: the second
    seeded run is not the first)."""
    from gymnasium.vector import VectorWrapper

    class SeedsOnce(VectorWrapper):  # type: ignore[misc]
        seeded = False

        def reset(self, *, seed: Any = None, options: Any = None) -> Any:
            if self.seeded:
                seed = None
            self.seeded = self.seeded or seed is not None
            return self.env.reset(seed=seed, options=options)

    return SeedsOnce(envs)


def clip_per_env_seeding_once(env_fns: Any, **kwargs: Any) -> Any:
    """The same clip under a vector wrapper that passes the seed on only the first time."""
    return _seeding_once(clip_per_env(env_fns, **kwargs))


# --- a TimeLimit the user adds around each sub-env ------------------------------------------


def _time_limit_case(script_limit: int | None) -> Case:
    script = dataclasses.replace(SCRIPT, max_episode_steps=script_limit)
    return Case(script, 2, (Reset(seed=3), *tuple(Step((i % 2, 1)) for i in range(10))))


def _truncations(run: Run) -> list[list[bool]]:
    return [list(c.view.truncated) for c in run.calls if c.view is not None and c.view.kind == "step"]


@pytest.mark.parametrize("script_limit", [None, 5, 2], ids=["no-script-limit", "script-limit-looser", "script-tighter"])
@pytest.mark.parametrize(
    ("factory", "api"), [(gym_time_limit, "gymnasium.vector"), (sb3_time_limit, "sb3.VecEnv")], ids=["gym", "sb3"]
)
def test_a_user_time_limit_around_each_env_is_modelled_with_its_limit(
    factory: Any, api: str, script_limit: int | None
) -> None:
    """The model truncates where the tighter of the two limits does, so the model's outputs are
    the stack's (before the fix the model ran without the user's limit and every episode the
    user cut was a difference), declared or not."""
    if api == "sb3.VecEnv":
        pytest.importorskip("stable_baselines3")
    case = _time_limit_case(script_limit)
    for system in (factory_system(factory, api), with_intents(factory_system(factory, api), "time_limit")):
        run = _run(system, case, with_model=True)
        assert run.model is not None, run.model_reason
        outcome = _check(run, "model.outputs_match")
        assert outcome.violations == [] and outcome.checked > 0, _messages(outcome)
        if api == "gymnasium.vector":
            # the limits really cut episodes, on the stack and on its model alike
            assert any(any(row) for row in _truncations(run))
            assert _truncations(run) == _truncations(run.model)


def test_sub_envs_with_different_time_limits_get_no_model_and_a_reason() -> None:
    run = _run(factory_system(gym_time_limit_per_index, "gymnasium.vector"), _time_limit_case(None), with_model=True)
    assert run.model is None
    assert run.model_reason is not None and "time limit" in run.model_reason, run.model_reason
    outcome = _check(run, "model.outputs_match")
    assert outcome.violations == [] and outcome.not_applicable, outcome


# --- infos behind an observation transform inside each sub-env ------------------------------


#: two resets and no step: the stack's observations carry no stamp, and there is no transition
TWO_RESETS = Case(SCRIPT, 2, (Reset(seed=3), Reset(seed=None)))
RESETS_AND_STEPS = Case(SCRIPT, 2, (Reset(seed=3), Step((0, 1)), Step((1, 0)), Step((0, 0)), Reset(seed=None)))


@pytest.mark.parametrize("case", [TWO_RESETS, RESETS_AND_STEPS], ids=["two-resets", "resets-and-steps"])
@pytest.mark.parametrize("factory", [frame_stack_per_env, normalize_per_env], ids=["FrameStack", "Normalize"])
def test_reset_infos_behind_a_per_env_observation_transform_are_aligned(factory: Any, case: Case) -> None:
    """The info carries its own stamp: it is checked against the reset the env made in that
    call, not against an observation the transform made undecodable (or decodable by chance)."""
    for system in (
        factory_system(factory, "gymnasium.vector"),
        with_intents(factory_system(factory, "gymnasium.vector"), "observation"),
    ):
        outcome = _check(_run(system, case), "infos.aligned")
        assert outcome.violations == [] and outcome.checked > 0, _messages(outcome)


def test_swapped_reset_infos_behind_a_per_env_normalisation_still_fail() -> None:
    outcome = _check(
        _run(factory_system(normalize_per_env_swapping_infos, "gymnasium.vector"), TWO_RESETS), "infos.aligned"
    )
    messages = _messages(outcome)
    assert any("env 0, call 0: the reset info is env 1's info" in m for m in messages), messages


# --- reset determinism behind a stateless clip ----------------------------------------------


#: the first run after reset(seed=270) is in episode 2 (its counter survives the clip to
#: [-10, 10]), the second in episode 4 (clipped: the observation carries no stamp)
RESEED = Case(
    EnvScript(obs=MultiDiscreteObs(), action=DiscreteAction(n=2), episodes=(EpisodePlan(1, "terminated"),)),
    1,
    (
        Reset(seed=0),
        Step((0,)),
        Reset(seed=270),
        Step((0,)),
        Step((0,)),
        Reset(seed=270),
        Step((0,)),
        Step((0,)),
    ),
)


def test_a_stateless_clip_of_the_observation_is_reset_deterministic() -> None:
    outcome = _check(_run(factory_system(clip_per_env, "gymnasium.vector"), RESEED), "seeding.reset_determinism")
    assert outcome.violations == [] and outcome.checked > 0, _messages(outcome)


def test_a_stack_that_drops_the_second_seed_behind_the_clip_still_fails() -> None:
    run = _run(factory_system(clip_per_env_seeding_once, "gymnasium.vector"), RESEED)
    messages = _messages(_check(run, "seeding.reset_determinism"))
    assert any("after reset(seed=270) the same calls returned" in m for m in messages), messages


# --- a running reward normalizer inside each sub-env, declared ------------------------------


def normalize_reward_per_env(env_fns: Any, **kwargs: Any) -> Any:
    """CleanRL's ``NormalizeReward`` in each env thunk: its scale depends on every reward since it
    was built, so two seeded runs give different rewards by design."""
    from gymnasium.vector import SyncVectorEnv
    from gymnasium.wrappers import NormalizeReward

    return SyncVectorEnv([lambda fn=fn: NormalizeReward(fn()) for fn in env_fns], **kwargs)


def normalize_reward_per_env_seeding_once(env_fns: Any, **kwargs: Any) -> Any:
    """The same under a vector wrapper that passes the seed on only the first time."""
    return _seeding_once(normalize_reward_per_env(env_fns, **kwargs))


def test_a_declared_reward_normalizer_in_each_sub_env_is_reset_deterministic() -> None:
    """Declared, its rewards are not compared across seeded runs (they are not reproducible by
    design, and the stack gives no env units back); observations and flags still are. On main
    before this change the rewards were compared and the stack failed."""
    system = with_intents(factory_system(normalize_reward_per_env, "gymnasium.vector"), "reward")
    outcome = _check(_run(system, RESEED), "seeding.reset_determinism")
    assert outcome.violations == [] and outcome.checked > 0, _messages(outcome)
    assert any("not compared across seeded runs" in note for note in outcome.notes), outcome.notes


def test_a_stack_that_drops_the_second_seed_behind_the_reward_normalizer_still_fails() -> None:
    system = with_intents(factory_system(normalize_reward_per_env_seeding_once, "gymnasium.vector"), "reward")
    messages = _messages(_check(_run(system, RESEED), "seeding.reset_determinism"))
    assert any("after reset(seed=270) the same calls returned" in m for m in messages), messages


# --- episode statistics over a TimeLimit the user adds around each sub-env ------------------


def statistics_over_time_limit(env_fns: Any, **kwargs: Any) -> Any:
    from gymnasium.wrappers.vector import RecordEpisodeStatistics

    return RecordEpisodeStatistics(gym_time_limit(env_fns, **kwargs))


def statistics_over_time_limit_losing_them(env_fns: Any, **kwargs: Any) -> Any:
    """The same, under a vector wrapper that drops the statistics of sub-env 1 (a real defect)."""
    from gymnasium.vector import VectorWrapper

    class DropsStatistics(VectorWrapper):  # type: ignore[misc]
        def step(self, actions: Any) -> Any:
            obs, rewards, terminated, truncated, infos = self.env.step(actions)
            if "_episode" in infos:
                infos = dict(infos)
                infos["_episode"] = np.array(infos["_episode"])
                infos["_episode"][1] = False
            return obs, rewards, terminated, truncated, infos

    return DropsStatistics(statistics_over_time_limit(env_fns, **kwargs))


def test_episode_statistics_at_a_user_time_limit_are_an_episode_end() -> None:
    """The user's TimeLimit cuts episodes the env never ends; RecordEpisodeStatistics reports
    them there, correctly. Before this change the spec called that "reported while the episode
    continues"."""
    system = with_intents(factory_system(statistics_over_time_limit, "gymnasium.vector"), "time_limit")
    run = _run(system, _time_limit_case(None))
    assert run.semantics.get("episode_statistics")
    outcome = _check(run, "statistics.episode")
    assert outcome.violations == [] and outcome.checked > 0, _messages(outcome)


def test_episode_statistics_lost_at_a_user_time_limit_still_fail() -> None:
    system = with_intents(factory_system(statistics_over_time_limit_losing_them, "gymnasium.vector"), "time_limit")
    messages = _messages(_check(_run(system, _time_limit_case(None)), "statistics.episode"))
    assert any("env 1" in m and "ended but no episode statistics were reported" in m for m in messages), messages
