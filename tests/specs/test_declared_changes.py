"""Correct stacks whose documented semantics some spec cannot exercise, or that change values on
purpose without declaring it: each verdict says what happened, and a correct stack can pass.

- ``VecNormalize(training=False)`` (SB3's documented evaluation setup) freezes its statistics:
  ``statistics.normalizer`` does not apply, with the reason, instead of "not exercised" (which
  made such a stack exit 1).

Each test drives a real stack on one fixed case and reads the specs directly (no Hypothesis
search), or asks a spec's applicability of the probed stack.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from rlconform.core.runner import execute
from rlconform.core.spec import get_spec
from rlconform.core.user import factory_system, probe
from rlconform.envs.plan import Case, Reset, Step
from rlconform.envs.script import EnvScript, EpisodePlan
from rlconform.envs.spaces import BoxObs, DiscreteAction

pytest.importorskip("gymnasium")

SCRIPT = EnvScript(
    obs=BoxObs(), action=DiscreteAction(n=2), episodes=(EpisodePlan(2, "terminated"), EpisodePlan(3, "truncated"))
)


def _case(script: EnvScript, num_envs: int, steps: int) -> Case:
    return Case(script, num_envs, (Reset(seed=3), *tuple(Step((i % 2,) * num_envs) for i in range(steps))))


# --- stacks (module level: user factories are importable) ------------------------------------


def vec_normalize_eval(env_fns: Any) -> Any:
    from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

    return VecNormalize(DummyVecEnv(list(env_fns)), training=False)


def vec_normalize(env_fns: Any) -> Any:
    from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

    return VecNormalize(DummyVecEnv(list(env_fns)))


# --- a normalizer frozen on purpose ----------------------------------------------------------


def test_a_frozen_vec_normalize_is_not_applicable_to_the_normalizer_spec_with_its_reason() -> None:
    pytest.importorskip("stable_baselines3")
    spec = get_spec("statistics.normalizer")
    system = probe(factory_system(vec_normalize_eval, "sb3.VecEnv"))
    reason = spec.not_applicable_reason(system)
    assert reason is not None and "frozen (VecNormalize(training=False)" in reason, reason
    # the runs say the same, whatever the probe read
    run = execute(dataclasses.replace(system, stack_semantics=None), _case(SCRIPT, 2, 4), with_model=False)
    assert spec.check(run).not_applicable == reason


def test_a_training_vec_normalize_is_still_checked() -> None:
    pytest.importorskip("stable_baselines3")
    spec = get_spec("statistics.normalizer")
    system = probe(factory_system(vec_normalize, "sb3.VecEnv"))
    assert spec.not_applicable_reason(system) is None
    outcome = spec.check(execute(system, _case(SCRIPT, 2, 4), with_model=False))
    assert outcome.checked > 0 and outcome.violations == [], [v.render() for v in outcome.violations]
