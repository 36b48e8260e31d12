"""The stacks env-author mode keeps built across the examples of one search (issue 39).

Building the eleven stacks around a user's env for every example was most of a check: a TorchRL
``ParallelEnv`` starts worker processes that import torch, Gymnasium's ``AsyncVectorEnv`` and SB3's
``SubprocVecEnv`` start theirs, and TorchRL's wrappers read the env's spaces into specs. A stack
taken from the pool is driven again from ``reset(seed=...)``, the first call of every example, which
resets every copy with the stack's own seeding, as a fresh stack's first reset does.

No verdict rests on reuse: a run on a pooled stack counts only where it agrees with the bare env in
every way the spec reads (:func:`rlconform.libraries.envauthor.stacks._run_stack` decides). Anything
else (a difference, an error, a hang, an output it cannot read) is run again on a fresh build and
the fresh run is what the spec reads; the pooled stack is then closed. An env that keeps state across
episodes (an episode counter, a curriculum) behaves otherwise in a stack driven before; each of its
examples then costs a pooled run and a fresh one, and its verdicts are those of the fresh ones.

A search drives the stacks on its first :data:`STACK_EXAMPLES` examples only (the episode-end case,
tried first, and the next drawn ones), and on every later example once a stack disagreed with the
bare env (Hypothesis then shrinks that failure). The property is about the env's episodes through
each stack, which the episode-end case drives past their ends in three copies; a further drawn case
costs eleven stack runs and their bare replays, and for an env of 13-ms steps (CarRacing) the
stacks were three quarters of a check (:func:`take_stack_example`).

A stack is pooled per user system, stack and number of copies. The search that drove them ends by
closing them (:func:`close_pool`, from the family's ``end_search``), each under the close deadline of
a user's stack, and the worker processes still alive after that are terminated; an interpreter that
exits before then closes them at exit.
"""

from __future__ import annotations

import atexit
import contextlib
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from rlconform.core.system import System
from rlconform.core.watchdog import CallTimeout, child_processes, close_timeout, deadline, reap
from rlconform.envs.driver import ActionCodec, LiveRun, Run, reference_family
from rlconform.envs.plan import Case


@dataclass
class _Pooled:
    system: System
    obj: Any
    #: the call deadline its runs were driven under (its close gets a user stack's close limit)
    call_deadline: float


#: (user system id, stack system id, copies) -> the stack built around that many copies
_POOL: dict[tuple[str, str, int], _Pooled] = {}
#: per user system, the child processes alive before its first pooled stack was built: what
#: closing its pool leaves alive
_BEFORE: dict[str, set[Any]] = {}

#: the examples of a search that drive the stacks: the episode-end case and the next four drawn
#: (1-3 copies, 1-40 steps, other seeds); every later example too once one of them disagreed
STACK_EXAMPLES = 5
#: per user system, the examples of the running search that drove the stacks
_EXAMPLES: dict[str, int] = {}
#: user systems whose running search saw a stack disagree with the bare env
_DISAGREED: set[str] = set()


def take_stack_example(owner: str) -> bool:
    """Whether this example of ``owner``'s search drives the stacks (counted when it does): the
    search's first :data:`STACK_EXAMPLES` do, and every one after a disagreement (the shrink of a
    failure needs its candidates run through the stacks)."""
    taken = _EXAMPLES.get(owner, 0)
    if taken >= STACK_EXAMPLES and owner not in _DISAGREED:
        return False
    _EXAMPLES[owner] = taken + 1
    return True


def saw_disagreement(owner: str) -> None:
    """A stack disagreed with ``owner``'s bare env in this search: the rest of it drives the stacks
    on every example."""
    _DISAGREED.add(owner)


def drive_pooled(
    owner: str, stack: System, case: Case, env_fns: Sequence[Callable[[], Any]], codec: ActionCodec
) -> tuple[Run, bool]:
    """Drive ``case`` on ``owner``'s pooled ``stack`` (built now when the pool has none) and keep
    it open for the next example; also whether the stack was reused (built for an earlier one)."""
    key = (owner, stack.id, case.num_envs)
    pooled = _POOL.pop(key, None)  # out of the pool while driven: a run that fails leaves it out
    if pooled is None:
        _BEFORE.setdefault(owner, child_processes())
    live = LiveRun(
        stack, case, env_fns=env_fns, codec=codec, built=None if pooled is None else pooled.obj, keep_open=True
    )
    run = live.drive(case.ops)
    if live.kept_open:
        _POOL[key] = _Pooled(stack, live.obj, run.call_timeout)
    return run, pooled is not None


def discard(owner: str, stack: System, num_envs: int) -> None:
    """Close ``owner``'s pooled ``stack`` of ``num_envs`` copies (a run on it did not agree: the
    next example builds it afresh)."""
    pooled = _POOL.pop((owner, stack.id, num_envs), None)
    if pooled is not None:
        _close(pooled)


def close_pool(owner: str | None = None) -> int:
    """End ``owner``'s search (every owner's: None): close its pooled stacks, terminate the worker
    processes their closes left, and start its count of examples through the stacks afresh; how
    many stacks were closed."""
    for name in [name for name in _EXAMPLES if owner is None or name == owner]:
        del _EXAMPLES[name]
    _DISAGREED.difference_update([name for name in _DISAGREED if owner is None or name == owner])
    keys = [key for key in _POOL if owner is None or key[0] == owner]
    for key in keys:
        _close(_POOL.pop(key))
    owners = [name for name in _BEFORE if owner is None or name == owner]
    for name in owners:
        reap(_BEFORE.pop(name))
    return len(keys)


def _close(pooled: _Pooled) -> None:
    """Close one pooled stack under a user stack's close limit; a close that fails or hangs is
    left to :func:`close_pool`'s reaping (no verdict reads it: the runs on it were read already)."""
    family = reference_family(pooled.system.family)
    with contextlib.suppress(Exception, CallTimeout), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with deadline(close_timeout(pooled.call_deadline), watch_deadlock=True):
            family.close(pooled.obj)


def pooled_count(owner: str) -> int:
    """How many stacks ``owner`` has in the pool (tests)."""
    return sum(1 for key in _POOL if key[0] == owner)


atexit.register(close_pool)
