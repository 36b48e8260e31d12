"""The case of env-author mode: seeds, steps and copies (:class:`EnvCase`) and its strategy; the
actions a case draws from the env's action space; and the plain helpers every run of a case uses
(the system's env factory, batching actions, driving a plan)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from rlconform.core.system import System
from rlconform.envs.driver import ActionCodec, LiveRun, Run
from rlconform.envs.plan import Case

if TYPE_CHECKING:
    from hypothesis.strategies import SearchStrategy


@dataclass(frozen=True)
class EnvCase:
    """One check of a user's env: seeds, how many steps, how many copies in the stacks, and
    whether the copies are driven on past their first episode ends (``to_end``).

    Driving to the end costs an episode per copy through every stack (500 steps of Acrobot, a
    thousand of CarRacing), while a property about the end is about the episode, not the drawn
    seed: the one edge case every search tries first (:func:`episode_end_case`) crosses the ends,
    and the drawn cases vary seeds, lengths and copies over their own steps."""

    seed: int
    action_seed: int
    steps: int
    num_envs: int
    to_end: bool = False
    #: a case of ``env.stack_equivalence``'s search (the ``stacks`` scenario), whose run only the
    #: stacks read: the bare env is driven once, as far as the stacks drive it, to see that it is
    #: usable and answers (:func:`rlconform.libraries.envauthor.harness.execute_user_env`). The
    #: bare specs' second pass, fresh replay and step past the end are not made: the stacks replay
    #: the bare env themselves, so in a worker of its own (``Spec.own_worker``) they were a fifth
    #: of a CarRacing check's stack work (issue 39)
    stacks_only: bool = False


#: the scenario of ``env.stack_equivalence`` (``Spec.scenario``): its cases are ``stacks_only``
STACKS_SCENARIO = "stacks"

#: the seeds and steps of the case driven to the episode ends (any would do: it is fixed, so that
#: every search and every run of a check crosses the same episodes)
END_CASE_SEED = 0


def episode_end_case(system: System) -> EnvCase:
    """The case driven on past the first episode end of each of the most copies a stack takes."""
    return EnvCase(END_CASE_SEED, END_CASE_SEED, 40, system.capabilities.max_envs, to_end=True)


def stack_end_case(system: System) -> EnvCase:
    """:func:`episode_end_case`, as ``env.stack_equivalence`` drives it (``stacks_only``)."""
    return dataclasses.replace(episode_end_case(system), stacks_only=True)


def stack_cases(system: System) -> SearchStrategy[EnvCase]:
    """:func:`env_cases`, as ``env.stack_equivalence`` drives them (``stacks_only``): the same
    draws (``map`` draws nothing of its own), so its search sees the cases it saw before."""
    return env_cases(system).map(lambda case: dataclasses.replace(case, stacks_only=True))


def env_cases(system: System) -> SearchStrategy[EnvCase]:
    # imported here: reproducers import this module to replay a case, and must not need Hypothesis
    from hypothesis import strategies as st

    return st.builds(
        EnvCase,
        seed=st.integers(0, 2**16),
        action_seed=st.integers(0, 2**16),
        steps=st.integers(1, 40),
        num_envs=st.integers(1, system.capabilities.max_envs),
    )


def _sampled(action_space: Any, seed: int, count: int) -> list[Any]:
    """The first ``count`` actions of the action space seeded with ``seed`` (a longer list starts
    with a shorter one's actions)."""
    space = _fresh_space(action_space)
    space.seed(seed)
    return [space.sample() for _ in range(count)]


def _fresh_space(space: Any) -> Any:
    import copy

    return copy.deepcopy(space)


def _action_stream(action_space: Any, action_seed: int) -> Iterator[Any]:
    """Actions sampled from the action space seeded with ``action_seed``: the same sequence the
    case's first copy is stepped with, continued for as long as the probe asks."""
    space = _fresh_space(action_space)
    space.seed(action_seed)
    while True:
        yield space.sample()


def _batch(space: Any, values: Sequence[Any]) -> Any:
    from gymnasium.vector.utils import concatenate, create_empty_array

    out = create_empty_array(space, n=len(values), fn=np.zeros)
    return concatenate(space, list(values), out)  # type: ignore[arg-type]


def _factory(system: System) -> Callable[[], Any]:
    factory = system.env_factory
    if factory is None:
        raise ValueError(f"{system.id} has no env factory")
    return factory


def _drive(system: System, case: Case, env_fns: Sequence[Callable[[], Any]], codec: ActionCodec) -> Run:
    return LiveRun(system, case, env_fns=env_fns, codec=codec).drive(case.ops)
