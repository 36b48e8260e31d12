"""Correct stacks whose documented semantics some spec cannot exercise, or that change values on
purpose without declaring it: each verdict says what happened, and a correct stack can pass.

- A reset the stack refuses (it raises, as documented) ends the run there: the calls a caller
  would make next, on envs that were never reset, are not made and not blamed on the stack.
- An observation normalisation nobody declared is told once, as a value change, by the spec
  that owns observations; an observation a recipe cannot restore is no "zero-filled buffer".
- ``VecNormalize(training=False)`` (SB3's documented evaluation setup) freezes its statistics:
  ``statistics.normalizer`` does not apply, with the reason, instead of "not exercised" (which
  made such a stack exit 1).

Each test drives a real stack on one fixed case and reads the specs directly (no Hypothesis
search), or asks a spec's applicability of the probed stack.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest

from rlconform.core.runner import execute
from rlconform.core.spec import get_spec
from rlconform.core.user import factory_system, probe
from rlconform.envs.plan import Case, Reset, Step
from rlconform.envs.script import EnvScript, EpisodePlan
from rlconform.envs.spaces import BoxObs, DiscreteAction, Garbage

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


def _frozen_gymnasium_normalizer(wrapper_name: str, env_fns: Any, **kwargs: Any) -> Any:
    from gymnasium.vector import SyncVectorEnv
    from gymnasium.wrappers import vector as vector_wrappers

    wrapped = getattr(vector_wrappers, wrapper_name)(SyncVectorEnv(env_fns, **kwargs))
    wrapped.update_running_mean = False  # Gymnasium's documented way to evaluate with fixed statistics
    return wrapped


def frozen_normalize_observation(env_fns: Any, **kwargs: Any) -> Any:
    return _frozen_gymnasium_normalizer("NormalizeObservation", env_fns, **kwargs)


def frozen_normalize_reward(env_fns: Any, **kwargs: Any) -> Any:
    return _frozen_gymnasium_normalizer("NormalizeReward", env_fns, **kwargs)


@pytest.mark.parametrize(
    ("factory", "entry"),
    [
        (frozen_normalize_observation, "NormalizeObservation(update_running_mean=False)"),
        (frozen_normalize_reward, "NormalizeReward(update_running_mean=False)"),
    ],
)
def test_a_frozen_gymnasium_normalizer_is_not_applicable_to_the_normalizer_spec(factory: Any, entry: str) -> None:
    # before: probed as a running normalizer, so the spec applied and no example could exercise
    # it ("not exercised", exit status 1) for a stack that is correct by construction
    spec = get_spec("statistics.normalizer")
    system = probe(factory_system(factory, "gymnasium.vector"))
    reason = spec.not_applicable_reason(system)
    assert reason is not None and f"frozen ({entry}" in reason, reason
    run = execute(dataclasses.replace(system, stack_semantics=None), _case(SCRIPT, 2, 4), with_model=False)
    assert spec.check(run).not_applicable == reason


def test_a_gymnasium_normalizer_that_updates_is_still_checked() -> None:
    # NormalizeObservation: NormalizeReward would fail here on its own known defect (FINDINGS G6)
    from gymnasium.vector import SyncVectorEnv
    from gymnasium.wrappers import vector as vector_wrappers

    spec = get_spec("statistics.normalizer")
    system = probe(
        factory_system(
            lambda env_fns, **kwargs: vector_wrappers.NormalizeObservation(SyncVectorEnv(env_fns, **kwargs)),
            "gymnasium.vector",
        )
    )
    assert spec.not_applicable_reason(system) is None
    outcome = spec.check(execute(system, _case(SCRIPT, 2, 4), with_model=False))
    assert outcome.checked > 0 and outcome.violations == [], [v.render() for v in outcome.violations]


# --- an observation normalisation nobody declared --------------------------------------------


def vec_normalize_observations(env_fns: Any) -> Any:
    from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

    return VecNormalize(DummyVecEnv(list(env_fns)), norm_obs=True, norm_reward=False)


def normalize_observation_per_env(env_fns: Any, **kwargs: Any) -> Any:
    from gymnasium.vector import SyncVectorEnv
    from gymnasium.wrappers import NormalizeObservation

    return SyncVectorEnv([lambda fn=fn: NormalizeObservation(fn()) for fn in env_fns], **kwargs)


#: one-step episodes: every step ends one, so every transition's terminal observation passes
#: through the normalizer (SB3's recipe un-normalises it: its values are no longer the env's)
ONE_STEP = dataclasses.replace(SCRIPT, episodes=(EpisodePlan(1, "terminated"),))
#: how a value-changing transform must never be told
LOST_WORDS = ("zero-filled", "uninitialised", "not an observation any env produced", "missing transition")
OTHER_SPECS = (
    "terminal.final_obs",
    "continuity.fresh_first_obs",
    "reset_step.neutral",
    "continuity.no_discarded_episode",
)


@pytest.mark.parametrize("script", [ONE_STEP, SCRIPT], ids=["one-step", "longer"])
def test_an_undeclared_normalisation_is_told_once_as_a_value_change(script: EnvScript) -> None:
    """NormalizeObservation in each env: no observation keeps its stamp, but each is what the
    user's layer returned (rlconform.envs.tap); transitions.exact names that layer and how to
    declare it, and no other spec calls them lost."""
    system = factory_system(normalize_observation_per_env, "gymnasium.vector")
    run = execute(system, _case(script, 2, 5), with_model=False)
    assert run.usable, run.build_error
    owner = [v.render() for v in get_spec("transitions.exact").check(run).violations]
    assert owner and all(
        "reached the agent as the user's NormalizeObservation around each sub-env rewrote it" in m
        and "declare --intended observation if this is on purpose" in m
        for m in owner
    ), owner
    assert not any(word in m for m in owner for word in LOST_WORDS), owner
    for spec_id in OTHER_SPECS:
        messages = [v.render() for v in get_spec(spec_id).check(run).violations]
        assert not messages, (spec_id, messages)
    declared = execute(
        dataclasses.replace(system, intended=frozenset({"observation"})), _case(script, 2, 5), with_model=False
    )
    assert get_spec("transitions.exact").check(declared).violations == []


def test_a_terminal_observation_vec_normalize_cannot_restore_is_no_zero_filled_buffer() -> None:
    """VecNormalize: SB3's recipe un-normalises the clipped terminal observation and cannot undo
    the clipping (FINDINGS S3, a real finding: the stored observation is wrong). It is told as an
    observation whose values were changed, never as a zero-filled or uninitialised buffer."""
    pytest.importorskip("stable_baselines3")
    run = execute(factory_system(vec_normalize_observations, "sb3.VecEnv"), _case(ONE_STEP, 2, 3), with_model=False)
    assert run.usable, run.build_error
    for spec_id in ("transitions.exact", "terminal.final_obs"):
        messages = [v.render() for v in get_spec(spec_id).check(run).violations]
        assert messages and all("its values were changed (looks like normalization/scaling)" in m for m in messages)
        assert not any("zero-filled" in m or "uninitialised" in m for m in messages), (spec_id, messages)


def test_a_zero_filled_or_normalised_observation_decodes_as_what_it_is() -> None:
    """All zeros is still a zero-filled buffer (a real defect, e.g. TorchRL's GymEnv(num_envs)
    terminal observations); normalised values are a value change, not a lost observation."""
    zeros = BoxObs().decode(np.zeros(5, dtype=np.float32))
    assert isinstance(zeros, Garbage) and "zero-filled" in zeros.reason and not zeros.value_changed
    for normalised in ([0.0, 1.0, -1.0, 1.0, -1.0], [0.0, 0.99985, 0.0, 0.9997, 0.5]):
        decoded = BoxObs().decode(np.asarray(normalised, dtype=np.float32))
        assert isinstance(decoded, Garbage) and decoded.value_changed, decoded
        assert "zero-filled" not in decoded.reason


# --- a reset the stack refuses ----------------------------------------------------------------


def refuses_seeded_resets(env_fns: Any, **kwargs: Any) -> Any:
    import gymnasium
    from gymnasium.vector import SyncVectorEnv

    class RefusesSeed(gymnasium.vector.VectorWrapper):  # type: ignore[misc]
        """Documented: ``reset(seed=...)`` raises ValueError (the env cannot be seeded)."""

        def reset(self, *, seed: Any = None, options: Any = None) -> Any:
            if seed is not None:
                raise ValueError("this env cannot be seeded")
            return self.env.reset(seed=seed, options=options)

    return RefusesSeed(SyncVectorEnv(list(env_fns), **kwargs))


def test_the_run_stops_at_a_refused_reset_and_blames_no_later_call() -> None:
    system = factory_system(refuses_seeded_resets, "gymnasium.vector")
    run = execute(system, _case(SCRIPT, 2, 3), with_model=False)
    assert run.usable, run.build_error
    assert [c.failed for c in run.calls] == [True], [c.source for c in run.calls]
    assert "the run stops at the refused reset" in run.calls[0].extra["stops_run"]
    # the refusal itself is reported, once
    refused = [v.render() for v in get_spec("api.valid_calls_succeed").check(run).violations]
    assert refused == ["call 0: envs.reset(seed=3) raised ValueError: this env cannot be seeded"], refused
    for spec_id in ("lifecycle.no_step_after_end", "api.shape", "transitions.exact", "counts.env_steps"):
        messages = [v.render() for v in get_spec(spec_id).check(run).violations]
        assert not messages, (spec_id, messages)
