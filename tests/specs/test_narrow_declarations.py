"""Narrow declarations (issue 25): ``--intended`` may name the kind of change intended
(``reward=scale``, ``reward=clip``, ``reward=normalize``, ``observation=normalize``,
``observation=flatten``), and a declared kind is checked: a change of another kind fails with a
message naming the declared kind and the value. Plain ``reward``/``observation`` accept any
change, as before.

A reward the stack took from another step and rescaled (a user's normalizer whose scaler divides
the previous step's reward, r'_t = r_{t-1} / sigma) fails under every declaration, plain or
narrow, and undeclared, with a message that does not suggest declaring it.

Real transforms declared narrowly pass: Gymnasium's ClipReward, TransformReward (a scale),
NormalizeReward around each sub-env, FlattenObservation and NormalizeObservation, SB3's
VecNormalize. Each test drives a real stack on one fixed case and reads the specs directly.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest

from rlconform.core.intents import UnknownIntent, kind_of, parse_intents
from rlconform.core.runner import execute
from rlconform.core.spec import Outcome, get_spec
from rlconform.core.system import System
from rlconform.core.user import factory_system
from rlconform.envs.driver import Run
from rlconform.envs.plan import Case, Reset, Step
from rlconform.envs.script import EnvScript, EpisodePlan
from rlconform.envs.spaces import BoxObs, DictObs, DiscreteAction

gymnasium = pytest.importorskip("gymnasium")

SCRIPT = EnvScript(
    obs=BoxObs(),
    action=DiscreteAction(n=2),
    episodes=(EpisodePlan(2, "terminated"), EpisodePlan(4, "truncated"), EpisodePlan(3, "terminated")),
)
DICT_SCRIPT = dataclasses.replace(SCRIPT, obs=DictObs((("pos", BoxObs(shape=(2, 3))), ("state", BoxObs()))))


def _case(script: EnvScript = SCRIPT, num_envs: int = 2, steps: int = 12) -> Case:
    return Case(script, num_envs, (Reset(seed=3), *tuple(Step((i % 2, 1)[:num_envs]) for i in range(steps))))


def _declared(system: System, *intents: str) -> System:
    return dataclasses.replace(system, intended=parse_intents(list(intents))) if intents else system


def _outcome(factory: Callable[..., Any], api: str, *intents: str, case: Case | None = None) -> Outcome:
    run: Run = execute(_declared(factory_system(factory, api), *intents), case or _case(), with_model=False)
    assert run.usable, run.build_error
    return get_spec("transitions.exact").check(run)


def _messages(outcome: Outcome) -> list[str]:
    return [v.render() for v in outcome.violations]


def _passes(outcome: Outcome) -> None:
    assert outcome.checked > 0 and outcome.violations == [], _messages(outcome)


# --- parsing --------------------------------------------------------------------------------


def test_a_narrow_declaration_comes_with_its_plain_one() -> None:
    assert parse_intents("reward=scale") == {"reward", "reward=scale"}
    assert parse_intents(["reward = clip", "time_limit"]) == {"reward", "reward=clip", "time_limit"}
    assert parse_intents("reward,observation") == {"reward", "observation"}
    assert kind_of(parse_intents("reward=normalize,observation"), "reward") == "normalize"
    assert kind_of(parse_intents("reward=normalize,observation"), "observation") is None


@pytest.mark.parametrize(
    ("value", "words"),
    [
        ("reward=squash", "unknown intended change 'reward=squash'; known: reward, observation"),
        ("time_limit=clip", "unknown intended change 'time_limit=clip'"),
        ("reward=clip,reward=scale", "reward=clip and reward=scale declare two kinds of reward change"),
    ],
)
def test_an_unknown_or_double_kind_is_bad_input(value: str, words: str) -> None:
    with pytest.raises(UnknownIntent, match=words):
        parse_intents(value)


# --- stacks (module level: user factories are importable) ------------------------------------


def clip_reward(env_fns: Sequence[Callable[[], Any]]) -> Any:
    from gymnasium.wrappers.vector import ClipReward

    return ClipReward(gymnasium.vector.SyncVectorEnv(list(env_fns)), min_reward=-0.5, max_reward=2.5)


def clip_reward_per_env(env_fns: Sequence[Callable[[], Any]]) -> Any:
    from gymnasium.wrappers import ClipReward

    return gymnasium.vector.SyncVectorEnv([lambda fn=fn: ClipReward(fn(), 0.0, 3.0) for fn in env_fns])


def scale_reward(env_fns: Sequence[Callable[[], Any]]) -> Any:
    from gymnasium.wrappers.vector import TransformReward

    return TransformReward(gymnasium.vector.SyncVectorEnv(list(env_fns)), lambda r: 0.25 * r)


def scale_reward_per_env(env_fns: Sequence[Callable[[], Any]]) -> Any:
    """A different constant per sub-env: a scale per sub-env is still a scale."""
    from gymnasium.wrappers import TransformReward

    return gymnasium.vector.SyncVectorEnv(
        [lambda fn=fn, c=k + 2.0: TransformReward(fn(), lambda r: c * r) for k, fn in enumerate(env_fns)]
    )


def affine_reward(env_fns: Sequence[Callable[[], Any]]) -> Any:
    from gymnasium.wrappers.vector import TransformReward

    return TransformReward(gymnasium.vector.SyncVectorEnv(list(env_fns)), lambda r: 2 * r + 1)


def normalize_reward_per_env(env_fns: Sequence[Callable[[], Any]]) -> Any:
    from gymnasium.wrappers import NormalizeReward

    return gymnasium.vector.SyncVectorEnv([lambda fn=fn: NormalizeReward(fn()) for fn in env_fns])


class _Clip(gymnasium.vector.VectorWrapper):  # type: ignore[misc]
    """A planted "clip" that zeroes rewards above its bound (not monotone)."""

    def step(self, actions: Any) -> Any:
        obs, rewards, terminated, truncated, infos = self.env.step(actions)
        return obs, np.where(rewards > 2.5, 0.0, rewards), terminated, truncated, infos


def clip_zeroing_above(env_fns: Sequence[Callable[[], Any]]) -> Any:
    return _Clip(gymnasium.vector.SyncVectorEnv(list(env_fns)))


class _GrowingScale(gymnasium.vector.VectorWrapper):  # type: ignore[misc]
    """A planted "scale" whose factor grows with every step (not one constant)."""

    def __init__(self, env: Any) -> None:
        super().__init__(env)
        self.calls = 0

    def step(self, actions: Any) -> Any:
        obs, rewards, terminated, truncated, infos = self.env.step(actions)
        self.calls += 1
        return obs, rewards * (0.5 + 0.1 * self.calls), terminated, truncated, infos


def growing_scale(env_fns: Sequence[Callable[[], Any]]) -> Any:
    return _GrowingScale(gymnasium.vector.SyncVectorEnv(list(env_fns)))


def flatten_observation(env_fns: Sequence[Callable[[], Any]]) -> Any:
    from gymnasium.wrappers.vector import FlattenObservation

    return FlattenObservation(gymnasium.vector.SyncVectorEnv(list(env_fns)))


def normalize_observation_per_env(env_fns: Sequence[Callable[[], Any]]) -> Any:
    from gymnasium.wrappers import NormalizeObservation

    return gymnasium.vector.SyncVectorEnv([lambda fn=fn: NormalizeObservation(fn()) for fn in env_fns])


# --- rewards: real transforms declared narrowly pass -----------------------------------------


@pytest.mark.parametrize(
    ("factory", "kind"),
    [
        (clip_reward, "clip"),
        (clip_reward_per_env, "clip"),
        (scale_reward, "scale"),
        (scale_reward_per_env, "scale"),
        (normalize_reward_per_env, "normalize"),
        (scale_reward, "normalize"),  # a constant scale is a normalization whose sigma does not move
    ],
)
def test_a_real_reward_transform_declared_as_its_kind_passes(factory: Any, kind: str) -> None:
    outcome = _outcome(factory, "gymnasium.vector", f"reward={kind}")
    _passes(outcome)
    assert any(f"as declared (--intended reward={kind}" in note for note in outcome.notes), outcome.notes


@pytest.mark.parametrize(
    ("factory", "kind", "words"),
    [
        (clip_reward, "scale", "r'/r = "),
        (scale_reward, "clip", "a clip has one upper bound"),
        (affine_reward, "scale", "r'/r = "),
        (affine_reward, "clip", "a clip has one"),
        (clip_zeroing_above, "clip", "to 0.0, but left the env's"),
        (growing_scale, "scale", "a scale is one constant over the run"),
        (normalize_reward_per_env, "scale", "a scale is one constant over the run"),
    ],
)
def test_a_change_of_another_kind_fails_naming_the_declared_kind_and_the_value(
    factory: Any, kind: str, words: str
) -> None:
    messages = _messages(_outcome(factory, "gymnasium.vector", f"reward={kind}"))
    assert messages, f"{factory.__name__} passed as reward={kind}"
    assert all(f"the declared reward={kind} accepts" in m and "reward is " in m for m in messages), messages
    assert any(words in m for m in messages), messages
    # the plain declaration still accepts any change
    _passes(_outcome(factory, "gymnasium.vector", "reward"))


# --- SB3: VecNormalize and a user's normalizer ------------------------------------------------


def _normalizer(previous: bool) -> Any:
    from stable_baselines3.common.vec_env import VecEnvWrapper

    class RewardNormalizer(VecEnvWrapper):  # type: ignore[misc]
        """Rewards over the running std of the discounted return (VecNormalize's scale, no
        clipping). ``previous``: the scaler divides the previous step's reward (a real defect)."""

        def __init__(self, venv: Any) -> None:
            super().__init__(venv)
            self.returns = np.zeros(self.num_envs)
            self.last = np.zeros(self.num_envs)
            self.mean, self.var, self.count = 0.0, 1.0, 1e-4

        def reset(self) -> Any:
            self.returns[:] = 0.0
            return self.venv.reset()

        def step_wait(self) -> Any:
            obs, rewards, dones, infos = self.venv.step_wait()
            self.returns = self.returns * 0.99 + rewards
            batch_mean, batch_var, n = float(self.returns.mean()), float(self.returns.var()), self.num_envs
            delta, total = batch_mean - self.mean, self.count + n
            m2 = self.var * self.count + batch_var * n + delta**2 * self.count * n / total
            self.mean, self.var, self.count = self.mean + delta * n / total, m2 / total, total
            numerator = self.last if previous else rewards
            self.last = np.array(rewards, dtype=np.float64)
            self.returns[dones] = 0.0
            return obs, (numerator / np.sqrt(self.var + 1e-8)).astype(np.float32), dones, infos

    return RewardNormalizer


def sb3_user_normalizer(env_fns: Sequence[Callable[[], Any]]) -> Any:
    from stable_baselines3.common.vec_env import DummyVecEnv

    return _normalizer(previous=False)(DummyVecEnv(list(env_fns)))


def sb3_normalizer_of_the_previous_reward(env_fns: Sequence[Callable[[], Any]]) -> Any:
    from stable_baselines3.common.vec_env import DummyVecEnv

    return _normalizer(previous=True)(DummyVecEnv(list(env_fns)))


def sb3_vec_normalize(env_fns: Sequence[Callable[[], Any]]) -> Any:
    from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

    return VecNormalize(DummyVecEnv(list(env_fns)), norm_obs=False)


@pytest.mark.parametrize("factory", [sb3_user_normalizer, sb3_vec_normalize], ids=["user", "VecNormalize"])
@pytest.mark.parametrize("intent", ["reward=normalize", "reward"])
def test_a_reward_normalizer_declared_as_one_passes(factory: Any, intent: str) -> None:
    pytest.importorskip("stable_baselines3")
    _passes(_outcome(factory, "sb3.VecEnv", intent))


@pytest.mark.parametrize("intents", [("reward=normalize",), ("reward",), ()], ids=["normalize", "plain", "undeclared"])
def test_a_normalizer_of_the_previous_reward_fails_whatever_is_declared(intents: tuple[str, ...]) -> None:
    pytest.importorskip("stable_baselines3")
    messages = _messages(_outcome(sb3_normalizer_of_the_previous_reward, "sb3.VecEnv", *intents))
    assert messages, "r'_t = r_{t-1} / sigma passed"
    assert all(
        "the env's reward of the step 1 step earlier" in m and "no declaration covers this" in m for m in messages
    )
    assert not any("declare --intended" in m for m in messages), messages


# --- observations -----------------------------------------------------------------------------


def test_observation_kinds_are_checked() -> None:
    flat, normalized = _case(DICT_SCRIPT), _case()
    _passes(_outcome(flatten_observation, "gymnasium.vector", "observation=flatten", case=flat))
    _passes(_outcome(normalize_observation_per_env, "gymnasium.vector", "observation=normalize", case=normalized))
    wrong = _messages(_outcome(flatten_observation, "gymnasium.vector", "observation=normalize", case=flat))
    assert wrong and all(
        "the declared observation=normalize accepts" in m and "its layout changed, not its values" in m for m in wrong
    ), wrong
    wrong = _messages(
        _outcome(normalize_observation_per_env, "gymnasium.vector", "observation=flatten", case=normalized)
    )
    assert wrong and all(
        "the declared observation=flatten accepts" in m and "the observation was not flattened" in m for m in wrong
    ), wrong


# --- rewards returned in float32 (issue 35, cause 7) ------------------------------------------


class _Float32Scale(gymnasium.RewardWrapper):  # type: ignore[misc]
    """A single env's reward as a NumPy float32 scalar, times ``scales[k]`` from its k-th step on
    (the last scale for every later step)."""

    def __init__(self, env: Any, scales: tuple[float, ...]) -> None:
        super().__init__(env)
        self.scales, self.calls = scales, 0

    def reward(self, reward: Any) -> Any:
        scale = self.scales[min(self.calls, len(self.scales) - 1)]
        self.calls += 1
        return np.float32(reward) * np.float32(scale)


def float32_half(env: Any) -> Any:
    """Rewards halved in float32: 1.0000000354 becomes 0.5, as exact as float32 holds it."""
    return _Float32Scale(env, (0.5,))


def float32_drifting_scale(env: Any) -> Any:
    """Planted: a float32 scale that changes from 0.5 to 0.25 on the third step."""
    return _Float32Scale(env, (0.5, 0.5, 0.25))


def test_a_float32_scale_is_a_scale_at_float32_precision() -> None:
    """Before issue 35 the float32 product 0.5 of the env's 1.0000000354 read as r'/r =
    0.49999998 against 0.4999999995 at another step, and reward=scale refused it."""
    case = _case(num_envs=1)
    outcome = _outcome(float32_half, "gymnasium.Wrapper", "reward=scale", case=case)
    _passes(outcome)
    assert any("as declared (--intended reward=scale" in note for note in outcome.notes), outcome.notes


def test_a_float32_scale_that_changes_fails_with_the_obvious_counter_example() -> None:
    messages = _messages(_outcome(float32_drifting_scale, "gymnasium.Wrapper", "reward=scale", case=_case(num_envs=1)))
    assert messages, "a scale that changes from 0.5 to 0.25 passed as reward=scale"
    assert all("a scale is one constant over the run" in m for m in messages), messages
    # the two transitions that disagree, with their rewards at the precision they were returned in
    assert any("r' = 0.25 for r = 1" in m and "(r'/r = 0.25), but r' = 0.5" in m for m in messages), messages
    assert not any("0.4999999" in m or "0.2500000" in m for m in messages), messages
