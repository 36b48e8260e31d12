"""Env-author mode: checking a user's own ``gymnasium.Env`` (``--api gymnasium.Env``).

A user's env has no decodable observations, so what is checked is what holds for any env (API
shape, observations in the declared space, determinism under a seed, reset(seed) reproducibility,
no aliasing, no state leaking from a step past the end of an episode), and that every installed
stack (Gymnasium Sync/Async vector envs in each autoreset mode, SB3 Dummy/Subproc, TorchRL's
GymWrapper, SerialEnv and ParallelEnv) yields, with its documented recipe, the same transitions as
the bare env given the seeds the stack gave each copy and the actions the stack delivered.

The seeds are the stack's own documented seeding: Gymnasium and SB3 seed copy i with ``seed + i``;
TorchRL's ``set_seed`` chains seeds and resets each copy once more without a seed (the adapter
records the resets each copy received, ``rlconform.libraries.torchrl.env_family.SUB_ENV_RESETS``), and
the bare env replays exactly those. A stack whose library is not installed is not run, and the
verdict says so.
"""

from __future__ import annotations

import functools
import os
import re
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from rlconform.core.compare import first_difference
from rlconform.core.hangs import hung_call
from rlconform.core.plan import Case, Op, Reset, Step
from rlconform.core.runner import ActionCodec, LiveRun, Run
from rlconform.core.spec import Checker, Outcome, spec
from rlconform.core.system import Capabilities, System, get_system
from rlconform.core.trace import CallRecord, Slot
from rlconform.core.user import USER_ENV_FAMILY
from rlconform.core.watchdog import CallTimeout, call_timeout, deadline
from rlconform.envs.script import EnvScript
from rlconform.libraries.envauthor.torch_envs import (
    is_scalar_tensor,
    is_tensor,
    leaves,
    tensor_signature,
    to_env_action,
    to_numpy,
    torch_device,
)
from rlconform.libraries.torchrl.tensordicts import UnsupportedSpaceError

if TYPE_CHECKING:
    from hypothesis.strategies import SearchStrategy

#: library systems the env is run through, when their library is installed
STACKS = (
    "gymnasium.SyncVectorEnv.NextStep",
    "gymnasium.SyncVectorEnv.SameStep",
    "gymnasium.SyncVectorEnv.Disabled",
    "gymnasium.AsyncVectorEnv.NextStep",
    "gymnasium.AsyncVectorEnv.SameStep",
    "gymnasium.AsyncVectorEnv.Disabled",
    # before SB3's: the first system to use the fork server decides what it preloads, and
    # TorchRL's list serves both (see rlconform.libraries.torchrl.env_family.FORKSERVER_PRELOAD)
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
    actions: list[list[Any]] = field(default_factory=list)
    observation_space: Any = None
    action_space: Any = None
    #: a torch-native env's device (its reset returned tensors there); None for a NumPy env
    torch_device: str | None = None

    @property
    def usable(self) -> bool:
        return self.build_error is None and self.first is not None

    def stacks(self) -> list[StackResult]:
        if self._stacks is None and hung_call(self) is not None:
            self._stacks = []  # an env that hung bare is not put into stacks to hang again
        if self._stacks is None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                self._stacks = [_run_stack(self, stack_id) for stack_id in STACKS if not stack_skip_reason(stack_id)]
        return self._stacks


def stack_skip_reason(stack_id: str) -> str | None:
    """Why a stack cannot run here: its library is not installed, or its release lacks it."""
    return get_system(stack_id).skip_reason()


def stacks_not_run() -> list[str]:
    """One line per stack of STACKS left out, with the reason (library missing, release lacks it)."""
    return [f"{stack_id} not exercised ({reason})" for stack_id in STACKS if (reason := stack_skip_reason(stack_id))]


def _bare_system(system: System) -> System:
    return System(
        id=f"{system.id}#bare",
        family="gymnasium.Env",
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
        run.torch_device = _returns_tensors_on(probe, case.seed)
        probe.close()
    except Exception as exc:
        run.build_error = f"{type(exc).__name__}: {exc}"
        return run
    for i in range(case.num_envs):
        space = _fresh_space(run.action_space)
        space.seed(case.action_seed + i)
        run.actions.append([space.sample() for _ in range(case.steps)])
    device = run.torch_device
    codec = ActionCodec(
        single=lambda value: to_env_action(value, device), batch=functools.partial(_batch, run.action_space)
    )
    bare = _bare_system(system)
    steps = [Step((a,)) for a in run.actions[0]]
    ops: tuple[Op, ...] = (Reset(seed=case.seed), *steps, Reset(seed=case.seed), *steps)
    run.first = _drive(bare, Case(EnvScript(), 1, ops), [factory], codec)
    if hung_call(run.first) is not None:
        return run  # the env hung: driving it again would only wait for the deadline again
    run.second = _drive(bare, Case(EnvScript(), 1, (Reset(seed=case.seed), *steps)), [factory], codec)
    actions = (to_env_action(a, device) for a in _action_stream(run.action_space, case.action_seed))
    run.after_end = _probe_after_end(system.id, factory, case.seed, actions, episode_seconds())
    return run


def _returns_tensors_on(env: Any, seed: int) -> str | None:
    """The device of the torch tensors the env's reset returns (a torch-native env), or None (a
    NumPy env, or a reset that fails: the api spec reports that one)."""
    try:
        obs, _ = env.reset(seed=seed)
    except Exception:
        return None
    return torch_device(obs)


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
    steps = [Step(tuple(run.actions[i][t] for i in range(n))) for t in range(run.case.steps)]
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
    return None


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
    from rlconform.libraries.torchrl.env_family import torch_native_stack

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
    from rlconform.libraries.torchrl.env_family import SUB_ENV_RESETS

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

FAMILIES = frozenset({USER_ENV_FAMILY})


def _outputs(call: CallRecord) -> tuple[Any, ...]:
    result = call.result_snapshot
    if isinstance(result, tuple) and len(result) == 5:
        return (result[0], result[1], result[2], result[3])
    if isinstance(result, tuple) and len(result) == 2:
        return (result[0],)
    return (result,)


def _segments(run: Run) -> list[list[CallRecord]]:
    segments: list[list[CallRecord]] = []
    for call in run.calls:
        if isinstance(call.op, Reset) and not call.implied:
            segments.append([])
        if segments:
            segments[-1].append(call)
    return segments


@spec(
    "env.api_shape",
    impact="api-contract",
    statement="reset returns (obs, info dict) and step returns (obs, reward, terminated, truncated, info dict) with a real-number reward and bool flags (one-element tensors for a torch-native env, which keeps each tensor's dtype and device from call to call).",
    rationale="Every library reads the Gymnasium 5-tuple positionally; a 4-tuple, a list or an array flag breaks them in different, silent ways; a torch-native env whose tensors change dtype or device mid-run breaks the buffers allocated from its first outputs.",
    families=FAMILIES,
)
def env_api_shape(run: EnvRun) -> Outcome:
    from rlconform.core.family import get_family
    from rlconform.specs.dtypes import _type_of

    ck = Checker("env.api_shape")
    if not run.usable:
        return ck.done()
    assert run.first is not None
    family = get_family("gymnasium.Env")
    native = run.torch_device is not None
    #: a torch-native env's tensors: output role -> (signature, call source) of its first call
    first_seen: dict[str, tuple[str, str]] = {}
    for call in run.first.calls:
        if call.failed:
            ck.fail(f"{call.source} raised {call.error_type}: {call.error_message}", call=call.position)
            continue
        problems = family.api_problems(call, 1)
        if not problems and isinstance(call.op, Step):
            _, reward, terminated, truncated, _ = call.result_live
            if not _is_reward(reward, native):
                problems.append(f"the reward is {_type_of(reward)}")
            for name, flag in (("terminated", terminated), ("truncated", truncated)):
                if not _is_flag(flag, native):
                    problems.append(f"{name} is {_type_of(flag)}, not a bool")
        if not problems and native:
            problems += _tensor_drift(call, run.torch_device, first_seen)
        ck.expect(not problems, f"{call.source}: " + "; ".join(problems), call=call.position)
    return ck.done()


def _is_reward(reward: Any, native: bool) -> bool:
    if native and is_scalar_tensor(reward, boolean=False):
        return True
    return isinstance(reward, (int, float, np.integer, np.floating)) and not isinstance(reward, (bool, np.bool_))


def _is_flag(flag: Any, native: bool) -> bool:
    return isinstance(flag, (bool, np.bool_)) or (native and is_scalar_tensor(flag, boolean=True))


def _tensor_drift(call: CallRecord, device: str | None, first_seen: dict[str, tuple[str, str]]) -> list[str]:
    """Where a torch-native env's call returns a tensor on another device than its first
    observation's, or of another dtype or device than the same output of its first call."""
    result = call.result_live
    roles = {"obs": result[0]}
    if isinstance(call.op, Step):
        roles |= {"reward": result[1], "terminated": result[2], "truncated": result[3]}
    problems = []
    for role, value in roles.items():
        for path, leaf in leaves(value, role):
            signature = tensor_signature(leaf)
            if is_tensor(leaf) and str(leaf.device) != device:
                problems.append(f"{path} is on {leaf.device}; the env's first observation was on {device}")
            seen = first_seen.setdefault(path, (signature, call.source))
            if seen[0] != signature:
                problems.append(f"{path} is {signature}; {seen[1]} returned {seen[0]}")
    return problems


@spec(
    "env.observations_in_space",
    impact="api-contract",
    statement="Every observation the env returns is an element of its observation_space, with the space's dtype and shape (a torch-native env's tensors are compared as NumPy arrays).",
    rationale="Vectorizers allocate buffers from the declared space and cast into them: an observation of another dtype or shape is silently converted, clipped or rejected by one stack and not another.",
    families=FAMILIES,
)
def env_observations_in_space(run: EnvRun) -> Outcome:
    from rlconform.specs.dtypes import conformance_problem

    ck = Checker("env.observations_in_space")
    if not run.usable:
        return ck.done()
    assert run.first is not None
    for call in run.first.calls:
        if call.failed or call.view is None:
            continue
        obs = call.view.obs[0]
        if run.torch_device is not None:
            obs = to_numpy(obs)
        problem = conformance_problem(run.observation_space, obs)
        as_numpy = " (as NumPy)" if run.torch_device is not None else ""
        ck.expect(
            problem is None, f"the observation returned by {call.source}{as_numpy} is {problem}", call=call.position
        )
    return ck.done()


@spec(
    "env.determinism",
    impact="reproducibility",
    statement="Two fresh instances reset with the same seed and given the same actions return the same observations, rewards and flags.",
    rationale="Seeded reproducibility is what makes experiments, bug reports and vectorized copies comparable; hidden global randomness breaks all three.",
    families=FAMILIES,
)
def env_determinism(run: EnvRun) -> Outcome:
    ck = Checker("env.determinism")
    if not run.usable or run.second is None:
        return ck.done()
    assert run.first is not None
    _expect_same_outputs(
        ck,
        _segments(run.first)[0],
        _segments(run.second)[0],
        lambda call, diff: f"{call.source}: a second instance with the same seed returned something else ({diff})",
    )
    return ck.done()


def _expect_same_outputs(
    ck: Checker, first: list[CallRecord], second: list[CallRecord], message: Callable[[CallRecord, str], str]
) -> None:
    """Compare two call sequences made with the same seed and actions, up to the first difference
    (what follows a difference is its consequence, not new information)."""
    for a, b in zip(first, second, strict=False):
        if a.failed or b.failed or a.implied != b.implied:
            break
        diff = first_difference(_outputs(a), _outputs(b))
        ck.expect(diff is None, message(b, diff) if diff is not None else "", call=b.position)
        if diff is not None:
            break


@spec(
    "env.reset_reproducible",
    impact="reproducibility",
    statement="reset(seed=s) on a used instance restarts exactly the trajectory reset(seed=s) started the first time.",
    rationale="Evaluation loops reseed the same instance; state that survives a seeded reset (a step counter, an RNG created once) makes the evaluation depend on what ran before.",
    families=FAMILIES,
)
def env_reset_reproducible(run: EnvRun) -> Outcome:
    ck = Checker("env.reset_reproducible")
    if not run.usable:
        return ck.done()
    assert run.first is not None
    segments = _segments(run.first)
    if len(segments) < 2:
        return ck.done()
    _expect_same_outputs(
        ck,
        segments[0],
        segments[1],
        lambda call, diff: (
            f"{call.source} after the second reset(seed={run.case.seed}) differs from the first time ({diff})"
        ),
    )
    return ck.done()


@spec(
    "env.no_aliasing",
    impact="training-data",
    statement="The env neither modifies an observation after returning it nor modifies the action it is given.",
    rationale="Buffers keep returned observations and callers reuse action arrays; an env that writes into either corrupts stored data without an error.",
    families=FAMILIES,
)
def env_no_aliasing(run: EnvRun) -> Outcome:
    ck = Checker("env.no_aliasing")
    if not run.usable:
        return ck.done()
    assert run.first is not None
    for call in run.first.calls:
        if call.failed:
            continue
        diff = first_difference(call.result_live, call.result_snapshot)
        ck.expect(
            diff is None,
            f"the result of {call.source} was modified after it was returned ({diff}; now vs then)",
            call=call.position,
        )
        diff = first_difference(call.args_live, call.args_snapshot)
        ck.expect(
            diff is None,
            f"{call.source} modified the action it was given ({diff}; after vs before)",
            call=call.position,
        )
    return ck.done()


@spec(
    "env.step_after_end",
    impact="reproducibility",
    statement="Stepping an episode past its end (which Gymnasium leaves undefined) leaves nothing behind: reset(seed=s) afterwards returns what a fresh env's reset(seed=s) returns.",
    rationale="Vectorizers and buggy loops do step ended episodes; an env whose state leaks through the next seeded reset turns one stray step into an irreproducible run.",
    families=FAMILIES,
)
def env_step_after_end(run: EnvRun) -> Outcome:
    ck = Checker("env.step_after_end")
    if not run.usable:
        return ck.done()
    info = run.after_end
    if "error" in info:
        ck.fail(f"probing a step past the end failed: {info['error']}")
        return ck.done()
    if not info.get("ended"):
        if "no_end" in info:
            ck.note(f"no episode ended within {info['no_end']:g} s of random actions (RLCONFORM_EPISODE_SECONDS)")
        return ck.done()
    ck.expect(
        info.get("difference") is None,
        f"after a step past the end ({info.get('step_after_end')}), reset(seed={run.case.seed}) returned something else "
        f"than a fresh env's reset(seed={run.case.seed}) ({info.get('difference')})",
    )
    return ck.done()


@spec(
    "env.stack_equivalence",
    impact="training-data",
    statement="Through every installed stack (Gymnasium Sync/Async vector envs in each autoreset mode, SB3 Dummy/Subproc VecEnvs, TorchRL GymWrapper/SerialEnv/ParallelEnv), the transitions extracted with that stack's documented recipe equal the bare env's, from the seeds the stack gave each copy and the actions the stack delivered; a stack that cannot take the env (it rejects it when built or at its first reset, or needs NumPy and the env is torch-native) is named not exercised, and the spec passes when every stack that took the env agrees.",
    rationale="An env that works bare can break inside a vectorizer: shared class state between copies, observations the stack converts, info keys that collide with the stack's own, flags the stack re-encodes.",
    families=FAMILIES,
    expensive=True,
)
def env_stack_equivalence(run: EnvRun) -> Outcome:
    ck = Checker("env.stack_equivalence")
    if not run.usable:
        return ck.done()
    agreed: list[str] = []
    disagreed: list[str] = []
    not_exercised = stacks_not_run()
    for result in run.stacks():
        if result.incompatible is not None:
            not_exercised.append(f"{result.stack} not exercised: {result.incompatible}")
        elif result.unreadable is not None:
            not_exercised.append(
                f"{result.stack} not exercised (rlconform cannot read its output: {result.unreadable})"
            )
        elif result.cannot_wrap is not None:
            not_exercised.append(f"{result.stack} not exercised: it cannot wrap this env ({result.cannot_wrap})")
        elif result.error is not None:
            ck.outcome.checked += 1
            disagreed.append(f"{result.stack}: {result.error}")
        else:
            problem = _stack_difference(ck, result)
            (agreed if problem is None else disagreed).append(problem or result.stack)
    for line in not_exercised:
        ck.note(line)
    if disagreed:
        exercised = len(agreed) + len(disagreed)
        others = [f"agree: {', '.join(agreed)}" if agreed else "", *not_exercised]
        ck.fail(
            f"{len(disagreed)} of {exercised} stacks that ran the env differ from the bare env: "
            + "; ".join(disagreed)
            + "".join(f" | {line}" for line in others if line)
        )
    elif agreed:
        ck.note(f"the same transitions as the bare env through {', '.join(agreed)}")
    return ck.done()


def _stack_difference(ck: Checker, result: StackResult) -> str | None:
    """The first transition where the stack's differs from the bare env's, as one line naming
    the stack; every compared transition counts as a checked fact."""
    from rlconform.core.family import get_family

    assert result.run is not None
    contract = get_family(result.run.system.family).contract
    precision = 2e-7 if contract.reward_precision == "float32" else 1e-12
    for env, (slots, bare) in enumerate(result.pairs):
        ck.outcome.checked += 1  # the number of transitions
        if len(slots) != len(bare):
            return f"{result.stack}: {len(slots)} transitions extracted, the bare env made {len(bare)} (env {env})"
        for slot, expected in zip(slots, bare, strict=True):
            ck.outcome.checked += 1  # one transition: observations, reward and flags
            problems = []
            for name in ("obs", "next_obs"):
                diff = first_difference(getattr(slot, name), expected[name])
                if diff is not None:
                    problems.append(f"{name} differs ({diff}; stack vs bare)")
            if slot.reward is None or not np.isclose(slot.reward, expected["reward"], rtol=precision, atol=1e-9):
                problems.append(f"reward {slot.reward!r} vs {expected['reward']!r}")
            if slot.terminated != expected["terminated"]:
                problems.append(f"terminated {slot.terminated} vs {expected['terminated']}")
            want = contract.expected_truncated(expected["terminated"], expected["truncated"])
            if slot.truncated != want:
                problems.append(f"truncated {slot.truncated} vs {want}")
            if problems:
                return f"{result.stack}: " + "; ".join(problems) + f" (env {env}, agent step {slot.agent_step})"
    return None
