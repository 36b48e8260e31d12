"""Terminal and first observations are checked through the observation transforms a user puts
around each sub-env (issue 24): the stack's layers are read back (rlconform.envs.tap), so
``terminal.final_obs`` and ``continuity.fresh_first_obs`` check every episode end behind
FrameStackObservation, NormalizeObservation or a clip, declared or not, and still catch a
vectorizer that hands over the wrong observation. Where the transform cannot be read back (sub-envs
in worker processes) and the user declared it, the two specs are not applicable, with the reason,
instead of "not exercised" (a correct declared stack can exit 0).

Each test drives a real stack on one fixed case and reads the specs directly (no search).
"""

from __future__ import annotations

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
from rlconform.envs.spaces import BoxObs, DiscreteAction

gymnasium = pytest.importorskip("gymnasium")

SCRIPT = EnvScript(
    obs=BoxObs(),
    action=DiscreteAction(n=2),
    episodes=(EpisodePlan(2, "terminated"), EpisodePlan(3, "truncated"), EpisodePlan(1, "terminated")),
)
CASE = Case(SCRIPT, 2, (Reset(seed=3), *tuple(Step((i % 2, 1)) for i in range(9))))
SPECS = ("terminal.final_obs", "continuity.fresh_first_obs", "transitions.exact")


def _check(system: System, spec_id: str, case: Case = CASE) -> Outcome:
    run: Run = execute(system, case, with_model=False)
    assert run.usable, run.build_error
    return get_spec(spec_id).check(run)


def _messages(outcome: Outcome) -> list[str]:
    return [v.render() for v in outcome.violations]


# --- the stacks (module level: user factories are importable) ------------------------------


def _frame_stack(env: Any) -> Any:
    from gymnasium.wrappers import FrameStackObservation

    return FrameStackObservation(env, 3)


def _normalize(env: Any) -> Any:
    from gymnasium.wrappers import NormalizeObservation

    return NormalizeObservation(env)


def _clip(env: Any) -> Any:
    from gymnasium.wrappers import TransformObservation

    return TransformObservation(env, lambda obs: np.clip(obs, 0.0, 100.0) * 0.5, env.observation_space)


LAYERS = {"FrameStack": _frame_stack, "Normalize": _normalize, "Scale": _clip}


def _sync(layer: Any, mode: str) -> Any:
    def factory(env_fns: Any, **kwargs: Any) -> Any:
        from gymnasium.vector import AutoresetMode, SyncVectorEnv

        return SyncVectorEnv([lambda fn=fn: layer(fn()) for fn in env_fns], autoreset_mode=AutoresetMode(mode))

    return factory


def sync_frame_stack_next_step(env_fns: Any, **kwargs: Any) -> Any:
    return _sync(_frame_stack, "NextStep")(env_fns)


def sync_frame_stack_same_step(env_fns: Any, **kwargs: Any) -> Any:
    return _sync(_frame_stack, "SameStep")(env_fns)


def sync_normalize_next_step(env_fns: Any, **kwargs: Any) -> Any:
    return _sync(_normalize, "NextStep")(env_fns)


def sync_normalize_same_step(env_fns: Any, **kwargs: Any) -> Any:
    return _sync(_normalize, "SameStep")(env_fns)


def sync_scale_next_step(env_fns: Any, **kwargs: Any) -> Any:
    return _sync(_clip, "NextStep")(env_fns)


def dummy_frame_stack(env_fns: Any) -> Any:
    from stable_baselines3.common.vec_env import DummyVecEnv

    return DummyVecEnv([lambda fn=fn: _frame_stack(fn()) for fn in env_fns])


def dummy_normalize(env_fns: Any) -> Any:
    from stable_baselines3.common.vec_env import DummyVecEnv

    return DummyVecEnv([lambda fn=fn: _normalize(fn()) for fn in env_fns])


CORRECT = [
    (sync_frame_stack_next_step, "gymnasium.vector"),
    (sync_frame_stack_same_step, "gymnasium.vector"),
    (sync_normalize_next_step, "gymnasium.vector"),
    (sync_normalize_same_step, "gymnasium.vector"),
    (sync_scale_next_step, "gymnasium.vector"),
    (dummy_frame_stack, "sb3.VecEnv"),
    (dummy_normalize, "sb3.VecEnv"),
]


# --- planted defects behind the same layers --------------------------------------------------


def final_obs_replaced_by_reset_obs(env_fns: Any, **kwargs: Any) -> Any:
    """SameStep autoreset, where a vector wrapper hands over the new episode's first observation
    as the final one (the defect a same-step recipe cannot see)."""
    from gymnasium.vector import VectorWrapper

    class LosesFinalObs(VectorWrapper):  # type: ignore[misc]
        def step(self, actions: Any) -> Any:
            obs, rewards, terminated, truncated, infos = self.env.step(actions)
            if "final_obs" in infos:
                infos = dict(infos)
                infos["final_obs"] = np.array(
                    [
                        obs[i] if ended else final
                        for i, (ended, final) in enumerate(zip(infos["_final_obs"], infos["final_obs"], strict=True))
                    ],
                    dtype=object,
                )
            return obs, rewards, terminated, truncated, infos

    return LosesFinalObs(sync_frame_stack_same_step(env_fns))


def first_obs_replaced_by_last(env_fns: Any, **kwargs: Any) -> Any:
    """NextStep autoreset, where a vector wrapper returns the previous episode's last observation
    in place of the reset step's first one."""
    from gymnasium.vector import VectorWrapper

    class StaleFirstObs(VectorWrapper):  # type: ignore[misc]
        last: Any = None
        ended: Any = None

        def reset(self, **kwargs: Any) -> Any:
            obs, infos = self.env.reset(**kwargs)
            self.last, self.ended = np.array(obs), np.zeros(len(obs), dtype=bool)
            return obs, infos

        def step(self, actions: Any) -> Any:
            obs, rewards, terminated, truncated, infos = self.env.step(actions)
            obs = np.array(obs)
            obs[self.ended] = self.last[self.ended]
            self.last, self.ended = np.array(obs), np.logical_or(terminated, truncated)
            return obs, rewards, terminated, truncated, infos

    return StaleFirstObs(sync_normalize_next_step(env_fns))


def dummy_terminal_obs_replaced(env_fns: Any) -> Any:
    """SB3: a VecEnvWrapper that overwrites ``terminal_observation`` with the reset observation."""
    from stable_baselines3.common.vec_env import VecEnvWrapper

    class LosesTerminalObs(VecEnvWrapper):  # type: ignore[misc]
        def reset(self) -> Any:
            return self.venv.reset()

        def step_wait(self) -> Any:
            obs, rewards, dones, infos = self.venv.step_wait()
            for i, done in enumerate(dones):
                if done:
                    infos[i]["terminal_observation"] = np.array(obs[i])
            return obs, rewards, dones, infos

    return LosesTerminalObs(dummy_frame_stack(env_fns))


class _Wrapped:
    """A picklable env thunk for worker processes: ``layer`` around the env ``fn`` builds."""

    def __init__(self, layer: Any, fn: Any) -> None:
        self.layer, self.fn = layer, fn

    def __call__(self) -> Any:
        return self.layer(self.fn())


def async_frame_stack(env_fns: Any, **kwargs: Any) -> Any:
    from gymnasium.vector import AsyncVectorEnv

    return AsyncVectorEnv([_Wrapped(_frame_stack, fn) for fn in env_fns], context="fork")


def async_normalize(env_fns: Any, **kwargs: Any) -> Any:
    from gymnasium.vector import AsyncVectorEnv

    return AsyncVectorEnv([_Wrapped(_normalize, fn) for fn in env_fns], context="fork")


# --- the tests --------------------------------------------------------------------------------


@pytest.mark.parametrize("spec_id", SPECS)
@pytest.mark.parametrize(("factory", "api"), CORRECT, ids=[f.__name__ for f, _ in CORRECT])
def test_correct_per_env_transforms_are_checked_and_pass(factory: Any, api: str, spec_id: str) -> None:
    """Declared, every episode end behind the layer is compared (on main before this change
    nothing was: no observation carried a stamp)."""
    if api == "sb3.VecEnv":
        pytest.importorskip("stable_baselines3")
    outcome = _check(with_intents(factory_system(factory, api), "observation"), spec_id)
    assert outcome.violations == [] and outcome.not_applicable is None, _messages(outcome)
    assert outcome.checked > 0, outcome.notes


def test_an_undeclared_transform_is_reported_once_as_what_it_is() -> None:
    """Undeclared, the owner of observation values names the layer; the terminal observations
    behind it are still checked, and pass."""
    system = factory_system(sync_frame_stack_next_step, "gymnasium.vector")
    exact = _check(system, "transitions.exact")
    messages = _messages(exact)
    assert messages and all("the user's FrameStackObservation around each sub-env rewrote it" in m for m in messages)
    terminal = _check(system, "terminal.final_obs")
    assert terminal.violations == [] and terminal.checked > 0, _messages(terminal)


def test_a_lost_final_observation_behind_frame_stacking_fails() -> None:
    system = with_intents(factory_system(final_obs_replaced_by_reset_obs, "gymnasium.vector"), "observation")
    messages = _messages(_check(system, "terminal.final_obs"))
    assert any("step 0" in m and "(the terminal observation)" in m for m in messages), messages


def test_a_stale_first_observation_behind_normalisation_fails() -> None:
    system = with_intents(factory_system(first_obs_replaced_by_last, "gymnasium.vector"), "observation")
    messages = _messages(_check(system, "continuity.fresh_first_obs"))
    assert any("(its reset observation)" in m for m in messages), messages


def test_a_lost_sb3_terminal_observation_behind_frame_stacking_fails() -> None:
    pytest.importorskip("stable_baselines3")
    system = with_intents(factory_system(dummy_terminal_obs_replaced, "sb3.VecEnv"), "observation")
    messages = _messages(_check(system, "terminal.final_obs"))
    assert any("step 0" in m and "(the terminal observation)" in m for m in messages), messages


@pytest.mark.parametrize("spec_id", ["terminal.final_obs", "continuity.fresh_first_obs"])
def test_a_declared_transform_in_worker_processes_is_not_applicable_with_its_reason(spec_id: str) -> None:
    outcome = _check(with_intents(factory_system(async_normalize, "gymnasium.vector"), "observation"), spec_id)
    assert outcome.violations == [] and outcome.not_applicable is not None
    assert "worker processes" in outcome.not_applicable
    # undeclared, the same run is not exercised (transitions.exact reports the transform)
    undeclared = _check(factory_system(async_normalize, "gymnasium.vector"), spec_id)
    assert undeclared.not_applicable is None and undeclared.checked == 0


@pytest.mark.parametrize("spec_id", ["terminal.final_obs", "continuity.fresh_first_obs"])
def test_a_frame_stack_in_worker_processes_is_read_through(spec_id: str) -> None:
    """A FrameStackObservation around each sub-env in worker processes cannot be read back by its
    layer, but its frames are stacked along a new leading axis, which decoding reads through (the
    newest frame is the observation): its episode ends are checked, and pass."""
    outcome = _check(with_intents(factory_system(async_frame_stack, "gymnasium.vector"), "observation"), spec_id)
    assert outcome.violations == [] and outcome.not_applicable is None and outcome.checked > 0
