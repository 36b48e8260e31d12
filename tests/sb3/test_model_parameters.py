"""A user's stack configured otherwise than the bundled one is compared with the model of its own
configuration (issue 24): the wrapper's parameters are read off the built object and the model is
built with them, so ``model.outputs_match`` passes on a correct stack (before, any setting but the
bundled one made it not applicable) and still fails on a stack whose behaviour departs from the
parameters it reports.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import pytest

from rlconform.core.runner import execute
from rlconform.core.spec import Outcome, get_spec
from rlconform.core.system import System, get_system
from rlconform.core.user import factory_system
from rlconform.envs.driver import Run
from rlconform.envs.plan import Case, Reset, Step
from rlconform.envs.script import EnvScript, EpisodePlan
from rlconform.envs.spaces import BoxObs, DiscreteAction

pytest.importorskip("gymnasium")
pytest.importorskip("stable_baselines3")

#: episodes of 2, 4 and 3 steps: ends (terminal observations, frame stacks cleared, returns
#: restarted) happen early, and more frames than the largest n_stack pass within an episode
SCRIPT = EnvScript(
    obs=BoxObs(),
    action=DiscreteAction(n=2),
    episodes=(EpisodePlan(2, "terminated"), EpisodePlan(6, "truncated"), EpisodePlan(3, "terminated")),
)
CASE = Case(SCRIPT, 2, (Reset(seed=3), *tuple(Step((i % 2, 1)) for i in range(12)), Reset(seed=None), Step((1, 0))))
#: one episode that no step of the case ends: Gymnasium's NormalizeReward departs from the model
#: at every episode end whatever its gamma (FINDINGS G6: ``G * gamma * (1 - terminated) + r``), so
#: its parameters are shown on steps within an episode, where gamma shapes every reward after the
#: first
LONG_EPISODE = Case(
    EnvScript(obs=BoxObs(), action=DiscreteAction(n=2), episodes=(EpisodePlan(20, "never"),)),
    2,
    (Reset(seed=3), *tuple(Step((i % 2, 1)) for i in range(8))),
)


# --- the stacks (module level: user factories are importable) ------------------------------


def _dummy(env_fns: Any) -> Any:
    from stable_baselines3.common.vec_env import DummyVecEnv

    return DummyVecEnv(list(env_fns))


def vec_normalize_gamma_clip(env_fns: Any) -> Any:
    from stable_baselines3.common.vec_env import VecNormalize

    return VecNormalize(_dummy(env_fns), gamma=0.9, clip_obs=5.0)


def vec_normalize_settings(env_fns: Any) -> Any:
    from stable_baselines3.common.vec_env import VecNormalize

    return VecNormalize(_dummy(env_fns), norm_reward=False, clip_reward=2.0, epsilon=1e-6)


def vec_normalize_frozen(env_fns: Any) -> Any:
    """SB3's evaluation setup: statistics loaded from training (here set by hand, far from the
    fresh ones, so that a model starting fresh would differ), then frozen."""
    from stable_baselines3.common.vec_env import VecNormalize

    venv = VecNormalize(_dummy(env_fns), training=False)
    venv.obs_rms.mean = np.full(venv.obs_rms.mean.shape, 0.5)
    venv.obs_rms.var = np.full(venv.obs_rms.var.shape, 4.0)
    venv.ret_rms.var = np.float64(9.0)
    return venv


def frame_stack_2(env_fns: Any) -> Any:
    from stable_baselines3.common.vec_env import VecFrameStack

    return VecFrameStack(_dummy(env_fns), n_stack=2)


def frame_stack_5(env_fns: Any) -> Any:
    from stable_baselines3.common.vec_env import VecFrameStack

    return VecFrameStack(_dummy(env_fns), n_stack=5)


def frame_stack_short_by_one(env_fns: Any) -> Any:
    """A planted defect: a real VecFrameStack (no subclass) that says n_stack=4 but keeps 3
    frames, as an implementation that reads its parameter off by one would."""
    from stable_baselines3.common.vec_env import VecFrameStack

    venv = VecFrameStack(_dummy(env_fns), n_stack=3)
    venv.stacked_obs.n_stack = 4
    return venv


def vec_normalize_wrong_gamma(env_fns: Any) -> Any:
    """A planted defect: a VecNormalize that says gamma=0.9 but discounts the return with 0.5."""
    from stable_baselines3.common.vec_env import VecNormalize

    venv = VecNormalize(_dummy(env_fns), gamma=0.9)

    def update(reward: np.ndarray) -> None:
        venv.returns = venv.returns * 0.5 + reward
        venv.ret_rms.update(venv.returns)

    venv._update_reward = update  # type: ignore[method-assign]
    return venv


def gym_normalize_reward(env_fns: Any, **kwargs: Any) -> Any:
    from gymnasium.vector import SyncVectorEnv
    from gymnasium.wrappers.vector import NormalizeReward

    return NormalizeReward(SyncVectorEnv(list(env_fns), **kwargs), gamma=0.95)


def gym_normalize_frozen(env_fns: Any, **kwargs: Any) -> Any:
    """Observation statistics set by hand, then frozen (``update_running_mean = False``)."""
    from gymnasium.vector import SyncVectorEnv
    from gymnasium.wrappers.vector import NormalizeObservation

    envs = NormalizeObservation(SyncVectorEnv(list(env_fns), **kwargs), epsilon=1e-6)
    envs.obs_rms.mean = np.full(envs.obs_rms.mean.shape, 0.25)
    envs.obs_rms.var = np.full(envs.obs_rms.var.shape, 2.0)
    envs.update_running_mean = False
    return envs


# --- the checks ------------------------------------------------------------------------------


def _outputs_match(system: System, case: Case = CASE) -> tuple[Run, Outcome]:
    run = execute(system, case, with_model=True)
    assert run.usable, run.build_error
    return run, get_spec("model.outputs_match").check(run)


def _messages(outcome: Outcome) -> list[str]:
    return [v.render() for v in outcome.violations]


SB3_PASSING = [vec_normalize_gamma_clip, vec_normalize_settings, vec_normalize_frozen, frame_stack_2, frame_stack_5]


@pytest.mark.parametrize("factory", SB3_PASSING, ids=lambda f: f.__name__)
def test_an_sb3_stack_is_compared_with_the_model_of_its_own_parameters(factory: Any) -> None:
    pytest.importorskip("stable_baselines3")
    run, outcome = _outputs_match(factory_system(factory, "sb3.VecEnv"))
    assert run.model is not None, run.model_reason
    assert not outcome.not_applicable and outcome.violations == [] and outcome.checked > 0, _messages(outcome)


@pytest.mark.parametrize(
    ("factory", "case"),
    [(gym_normalize_reward, LONG_EPISODE), (gym_normalize_frozen, CASE)],
    ids=["NormalizeReward-gamma", "NormalizeObservation-frozen"],
)
def test_a_gymnasium_normaliser_is_compared_with_the_model_of_its_own_parameters(factory: Any, case: Case) -> None:
    run, outcome = _outputs_match(factory_system(factory, "gymnasium.vector"), case)
    assert run.model is not None, run.model_reason
    assert not outcome.not_applicable and outcome.violations == [] and outcome.checked > 0, _messages(outcome)


def _rewards(run: Run) -> list[list[float]]:
    return [list(c.view.rewards or []) for c in run.calls if c.view is not None and c.view.kind == "step"]


def test_the_gymnasium_gamma_shapes_the_rewards_the_model_is_compared_on() -> None:
    """The model with the default gamma would give other rewards on LONG_EPISODE: the pass above
    holds because the model took the stack's gamma, not because gamma changes nothing here."""
    run, _ = _outputs_match(factory_system(gym_normalize_reward, "gymnasium.vector"), LONG_EPISODE)
    assert run.model is not None
    default = execute(get_system("reference.gymnasium.vector.NextStep.NormalizeReward"), LONG_EPISODE)
    got, model, default_model = (np.asarray(_rewards(r)) for r in (run, run.model, default))
    np.testing.assert_allclose(got, model, rtol=1e-5)
    assert not np.allclose(got, default_model, rtol=1e-3)


def test_the_model_is_built_with_the_stacks_parameters() -> None:
    """The parameters reach the model (a model with the defaults would pass too where a setting
    changes no output of the case, which would make the tests above vacuous)."""
    pytest.importorskip("stable_baselines3")
    run, _ = _outputs_match(factory_system(frame_stack_5, "sb3.VecEnv"))
    assert run.model is not None
    # five frames of the five-wide observation per sub-env, on the stack and on its model
    assert np.asarray(run.calls[0].result_live).shape == (2, 25)
    assert np.asarray(run.model.calls[0].result_live).shape == (2, 25)
    run, _ = _outputs_match(factory_system(vec_normalize_frozen, "sb3.VecEnv"))
    assert run.model is not None
    first = np.asarray(run.model.calls[0].result_live)
    raw = np.asarray(run.calls[0].view.env_obs if run.calls[0].view else None)
    np.testing.assert_allclose(first, np.clip((raw - 0.5) / np.sqrt(4.0 + 1e-8), -10, 10), rtol=1e-5)


@pytest.mark.parametrize(
    ("factory", "reported"),
    [(frame_stack_short_by_one, "n_stack"), (vec_normalize_wrong_gamma, "gamma")],
    ids=["frame-stack-short-by-one", "vec-normalize-wrong-gamma"],
)
def test_a_stack_that_departs_from_its_own_parameters_fails(factory: Any, reported: str) -> None:
    pytest.importorskip("stable_baselines3")
    run, outcome = _outputs_match(factory_system(factory, "sb3.VecEnv"))
    assert run.model is not None, run.model_reason
    assert outcome.violations, f"the planted {reported} defect passed model.outputs_match"


def test_the_bundled_stacks_still_run_their_registered_models() -> None:
    """No parameters for a bundled system: it names its model, which is built exactly as
    registered (the bundled verdicts rest on it)."""
    pytest.importorskip("stable_baselines3")
    run = execute(get_system("sb3.VecFrameStack.DummyVecEnv"), CASE, with_model=True)
    assert run.model is not None and run.model.system is get_system("reference.sb3.VecFrameStack")


def test_a_channel_first_frame_stack_still_has_no_model() -> None:
    """The model stacks along the last axis only: a channel-first stack stays unmodelled, with
    the reason, rather than compared with a model of another layout."""
    pytest.importorskip("stable_baselines3")
    run, outcome = _outputs_match(factory_system(frame_stack_channels_first, "sb3.VecEnv"))
    assert run.model is None and run.model_reason is not None and "channels_first" in run.model_reason
    assert outcome.not_applicable


def frame_stack_channels_first(env_fns: Any) -> Any:
    from stable_baselines3.common.vec_env import VecFrameStack

    return VecFrameStack(_dummy(env_fns), n_stack=2, channels_order="first")


def test_the_statistics_are_read_when_built_and_never_followed() -> None:
    """The model starts from a copy of what the object held when the match read it: the stack's
    own later updates (its run comes before the model's) must not reach the model."""
    pytest.importorskip("stable_baselines3")
    from rlconform.envs.reference_env import make_reference_env
    from rlconform.libraries.gymnasium.model_selection import match_vec_env_model
    from rlconform.libraries.gymnasium.vector_model import _RunningMeanStd

    venv = vec_normalize_frozen([functools.partial(make_reference_env, SCRIPT, i) for i in range(2)])
    match = match_vec_env_model(venv)
    assert match.model_id == "reference.sb3.VecNormalize", match.reason
    assert match.parameters["training"] is False and match.parameters["gamma"] == 0.99
    venv.obs_rms.mean[:] = 7.0
    venv.ret_rms.var = np.float64(1.0)
    rms = _RunningMeanStd.copied(match.parameters["obs_rms"], venv.obs_rms.mean.shape)
    np.testing.assert_array_equal(rms.mean, np.full(venv.obs_rms.mean.shape, 0.5))
    assert float(match.parameters["ret_rms"].var) == 9.0
    venv.close()
