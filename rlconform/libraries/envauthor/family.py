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
"""

from __future__ import annotations

import fnmatch
import functools
import inspect
import os
import re
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TextIO

import numpy as np

from rlconform.core.compare import first_difference
from rlconform.core.family import FactoryShape
from rlconform.core.hangs import hung_call
from rlconform.core.reproducer import ReproducerParts, case_lines, write
from rlconform.core.system import Capabilities, System, get_system
from rlconform.core.user import BadInput
from rlconform.core.watchdog import CallTimeout, call_timeout, deadline
from rlconform.envs.driver import ActionCodec, LiveRun, Run
from rlconform.envs.plan import Case, Op, Reset, Step
from rlconform.envs.reproducer import print_run
from rlconform.envs.script import EnvScript
from rlconform.envs.trace import Slot
from rlconform.envs.whole_run import WholeRunFamily
from rlconform.libraries.envauthor.layers import LayerRun, drive_layers
from rlconform.libraries.envauthor.options import ENV_AUTHOR_OPTIONS, STACKS_OPTION
from rlconform.libraries.envauthor.probes import edge_actions, probe_edges, probe_stream
from rlconform.libraries.envauthor.torch_envs import (
    to_env_action,
    torch_device,
)
from rlconform.libraries.torchrl.env_objects import SUB_ENV_RESETS
from rlconform.libraries.torchrl.env_systems import torch_native_stack
from rlconform.libraries.torchrl.tensordicts import UnsupportedSpaceError
from rlconform.specs.families import GYMNASIUM_ENV, USER_ENV

if TYPE_CHECKING:
    from hypothesis.strategies import SearchStrategy

    from rlconform.core.spec import Spec

#: library systems the env is run through, when their library is installed
STACKS = (
    "gymnasium.SyncVectorEnv.NextStep",
    "gymnasium.SyncVectorEnv.SameStep",
    "gymnasium.SyncVectorEnv.Disabled",
    "gymnasium.AsyncVectorEnv.NextStep",
    "gymnasium.AsyncVectorEnv.SameStep",
    "gymnasium.AsyncVectorEnv.Disabled",
    # before SB3's: the first system to use the fork server decides what it preloads, and
    # TorchRL's list serves both (see rlconform.libraries.torchrl.env_systems.FORKSERVER_PRELOAD)
    "torchrl.GymWrapper",
    "torchrl.SerialEnv.GymWrapper",
    "torchrl.ParallelEnv.GymWrapper",
    "sb3.DummyVecEnv",
    "sb3.SubprocVecEnv",
)


@dataclass(frozen=True)
class EnvCase:
    """One check of a user's env: seeds, how many steps, how many copies in the stacks."""

    seed: int
    action_seed: int
    steps: int
    num_envs: int


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


def _batch(space: Any, values: Sequence[Any]) -> Any:
    from gymnasium.vector.utils import concatenate, create_empty_array

    out = create_empty_array(space, n=len(values), fn=np.zeros)
    return concatenate(space, list(values), out)  # type: ignore[arg-type]


@dataclass
class StackResult:
    """What running the env through one stack gave: transitions to compare, or why none."""

    stack: str
    run: Run | None = None
    #: the stack raised while stepping an env it had accepted (may be the env's fault: a FAIL)
    error: str | None = None
    #: the stack could not be built around this env, or rejected it at its first reset (a space it
    #: does not support, a custom space, an env its worker processes cannot import): the library's
    #: limit, not the env's fault, so the stack is named as not exercised
    cannot_wrap: str | None = None
    #: why the stack is not run at all on this kind of env (a NumPy-only stack, a torch-native env)
    incompatible: str | None = None
    #: why the stack's output could not be read back into the env's own values (an rlconform
    #: limit, not the env's fault): the stack is named as not exercised
    unreadable: str | None = None
    #: per sub-env: (extracted slots, transitions of the bare env replaying the same actions)
    pairs: list[tuple[list[Slot], list[dict[str, Any]]]] = field(default_factory=list)


@dataclass
class EnvRun:
    """Everything the env-author specs read; the stacks are run only when a spec asks."""

    system: System
    case: EnvCase
    build_error: str | None = None
    first: Run | None = None
    second: Run | None = None
    after_end: dict[str, Any] = field(default_factory=dict)
    _stacks: list[StackResult] | None = None
    _layers: tuple[LayerRun | None] | None = None
    actions: list[list[Any]] = field(default_factory=list)
    observation_space: Any = None
    action_space: Any = None
    #: a torch-native env's device (its reset returned tensors there); None for a NumPy env
    torch_device: str | None = None
    #: the steps each copy is driven: the case's, or more, to one step past the first episode end
    #: of every copy and on into the next episodes (see :func:`_horizon`)
    horizon: int = 0
    #: per copy: the step of its first episode end in the bare env (None: none was reached)
    first_ends: list[int | None] = field(default_factory=list)
    #: why the episodes were not driven to their end (no end within the time budget, too long)
    ends_missed: str | None = None
    #: bytes of one observation (the first reset's), bounding how long an example may be
    observation_bytes: int = 0
    _edges: dict[str, Any] | None = None
    _stream: dict[str, Any] | None = None

    @property
    def usable(self) -> bool:
        return self.build_error is None and self.first is not None

    @property
    def semantics(self) -> dict[str, Any]:
        """The core's RunRecord: this family reads no stack semantics."""
        return {}

    def edges(self) -> dict[str, Any]:
        """The env stepped once with each action at the edges of its action space
        (:func:`rlconform.libraries.envauthor.probes.probe_edges`); ``edges`` lists them."""
        if self._edges is None:
            edges = edge_actions(self.action_space)
            self._edges = {"edges": edges}
            if edges:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    self._edges |= probe_edges(_factory(self.system), self.case.seed, edges, self.torch_device)
        return self._edges

    def stream(self) -> dict[str, Any]:
        """Episodes after seeded and unseeded resets (:func:`rlconform.libraries.envauthor.probes.probe_stream`)."""
        if self._stream is None:
            if self.system.id in _NO_END:
                self._stream = {"no_end": _NO_END[self.system.id]}
            else:
                device, space, action_seed = self.torch_device, self.action_space, self.case.action_seed

                def actions() -> Iterator[Any]:
                    return (to_env_action(a, device) for a in _action_stream(space, action_seed))

                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    self._stream = probe_stream(_factory(self.system), self.case.seed, actions, 2 * episode_seconds())
        return self._stream

    def layers(self) -> LayerRun | None:
        """The env's wrapper layers driven once with the first copy's actions (None: no layers)."""
        if self._layers is None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                actions = [to_env_action(a, self.torch_device) for a in self.actions[0]] if self.actions else []
                self._layers = (drive_layers(_factory(self.system), self.case.seed, actions),)
        return self._layers[0]

    def stacks(self) -> list[StackResult]:
        if self._stacks is None and hung_call(self) is not None:
            self._stacks = []  # an env that hung bare is not put into stacks to hang again
        if self._stacks is None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                self._stacks = [
                    _run_stack(self, stack_id)
                    for stack_id in chosen_stacks(self.system)
                    if not stack_skip_reason(stack_id)
                ]
        return self._stacks


#: the family option naming the stacks to run (``check --stacks``, ``--rlconform-stacks``)


def chosen_stacks(system: System) -> tuple[str, ...]:
    """The stacks of STACKS the user chose for ``system`` (``--stacks`` globs; default: all), in
    STACKS order."""
    patterns = system.option(STACKS_OPTION)
    if not patterns:
        return STACKS
    return tuple(stack_id for stack_id in STACKS if _matches(stack_id, patterns))


def _matches(stack_id: str, patterns: Sequence[str]) -> bool:
    return any(stack_id == p or fnmatch.fnmatchcase(stack_id, p) for p in patterns)


def stack_skip_reason(stack_id: str) -> str | None:
    """Why a stack cannot run here: its library is not installed, or its release lacks it."""
    return get_system(stack_id).skip_reason()


def stacks_not_run(system: System) -> list[str]:
    """One line per chosen stack of STACKS that cannot run here, with the reason (library missing,
    release lacks it), and one naming the stacks the user did not choose (``--stacks``)."""
    chosen = chosen_stacks(system)
    lines = [f"{stack_id} not exercised ({reason})" for stack_id in chosen if (reason := stack_skip_reason(stack_id))]
    left_out = [stack_id for stack_id in STACKS if stack_id not in chosen]
    if left_out:
        lines.append(f"not chosen (--stacks), not run: {', '.join(left_out)}")
    return lines


def _bare_system(system: System) -> System:
    return System(
        id=f"{system.id}#bare",
        family=GYMNASIUM_ENV,
        title=f"{system.title}, bare",
        build=lambda env_fns: env_fns[0](),
        source=system.source,
        kind="user",
        capabilities=Capabilities(partial_reset=False, max_envs=1),
    )


def _factory(system: System) -> Callable[[], Any]:
    factory = system.env_factory
    if factory is None:
        raise ValueError(f"{system.id} has no env factory")
    return factory


def execute_user_env(system: System, case: EnvCase) -> EnvRun:
    with warnings.catch_warnings():
        # the env's own warnings (Gymnasium's passive checker) belong to the env, not the report
        warnings.simplefilter("ignore")
        return _execute_user_env(system, case)


def _execute_user_env(system: System, case: EnvCase) -> EnvRun:
    factory = _factory(system)
    run = EnvRun(system=system, case=case)
    try:
        probe = factory()
        run.observation_space, run.action_space = probe.observation_space, probe.action_space
        run.torch_device, run.observation_bytes = _returns_tensors_on(probe, case.seed)
        probe.close()
    except Exception as exc:
        run.build_error = f"{type(exc).__name__}: {exc}"
        return run
    device = run.torch_device
    codec = ActionCodec(
        single=lambda value: to_env_action(value, device), batch=functools.partial(_batch, run.action_space)
    )
    bare = _bare_system(system)

    def drive_bare(horizon: int) -> None:
        run.horizon = horizon
        run.actions = [_sampled(run.action_space, case.action_seed + i, horizon) for i in range(case.num_envs)]
        steps = [Step((a,)) for a in run.actions[0]]
        ops: tuple[Op, ...] = (Reset(seed=case.seed), *steps, Reset(seed=case.seed), *steps)
        run.first = _drive(bare, Case(EnvScript(), 1, ops), [factory], codec)

    drive_bare(case.steps)
    if hung_call(run.first) is not None:
        return run  # the env hung: driving it again would only wait for the deadline again
    actions = (to_env_action(a, device) for a in _action_stream(run.action_space, case.action_seed))
    run.after_end = _probe_after_end(system.id, factory, case.seed, actions, episode_seconds())
    horizon = _horizon(run, factory)
    if horizon > case.steps:
        drive_bare(horizon)  # the same actions, continued: every copy reaches its episode end
        if hung_call(run.first) is not None:
            return run
    steps = [Step((a,)) for a in run.actions[0]]
    run.second = _drive(bare, Case(EnvScript(), 1, (Reset(seed=case.seed), *steps)), [factory], codec)
    return run


def _sampled(action_space: Any, seed: int, count: int) -> list[Any]:
    """The first ``count`` actions of the action space seeded with ``seed`` (a longer list starts
    with a shorter one's actions)."""
    space = _fresh_space(action_space)
    space.seed(seed)
    return [space.sample() for _ in range(count)]


#: the most steps an example drives each copy to reach its episode ends
MAX_HORIZON = 5000
#: the most bytes of observations an example records per copy and run (a long episode of images
#: is driven only as far as this allows: every stack's run of an example is kept while it is searched)
MAX_RECORDED_BYTES = 4 * 2**20
#: steps driven past the last copy's first episode end, at most: copies a stack seeds otherwise than
#: the bare env (TorchRL) end elsewhere, and the next episodes' first steps cross the stack too
PAST_THE_END = 40


def _horizon(run: EnvRun, factory: Callable[[], Any]) -> int:
    """The steps each copy of ``run``'s case is driven: the case's, or, where the bare env's first
    episodes end later, one step past the last copy's first end plus up to ``PAST_THE_END`` more
    (as many as that episode's length, when shorter). The ends are found as
    :func:`_probe_after_end` finds them (the copy's seed and action stream, for at most
    ``episode_seconds()``); ``run.ends_missed`` says why the episodes were not driven to their end."""
    case = run.case
    after_end = run.after_end
    if not after_end.get("ended"):
        if "no_end" in after_end:
            run.ends_missed = (
                f"no episode ended within {after_end['no_end']:g} s of random actions (RLCONFORM_EPISODE_SECONDS)"
            )
        elif "error" in after_end:
            run.ends_missed = f"driving an episode to its end failed ({after_end['error']})"
        return case.steps
    run.first_ends = [int(after_end["steps"])]
    for i in range(1, case.num_envs):
        actions = (to_env_action(a, run.torch_device) for a in _action_stream(run.action_space, case.action_seed + i))
        run.first_ends.append(_first_end(run.system.id, factory, case.seed + i, actions, episode_seconds()))
    ends = [end for end in run.first_ends if end is not None]
    if len(ends) < len(run.first_ends):
        run.ends_missed = f"a copy's episode did not end within {episode_seconds():g} s of random actions"
    last = max(ends)
    limit = min(MAX_HORIZON, MAX_RECORDED_BYTES // max(1, run.observation_bytes))
    if last + 1 > limit:
        run.ends_missed = (
            f"the first episode ended after {last} steps, past the {limit} steps an example records "
            f"({run.observation_bytes} bytes per observation)"
        )
        return case.steps
    return max(case.steps, min(limit, last + 1 + min(last, PAST_THE_END)))


def _first_end(
    system_id: str, factory: Callable[[], Any], seed: int, actions: Iterator[Any], budget: float
) -> int | None:
    """The step at which the first episode after ``reset(seed=seed)`` ends under ``actions``
    (None: none within ``budget`` seconds, or the env raised)."""
    if system_id in _NO_END:
        return None
    try:
        with deadline(budget + call_timeout(user_envs=True) * 4):
            env = factory()
            try:
                env.reset(seed=seed)
                start = time.monotonic()
                steps = 0
                while time.monotonic() - start < budget:
                    result = env.step(next(actions))
                    steps += 1
                    if result[2] or result[3]:
                        return steps
            finally:
                env.close()
    except (Exception, CallTimeout):
        return None
    return None


def episode_ends(run: Run) -> int:
    """The episode ends (terminated or truncated) the bare env's steps of ``run`` returned."""
    ends = 0
    for call in run.calls:
        if isinstance(call.op, Step) and not call.failed and isinstance(call.result_snapshot, tuple):
            result = call.result_snapshot
            if len(result) == 5 and (bool(result[2]) or bool(result[3])):
                ends += 1
    return ends


def _returns_tensors_on(env: Any, seed: int) -> tuple[str | None, int]:
    """The device of the torch tensors the env's reset returns (a torch-native env), or None (a
    NumPy env, or a reset that fails: the api spec reports that one); and the observation's size
    in bytes."""
    try:
        obs, _ = env.reset(seed=seed)
    except Exception:
        return None, 0
    return torch_device(obs), _size(obs)


def _size(value: Any) -> int:
    """Bytes of an observation's leaves (arrays, tensors, strings, numbers)."""
    if isinstance(value, dict):
        return sum(_size(v) for v in value.values())
    if isinstance(value, (tuple, list)):
        return sum(_size(v) for v in value)
    if isinstance(value, (str, bytes)):
        return len(value)
    nbytes = getattr(value, "nbytes", None)
    if isinstance(nbytes, int):
        return nbytes
    element_size = getattr(value, "element_size", None)
    if callable(element_size):
        return int(element_size() * value.numel())
    return 8


def _fresh_space(space: Any) -> Any:
    import copy

    return copy.deepcopy(space)


def _drive(system: System, case: Case, env_fns: Sequence[Callable[[], Any]], codec: ActionCodec) -> Run:
    return LiveRun(system, case, env_fns=env_fns, codec=codec).drive(case.ops)


#: seconds the step-after-end probe may step one episode looking for its end (RLCONFORM_EPISODE_SECONDS
#: overrides it): episodes are bounded by time, not by a step count, so that a 200-step MountainCar
#: and a many-thousand-step Atari game reach their ends alike
EPISODE_SECONDS = 5.0

#: systems whose probe already ran a whole budget without an episode end: later examples do not
#: spend it again (an env that does not end in one budget is not expected to in the next)
_NO_END: dict[str, float] = {}


def episode_seconds() -> float:
    return float(os.environ.get("RLCONFORM_EPISODE_SECONDS", EPISODE_SECONDS))


def _action_stream(action_space: Any, action_seed: int) -> Iterator[Any]:
    """Actions sampled from the action space seeded with ``action_seed``: the same sequence the
    case's first copy is stepped with, continued for as long as the probe asks."""
    space = _fresh_space(action_space)
    space.seed(action_seed)
    while True:
        yield space.sample()


def _probe_after_end(
    system_id: str, factory: Callable[[], Any], seed: int, actions: Iterator[Any], budget: float
) -> dict[str, Any]:
    """Step an env until its first episode ends (for at most ``budget`` seconds), once more
    without reset, then reset(seed): the reset must give what a fresh env's reset(seed) gives."""
    out: dict[str, Any] = {"ended": False}
    if system_id in _NO_END:
        out["no_end"] = _NO_END[system_id]
        return out
    try:
        with deadline(budget + call_timeout(user_envs=True) * 4):
            fresh = factory()
            expected, _ = fresh.reset(seed=seed)
            fresh.close()
            env = factory()
            env.reset(seed=seed)
            start = time.monotonic()
            first = None
            steps = 0
            while time.monotonic() - start < budget:
                action = next(actions)
                first = action if first is None else first
                _, _, terminated, truncated, _ = env.step(action)
                steps += 1
                if terminated or truncated:
                    out["ended"] = True
                    break
            out["steps"] = steps
            if out["ended"]:
                try:
                    env.step(first)
                    out["step_after_end"] = "returned"
                except Exception as exc:
                    out["step_after_end"] = f"raised {type(exc).__name__}"
                got, _ = env.reset(seed=seed)
                out["difference"] = first_difference(got, expected)
            else:
                out["no_end"] = _NO_END[system_id] = budget
            env.close()
    except (Exception, CallTimeout) as exc:
        out["error"] = f"{type(exc).__name__}: {exc}"
    return out


def _run_stack(run: EnvRun, stack_id: str) -> StackResult:
    factory = _factory(run.system)
    stack = get_system(stack_id)
    limit = _known_limit(stack_id, run.observation_space, run.action_space)
    if limit is not None:
        return StackResult(stack_id, incompatible=limit)
    if run.torch_device is not None:
        native = _torch_native_stack(stack_id, run.torch_device)
        if native is None:
            return StackResult(
                stack_id, incompatible=f"it needs NumPy (this env returns torch tensors on {run.torch_device})"
            )
        stack = native
    # a single-env stack (TorchRL's GymWrapper) runs one copy
    n = min(run.case.num_envs, stack.capabilities.max_envs)
    codec = ActionCodec(single=lambda value: value, batch=functools.partial(_batch, run.action_space))
    steps = [Step(tuple(run.actions[i][t] for i in range(n))) for t in range(run.horizon)]
    result = StackResult(stack_id)
    try:
        stack_run = _drive(stack, Case(EnvScript(), n, (Reset(seed=run.case.seed), *steps)), [factory] * n, codec)
    except UnsupportedSpaceError as exc:
        result.unreadable = str(exc)
        return result
    except Exception as exc:
        result.error = f"{type(exc).__name__}: {exc}"
        return result
    result.run = stack_run
    if stack_run.build_error:
        result.cannot_wrap = _library_error(stack_run.build_error)
        return result
    failed = [c for c in stack_run.calls if c.failed]
    if failed and failed[0].position == 0:
        # the seeded reset is the stack's first contact with the env's observations: a stack
        # that allocates its buffers from the space rejects an unsupported one here
        error = _library_error(f"{failed[0].error_type}: {failed[0].error_message}")
        result.cannot_wrap = f"its first reset raised {error}"
        return result
    if stack_run.calls and "view_error" in stack_run.calls[0].extra:
        # the stack took the env, but rlconform's reader cannot split what it returns into
        # per-copy values (a custom space it batches as it likes): nothing can be compared, and
        # the driver, blind to which copies ended, may make calls the stack then refuses
        result.unreadable = _library_error(stack_run.calls[0].extra["view_error"])
        return result
    if failed:
        result.error = f"{failed[0].source} raised {failed[0].error_type}: {failed[0].error_message}"
    if hung_call(stack_run) is not None:
        return result  # replaying the env bare (no deadline there) would hang as well
    resets = _resets_made(stack_run, run.case.seed, n)
    for env in range(n):
        slots = [s for s in stack_run.slots if s.env == env and s.kind == "transition"]
        actions = [to_env_action(s.action, run.torch_device) for s in slots]
        result.pairs.append((slots, _replay(factory, resets[env], actions)))
    return result


def _known_limit(stack_id: str, observation_space: Any, action_space: Any) -> str | None:
    """A limit of a stack, seen in its behaviour, that makes it misread a correct env without an
    error of its own at build or first reset, so that running it could only blame the env."""
    if stack_id.startswith("torchrl."):
        shifted = [
            name for name, space in (("action", action_space), ("observation", observation_space)) if _has_start(space)
        ]
        if shifted:
            # GymWrapper maps Discrete(n, start=s) to OneHot(n) / Categorical(n) over 0..n-1: the
            # policy's action k reaches the env as k, not s + k (TorchRL 0.14: Discrete(3, start=-1)
            # got action 2), and the env's action s < 0 cannot be encoded at all ("Class values must
            # be non-negative"); observation v is one-hot encoded at index v, past n for v >= n
            return (
                f"TorchRL's GymWrapper ignores the start of the env's Discrete/MultiDiscrete {' and '.join(shifted)} "
                "space (it maps Discrete(n, start=s) to 0..n-1)"
            )
    if stack_id.startswith("gymnasium.AsyncVectorEnv") and _has_text(observation_space):
        # AsyncVectorEnv(shared_memory=True) reads its observation buffers once, at construction: an
        # array leaf is a view of the shared memory, but a Text leaf is a tuple of strings built
        # then, returned unchanged at every reset and step (FINDINGS G9)
        return (
            "Gymnasium's AsyncVectorEnv with shared memory returns a Text observation leaf as it read "
            "it at construction, never the env's (FINDINGS G9)"
        )
    return None


def _has_text(space: Any) -> bool:
    """A Text space at any depth of ``space``."""
    from gymnasium import spaces

    if isinstance(space, spaces.Text):
        return True
    if isinstance(space, spaces.Dict):
        return any(_has_text(sub) for sub in space.spaces.values())
    if isinstance(space, spaces.Tuple):
        return any(_has_text(sub) for sub in space.spaces)
    return False


def _has_start(space: Any) -> bool:
    """A Discrete or MultiDiscrete space (at any depth) whose values do not start at 0."""
    from gymnasium import spaces

    if isinstance(space, (spaces.Discrete, spaces.MultiDiscrete)):
        return bool(np.any(np.asarray(space.start) != 0))
    if isinstance(space, spaces.Dict):
        return any(_has_start(sub) for sub in space.spaces.values())
    if isinstance(space, spaces.Tuple):
        return any(_has_start(sub) for sub in space.spaces)
    return False


def _torch_native_stack(stack_id: str, device: str) -> System | None:
    """The stack as it takes a torch-native env on ``device``, or None for a stack that needs NumPy."""
    if not stack_id.startswith("torchrl."):
        return None

    return torch_native_stack(get_system(stack_id), device)


def _library_error(text: str) -> str:
    """The first line of a library's error, without object addresses (they differ on every run,
    and the verdict must not)."""
    line = text.splitlines()[0] if text else ""
    line = re.sub(r" at 0x[0-9a-f]+", "", line)
    return line if not line.endswith(": ") else line + "(no message)"


def _resets_made(stack_run: Run, seed: int, num_envs: int) -> list[tuple[int | None, ...]]:
    """Per copy, the seeds of the resets the stack's seeded reset made: what its adapter recorded
    (TorchRL), else ``seed + i`` (Gymnasium's and SB3's documented seeding)."""
    for call in stack_run.calls:
        if isinstance(call.op, Reset) and SUB_ENV_RESETS in call.extra:
            return list(call.extra[SUB_ENV_RESETS])
    return [(seed + i,) for i in range(num_envs)]


def _replay(factory: Callable[[], Any], resets: tuple[int | None, ...], actions: list[Any]) -> list[dict[str, Any]]:
    """The bare env's transitions under ``actions`` after ``resets`` (the seeds of the resets the
    stack made before its first step), resetting after each end."""
    env = factory()
    transitions = []
    try:
        for seed in resets[:-1]:
            env.reset(seed=seed)
        obs, _ = env.reset(seed=resets[-1])
        for action in actions:
            next_obs, reward, terminated, truncated, _ = env.step(action)
            transitions.append(
                {
                    "obs": obs,
                    "action": action,
                    "reward": float(reward),
                    "next_obs": next_obs,
                    "terminated": bool(terminated),
                    "truncated": bool(truncated),
                }
            )
            obs = next_obs
            if terminated or truncated:
                obs, _ = env.reset()
    finally:
        env.close()
    return transitions


# ----------------------------------------------------------------------------------------- specs


# ------------------------------------------------------------------------------------ family


def _matches_any(pattern: str) -> bool:
    return any(_matches(stack_id, (pattern,)) for stack_id in STACKS)


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

    def plain(factory: str) -> tuple[list[str], str]:
        body = [
            f"env = {factory}()",
            "actions = copy.deepcopy(env.action_space)",
            "actions.seed(case.action_seed)",
            "try:",
            "    env.reset(seed=case.seed)",
            f"    for _ in range({steps}):" if steps != case.steps else "    for _ in range(case.steps):",
            "        _, _, terminated, truncated, _ = env.step(actions.sample())",
            "        if terminated or truncated:",
            "            env.reset()",
            "finally:",
            "    env.close()",
        ]
        what = (
            f"The minimal case's bare run as plain calls on {system.source}: reset with the case's seed, then\n"
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
        return execute_user_env(system, case)

    def cases(self, system: System, scenario: str) -> SearchStrategy[Any]:
        return env_cases(system)

    def reproducer(self, system: System, spec: Spec, case: Any, run: Any) -> str:
        return env_reproducer(system, spec, case, run)

    def print_run(self, run: Any, case: Any, stream: TextIO) -> None:
        print(f"system: {run.system.source} (your env), {case}", file=stream)
        if run.first is not None:
            print_run(run.first, stream, decode=False)

    def check_factory(self, signature: inspect.Signature) -> None:
        signature.bind()

    def user_system(self, fn: Callable[..., Any], reference: str, **options: Any) -> System:
        stacks = tuple(options.get(STACKS_OPTION) or ())
        for pattern in stacks:
            if not _matches_any(pattern):
                raise BadInput(f"--stacks {pattern!r} matches no stack; the stacks are: {', '.join(STACKS)}")
        return System(
            id=f"user:{reference}",
            family=USER_ENV,
            title=f"{reference}() (your env)",
            build=lambda env_fns: fn(),
            source=reference,
            kind="user",
            out_of_process=False,
            capabilities=Capabilities(partial_reset=False, max_envs=3),
            description="a user's own env: checked for what holds for any env, and through every installed stack",
            env_factory=fn,
            options=((STACKS_OPTION, stacks),) if stacks else (),
        )


FAMILY = EnvAuthorFamily()
