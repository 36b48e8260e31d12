"""The stacks a user's env is run through (env-author mode): which ones (``STACKS``, ``--stacks``),
why one cannot run here or cannot take this env, running the env through one of them, and replaying
the bare env with the seeds and actions the stack gave each copy.

The seeds are the stack's own documented seeding: Gymnasium and SB3 seed copy i with ``seed + i``;
TorchRL's ``set_seed`` chains seeds and resets each copy once more without a seed (the adapter
records the resets each copy received, ``rlconform.libraries.torchrl.env_objects.SUB_ENV_RESETS``), and
the bare env replays exactly those.
"""

from __future__ import annotations

import fnmatch
import functools
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from rlconform.core.compare import first_difference
from rlconform.core.forkserver import preload
from rlconform.core.hangs import TIMEOUT_ERROR, hung_call
from rlconform.core.system import System, get_system
from rlconform.envs.driver import ActionCodec, Run, reference_family
from rlconform.envs.plan import Case, Reset, Step
from rlconform.envs.script import EnvScript
from rlconform.envs.trace import Slot
from rlconform.libraries.envauthor import stack_pool
from rlconform.libraries.envauthor.case import _batch, _drive, _factory
from rlconform.libraries.envauthor.options import STACKS_OPTION
from rlconform.libraries.envauthor.torch_envs import to_env_action
from rlconform.libraries.torchrl.env_objects import SUB_ENV_RESETS
from rlconform.libraries.torchrl.env_systems import FORKSERVER_PRELOAD, torch_native_stack
from rlconform.libraries.torchrl.tensordicts import UnsupportedSpaceError

if TYPE_CHECKING:
    from rlconform.libraries.envauthor.harness import EnvRun

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


@dataclass
class StackResult:
    """What running the env through one stack gave: transitions to compare, or why none."""

    stack: str
    run: Run | None = None
    #: the stack raised while stepping an env it had accepted (may be the env's fault: a FAIL)
    error: str | None = None
    #: the stack could not be built around this env, or rejected it at its first reset (a space it
    #: does not support, a custom space, an env its worker processes cannot import): the library's
    #: limit, not the env's fault, so the stack is named as not run
    cannot_wrap: str | None = None
    #: why the stack is not run at all on this kind of env (a NumPy-only stack, a torch-native env)
    incompatible: str | None = None
    #: why the stack's output could not be read back into the env's own values (an rlconform
    #: limit, not the env's fault): the stack is named as not run
    unreadable: str | None = None
    #: a call through the stack did not answer (whose hang it is cannot be told: the env answered
    #: every call bare): the stack is named as not compared
    hung: str | None = None
    #: the stack's close() did not answer after every call had: the transitions are compared
    close_hung: str | None = None
    #: per sub-env: (extracted slots, transitions of the bare env replaying the same actions)
    pairs: list[tuple[list[Slot], list[dict[str, Any]]]] = field(default_factory=list)
    #: what :func:`stack_difference` found (the pairs do not change once read)
    compared: tuple[str | None, int] | None = field(default=None, repr=False)


def chosen_stacks(system: System) -> tuple[str, ...]:
    """The stacks of STACKS the user chose for ``system`` (``--stacks`` globs; default: all), in
    STACKS order."""
    patterns = system.option(STACKS_OPTION)
    if not patterns:
        return STACKS
    return tuple(stack_id for stack_id in STACKS if _matches(stack_id, patterns))


def _matches(stack_id: str, patterns: Sequence[str]) -> bool:
    return any(stack_id == p or fnmatch.fnmatchcase(stack_id, p) for p in patterns)


def _matches_any(pattern: str) -> bool:
    return any(_matches(stack_id, (pattern,)) for stack_id in STACKS)


#: stacks whose workers a fork server starts (TorchRL's ParallelEnv, SB3's SubprocVecEnv)
FORKSERVER_STACKS = ("torchrl.ParallelEnv.GymWrapper", "sb3.SubprocVecEnv")


def start_fork_server(system: System) -> None:
    """Start this process's fork server now, where a chosen stack's workers will come from it: it
    imports torch and TorchRL before it serves its first worker (seconds), and started at the
    check's first example it does so while the bare env is driven, instead of while the first such
    stack waits for its workers. Its preload list is TorchRL's, which serves SB3's workers too
    (rlconform.libraries.torchrl.env_systems.FORKSERVER_PRELOAD), as when TorchRL's stack starts it."""
    import multiprocessing

    if "forkserver" not in multiprocessing.get_all_start_methods():
        return
    chosen = [s for s in chosen_stacks(system) if s in FORKSERVER_STACKS and not stack_skip_reason(s)]
    if not chosen:
        return
    from multiprocessing import forkserver

    preload(FORKSERVER_PRELOAD)
    forkserver.ensure_running()


def stack_skip_reason(stack_id: str) -> str | None:
    """Why a stack cannot run here: its library is not installed, or its release lacks it."""
    return get_system(stack_id).skip_reason()


def stacks_not_run(system: System) -> list[str]:
    """One line per chosen stack of STACKS that cannot run here, with the reason (library missing,
    release lacks it), and one naming the stacks the user did not choose (``--stacks``)."""
    chosen = chosen_stacks(system)
    lines = [f"{stack_id} not run ({reason})" for stack_id in chosen if (reason := stack_skip_reason(stack_id))]
    left_out = [stack_id for stack_id in STACKS if stack_id not in chosen]
    if left_out:
        lines.append(f"not chosen (--stacks), not run: {', '.join(left_out)}")
    return lines


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
    steps = [Step(tuple(run.actions[i][t] for i in range(n))) for t in range(run.stack_steps)]
    case = Case(EnvScript(), n, (Reset(seed=run.case.seed), *steps))
    owner = run.system.id
    # the stack kept from an earlier example (stack_pool): only a run that agrees with the bare env
    # in every way counts; anything else is run again on a fresh build, which is what the spec reads
    try:
        pooled_run, reused = stack_pool.drive_pooled(owner, stack, case, [factory] * n, codec)
    except Exception:
        pass  # the fresh build below meets the same error, and says what it was
    else:
        result = _read_stack_run(run, stack_id, pooled_run, factory, n)
        if agrees(result):
            return result
        stack_pool.discard(owner, stack, n)
        if not reused:
            return result  # that was a fresh build: its run is the verdict's
    result = StackResult(stack_id)
    try:
        stack_run = _drive(stack, case, [factory] * n, codec)
    except UnsupportedSpaceError as exc:
        result.unreadable = str(exc)
        return result
    except Exception as exc:
        result.error = f"{type(exc).__name__}: {exc}"
        return result
    return _read_stack_run(run, stack_id, stack_run, factory, n)


def agrees(result: StackResult) -> bool:
    """Whether a stack's run agrees with the bare env in every way the spec reads: it took the
    env, raised nothing, did not hang, and gave the bare env's transitions."""
    clean = result.error is None and result.cannot_wrap is None and result.unreadable is None
    return clean and result.run is not None and hung_call(result.run) is None and stack_difference(result)[0] is None


def disagrees(result: StackResult) -> bool:
    """Whether a stack that took the env disagreed with the bare env: it raised, or gave other
    transitions (what ``env.stack_equivalence`` fails on; a stack that could not take the env or
    whose output rlconform cannot read is not a disagreement)."""
    if result.error is not None:
        return True
    if result.incompatible is not None or result.cannot_wrap is not None or result.unreadable is not None:
        return False
    if result.hung is not None:
        return False
    return result.run is not None and stack_difference(result)[0] is not None


def _read_stack_run(run: EnvRun, stack_id: str, stack_run: Run, factory: Callable[[], Any], n: int) -> StackResult:
    """What the spec reads of one run of the env through a stack: why it could not take the env,
    or its transitions beside the bare env's replay of the same seeds and actions."""
    result = StackResult(stack_id)
    result.run = stack_run
    if stack_run.build_error:
        result.cannot_wrap = _library_error(stack_run.build_error)
        return result
    failed = [c for c in stack_run.calls if c.failed]
    hang = hung_call(stack_run)
    if hang is not None and any(call.error_type == TIMEOUT_ERROR for call in failed):
        # a call through the stack did not answer: what came before it is not the whole run, and
        # replaying the env bare (no deadline there) could hang as well. The env answered every
        # call bare, so whose hang it is cannot be told: the stack is not compared, and named
        result.hung = hang
        return result
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
    # a close() that hung after every call answered (Gymnasium's AsyncVectorEnv, FINDINGS G3):
    # the transitions are whole and are compared; the spec names the hang
    result.close_hung = hang
    resets = _resets_made(stack_run, run.case.seed, n)
    for env in range(n):
        slots = [s for s in stack_run.slots if s.env == env and s.kind == "transition"]
        actions = [to_env_action(s.action, run.torch_device) for s in slots]
        result.pairs.append((slots, run.replay(functools.partial(_replay, factory), resets[env], actions)))
    return result


def stack_difference(result: StackResult) -> tuple[str | None, int]:
    """The first transition where the stack's differs from the bare env's, as one line naming the
    stack (None: none differs), and how many facts were compared (each copy's count of
    transitions, and each transition's observations, reward and flags). Compared once per result:
    the pool (:func:`agrees`), the search's budget (:func:`disagrees`) and the spec all ask."""
    if result.compared is None:
        result.compared = _compare(result)
    return result.compared


def _compare(result: StackResult) -> tuple[str | None, int]:
    assert result.run is not None
    contract = reference_family(result.run.system.family).contract
    precision = 2e-7 if contract.reward_precision == "float32" else 1e-12
    checked = 0
    for env, (slots, bare) in enumerate(result.pairs):
        checked += 1  # the number of transitions
        if len(slots) != len(bare):
            return (
                f"{result.stack}: {len(slots)} transitions extracted, the bare env made {len(bare)} (env {env})",
                checked,
            )
        for slot, expected in zip(slots, bare, strict=True):
            checked += 1  # one transition: observations, reward and flags
            problems = []
            for name in ("obs", "next_obs"):
                diff = first_difference(getattr(slot, name), expected[name])
                if diff is not None:
                    problems.append(f"{name} differs ({diff}; stack vs bare)")
            if slot.reward is None or not _close(float(slot.reward), expected["reward"], precision):
                problems.append(f"reward {slot.reward!r} vs {expected['reward']!r}")
            if slot.terminated != expected["terminated"]:
                problems.append(f"terminated {slot.terminated} vs {expected['terminated']}")
            want = contract.expected_truncated(expected["terminated"], expected["truncated"])
            if slot.truncated != want:
                problems.append(f"truncated {slot.truncated} vs {want}")
            if problems:
                return f"{result.stack}: " + "; ".join(
                    problems
                ) + f" (env {env}, agent step {slot.agent_step})", checked
    return None, checked


def _close(got: float, expected: float, rtol: float) -> bool:
    """``np.isclose(got, expected, rtol=rtol, atol=1e-9)`` for two floats (NaN never close, equal
    infinities close), at a fraction of its cost: it is asked once per transition of every stack."""
    if got == expected:
        return True
    return math.isfinite(got) and math.isfinite(expected) and abs(got - expected) <= 1e-9 + rtol * abs(expected)


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
            transitions.append(replayed_transition(obs, action, reward, next_obs, terminated, truncated))
            obs = next_obs
            if terminated or truncated:
                obs, _ = env.reset()
    finally:
        env.close()
    return transitions


def replayed_transition(
    obs: Any, action: Any, reward: Any, next_obs: Any, terminated: Any, truncated: Any
) -> dict[str, Any]:
    """One transition of a bare replay as the stacks' comparison reads it (:func:`_replay`, and the
    bare pass kept as copy 0's replay, ``harness._keep_bare_replay``): raises TypeError or
    ValueError where the reward or a flag is not a number."""
    return {
        "obs": obs,
        "action": action,
        "reward": float(reward),
        "next_obs": next_obs,
        "terminated": bool(terminated),
        "truncated": bool(truncated),
    }
