"""Specs compare a system with itself, or with the model of exactly the stack it is.

``api.failed_call_no_side_effect`` compares the system run with the failed call against the same
system run without it (never against the reference model, which an unrelated defect makes
differ). ``model.outputs_match`` on a user's factory uses the model of the stack the factory
really built (VecMonitor over DummyVecEnv: the VecMonitor model), and is not applicable, naming
the layer, where no model describes the stack.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest

pytest.importorskip("gymnasium")
pytest.importorskip("stable_baselines3")

from gymnasium.vector import AutoresetMode, SyncVectorEnv
from gymnasium.wrappers import ClipReward
from gymnasium.wrappers import vector as vector_wrappers
from stable_baselines3.common.vec_env import DummyVecEnv, VecFrameStack, VecMonitor, VecNormalize

from rlconform.core.runner import execute
from rlconform.core.search import check_spec
from rlconform.core.spec import get_spec
from rlconform.core.system import Capabilities, get_system
from rlconform.core.user import factory_system
from rlconform.envs.driver import Run
from rlconform.envs.plan import BadStep, Case, Op, Reset, Step
from rlconform.envs.script import EnvScript, EpisodePlan

FAILED_CALL = "api.failed_call_no_side_effect"
MODEL = "model.outputs_match"


def _steps(n: int, num_envs: int) -> tuple[Op, ...]:
    return tuple(Step(tuple((t + j) % 2 for j in range(num_envs))) for t in range(n))


#: episodes of two steps; a rejected one-action batch right before the step that ends them
BAD_BEFORE_END = Case(
    EnvScript(episodes=(EpisodePlan(2),)),
    2,
    (Reset(seed=0), *_steps(1, 2), BadStep((0,)), *_steps(4, 2)),
)
#: episodes that end (terminated, truncated) a few times
ENDING = Case(
    EnvScript(episodes=(EpisodePlan(2, "terminated"), EpisodePlan(3, "truncated")), env_stride=1),
    2,
    (Reset(seed=3), *_steps(7, 2)),
)


# ------------------------------------------------------------------ failed calls: self-comparison


class ValidatesBatchFirst(SyncVectorEnv):
    """Rejects a wrong-size batch before touching any env (Gymnasium's own SyncVectorEnv steps
    the sub-envs it has actions for first)."""

    def step(self, actions: Any) -> Any:
        if len(actions) != self.num_envs:
            raise ValueError(f"expected {self.num_envs} actions, got {len(actions)}")
        return super().step(actions)


class ValidatingWithWrongTerminalObs(ValidatesBatchFirst):
    """Rejects a wrong-size batch without side effect, but returns a zero-filled observation on
    the step that ends an episode: a defect that has nothing to do with failed calls, for which
    the reference model's next observation differs."""

    def step(self, actions: Any) -> Any:
        obs, rewards, terminated, truncated, infos = super().step(actions)
        ended = np.logical_or(terminated, truncated)
        if ended.any():
            obs = obs.copy()
            obs[ended] = 0
        return obs, rewards, terminated, truncated, infos


class ForgetsEpisodesOnError(SyncVectorEnv):
    """Rejects a wrong-size batch without stepping any env, but first marks every sub-env for
    autoreset: the failed call's side effect shows only in the next step (every env is reset
    instead of stepped), not in the env calls made during the failed one."""

    def step(self, actions: Any) -> Any:
        if len(actions) != self.num_envs:
            self._autoreset_envs[:] = True
            raise ValueError(f"expected {self.num_envs} actions, got {len(actions)}")
        return super().step(actions)


class OrderVariesBetweenBuilds(ValidatesBatchFirst):
    """Validates the batch first (no side effect), but every second build lists its sub-envs in
    reverse order: two runs of the same calls differ from the first call on, failed call or not."""

    builds = 0

    def __init__(self, env_fns: Sequence[Any], **kwargs: Any) -> None:
        OrderVariesBetweenBuilds.builds += 1
        super().__init__(list(env_fns)[:: 1 if self.builds % 2 else -1], **kwargs)


def _next_step_vectorizer(cls: type[SyncVectorEnv]) -> Callable[[Sequence[Any]], Any]:
    def make(env_fns: Sequence[Any]) -> Any:
        return cls(list(env_fns), autoreset_mode=AutoresetMode.NEXT_STEP)

    make.__qualname__ = f"make_{cls.__name__}"
    return make


def _run(factory: Callable[[Sequence[Any]], Any], family: str, case: Case) -> Run:
    run = execute(factory_system(factory, family), case)
    assert isinstance(run, Run) and run.usable, run.build_error
    return run


def test_validating_vectorizer_with_an_unrelated_bug_passes_the_failed_call_spec() -> None:
    run = _run(_next_step_vectorizer(ValidatingWithWrongTerminalObs), "gymnasium.vector", BAD_BEFORE_END)
    # the unrelated defect is real (and its own spec reports it), and it is on the step after the
    # failed call, where the reference model's observation differs
    assert get_spec("transitions.exact").check(run).violations
    outcome = get_spec(FAILED_CALL).check(run)
    assert outcome.not_applicable is None
    assert outcome.checked >= 2, "both the env calls and the next step were compared"
    assert not outcome.violations, [v.render() for v in outcome.violations]


def test_validating_vectorizer_with_an_unrelated_bug_passes_the_search() -> None:
    system = factory_system(_next_step_vectorizer(ValidatingWithWrongTerminalObs), "gymnasium.vector")
    # its defect zero-fills array observations only
    system = dataclasses.replace(system, capabilities=Capabilities(obs_kinds=frozenset({"box"})))
    verdict = check_spec(system, get_spec(FAILED_CALL), "ci")
    assert verdict.status == "pass", verdict.message


def test_side_effect_seen_only_in_the_next_step_is_caught_by_the_self_comparison() -> None:
    run = _run(_next_step_vectorizer(ForgetsEpisodesOnError), "gymnasium.vector", BAD_BEFORE_END)
    violations = [v.render() for v in get_spec(FAILED_CALL).check(run).violations]
    assert len(violations) == 1, violations
    assert "after the failed call, the next step returned for env 0 episode 2 step 0" in violations[0]
    assert "without the failed one returns episode 1 step 2" in violations[0]


def test_planted_step_before_validating_still_fails() -> None:
    run = execute(get_system("planted.steps_before_validating"), BAD_BEFORE_END)
    violations = [v.render() for v in get_spec(FAILED_CALL).check(run).violations]
    assert any("1 env call(s) happened because of it" in v for v in violations), violations
    assert any("the same system given the same calls without the failed one" in v for v in violations), violations


def test_a_system_that_varies_between_builds_is_not_blamed_for_the_failed_call() -> None:
    OrderVariesBetweenBuilds.builds = 0
    run = _run(_next_step_vectorizer(OrderVariesBetweenBuilds), "gymnasium.vector", BAD_BEFORE_END)
    outcome = get_spec(FAILED_CALL).check(run)
    assert OrderVariesBetweenBuilds.builds == 2, "the run and its control run"
    assert not outcome.violations, [v.render() for v in outcome.violations]
    assert any("not deterministic between builds" in note for note in outcome.notes), outcome.notes


def test_correct_vectorizer_passes_with_a_failed_call() -> None:
    run = _run(_next_step_vectorizer(ValidatesBatchFirst), "gymnasium.vector", BAD_BEFORE_END)
    outcome = get_spec(FAILED_CALL).check(run)
    assert outcome.checked >= 2 and not outcome.violations


# ------------------------------------------------------------- model of the stack the user built


def user_vec_monitor(env_fns: Sequence[Any]) -> Any:
    return VecMonitor(DummyVecEnv(list(env_fns)))


def user_vec_monitor_info_keywords(env_fns: Sequence[Any]) -> Any:
    """Info keywords the model does not copy (a wrapper's parameters the models do implement, such
    as VecNormalize's gamma, give a model of that configuration: tests/sb3/test_model_parameters.py)."""
    return VecMonitor(DummyVecEnv(list(env_fns)), info_keywords=("stamp",))


def user_monitor_over_normalize(env_fns: Sequence[Any]) -> Any:
    return VecMonitor(VecNormalize(DummyVecEnv(list(env_fns))))


def user_frame_stack_channels_first(env_fns: Sequence[Any]) -> Any:
    return VecFrameStack(DummyVecEnv(list(env_fns)), n_stack=4, channels_order="first")


class OwnDummyVecEnv(DummyVecEnv):
    """A user's subclass: it may change anything, so the DummyVecEnv model does not describe it."""


def user_subclass(env_fns: Sequence[Any]) -> Any:
    return OwnDummyVecEnv(list(env_fns))


def user_record_episode_statistics(env_fns: Sequence[Any]) -> Any:
    inner = SyncVectorEnv(list(env_fns), autoreset_mode=AutoresetMode.SAME_STEP)
    return vector_wrappers.RecordEpisodeStatistics(inner)


def user_clipped_sub_envs(env_fns: Sequence[Any]) -> Any:
    return SyncVectorEnv([lambda fn=fn: ClipReward(fn(), -0.5, 0.5) for fn in env_fns])


def user_record_episode_statistics_key(env_fns: Sequence[Any]) -> Any:
    inner = SyncVectorEnv(list(env_fns), autoreset_mode=AutoresetMode.SAME_STEP)
    return vector_wrappers.RecordEpisodeStatistics(inner, stats_key="ep")


def test_user_vec_monitor_is_compared_with_the_vec_monitor_model() -> None:
    run = _run(user_vec_monitor, "sb3.VecEnv", ENDING)
    assert run.model_id == "reference.sb3.VecMonitor"
    assert any("episode" in (info or {}) for call in run.calls if call.view for info in call.view.infos or [])
    outcome = get_spec(MODEL).check(run)
    assert outcome.not_applicable is None and outcome.checked > 0
    assert not outcome.violations, [v.render() for v in outcome.violations]


def test_user_gymnasium_wrapper_is_compared_with_its_model() -> None:
    run = _run(user_record_episode_statistics, "gymnasium.vector", ENDING)
    assert run.model_id == "reference.gymnasium.vector.SameStep.RecordEpisodeStatistics"
    outcome = get_spec(MODEL).check(run)
    assert outcome.checked > 0 and not outcome.violations, [v.render() for v in outcome.violations]


@pytest.mark.parametrize(
    ("factory", "family", "named"),
    [
        (
            user_vec_monitor_info_keywords,
            "sb3.VecEnv",
            "VecMonitor with info_keywords=('stamp',) (the model assumes ())",
        ),
        (user_monitor_over_normalize, "sb3.VecEnv", "several wrappers (VecMonitor over VecNormalize over DummyVecEnv)"),
        (
            user_frame_stack_channels_first,
            "sb3.VecEnv",
            "VecFrameStack with channels_first=True (the model assumes False)",
        ),
        (user_subclass, "sb3.VecEnv", f"base layer {__name__}.OwnDummyVecEnv"),
        (user_clipped_sub_envs, "gymnasium.vector", "sub-env layer gymnasium.wrappers."),
        (user_clipped_sub_envs, "gymnasium.vector", ".ClipReward"),
        (user_record_episode_statistics_key, "gymnasium.vector", "RecordEpisodeStatistics with stats_key='ep'"),
    ],
    ids=lambda value: getattr(value, "__name__", None) or "",
)
def test_stack_without_a_model_is_not_applicable_naming_the_layer(
    factory: Callable[[Sequence[Any]], Any], family: str, named: str
) -> None:
    run = _run(factory, family, ENDING)
    assert run.model is None and run.model_id is None
    outcome = get_spec(MODEL).check(run)
    assert not outcome.violations
    assert outcome.not_applicable is not None and named in outcome.not_applicable, outcome.not_applicable
