"""Env-author mode: checking a user's own ``gymnasium.Env`` (``--api gymnasium.Env``).

A user's env has no decodable observations, so what is checked is what holds for any env (API
shape, observations in the declared space, determinism under a seed, reset(seed) reproducibility,
no aliasing, no state leaking from a step past the end of an episode), and that every installed
stack (Gymnasium Sync/Async vector envs in each autoreset mode, SB3 Dummy/Subproc, TorchRL's
GymWrapper, SerialEnv and ParallelEnv) yields, with its documented recipe, the same transitions as
the bare env given the seeds the stack gave each copy and the actions the stack delivered.

The seeds are the stack's own documented seeding: Gymnasium and SB3 seed copy i with ``seed + i``;
TorchRL's ``set_seed`` chains seeds and resets each copy once more without a seed (the adapter
records the resets each copy received, ``rlconform.libraries.torchrl.env_objects.SUB_ENV_RESETS``), and
the bare env replays exactly those. A stack whose library is not installed is not run, and the
verdict says so.

The mode is split by role: the case, its strategy and the actions it draws (:mod:`.case`), driving
the env and what the specs read of it (:mod:`.harness`), the stacks and running the env through them
(:mod:`.stacks`); this module holds the family and its reproducer.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TextIO

from rlconform.core.config import EPISODE_SECONDS, episode_seconds
from rlconform.core.family import FactoryShape
from rlconform.core.hangs import hung_call
from rlconform.core.isolation import run_isolated
from rlconform.core.reproducer import ReproducerParts, case_lines, write
from rlconform.core.system import Capabilities, Probed, System
from rlconform.core.user import BadInput
from rlconform.envs.plan import Reset, reset_options
from rlconform.envs.reproducer import print_run
from rlconform.envs.whole_run import WholeRunFamily
from rlconform.libraries.envauthor.case import (
    STACKS_SCENARIO,
    EnvCase,
    env_cases,
    episode_end_case,
    stack_cases,
    stack_end_case,
)
from rlconform.libraries.envauthor.harness import (
    MAX_HORIZON,
    MAX_RECORDED_BYTES,
    PAST_THE_END,
    EnvRun,
    episode_ends,
    execute_user_env,
)
from rlconform.libraries.envauthor.options import ENV_AUTHOR_OPTIONS, STACKS_OPTION
from rlconform.libraries.envauthor.stack_pool import close_pool
from rlconform.libraries.envauthor.stacks import (
    STACKS,
    StackResult,
    _matches_any,
    chosen_stacks,
    stack_skip_reason,
    stacks_not_run,
    start_fork_server,
)
from rlconform.specs.families import GYMNASIUM_ENV, USER_ENV

if TYPE_CHECKING:
    from hypothesis.strategies import SearchStrategy

    from rlconform.core.spec import Spec


def _steps_driven(case: EnvCase, run: Any) -> int:
    """The steps the case drove each copy: its own, or more to reach the episode ends (a replay
    of the case drives as many again)."""
    horizon = getattr(run, "horizon", 0)
    return horizon if isinstance(horizon, int) and horizon > case.steps else case.steps


def _steps_phrase(case: EnvCase, steps: int, same: str | None = None) -> str:
    if steps == case.steps:
        return same or str(case.steps)
    return f"{steps} (the case's {case.steps}, continued past the first episode ends)"


def _env_plain(system: System, spec: Spec, case: EnvCase, run: Any) -> Callable[[str], tuple[list[str], str]] | None:
    """The bare run a user's test makes on the env before replaying: a NumPy env's reset and
    sampled steps as plain calls (a torch-native env's actions go through rlconform's conversion,
    and a hung env would hang the test: those only replay)."""
    if run is None or getattr(run, "torch_device", None) is not None or hung_call(run) is not None:
        return None
    steps = _steps_driven(case, run)
    # a seeded reset is given options={} with an odd seed (env_family.reset_options), as in the run
    with_options = reset_options(Reset(seed=case.seed)) is not None

    def plain(factory: str) -> tuple[list[str], str]:
        body = [
            f"env = {factory}()",
            "actions = copy.deepcopy(env.action_space)",
            "actions.seed(case.action_seed)",
            "try:",
            "    env.reset(seed=case.seed, options={})" if with_options else "    env.reset(seed=case.seed)",
            f"    for _ in range({steps}):" if steps != case.steps else "    for _ in range(case.steps):",
            "        _, _, terminated, truncated, _ = env.step(actions.sample())",
            "        if terminated or truncated:",
            "            env.reset()",
            "finally:",
            "    env.close()",
        ]
        what = (
            f"The minimal case's bare run as plain calls on {system.source}: reset with the case's seed"
            + (" (and options={}, as every seeded reset with an odd seed is)" if with_options else "")
            + ", then\n"
            f"    {_steps_phrase(case, steps, 'case.steps')} actions sampled from the env's action space seeded with case.action_seed (a reset\n"
            "    after each episode end); then rlconform replays the case, the bare env and every installed\n"
            f"    stack, and {spec.id} must hold."
        )
        return body, what

    return plain


def env_reproducer(system: System, spec: Spec, case: EnvCase, run: Any = None) -> str:
    """The reproducer of ``case``: a user's env by its factory (its test first makes the bare run's
    calls on it), a bundled one by its id, with the stacks the user chose."""
    about = (
        f"The env is reset with seed {case.seed}, stepped {_steps_phrase(case, _steps_driven(case, run))} times with actions sampled from its\n"
        f"action space seeded with {case.action_seed} (+ i for copy i), and run through {case.num_envs}\n"
        "copies in each installed stack."
    )
    stacks = system.option(STACKS_OPTION)
    parts = ReproducerParts(
        system,
        spec,
        case_lines(case),
        GYMNASIUM_ENV,
        about,
        {"stacks": tuple(stacks) if stacks else None},
        plain=_env_plain(system, spec, case, run),
    )
    return write(parts)


class EnvAuthorFamily(WholeRunFamily):
    """Family ``user.env``: a user's own env, checked for what holds for any env and run through
    every installed stack (``--api gymnasium.Env``)."""

    name = USER_ENV
    api = "gymnasium.Env"
    factory_signature = "() -> gymnasium.Env"
    quiet_loggers = ("torchrl",)
    options = ENV_AUTHOR_OPTIONS
    #: every stack the env is run through comes from one of these (a missing one is named in the
    #: verdicts as not exercised)
    libraries = ("gymnasium", "stable-baselines3", "torch", "torchrl", "tensordict")
    claimed_classes = ("gymnasium.core.Env",)
    factory_shape = FactoryShape(returns=claimed_classes)
    #: the factory takes no argument
    factory_argument = ""
    required_attributes = ("reset", "step", "observation_space", "action_space")

    def run_case(self, system: System, case: Any, *, with_model: bool) -> EnvRun:
        start_fork_server(system)
        return execute_user_env(system, case)

    def cases(self, system: System, scenario: str) -> SearchStrategy[Any]:
        # env.stack_equivalence's cases run the bare env only as far as the stacks need (EnvCase)
        return stack_cases(system) if scenario == STACKS_SCENARIO else env_cases(system)

    def end_search(self, system: System) -> None:
        """Close the stacks the search kept built across its examples (stack_pool)."""
        close_pool(system.id)

    def boundary_cases(self, system: System, scenario: str) -> list[Any]:
        """The case driven past the episode ends, tried first by every search (see EnvCase)."""
        return [stack_end_case(system) if scenario == STACKS_SCENARIO else episode_end_case(system)]

    def reproducer(self, system: System, spec: Spec, case: Any, run: Any) -> str:
        return env_reproducer(system, spec, case, run)

    def print_run(self, run: Any, case: Any, stream: TextIO) -> None:
        print(f"system: {run.system.source} (your env), {case}", file=stream)
        if run.first is not None:
            print_run(run.first, stream, decode=False)

    def check_factory(self, signature: inspect.Signature) -> None:
        signature.bind()

    def probe_factory(self, system: System) -> Probed:
        """The probe of every user system, and whether the env's episodes are long
        (:func:`long_first_episode`): then ``env.stack_equivalence``, whose episode-end case drives
        three copies past their first end through every stack, runs beside the other specs where a
        second job is free (``System.apart``)."""
        import dataclasses

        probed = super().probe_factory(system)
        factory = system.env_factory
        if factory is None:
            return probed
        # in a child of its own, under a deadline: an env whose step hangs or kills its process is
        # the checks' to report (lifecycle.responsive, a crash verdict), not the probe's
        outcome = run_isolated(long_first_episode, factory, timeout=LONG_EPISODE_PROBE_SECONDS)
        return dataclasses.replace(probed, apart=outcome.failure is None and outcome.value is True)

    def user_system(self, fn: Callable[..., Any], reference: str, **options: Any) -> System:
        stacks = tuple(options.get(STACKS_OPTION) or ())
        for pattern in stacks:
            if not _matches_any(pattern):
                raise BadInput(f"--stacks {pattern!r} matches no stack; the stacks are: {', '.join(STACKS)}")
        return self.user_system_of(
            reference,
            title=f"{reference}() (your env)",
            build=lambda env_fns: fn(),
            out_of_process=False,
            capabilities=Capabilities(partial_reset=False, max_envs=3),
            description="a user's own env: checked for what holds for any env, and through every installed stack",
            env_factory=fn,
            options=((STACKS_OPTION, stacks),) if stacks else (),
        )


#: a first episode longer than this (random actions from reset(seed=0)) makes the stack search
#: worth a worker of its own: the sample counter's episodes end within 8 steps, and split off its
#: check took longer (a second worker's start for 5 s of stacks); Acrobot's, MiniGrid's and
#: CarRacing's run for hundreds
LONG_EPISODE_STEPS = 50
#: the most seconds the probe steps the env to see whether its first episode is long
LONG_EPISODE_SECONDS = 1.0
#: the most seconds that probe may take, the env's construction included (then: not long)
LONG_EPISODE_PROBE_SECONDS = 15.0


def long_first_episode(factory: Callable[[], Any]) -> bool:
    """Whether the env's first episode after ``reset(seed=0)`` under random actions lasts more than
    :data:`LONG_EPISODE_STEPS` steps (or does not end within :data:`LONG_EPISODE_SECONDS`). An env
    that cannot be stepped so (it raises, or wants torch actions) is not: its check runs as one."""
    import time

    try:
        env = factory()
    except Exception:
        return False
    try:
        env.reset(seed=0)
        env.action_space.seed(0)
        start = time.perf_counter()
        for _ in range(LONG_EPISODE_STEPS):
            _obs, _reward, terminated, truncated, _info = env.step(env.action_space.sample())
            if terminated or truncated:
                return False
            if time.perf_counter() - start > LONG_EPISODE_SECONDS:
                break
        return True
    except Exception:
        return False
    finally:
        with contextlib.suppress(Exception):
            env.close()


FAMILY = EnvAuthorFamily()


# kept for one release: the names code imported from this module before the mode was split by role
# (rlconform.libraries.envauthor.case, harness, stacks)
__all__ = [
    "EPISODE_SECONDS",
    "FAMILY",
    "MAX_HORIZON",
    "MAX_RECORDED_BYTES",
    "PAST_THE_END",
    "STACKS",
    "EnvAuthorFamily",
    "EnvCase",
    "EnvRun",
    "StackResult",
    "chosen_stacks",
    "env_cases",
    "env_reproducer",
    "episode_ends",
    "episode_seconds",
    "execute_user_env",
    "stack_skip_reason",
    "stacks_not_run",
]
