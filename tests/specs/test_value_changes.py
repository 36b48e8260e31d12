"""Stacks that change values on purpose: every transition is delivered, so a changed reward,
observation layout or a stack-added time limit is reported as what it is (a value change of the
spec owning the field, with how to declare it), never as a missing or invented transition; a
declared change passes and is listed as "changed as declared"; real missing and invented
transitions still fail, declared intents or not.

Each test drives a real stack (Gymnasium, SB3, TorchRL) on one fixed case and reads the specs
directly: no Hypothesis search, so they stay cheap.
"""

from __future__ import annotations

import dataclasses
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rlconform.core.intents import INTENTS, parse_intents
from rlconform.core.runner import execute
from rlconform.core.spec import Outcome, get_spec
from rlconform.core.system import System, get_system
from rlconform.core.user import BadInput, factory_system, with_intents
from rlconform.envs.driver import Run
from rlconform.envs.plan import Case, Reset, Step
from rlconform.envs.script import EnvScript, EpisodePlan
from rlconform.envs.spaces import BoxAction, BoxObs, DictObs, DiscreteAction, MultiBinaryObs, MultiDiscreteObs
from rlconform.specs.value_changes import UNDECODABLE

gymnasium = pytest.importorskip("gymnasium")

#: two episodes per env: one that terminates after 2 steps, one truncated by the env after 3
SCRIPT = EnvScript(
    obs=BoxObs(), action=DiscreteAction(n=2), episodes=(EpisodePlan(2, "terminated"), EpisodePlan(3, "truncated"))
)
DICT_SCRIPT = dataclasses.replace(SCRIPT, obs=DictObs((("pos", BoxObs(shape=(2, 3))), ("state", BoxObs()))))
#: episodes the env never ends: only a time limit the stack adds ends them
ENDLESS = dataclasses.replace(SCRIPT, episodes=(EpisodePlan(1, "never"),))
ALL_INTENTS = frozenset(INTENTS)
MISSING_OR_INVENTED = ("missing transition", "invented transition", "starts from not an observation")


def _case(script: EnvScript, num_envs: int, steps: int) -> Case:
    return Case(script, num_envs, (Reset(seed=3), *tuple(Step((i % 2,) * num_envs) for i in range(steps))))


def _check(run: Run, spec_id: str) -> Outcome:
    return get_spec(spec_id).check(run)


def _messages(outcome: Outcome) -> list[str]:
    return [v.render() for v in outcome.violations]


def _declared(system: System, *intents: str) -> System:
    return dataclasses.replace(system, intended=frozenset(intents))


def _run(system: System, case: Case) -> Run:
    run = execute(system, case, with_model=False)
    assert run.usable, run.build_error
    return run


# --- the stacks (module level: user factories are importable) ------------------------------


def clip_reward(env_fns: Any, **kwargs: Any) -> Any:
    from gymnasium.vector import SyncVectorEnv
    from gymnasium.wrappers.vector import ClipReward

    return ClipReward(SyncVectorEnv(env_fns, **kwargs), min_reward=-0.5, max_reward=0.5)


def transform_reward(env_fns: Any, **kwargs: Any) -> Any:
    from gymnasium.vector import SyncVectorEnv
    from gymnasium.wrappers.vector import TransformReward

    return TransformReward(SyncVectorEnv(env_fns, **kwargs), lambda r: 2 * r + 1)


def flatten_observation(env_fns: Any, **kwargs: Any) -> Any:
    from gymnasium.vector import SyncVectorEnv
    from gymnasium.wrappers.vector import FlattenObservation

    return FlattenObservation(SyncVectorEnv(env_fns, **kwargs))


def shift_observation(env_fns: Any, **kwargs: Any) -> Any:
    """Moves every observation by 0.5: no observation decodes any more."""
    from gymnasium.vector import SyncVectorEnv
    from gymnasium.wrappers.vector import TransformObservation

    envs = SyncVectorEnv(env_fns, **kwargs)
    return TransformObservation(envs, lambda obs: obs + 0.5, envs.observation_space)


def vec_normalize_reward(env_fns: Any) -> Any:
    from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

    return VecNormalize(DummyVecEnv(env_fns), norm_obs=False, norm_reward=True)


def torchrl_reward_clipping(env_fn: Any) -> Any:
    from torchrl.envs import GymWrapper, RewardClipping, TransformedEnv

    return TransformedEnv(GymWrapper(env_fn()), RewardClipping(-0.5, 0.5))


def torchrl_step_counter(env_fn: Any) -> Any:
    from torchrl.envs import GymWrapper, StepCounter, TransformedEnv

    return TransformedEnv(GymWrapper(env_fn()), StepCounter(max_steps=3))


# --- rewards --------------------------------------------------------------------------------


@pytest.mark.parametrize("factory", [clip_reward, transform_reward], ids=["ClipReward", "TransformReward"])
def test_a_gymnasium_reward_transform_is_a_reward_change_and_passes_when_declared(factory: Any) -> None:
    system = factory_system(factory, "gymnasium.vector")
    run = _run(system, _case(SCRIPT, 2, 6))
    messages = _messages(_check(run, "transitions.exact"))
    assert messages, "the rewards the agent sees are not the env's"
    assert all("the stack changed it; declare --intended reward if this is on purpose" in m for m in messages), messages
    assert not any(word in m for m in messages for word in MISSING_OR_INVENTED), messages

    declared = _check(_run(_declared(system, "reward"), _case(SCRIPT, 2, 6)), "transitions.exact")
    assert declared.violations == [] and declared.checked > 0
    assert declared.notes == ["rewards changed by the stack, as declared (--intended reward)"]


def test_torchrl_reward_clipping_is_a_reward_change_and_passes_when_declared() -> None:
    pytest.importorskip("torchrl")
    system = factory_system(torchrl_reward_clipping, "torchrl.EnvBase")
    case = _case(SCRIPT, 1, 5)
    messages = _messages(_check(_run(system, case), "transitions.exact"))
    assert messages and all("declare --intended reward" in m for m in messages), messages
    assert not any(word in m for m in messages for word in MISSING_OR_INVENTED), messages
    assert _check(_run(_declared(system, "reward"), case), "transitions.exact").violations == []


def test_sb3_vec_normalize_of_rewards_only_is_read_through_its_documented_inverse() -> None:
    """VecNormalize(norm_obs=False) has no obs_rms: recording its statistics raised inside
    rlconform (an internal error on every spec); SB3's recipe stores get_original_reward(), so
    the transitions are the env's and no change needs declaring."""
    pytest.importorskip("stable_baselines3")
    system = factory_system(vec_normalize_reward, "sb3.VecEnv")
    run = _run(system, _case(SCRIPT, 2, 6))
    assert not any(c.failed for c in run.calls), [c.error_message for c in run.calls]
    for spec_id in ("transitions.exact", "flags.truncated", "statistics.normalizer"):
        outcome = _check(run, spec_id)
        assert outcome.violations == [], (spec_id, _messages(outcome))


# --- observations ---------------------------------------------------------------------------


def test_flattened_dict_observations_keep_their_stamp_and_are_an_observation_change() -> None:
    system = factory_system(flatten_observation, "gymnasium.vector")
    case = _case(DICT_SCRIPT, 2, 6)
    run = _run(system, case)
    messages = _messages(_check(run, "transitions.exact"))
    assert messages and all("flattened to shape" in m and "declare --intended observation" in m for m in messages)
    assert not any(word in m for m in messages for word in MISSING_OR_INVENTED), messages
    # the transitions are identified by their stamps: the other specs read them as usual
    for spec_id in ("infos.aligned", "terminal.final_obs", "flags.truncated", "continuity.fresh_first_obs"):
        outcome = _check(run, spec_id)
        assert outcome.violations == [] and outcome.checked > 0, (spec_id, _messages(outcome))
    declared = _check(_run(_declared(system, "observation"), case), "transitions.exact")
    assert declared.violations == [] and declared.notes == [
        "observations changed by the stack, as declared (--intended observation)"
    ]


def test_observations_that_lose_their_stamp_are_matched_by_position() -> None:
    system = factory_system(shift_observation, "gymnasium.vector")
    case = _case(SCRIPT, 2, 6)
    messages = _messages(_check(_run(system, case), "transitions.exact"))
    assert messages and all("matched by position; declare --intended observation" in m for m in messages), messages
    assert not any(word in m for m in messages for word in MISSING_OR_INVENTED), messages
    run = _run(_declared(system, "observation"), case)
    for spec_id in ("transitions.exact", "infos.aligned", "flags.terminated", "flags.truncated"):
        outcome = _check(run, spec_id)
        assert outcome.violations == [] and outcome.checked > 0, (spec_id, _messages(outcome))


def normalize_observation(env_fns: Any, **kwargs: Any) -> Any:
    from gymnasium.wrappers.vector import NormalizeObservation

    return NormalizeObservation(gymnasium.vector.SyncVectorEnv(list(env_fns), **kwargs))


def test_a_declared_normalisation_whose_observations_decode_by_chance_is_matched_by_position() -> None:
    """NormalizeObservation's outputs sometimes decode to a stamp by chance (a vector of zeros):
    with ``--intended observation`` declared, one observation that carries no stamp means the
    stack's observations are matched by position, not reported as transitions from nowhere (the
    corpus entry gym_normalize_observation failed these three specs before)."""
    from rlconform.core.search import check_spec
    from rlconform.core.user import probe

    system = _declared(probe(factory_system(normalize_observation, "gymnasium.vector")), "observation")
    for spec_id in ("transitions.exact", "reset_step.neutral", "continuity.fresh_first_obs"):
        verdict = check_spec(system, get_spec(spec_id), "matrix")
        assert verdict.status in ("pass", "not_exercised"), (spec_id, verdict.message)
    assert check_spec(system, get_spec("transitions.exact"), "matrix").status == "pass"


def dict_info_to_list(env_fns: Any, **kwargs: Any) -> Any:
    from gymnasium.vector import SyncVectorEnv
    from gymnasium.wrappers.vector import DictInfoToList

    return DictInfoToList(SyncVectorEnv(env_fns, **kwargs))


def test_infos_converted_to_a_list_lose_no_transition_and_the_layout_is_an_api_finding() -> None:
    """DictInfoToList lists infos per sub-env: the recipe read them as a dict and extracted no
    transition at all ("missing transition" everywhere); the layout is api.shape's finding."""
    run = _run(factory_system(dict_info_to_list, "gymnasium.vector"), _case(SCRIPT, 2, 6))
    for spec_id in ("transitions.exact", "infos.aligned", "counts.env_steps", "terminal.final_obs"):
        outcome = _check(run, spec_id)
        assert outcome.violations == [] and outcome.checked > 0, (spec_id, _messages(outcome))
    assert any("infos is a list; documented: a dict" in m for m in _messages(_check(run, "api.shape")))


# --- a time limit the stack adds ------------------------------------------------------------


def test_torchrl_step_counter_time_limit_is_a_truncation_by_the_stack_and_passes_when_declared() -> None:
    pytest.importorskip("torchrl")
    system = factory_system(torchrl_step_counter, "torchrl.EnvBase")
    case = _case(ENDLESS, 1, 7)
    run = _run(system, case)
    for spec_id in ("transitions.exact", "flags.truncated"):
        messages = _messages(_check(run, spec_id))
        assert messages and all(
            "the stack cut it after 3 steps (a time limit added by the stack); declare --intended time_limit" in m
            for m in messages
        ), messages
        assert not any(word in m for m in messages for word in MISSING_OR_INVENTED), messages
    # the stack's reset after its own truncation discards nothing behind the agent's back
    assert _check(run, "continuity.no_discarded_episode").violations == []
    declared = _run(_declared(system, "time_limit"), case)
    for spec_id in ("transitions.exact", "flags.truncated", "continuity.no_discarded_episode", "counts.env_steps"):
        outcome = _check(declared, spec_id)
        assert outcome.violations == [], (spec_id, _messages(outcome))
    assert "the stack truncates episodes after 3 steps, as declared (--intended time_limit)" in (
        _check(declared, "flags.truncated").notes
    )


def torchrl_frame_skip(env_fn: Any) -> Any:
    from torchrl.envs import FrameSkipTransform, GymWrapper, TransformedEnv

    return TransformedEnv(GymWrapper(env_fn()), FrameSkipTransform(2))


def test_torchrl_frame_skip_spans_env_steps_and_passes_when_declared() -> None:
    """Episodes of 4 steps under a frame skip of 2: each transition spans two env steps, its
    reward their sum; none of the env's transitions is missing."""
    pytest.importorskip("torchrl")
    system = factory_system(torchrl_frame_skip, "torchrl.EnvBase")
    case = _case(dataclasses.replace(SCRIPT, episodes=(EpisodePlan(4, "terminated"),)), 1, 5)
    messages = _messages(_check(_run(system, case), "transitions.exact"))
    assert messages and all(
        "2 env steps after" in m and "a frame skip); declare --intended frame_skip" in m for m in messages
    ), messages
    assert not any(word in m for m in messages for word in MISSING_OR_INVENTED), messages
    declared = _run(_declared(system, "frame_skip"), case)
    for spec_id in ("transitions.exact", "counts.env_steps", "flags.terminated", "terminal.final_obs"):
        outcome = _check(declared, spec_id)
        assert outcome.violations == [] and outcome.checked > 0, (spec_id, _messages(outcome))


def test_torchrl_frame_skip_steps_past_an_episode_end_even_when_declared() -> None:
    """FrameSkipTransform._step repeats env.step frame_skip - 1 times without looking at done
    (torchrl/envs/transforms/_env.py): an episode of 3 steps is stepped to step 4."""
    pytest.importorskip("torchrl")
    system = _declared(factory_system(torchrl_frame_skip, "torchrl.EnvBase"), *ALL_INTENTS)
    run = _run(system, _case(dataclasses.replace(SCRIPT, episodes=(EpisodePlan(3, "truncated"),)), 1, 2))
    assert any(
        "after it had ended (it reached step 4)" in m for m in _messages(_check(run, "lifecycle.no_step_after_end"))
    )
    assert any(
        re.search(r"next_obs is episode \d+ step 4; expected episode \d+ step 3 \(the terminal observation\)", m)
        for m in _messages(_check(run, "terminal.final_obs"))
    )


def pooled_frame_skip(env: Any) -> Any:
    """A correct max-pooling frame skip of 2: the max of the last two frames of each skip, and the
    last frame alone when the episode ends early (what upstream's open fix, Gymnasium #1692, does)."""
    import gymnasium

    class PooledSkip(gymnasium.Wrapper):  # type: ignore[type-arg]
        def step(self, action: Any) -> Any:
            frames, total = [], 0.0
            for _ in range(2):
                obs, reward, terminated, truncated, info = self.env.step(action)
                frames.append(obs)
                total += float(reward)
                if terminated or truncated:
                    return obs, total, terminated, truncated, info
            return np.max(np.stack(frames), axis=0), total, terminated, truncated, info

    return PooledSkip(env)


def max_and_skip(env: Any) -> Any:
    from gymnasium.wrappers import MaxAndSkipObservation

    return MaxAndSkipObservation(env, skip=2)


#: episodes of 5 env steps: the third agent step of each ends it after one of its two env steps;
#: multi-binary observations, whose max over two frames often decodes as another frame
_ODD = dataclasses.replace(SCRIPT, obs=MultiBinaryObs(), episodes=(EpisodePlan(5, "terminated"),))


def _twice_seeded(script: EnvScript) -> Case:
    steps = tuple(Step((i % 2,)) for i in range(7))
    return Case(script, 1, (Reset(seed=3), *steps, Reset(seed=3), *steps))


def test_a_pooled_frame_skip_is_counted_from_the_env_log_and_passes_when_declared() -> None:
    """Max-pooled observations decode as some frame of the skip or as none: counting env steps by
    decoding them matched one env step per agent step and failed flags.terminated, counts.env_steps,
    infos.aligned and transitions.exact where an episode ended early (issue 35, cause 2), and
    seeding.reset_determinism read the pool's counter-dependent components as the stack's state.
    Declared, a correct pooled skip passes; each of its observations holds only values of the frames
    its call made."""
    system = _declared(factory_system(pooled_frame_skip, "gymnasium.Wrapper"), "frame_skip", "observation")
    run = _run(system, _twice_seeded(_ODD))
    for spec_id in (
        "transitions.exact",
        "counts.env_steps",
        "flags.terminated",
        "flags.truncated",
        "infos.aligned",
        "terminal.final_obs",
        "seeding.reset_determinism",
    ):
        outcome = _check(run, spec_id)
        assert outcome.violations == [] and outcome.checked > 0, (spec_id, _messages(outcome))


def test_max_and_skip_observation_returns_a_stale_frame_as_the_terminal_observation() -> None:
    """Gymnasium's MaxAndSkipObservation (1.x) pools its buffer's last slot, left from an earlier
    call, with the terminal frame when an episode ends before the last skipped step (FINDINGS G11;
    upstream's fix is an open pull request, #1692): found under the same declarations."""
    system = _declared(factory_system(max_and_skip, "gymnasium.Wrapper"), "frame_skip", "observation")
    messages = _messages(_check(_run(system, _twice_seeded(_ODD)), "terminal.final_obs"))
    assert any("(the terminal observation)" in m for m in messages), messages


def time_limit_per_env(env_fns: Any, **kwargs: Any) -> Any:
    from gymnasium.vector import SyncVectorEnv
    from gymnasium.wrappers import TimeLimit

    return SyncVectorEnv([lambda fn=fn: TimeLimit(fn(), 3) for fn in env_fns], **kwargs)


def test_a_gymnasium_time_limit_around_each_env_also_when_it_coincides_with_termination() -> None:
    """TimeLimit(3) around each env: episodes the env never ends are cut at step 3, and one the
    env terminates at step 3 gets both flags (Gymnasium's TimeLimit sets truncated there too)."""
    system = factory_system(time_limit_per_env, "gymnasium.vector")
    script = dataclasses.replace(SCRIPT, episodes=(EpisodePlan(3, "terminated"), EpisodePlan(5, "never")))
    case = _case(script, 2, 9)
    messages = _messages(_check(_run(system, case), "flags.truncated"))
    assert any("but the env did not end the episode: the stack cut it after 3 steps" in m for m in messages)
    assert any("but the env terminated it on that step: the stack cut it after 3 steps" in m for m in messages)
    assert all("declare --intended time_limit" in m for m in messages), messages
    declared = _run(_declared(system, "time_limit"), case)
    for spec_id in ("transitions.exact", "flags.truncated", "flags.terminated", "continuity.no_discarded_episode"):
        outcome = _check(declared, spec_id)
        assert outcome.violations == [], (spec_id, _messages(outcome))


def time_limit_wrapper(env: Any) -> Any:
    from gymnasium.wrappers import TimeLimit

    return TimeLimit(env, 4)


def test_a_declared_time_limit_that_falls_on_the_terminating_step_passes_with_no_cut_in_the_run() -> None:
    """TimeLimit(env, 4) under --api gymnasium.Wrapper: the only episode terminates at step 4, where
    Gymnasium's TimeLimit documents terminated=True, truncated=True. No episode is cut elsewhere in
    the run, none goes past step 4: the declared limit is the story (issue 35, cause 3: this failed
    transitions.exact and flags.truncated before). Undeclared, the message carries the hint."""
    system = factory_system(time_limit_wrapper, "gymnasium.Wrapper")
    script = dataclasses.replace(SCRIPT, episodes=(EpisodePlan(4, "terminated"),))
    case = Case(script, 1, (Reset(seed=3), *(Step((0,)) for _ in range(4))))
    undeclared = _run(system, case)
    messages = _messages(_check(undeclared, "flags.truncated"))
    assert messages and all(
        "but the env terminated it on that step: the stack cut it after 4 steps" in m
        and "declare --intended time_limit" in m
        for m in messages
    ), messages
    declared = _run(_declared(system, "time_limit"), case)
    for spec_id in ("transitions.exact", "flags.truncated", "flags.terminated"):
        outcome = _check(declared, spec_id)
        assert outcome.violations == [] and outcome.checked > 0, (spec_id, _messages(outcome))


def truncates_every_termination(env: Any) -> Any:
    """Planted: truncated mirrors terminated, at whatever step the episode ends (no time limit)."""
    import gymnasium

    class MirrorTruncation(gymnasium.Wrapper):  # type: ignore[type-arg]
        def step(self, action: Any) -> Any:
            obs, reward, terminated, truncated, info = self.env.step(action)
            return obs, reward, terminated, truncated or terminated, info

    return MirrorTruncation(env)


def test_truncated_on_every_termination_is_no_time_limit_even_when_declared() -> None:
    """Episodes terminating at steps 2 and 4: a 'limit' at 2 is passed by the episode of 4 steps."""
    system = _declared(factory_system(truncates_every_termination, "gymnasium.Wrapper"), "time_limit")
    script = dataclasses.replace(SCRIPT, episodes=(EpisodePlan(2, "terminated"), EpisodePlan(4, "terminated")))
    case = Case(script, 1, (Reset(seed=3), *(Step((0,)) for _ in range(7))))
    messages = _messages(_check(_run(system, case), "flags.truncated"))
    assert any("truncated is True" in m for m in messages), messages


# --- actions: the system's own action space, and action changes ----------------------------

BOX_SCRIPT = dataclasses.replace(SCRIPT, action=BoxAction(dims=2))


def _box_case(steps: int) -> Case:
    values = ((-1.0, 0.5), (0.0, -0.25), (1.0, 1.0), (0.5, 0.0))
    return Case(BOX_SCRIPT, 1, (Reset(seed=3), *(Step((values[i % len(values)],)) for i in range(steps))))


def rescale_action(env: Any) -> Any:
    from gymnasium.wrappers import RescaleAction

    return RescaleAction(env, 0.0, 1.0)


def declares_unit_box_but_passes_actions_through(env: Any) -> Any:
    """Planted: declares Box(0, 1) as its action space and hands the agent's action on unscaled."""
    import gymnasium

    class UnscaledAction(gymnasium.ActionWrapper):  # type: ignore[type-arg]
        def __init__(self, env: Any) -> None:
            super().__init__(env)
            space = env.action_space
            self.action_space = gymnasium.spaces.Box(0.0, 1.0, shape=space.shape, dtype=space.dtype)

        def action(self, action: Any) -> Any:
            return action

    return UnscaledAction(env)


def test_a_wrapper_is_sent_actions_of_its_own_action_space() -> None:
    """RescaleAction(env, 0, 1) under --api gymnasium.Wrapper: the agent's actions come from [0, 1],
    the wrapper's declared space, and reach the env rescaled (issue 35, cause 6: the wrapped env's
    values were sent, -1.0 became -3.0 and transitions.exact failed). A wrapper that declares [0, 1]
    and does not rescale still fails."""
    run = _run(factory_system(rescale_action, "gymnasium.Wrapper"), _box_case(5))
    sent = [np.asarray(call.args_snapshot[0]) for call in run.calls if isinstance(call.op, Step)]
    assert sent and all(a.min() >= 0.0 and a.max() <= 1.0 for a in sent), sent
    outcome = _check(run, "transitions.exact")
    assert outcome.violations == [] and outcome.checked > 0, _messages(outcome)
    planted = _run(factory_system(declares_unit_box_but_passes_actions_through, "gymnasium.Wrapper"), _box_case(5))
    messages = _messages(_check(planted, "transitions.exact"))
    assert messages and all("the stack changed it; declare --intended action" in m for m in messages), messages


def sticky_action(env: Any) -> Any:
    from gymnasium.wrappers import StickyAction

    return StickyAction(env, repeat_action_probability=0.5)


def ignores_the_agent(env: Any) -> Any:
    """Planted: the env always receives action 0, whatever the agent sent."""
    import gymnasium

    class FirstAction(gymnasium.ActionWrapper):  # type: ignore[type-arg]
        def action(self, action: Any) -> Any:
            return 0

    return FirstAction(env)


def _sticky_case() -> Case:
    script = dataclasses.replace(SCRIPT, action=DiscreteAction(n=3), episodes=(EpisodePlan(5, "terminated"),))
    return Case(script, 1, (Reset(seed=3), *(Step(((i + 1) % 3,)) for i in range(12))))


def test_sticky_actions_are_an_action_change_accepted_when_declared_and_checked_as_sticky() -> None:
    """StickyAction repeats the env's previous action now and then: undeclared, transitions.exact
    names the action change and --intended action (issue 35, cause 6: it was a bare mismatch
    with no declaration to make); action=sticky passes; a wrapper sending one fixed action is no
    sticky action and fails under that declaration."""
    system = factory_system(sticky_action, "gymnasium.Wrapper")
    messages = _messages(_check(_run(system, _sticky_case()), "transitions.exact"))
    assert messages and all("the stack changed it; declare --intended action" in m for m in messages), messages
    for declaration in (("action",), ("action", "action=sticky")):
        outcome = _check(_run(_declared(system, *declaration), _sticky_case()), "transitions.exact")
        assert outcome.violations == [] and outcome.checked > 0, (declaration, _messages(outcome))
    planted = _declared(factory_system(ignores_the_agent, "gymnasium.Wrapper"), "action", "action=sticky")
    messages = _messages(_check(_run(planted, _sticky_case()), "transitions.exact"))
    assert any("the declared action=sticky accepts" in m and "episode's first step" in m for m in messages), messages
    assert any("the declared action=sticky accepts" in m and "on the step before" in m for m in messages), messages


# --- real defects still fail, declared intents or not ---------------------------------------


@pytest.mark.parametrize(
    ("system_id", "spec_id", "words"),
    [
        ("planted.mislabelled_mode", "transitions.exact", "invented transition"),
        ("planted.double_step", "transitions.exact", "missing transition"),
        ("planted.drops_truncation", "flags.truncated", "truncated is False"),
        ("planted.reset_all_on_end", "continuity.no_discarded_episode", "discarded"),
    ],
)
def test_planted_bugs_still_fail_even_with_every_intent_declared(system_id: str, spec_id: str, words: str) -> None:
    planted = get_system(system_id)
    for system in (planted, _declared(planted, *ALL_INTENTS)):
        messages = _messages(_check(_run(system, _case(SCRIPT, 2, 8)), spec_id))
        assert any(words in m for m in messages), (system.intended, messages)


# --- declaring ------------------------------------------------------------------------------


def test_intents_parse_from_commas_and_lists_and_unknown_ones_are_bad_input() -> None:
    assert parse_intents("reward, time_limit") == {"reward", "time_limit"}
    assert parse_intents(["reward", "observation,reward"]) == {"reward", "observation"}
    assert parse_intents(None) == frozenset()
    system = factory_system(clip_reward, "gymnasium.vector")
    assert with_intents(system, ["reward"]).intended == {"reward"}
    with pytest.raises(BadInput, match="unknown intended change 'rewards'; known: reward, observation, time_limit"):
        with_intents(system, "rewards")


def test_parametrize_with_checks_carries_the_declared_intents() -> None:
    from rlconform.testing import parametrize_with_checks

    mark = parametrize_with_checks(
        [clip_reward], api="gymnasium.vector", specs=["transitions.exact"], intended="reward"
    )
    (param,) = mark.args[1]
    assert param.values[0].system.intended == {"reward"}


@pytest.mark.slow  # runs the CLI in a subprocess
def test_cli_check_intended_turns_a_reward_change_into_a_declared_pass(tmp_path: Path) -> None:
    (tmp_path / "mystack.py").write_text(
        "from gymnasium.vector import SyncVectorEnv\n"
        "from gymnasium.wrappers.vector import ClipReward\n\n\n"
        "def make(env_fns, **kwargs):\n"
        "    return ClipReward(SyncVectorEnv(env_fns, **kwargs), min_reward=-0.5, max_reward=0.5)\n"
    )
    base = [sys.executable, "-m", "rlconform.cli", "check", "mystack:make", "--api", "gymnasium.vector"]
    base += ["--profile", "ci", "--spec", "transitions.exact", "--in-process"]
    undeclared = subprocess.run(base, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert undeclared.returncode == 1, undeclared.stdout + undeclared.stderr
    assert "the stack changed it; declare --intended reward if this is on purpose" in undeclared.stdout
    declared = subprocess.run(
        [*base, "--intended", "reward"], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert declared.returncode == 0, declared.stdout + declared.stderr
    assert "rewards changed by the stack, as declared (--intended reward)" in declared.stdout
    bad = subprocess.run([*base, "--intended", "bogus"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert bad.returncode == 2 and "unknown intended change 'bogus'" in bad.stdout + bad.stderr


@pytest.mark.slow  # pytest in a subprocess
def test_plugin_intended_option_declares_the_change(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RLCONFORM_PROFILE", "ci")
    pytester.makepyfile(
        mystack=(
            "from gymnasium.vector import SyncVectorEnv\n"
            "from gymnasium.wrappers.vector import ClipReward\n\n\n"
            "def make(env_fns, **kwargs):\n"
            "    return ClipReward(SyncVectorEnv(env_fns, **kwargs), min_reward=-0.5, max_reward=0.5)\n"
        )
    )
    check = ["-p", "no:cacheprovider", "--rlconform-check", "mystack:make", "--rlconform-api", "gymnasium.vector"]
    check += ["--rlconform-specs", "transitions.exact"]
    result = pytester.runpytest_subprocess(*check, "--rlconform-intended", "reward")
    result.assert_outcomes(passed=1)


# --- issue 35: observations a stack changes beyond decoding, clips, float32 rewards ---------


#: the specs that read decoded observations (besides transitions.exact, which owns the change)
OBSERVATION_READERS = ("continuity.fresh_first_obs", "terminal.final_obs", "reset_step.neutral", "infos.aligned")


def _script(obs: Any) -> EnvScript:
    return dataclasses.replace(SCRIPT, obs=obs)


def scale_observation(env_fns: Any, **kwargs: Any) -> Any:
    """A stateless scaling of the observations, with no inverse rlconform could read them back by."""
    from gymnasium.vector import SyncVectorEnv
    from gymnasium.wrappers.vector import TransformObservation

    envs = SyncVectorEnv(env_fns, **kwargs)
    return TransformObservation(envs, lambda obs: (obs.astype(float) - 3.0) / 7.0, envs.observation_space)


def normalize_leaking_the_previous_episode(env_fns: Any, **kwargs: Any) -> Any:
    """Planted: Gymnasium's NormalizeObservation whose reset normalises the previous call's
    observations instead of the new episode's first ones."""
    from gymnasium.wrappers.vector import NormalizeObservation

    class Leaks(NormalizeObservation):  # type: ignore[misc]
        raw: Any = None
        resetting = False

        def reset(self, **kw: Any) -> Any:
            self.resetting = True
            try:
                return super().reset(**kw)
            finally:
                self.resetting = False

        def observations(self, observations: Any) -> Any:
            shown = self.raw if self.resetting and self.raw is not None else observations
            self.raw = observations.copy()
            return super().observations(shown)

    return Leaks(gymnasium.vector.SyncVectorEnv(list(env_fns), **kwargs))


@pytest.mark.parametrize("obs", [MultiDiscreteObs(), MultiBinaryObs()], ids=["MultiDiscrete", "MultiBinary"])
def test_normalize_observation_over_integer_observations_is_read_back_like_a_box(obs: Any) -> None:
    """Gymnasium's NormalizeObservation over MultiDiscrete observations was told as lost first,
    terminal and reset observations (issue 35): its published inverse gives 36.9999 back for 37,
    which the MultiDiscrete codec truncated. Read as a Box is (within 1e-3 of an integer), every
    observation is the env's, as for a Box."""
    case = _case(_script(obs), 2, 7)
    run = _run(factory_system(normalize_observation, "gymnasium.vector"), case)
    for spec_id in ("transitions.exact", *OBSERVATION_READERS):
        outcome = _check(run, spec_id)
        assert outcome.violations == [] and outcome.checked > 0, (spec_id, _messages(outcome))


@pytest.mark.parametrize(
    "obs", [MultiDiscreteObs(), MultiBinaryObs(), BoxObs()], ids=["MultiDiscrete", "MultiBinary", "Box"]
)
def test_observations_changed_beyond_decoding_tell_one_story(obs: Any) -> None:
    """Undeclared: transitions.exact tells the change (the values were changed, declare it), and
    every other spec reading decoded observations says once that they are not decodable, never
    that they were lost. Declared: those specs are not applicable, with the reason."""
    case = _case(_script(obs), 2, 7)
    system = factory_system(scale_observation, "gymnasium.vector")
    run = _run(system, case)
    messages = _messages(_check(run, "transitions.exact"))
    assert messages and all(
        "the observation values were changed" in m and "declare --intended observation" in m for m in messages
    ), messages
    assert not any(word in m for m in messages for word in MISSING_OR_INVENTED), messages
    for spec_id in OBSERVATION_READERS:
        outcome = _check(run, spec_id)
        assert outcome.violations == [], (spec_id, _messages(outcome))
    for spec_id in ("continuity.fresh_first_obs", "terminal.final_obs", "reset_step.neutral"):
        assert _check(run, spec_id).notes == [UNDECODABLE], spec_id
    declared = _run(_declared(system, "observation"), case)
    assert _check(declared, "transitions.exact").violations == []
    for spec_id in ("continuity.fresh_first_obs", "terminal.final_obs"):
        reason = _check(declared, spec_id).not_applicable
        assert reason is not None and "--intended observation" in reason, spec_id


def test_a_normalizer_leaking_the_previous_episode_still_fails_in_decoded_terms() -> None:
    ops = (Reset(seed=3), Step((0, 0)), Step((1, 1)), Reset(seed=4), Step((0, 0)), Step((1, 1)))
    run = _run(
        factory_system(normalize_leaking_the_previous_episode, "gymnasium.vector"),
        Case(_script(MultiDiscreteObs()), 2, ops),
    )
    messages = _messages(_check(run, "continuity.fresh_first_obs"))
    assert messages and all("starts from episode 1 step" in m and "expected episode 2 step 0" in m for m in messages), (
        messages
    )
    assert not any("not an observation any env produced" in m for m in messages), messages


#: two sub-envs reseeded twice with the same seed; salts 56 and 87 are cut by a clip at 5, and at
#: the third reset(seed=0) one clipped observation reads by chance as a stamp no env made
RESEEDED = Case(
    EnvScript(obs=BoxObs(), action=DiscreteAction(n=2), episodes=(EpisodePlan(1, "never"),)),
    2,
    tuple(op for _ in range(3) for op in (Reset(seed=0), *(Step((0, 0)) for _ in range(4)))),
)


def clip_observation(env_fns: Any, **kwargs: Any) -> Any:
    from gymnasium.vector import SyncVectorEnv
    from gymnasium.wrappers.vector import TransformObservation

    envs = SyncVectorEnv(env_fns, **kwargs)
    return TransformObservation(envs, lambda obs: np.clip(obs, 0, 5), envs.observation_space)


def stateful_clip(env_fns: Any, **kwargs: Any) -> Any:
    """Planted: a clip whose bound moves with the resets it has seen (5, then 4, then 3)."""
    from gymnasium.vector import SyncVectorEnv
    from gymnasium.wrappers.vector import TransformObservation

    resets = [0]
    envs = SyncVectorEnv(env_fns, **kwargs)

    class Clip(TransformObservation):  # type: ignore[misc]
        def reset(self, **kw: Any) -> Any:
            resets[0] += 1
            return super().reset(**kw)

    return Clip(envs, lambda obs: np.clip(obs, 0, 6 - resets[0]), envs.observation_space)


@pytest.mark.parametrize("intents", [(), ("observation",)], ids=["plain", "declared"])
def test_a_stateless_clip_of_the_observations_is_reproducible(intents: tuple[str, ...]) -> None:
    """The two reset(seed=0) runs differ only in the env's lifetime episode counter: the clip
    left it in one run and cut it in the other (issue 35: "not reproduced where the envs' two
    observations agree" printed as if an observation). Compared where the env's own outputs
    were the same, the runs agree."""
    run = _run(_declared(factory_system(clip_observation, "gymnasium.vector"), *intents), RESEEDED)
    outcome = _check(run, "seeding.reset_determinism")
    assert outcome.violations == [] and outcome.checked > 0, _messages(outcome)


def test_a_stateful_clip_is_not_reproducible() -> None:
    messages = _messages(
        _check(_run(factory_system(stateful_clip, "gymnasium.vector"), RESEEDED), "seeding.reset_determinism")
    )
    assert messages, "a clip whose bound moves across seeded resets passed"
    assert all("of the observation is" in m and "where the env returned the same value" in m for m in messages), (
        messages
    )


def float32_rewards(env_fns: Any, **kwargs: Any) -> Any:
    """The env's rewards returned as float32 (Gymnasium documents float64: dtype.rewards_flags)."""
    from gymnasium.vector import SyncVectorEnv
    from gymnasium.wrappers.vector import TransformReward

    return TransformReward(SyncVectorEnv(env_fns, **kwargs), lambda r: np.asarray(r, dtype=np.float32))


def test_float32_rewards_are_the_envs_rewards_at_float32_precision() -> None:
    """A float32 reward 3.5e-8 from the env's float64 one was told as a reward the stack changed
    (issue 35); the dtype is dtype.rewards_flags's finding, the values are the env's."""
    run = _run(factory_system(float32_rewards, "gymnasium.vector"), _case(SCRIPT, 2, 6))
    outcome = _check(run, "transitions.exact")
    assert outcome.violations == [] and outcome.checked > 0, _messages(outcome)
    assert _messages(_check(run, "dtype.rewards_flags")), "the float32 dtype is still a finding"
