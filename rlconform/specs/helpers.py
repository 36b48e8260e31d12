"""Shared readings of a run for the specs: placing env events in calls, matching extracted
transitions to the real ones, and wording (observations are decoded by :mod:`rlconform.envs.decode`)."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from rlconform.core.family import get_family
from rlconform.envs.calllog import LogRecord, ResetRecord, StepRecord
from rlconform.envs.decode import decode
from rlconform.envs.driver import Contract
from rlconform.envs.spaces import Decoded, Garbage, ambiguous, values_changed
from rlconform.envs.stamp import STAMP_INFO_KEY, Stamp
from rlconform.envs.trace import Slot
from rlconform.envs.truth import TrueTransition

if TYPE_CHECKING:
    from rlconform.core.system import System
    from rlconform.envs.driver import Run


def rewards_equal(a: float | None, b: float | None, precision: str) -> bool:
    if a is None or b is None:
        return False
    if precision == "float32":
        return math.isclose(a, b, rel_tol=2e-7, abs_tol=1e-6)
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


def events_by_call(run: Run) -> tuple[list[tuple[int, LogRecord]], list[list[tuple[int, LogRecord]]]]:
    """Env log records placed in the driver's calls.

    A record belongs to call ``i`` when it arrived after call ``i`` started and before call
    ``i+1`` started: work a library leaves running after a call returns (worker processes that
    keep stepping) is charged to the call that caused it. Records before the first call are
    returned separately (construction).
    """
    assert run.truth is not None
    starts = [c.start_ns for c in run.calls]
    before: list[tuple[int, LogRecord]] = []
    per_call: list[list[tuple[int, LogRecord]]] = [[] for _ in run.calls]
    for env_truth in run.truth.envs:
        for record in env_truth.records:
            t = getattr(record, "t_ns", 0)
            index = _bisect_right(starts, t) - 1
            if index < 0:
                before.append((env_truth.env, record))
            else:
                per_call[index].append((env_truth.env, record))
    for bucket in per_call:
        bucket.sort(key=lambda item: getattr(item[1], "t_ns", 0))
    return before, per_call


def _bisect_right(values: list[int], x: int) -> int:
    lo, hi = 0, len(values)
    while lo < hi:
        mid = (lo + hi) // 2
        if x < values[mid]:
            hi = mid
        else:
            lo = mid + 1
    return lo


def resets_in(events: list[tuple[int, LogRecord]], env: int) -> list[ResetRecord]:
    return [r for e, r in events if e == env and isinstance(r, ResetRecord)]


def steps_in(events: list[tuple[int, LogRecord]], env: int) -> list[StepRecord]:
    return [r for e, r in events if e == env and isinstance(r, StepRecord)]


@dataclass
class Match:
    slot: Slot
    obs: Decoded
    next_obs: Decoded
    truth: TrueTransition | None
    #: paired by position, not by stamp: no observation of this env's transitions carried one
    #: (the stack transformed them beyond decoding)
    by_position: bool = False
    #: the real transitions this one spans when its next observation is several env steps
    #: later in the same episode (a frame skip: the stack stepped the env more than once)
    span: tuple[TrueTransition, ...] = ()

    @property
    def last(self) -> TrueTransition | None:
        """The real transition whose next observation and flags this one should carry."""
        return self.span[-1] if self.span else self.truth


def match_transitions(run: Run, env: int) -> tuple[list[Match], list[TrueTransition]]:
    """Pair each extracted transition of ``env`` with the real transition that starts from the
    same observation (each real transition starts from a unique observation), and list the
    real transitions no extracted one starts from."""
    key = ("matches", env)
    if key not in run.memo:
        run.memo[key] = _match_transitions(run, env)
    return run.memo[key]  # type: ignore[no-any-return]


def _match_transitions(run: Run, env: int) -> tuple[list[Match], list[TrueTransition]]:
    assert run.truth is not None
    if not stamps_survive(run, env):
        return _match_by_position(run, env)
    by_start = {t.obs: t for t in run.truth.envs[env].transitions}
    # a transition whose first observation a stack's transform made unreadable (a normalizer's
    # first output, equal for every sub-env) is still the one its next observation ends
    by_end = {t.next_obs: t for t in run.truth.envs[env].transitions}
    used: set[Stamp] = set()
    # observations extracted transitions start from: a span never swallows one of them (a next
    # observation overwritten by a later step is a wrong next_obs, not a frame skip)
    starts = {d for s in run.slots_of(env) if s.kind == "transition" and isinstance(d := decode(run, s.obs), Stamp)}
    matches: list[Match] = []
    skips = _frame_skip_declared(run)
    for slot in run.slots_of(env):
        if slot.kind != "transition":
            continue
        obs = decode(run, slot.obs)
        next_obs = decode(run, slot.next_obs)
        truth = by_start.get(obs) if isinstance(obs, Stamp) and obs not in used else None
        if truth is None and ambiguous(obs) and isinstance(next_obs, Stamp):
            truth = by_end.get(next_obs)
            truth = None if truth is None or truth.obs in used else truth
        span: tuple[TrueTransition, ...] = ()
        if skips:
            # a declared frame skip: the call's env steps come from the env's log, since a pooled
            # observation (a max over the last frames) may decode as another frame of the span
            made = made_during(run, env).get(slot.call, [])
            if truth is None or truth not in made:
                truth = next((t for t in made if t.obs not in used), truth)
        if truth is not None:
            used.add(truth.obs)
            span = _spanned(by_start, truth, next_obs, used | starts)
            if skips:
                span = _spanned_in_call(made_during(run, env).get(slot.call, []), truth, used) or span
            used.update(t.obs for t in span)
        matches.append(Match(slot, obs, next_obs, truth, span=span))
    missing = [t for t in run.truth.envs[env].transitions if t.obs not in used]
    return matches, missing


def _frame_skip_declared(run: Run) -> bool:
    return "frame_skip" in getattr(run.system, "intended", ())


def made_during(run: Run, env: int) -> dict[int, list[TrueTransition]]:
    """call position -> the real transitions ``env`` made during that call, in order (the env's
    own log: how many env steps a call made, whatever the returned observation decodes to)."""
    key = ("made_during", env)
    if key not in run.memo:
        assert run.truth is not None
        placed = call_of_records(run)
        during: dict[int, list[TrueTransition]] = {}
        for t in run.truth.envs[env].transitions:
            during.setdefault(placed.get((env, t.seq), -1), []).append(t)
        run.memo[key] = during
    return run.memo[key]  # type: ignore[no-any-return]


def _spanned_in_call(
    during: list[TrueTransition], first: TrueTransition, used: set[Stamp]
) -> tuple[TrueTransition, ...]:
    """Under a declared frame skip, the real transitions one call made from ``first`` on, in one
    episode, each starting where the one before ended: the span the env's log shows, which a
    pooled observation (a max over the last frames) cannot tell; () for one env step."""
    if first not in during:
        return ()
    chain = [first]
    for t in during[during.index(first) + 1 :]:
        if t.episode != first.episode or t.obs != chain[-1].next_obs or t.obs in used:
            break
        chain.append(t)
    return tuple(chain) if len(chain) > 1 else ()


def _spanned(
    by_start: dict[Stamp, TrueTransition], first: TrueTransition, next_obs: Decoded, used: set[Stamp]
) -> tuple[TrueTransition, ...]:
    """The chain of real transitions from ``first`` to the one that reaches ``next_obs``, all in
    one episode and none of the later ones starting from a ``used`` observation; () when
    ``next_obs`` is no later step of that episode."""
    if not isinstance(next_obs, Stamp) or next_obs == first.next_obs:
        return ()
    end = first.next_obs
    if (next_obs.env, next_obs.episode, next_obs.salt) != (end.env, end.episode, end.salt) or next_obs.step <= end.step:
        return ()
    chain = [first]
    while chain[-1].next_obs != next_obs:
        following = by_start.get(chain[-1].next_obs)
        if following is None or following.obs in used or following.episode != first.episode:
            return ()
        chain.append(following)
    return tuple(chain)


def stamps_survive(run: Run, env: int) -> bool:
    """Whether ``env``'s extracted transitions can be identified by their observations' stamps
    (True when there are none: nothing to match either way).

    Stamps survive where any observation decodes to one; under a declared observation transform
    (``--intended observation``) only where at least half do: a normalised observation may decode
    by chance, and matching the others by stamp would report the declared transform as wrong
    transitions, while a stack that keeps the env's observations (SB3's VecNormalize gives them
    back) is still matched by stamp, so that a wrong terminal observation among them is still
    reported. At least half, not most: in episodes of one step every first observation is given
    back and every terminal one may not be (FINDINGS S3), and that must not depend on the mix of
    episode lengths a search happens to draw.

    Undeclared, observations whose values the stack changed arithmetically (normalised, scaled:
    :func:`rlconform.envs.spaces.values_changed`) are the stack changing observations, not lost
    ones: where they are more than half of the env's, the few that decode are chance (a
    normalised vector that reads as some stamp), and the change is the one story
    ``transitions.exact`` tells (:data:`rlconform.specs.value_changes.UNDECODABLE`). More than
    half, as above: a recipe that gives every first observation back and no terminal one (FINDINGS
    S3, episodes of one step) is still matched by stamp, and its terminal observations reported."""
    slots = [s for s in run.slots_of(env) if s.kind == "transition"]
    if not slots:
        return True
    decoded = [decode(run, o) for s in slots for o in (s.obs, s.next_obs)]
    stamped = [isinstance(d, Stamp) for d in decoded]
    if "observation" in getattr(run.system, "intended", ()):
        return 2 * sum(stamped) >= len(stamped)
    changed = sum(values_changed(d) for d in decoded)
    return any(stamped) and 2 * changed <= len(decoded)


def _match_by_position(run: Run, env: int) -> tuple[list[Match], list[TrueTransition]]:
    """The k-th extracted transition with the k-th real one: the fallback where no stamp
    survives the stack. Extra extracted transitions are invented, extra real ones missing."""
    assert run.truth is not None
    real = run.truth.envs[env].transitions
    slots = [s for s in run.slots_of(env) if s.kind == "transition"]
    if _frame_skip_declared(run):
        return _match_by_call(run, env, slots)
    matches = [
        Match(slot, decode(run, slot.obs), decode(run, slot.next_obs), real[k] if k < len(real) else None, True)
        for k, slot in enumerate(slots)
    ]
    return matches, list(real[len(slots) :])


def observation_leaves(value: Any) -> np.ndarray | None:
    """Every number of an observation in one flat float array (None: not numbers)."""
    if isinstance(value, dict):
        parts = [observation_leaves(value[key]) for key in sorted(value)]
    elif isinstance(value, tuple):
        parts = [observation_leaves(item) for item in value]
    else:
        try:
            return np.asarray(value, dtype=np.float64).reshape(-1)
        except (TypeError, ValueError):
            return None
    if any(part is None for part in parts):
        return None
    return np.concatenate([part for part in parts if part is not None] or [np.zeros(0)])


def made_of_frames(run: Run, m: Match) -> bool:
    """Whether every component of ``m``'s delivered next observation is that component of one of
    the frames the env made over the transition (its span, or its one step): a max or min pool
    over the last frames of a frame skip."""
    if m.truth is None:
        return False
    got = observation_leaves(m.slot.next_obs)
    codec = run.case.script.obs
    frames = [observation_leaves(codec.encode(t.next_obs)) for t in (m.span or (m.truth,))]
    if got is None or any(f is None or f.shape != got.shape for f in frames):
        return False
    stacked = np.stack([f for f in frames if f is not None])
    return bool(np.all(np.any(np.isclose(stacked, got, rtol=1e-6, atol=1e-6), axis=0)))


def _match_by_call(run: Run, env: int, slots: list[Slot]) -> tuple[list[Match], list[TrueTransition]]:
    """Under a declared frame skip, with no stamp left: each extracted transition is the real
    transitions its call made (the env's own log), spanning them when there are several."""
    assert run.truth is not None
    during = made_during(run, env)
    matches: list[Match] = []
    used: set[int] = set()
    for slot in slots:
        made = [t for t in during.get(slot.call, []) if id(t) not in used]
        first = made[0] if made else None
        span = _spanned_in_call(made, first, set()) if first is not None else ()
        used.update(id(t) for t in (span or made[:1]))
        matches.append(Match(slot, decode(run, slot.obs), decode(run, slot.next_obs), first, True, span=span))
    # observations pooled from the frames each call made (a max over the last frames) are still
    # the env's: where most are, the matches are exact and the others are compared (a frame kept
    # from an earlier call); otherwise the stack transformed them beyond that (a normaliser)
    pooled = [made_of_frames(run, m) for m in matches if m.truth is not None]
    if pooled and 2 * sum(pooled) > len(pooled):
        matches = [dataclasses.replace(m, by_position=False) for m in matches]
    return matches, [t for t in run.truth.envs[env].transitions if id(t) not in used]


def first_step_calls(run: Run) -> dict[int, int]:
    """call position -> agent step, for messages."""
    return {c.position: c.agent_step for c in run.calls}


def call_of_records(run: Run) -> dict[tuple[int, int], int]:
    """(env, record seq) -> position of the call the record belongs to (-1: before any call)."""
    before, per_call = events_by_call(run)
    placed = {(env, record.seq): -1 for env, record in before}
    for position, bucket in enumerate(per_call):
        for env, record in bucket:
            placed[(env, record.seq)] = position
    return placed


def agent_step_of_call(run: Run, position: int) -> int | None:
    if 0 <= position < len(run.calls):
        return run.calls[position].agent_step or None
    return None


def contract_of(system: System) -> Contract:
    """What ``system``'s family documents about its outputs: the facts a cross-family spec reads
    instead of branching on the family's name (each family states its own in its library)."""
    contract = get_family(system.family).contract
    if not isinstance(contract, Contract):
        raise TypeError(f"family {system.family} documents no output contract for the cross-family specs")
    return contract


def reward_precision(run: Run) -> str:
    """The precision the run's rewards were produced in, to compare them at: the family's
    documented precision, or ``"float32"`` where the stack returned rewards of a narrower float
    dtype (a NumPy float32 scalar or array). A float32 reward is the env's float64 reward
    rounded to float32, not a reward the stack changed; a dtype the family does not document is
    ``dtype.rewards_flags``'s finding."""
    contract = contract_of(run.system)
    if contract.reward_precision == "float32":
        return "float32"
    key = ("reward_precision", len(run.calls))
    if key not in run.memo:
        run.memo[key] = "float32" if any(_narrow_reward(call, contract) for call in run.calls) else "float64"
    return run.memo[key]  # type: ignore[no-any-return]


def _narrow_reward(call: Any, contract: Contract) -> bool:
    """Whether a step call returned its reward(s) in a float dtype narrower than float64."""
    result = call.result_live
    if call.failed or call.view is None or call.view.kind != "step" or not isinstance(result, tuple):
        return False
    if len(result) <= contract.reward_position:
        return False
    dtype = getattr(result[contract.reward_position], "dtype", None)
    return dtype is not None and getattr(dtype, "kind", "") == "f" and getattr(dtype, "itemsize", 8) < 8


def expected_truncated(run: Run, terminated: bool, truncated: bool) -> bool:
    return contract_of(run.system).expected_truncated(terminated, truncated)


def info_stamp(info: Any) -> Decoded | None:
    """The stamp a reference env put in an info dict, None if the key is absent."""
    if not isinstance(info, dict) or STAMP_INFO_KEY not in info:
        return None
    try:
        env, episode, step, salt = (int(v) for v in info[STAMP_INFO_KEY])
        return Stamp(env, episode, step, salt)
    except Exception as exc:
        return Garbage(f"info stamp {info[STAMP_INFO_KEY]!r}: {exc}")


def model_counterpart(run: Run, position: int) -> Any:
    """The reference model's record of the same call, if the two call sequences agree there."""
    if run.model is None or position >= len(run.model.calls):
        return None
    candidate = run.model.calls[position]
    return candidate if candidate.op == run.calls[position].op else None
