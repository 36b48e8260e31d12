"""A learner library refusing rlconform's env inside its own loop is a named refusal, never a FAIL of
the user's code; an exception of the user's code there stays a failure (rlconform.core.refusals,
``runner_run.learn_refusal``, ``agent_run.train_refusal``).

The refusal is real: RSL-RL's NaN check (``rsl_rl/utils/utils.py``, ``check_nan``: ``raise
ValueError("The rewards returned by the environment contain NaN values ...")``), reached by
rlconform's env returning NaN rewards, here patched to do so. Runs in ``.venv-isaaclab``.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

pytest.importorskip("rsl_rl.runners", reason="RSL-RL's runner (rsl-rl-lib with GitPython) is not installed")

import torch

from rlconform.core.family import is_refusal
from rlconform.core.system import get_system
from rlconform.envs.learner_run import LearnerCase
from rlconform.envs.torch_stamp import StampVecEnv
from rlconform.libraries.rsl_rl.runner_planted import make_runner
from rlconform.libraries.rsl_rl.runner_run import run_runner_case

CASE = LearnerCase(2, 5)


@pytest.fixture
def nan_rewards(monkeypatch: pytest.MonkeyPatch) -> None:
    """rlconform's env returns NaN rewards from its first step: RSL-RL's check raises before its
    storage holds a step."""
    step = StampVecEnv.step

    def nan_step(self: StampVecEnv, actions: torch.Tensor) -> Any:
        obs, reward, dones, extras = step(self, actions)
        return obs, torch.full_like(reward, float("nan")), dones, extras

    monkeypatch.setattr(StampVecEnv, "step", nan_step)


def _user(build: Any) -> Any:
    return dataclasses.replace(get_system("rsl_rl.Runner.PPO"), id="user:tests.refusals:make", build=build)


def _runner_of_class(cls: type) -> Any:
    """A user's factory: RSL-RL's runner built as the bundled system builds it, of the user's class."""

    def build(env: Any) -> Any:
        runner = make_runner(env)
        runner.__class__ = cls
        return runner

    return build


def test_rsl_rls_own_check_refusing_the_env_is_a_refusal(nan_rewards: None) -> None:
    run = run_runner_case(get_system("rsl_rl.Runner.PPO"), CASE)
    assert run.learn_error is None, run.learn_error
    assert is_refusal(run.build_error), run.build_error
    assert "runner.learn (one iteration) raised ValueError: The rewards returned by the environment contain NaN" in (
        run.build_error or ""
    )
    assert "(at rsl_rl/utils/utils.py:" in (run.build_error or ""), run.build_error


def test_a_users_runner_on_the_stack_makes_it_a_failure(nan_rewards: None) -> None:
    """The user's ``learn`` override is a frame below rlconform's entry: not RSL-RL alone."""
    from rsl_rl.runners import OnPolicyRunner

    class MyRunner(OnPolicyRunner):
        def learn(self, *args: Any, **kwargs: Any) -> None:
            super().learn(*args, **kwargs)

    run = run_runner_case(_user(_runner_of_class(MyRunner)), CASE)
    assert run.build_error is None and run.learn_error is not None, (run.build_error, run.learn_error)
    assert "NaN" in run.learn_error


def test_a_users_subclass_inheriting_the_method_that_raised_makes_it_a_failure(nan_rewards: None) -> None:
    """No frame of the user's code and nothing stored yet, but the runner that raised is the user's
    class (its ``self``): what reached RSL-RL's check passed through code the user may have changed."""
    from rsl_rl.runners import OnPolicyRunner

    class Inherited(OnPolicyRunner):
        pass

    run = run_runner_case(_user(_runner_of_class(Inherited)), CASE)
    assert run.build_error is None and run.learn_error is not None, (run.build_error, run.learn_error)


def test_an_error_of_the_users_skrl_model_stays_a_failure() -> None:
    """A ``raise`` in the user's value model, under skrl's trainer: a frame of the user's code below
    ``trainer.train``, so the user's failure, not skrl refusing the env."""
    pytest.importorskip("skrl.agents.torch", reason="skrl is not installed")
    from skrl.agents.torch.ppo import PPO

    from rlconform.libraries.skrl.agent_planted import make_agent
    from rlconform.libraries.skrl.agent_run import run_agent_case

    def build(env: Any) -> PPO:
        agent = make_agent(env)

        def compute(inputs: Any, role: str = "") -> Any:
            raise RuntimeError("the user's value model refuses")

        agent.value.compute = compute
        return agent

    system = dataclasses.replace(get_system("skrl.Agent.PPO"), id="user:tests.refusals:agent", build=build)
    run = run_agent_case(system, CASE)
    assert run.build_error is None and run.learn_error is not None, (run.build_error, run.learn_error)
    assert "the user's value model refuses" in run.learn_error, run.learn_error
