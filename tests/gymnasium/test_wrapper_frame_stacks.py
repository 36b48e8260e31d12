"""Frame stacks along a new leading axis (Gymnasium's FrameStackObservation, a user's own) are read
through (issue 36): the newest frame is the observation, and the older ones must be the steps
before it in the same episode, padded with zeros or copies of the episode's first frame. A
declared FrameStackObservation was "not exercised" with no reason (nothing decoded), and a stack
leaking the previous episode's frames into the next first observation passed once the user
declared --intended observation. The leak now fails whatever is declared; the stacking itself is
an observation change (``observation=stack`` names it)."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest

gymnasium = pytest.importorskip("gymnasium")

from rlconform.core.runner import execute  # noqa: E402
from rlconform.core.spec import get_spec  # noqa: E402
from rlconform.core.system import System  # noqa: E402
from rlconform.core.user import factory_system  # noqa: E402
from rlconform.envs.plan import Case, Reset, Step  # noqa: E402
from rlconform.envs.script import EnvScript, EpisodePlan  # noqa: E402
from rlconform.envs.spaces import BoxObs, DiscreteAction  # noqa: E402

SCRIPT = EnvScript(
    obs=BoxObs(), action=DiscreteAction(n=2), episodes=(EpisodePlan(2, "terminated"), EpisodePlan(4, "truncated"))
)
CASE = Case(SCRIPT, 1, (Reset(seed=3), *(Step((i % 2,)) for i in range(9)), Reset(seed=5), Step((0,)), Step((1,))))


def frame_stack_reset_padding(env: Any) -> Any:
    from gymnasium.wrappers import FrameStackObservation

    return FrameStackObservation(env, 3)


def frame_stack_zero_padding(env: Any) -> Any:
    from gymnasium.wrappers import FrameStackObservation

    return FrameStackObservation(env, 3, padding_type="zero")


class LeakyStack(gymnasium.Wrapper):  # type: ignore[type-arg]
    """Planted: keeps its frames across reset, so the previous episode's frames open the next."""

    def __init__(self, env: Any, k: int = 3) -> None:
        super().__init__(env)
        self.k, self.frames = k, None
        low, high = env.observation_space.low, env.observation_space.high
        self.observation_space = gymnasium.spaces.Box(
            np.repeat(low[None], k, 0), np.repeat(high[None], k, 0), dtype=env.observation_space.dtype
        )

    def _push(self, obs: Any) -> Any:
        frames = self.frames or [np.zeros_like(obs)] * (self.k - 1)
        self.frames = [*frames, obs][-self.k :]
        return np.stack(self.frames)

    def reset(self, **kwargs: Any) -> Any:
        obs, info = self.env.reset(**kwargs)
        return self._push(obs), info

    def step(self, action: Any) -> Any:
        obs, reward, terminated, truncated, info = self.env.step(action)
        return self._push(obs), reward, terminated, truncated, info


def leaky_stack(env: Any) -> Any:
    return LeakyStack(env)


def _declared(factory: Any, *intended: str) -> System:
    return dataclasses.replace(factory_system(factory, "gymnasium.Wrapper"), intended=frozenset(intended))


def _messages(system: System, spec_id: str) -> tuple[list[str], int]:
    run = execute(system, CASE, with_model=False)
    assert run.usable, run.build_error
    outcome = get_spec(spec_id).check(run)
    return [v.render() for v in outcome.violations], outcome.checked


@pytest.mark.parametrize("factory", [frame_stack_reset_padding, frame_stack_zero_padding])
@pytest.mark.parametrize("intended", [("observation",), ("observation", "observation=stack")])
@pytest.mark.parametrize("spec_id", ["transitions.exact", "terminal.final_obs", "continuity.fresh_first_obs"])
def test_a_declared_frame_stack_is_read_through_and_passes(
    factory: Any, intended: tuple[str, ...], spec_id: str
) -> None:
    messages, checked = _messages(_declared(factory, *intended), spec_id)
    assert messages == [] and checked > 0, messages


def test_an_undeclared_frame_stack_is_an_observation_change() -> None:
    messages, _ = _messages(_declared(frame_stack_reset_padding), "transitions.exact")
    assert messages and all(
        "reached the agent as a stack of 3 frames" in m and "declare --intended observation" in m for m in messages
    ), messages


@pytest.mark.parametrize("intended", [(), ("observation",), ("observation", "observation=stack")])
def test_a_stack_leaking_the_previous_episode_fails_whatever_is_declared(intended: tuple[str, ...]) -> None:
    messages, _ = _messages(_declared(leaky_stack, *intended), "transitions.exact")
    assert any("older frames are not its episode's" in m and "frame -1 is episode 1 step" in m for m in messages), (
        messages
    )


def test_observation_stack_refuses_a_change_that_is_no_stack() -> None:
    from gymnasium.wrappers import FlattenObservation

    def flatten(env: Any) -> Any:
        return FlattenObservation(env)

    system = dataclasses.replace(
        factory_system(flatten, "gymnasium.Wrapper"), intended=frozenset({"observation", "observation=stack"})
    )
    script = dataclasses.replace(SCRIPT, obs=BoxObs(shape=(2, 3)))
    run = execute(system, Case(script, 1, (Reset(seed=3), Step((0,)), Step((1,)))), with_model=False)
    messages = [v.render() for v in get_spec("transitions.exact").check(run).violations]
    assert any("the observation was not stacked" in m for m in messages), messages
