"""Transitions delivered with a field changed by the stack, judged against the user's declared
intents (rlconform.core.intents).

A transition identified by its stamp (or, where no stamp survives, by its position) was
delivered: if its reward, observation or truncation differs from what the env returned, that
is a value change, reported by the spec that owns the field in these terms, and accepted when
the user declared it. Nothing here turns a delivered transition into a missing or invented one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rlconform.core.intents import hint
from rlconform.core.spec import Checker
from rlconform.envs.decode import flattened_shape, read_through_layers, transposed_shape
from rlconform.envs.spaces import ambiguous, values_changed
from rlconform.specs.helpers import Match, match_transitions, rewards_equal

if TYPE_CHECKING:
    from rlconform.envs.driver import Run

#: how the spec owning observations tells a value-changing transform (a normalisation the user
#: did not declare); the other specs do not report those observations at all
OBSERVATION_VALUES_CHANGED = "the observation values were changed (looks like normalization/scaling)"

#: the note a declared change leaves on the verdict, per intent
_DECLARED = {
    "reward": "rewards changed by the stack, as declared (--intended reward)",
    "observation": "observations changed by the stack, as declared (--intended observation)",
    "frame_skip": "the stack steps the env several times per transition, as declared (--intended frame_skip)",
}


def declared(run: Run, intent: str) -> bool:
    return intent in run.system.intended


def judge(ck: Checker, run: Run, intent: str, change: str, *, env: int, agent_step: int | None) -> None:
    """One checked fact: ``change`` (what the stack changed, in decoded terms) passes when the
    user declared ``intent``, and fails as a value change otherwise."""
    if declared(run, intent):
        ck.expect(True, "")
        ck.note(_DECLARED.get(intent, f"{change}, as declared (--intended {intent})"))
        return
    ck.fail(f"{change}; {hint(intent)}", env=env, agent_step=agent_step)


def expected_reward(m: Match) -> float:
    """The env's reward for a delivered transition: the sum over the env steps it spans."""
    assert m.truth is not None
    return sum(t.reward for t in m.span) if m.span else m.truth.reward


def reward_change(m: Match) -> str:
    """Wording of a delivered transition whose reward is not the env's."""
    end = m.last
    assert end is not None
    over = f" (the sum over the {len(m.span)} env steps it spans)" if m.span else ""
    return (
        f"reward is {m.slot.reward!r} but the env returned {expected_reward(m)!r}{over} for {end.next_obs.short()}: "
        "the stack changed it"
    )


#: how many delivered transitions of one episode must carry the env's reward of the step the same
#: number of steps away before the rewards are called misaligned: one coincidence is no pattern
#: (a reward clipped to 1.0 equals the env's reward of a first step, 1 + 2**-30 · salt, wherever
#: rewards are compared at float32 precision, once per episode)
MISALIGNED_AT_LEAST = 2


def misaligned_rewards(run: Run, env: int, precision: str) -> dict[int, str]:
    """``env``'s delivered transitions (by ``id`` of their match) whose reward is the env's reward
    of another step of the same episode, the same number of steps away for at least
    :data:`MISALIGNED_AT_LEAST` of that episode's: a reward delayed or advanced by the stack. No
    declaration covers it (a reward transform changes a step's reward, it does not move it to
    another step), so it fails whatever ``--intended`` says."""
    key = ("misaligned_rewards", env)
    if key in run.memo:
        return run.memo[key]  # type: ignore[no-any-return]
    assert run.truth is not None
    matches, _ = match_transitions(run, env)
    rewards = {(t.episode, t.obs.step): t.reward for t in run.truth.envs[env].transitions}
    by_offset: dict[tuple[int, int], list[tuple[Match, int]]] = {}
    for m in matches:
        t = m.truth
        if t is None or m.span or m.slot.reward is None or rewards_equal(m.slot.reward, t.reward, precision):
            continue
        for offset in (-1, 1, -2, 2):
            other = rewards.get((t.episode, t.obs.step + offset))
            if other is not None and rewards_equal(m.slot.reward, other, precision):
                by_offset.setdefault((t.episode, offset), []).append((m, t.obs.step + offset))
                break
    found: dict[int, str] = {}
    for (_, offset), hits in by_offset.items():
        if len(hits) < MISALIGNED_AT_LEAST:
            continue
        when = f"{abs(offset)} step{'s' if abs(offset) > 1 else ''} {'earlier' if offset < 0 else 'later'}"
        for m, start in hits:
            t = m.truth
            assert t is not None
            found[id(m)] = (
                f"reward is {m.slot.reward!r}, the env's reward for episode {t.episode} step {start + 1} ({when}), "
                f"not this step's {t.reward!r} (episode {t.episode} step {t.obs.step + 1}): the stack delivers "
                f"rewards misaligned with their steps ({len(hits)} transitions of the episode shifted alike); no "
                "declaration covers this"
            )
    run.memo[key] = found
    return found


def frame_skip_change(m: Match) -> str:
    """Wording of a delivered transition that spans several env steps."""
    assert m.truth is not None and m.span
    return (
        f"next_obs is {m.span[-1].next_obs.short()}, {len(m.span)} env steps after {m.truth.obs.short()}: the stack "
        f"stepped the env {len(m.span)} times for this one transition (a frame skip)"
    )


def observation_change(run: Run, m: Match) -> str | None:
    """What the stack did to the observations of a delivered transition, None if nothing.

    Observations whose values the stack changed (normalised, scaled: :func:`values_changed`)
    everywhere are told as that, once, here: with no stamp left, the other specs check none of
    them. Where stamps survive, a changed observation among them is the recipe's failure to give
    the env's value back (SB3's ``unnormalize_obs`` of a clipped terminal observation, FINDINGS
    S3): the spec comparing it reports it, not as a declared change."""
    if m.by_position:
        if values_changed(m.obs) or values_changed(m.next_obs):
            return (
                f"{OBSERVATION_VALUES_CHANGED}: no observation of this env carries a stamp any more, so "
                "transitions are matched by position"
            )
        return (
            f"no observation of this env carries a stamp ({_garbage_reason(m)}): the stack transformed them, "
            "so transitions are matched by position"
        )
    for name, value in (("obs", m.slot.obs), ("next_obs", m.slot.next_obs)):
        shape = flattened_shape(run, value)
        if shape is not None:
            return f"{name} reached the agent flattened to shape {shape} by the stack ({_stamp_text(m, name)})"
        shape = transposed_shape(run, value)
        if shape is not None:
            return (
                f"{name} reached the agent transposed to channel-first by the stack (shape {shape}; "
                f"{_stamp_text(m, name)})"
            )
        decoded = m.obs if name == "obs" else m.next_obs
        if ambiguous(decoded):
            return f"{name} reached the agent as {_garbage_reason_of(decoded)}"
        layers = read_through_layers(run, value)
        if layers is not None:
            return (
                f"{name} reached the agent as the user's {' < '.join(layers)} around each sub-env rewrote it "
                f"({_stamp_text(m, name)}: what that layer returned for it)"
            )
    return None


def _garbage_reason_of(decoded: object) -> str:
    reason = getattr(decoded, "reason", None)
    return reason if isinstance(reason, str) else str(decoded)


def _garbage_reason(m: Match) -> str:
    describe = getattr(m.obs, "describe", None)
    return describe() if callable(describe) else str(m.obs)


def _stamp_text(m: Match, name: str) -> str:
    stamp = m.obs if name == "obs" else m.next_obs
    short = getattr(stamp, "short", None)
    return short() if callable(short) else str(stamp)


def stack_truncation(run: Run, m: Match) -> int | None:
    """The step at which the stack truncated an episode the env did not end, None otherwise.

    The extracted transition says truncated (not terminated), the env returned neither flag,
    the episode never ended in the env and was not stepped past this transition: the stack cut
    it (a time limit it adds, TorchRL's ``StepCounter(max_steps)``, a TimeLimit around each env).
    A time limit reached on the very step the env terminates sets both flags (Gymnasium's
    TimeLimit does): that counts too, at a step count where the stack also cut an episode.
    """
    step = _cut(run, m)
    if step is not None:
        return step
    t = m.last
    if t is None or not (m.slot.truncated and m.slot.terminated and t.terminated) or t.truncated:
        return None
    return t.next_obs.step if t.next_obs.step in _cuts(run) else None


def _cut(run: Run, m: Match) -> int | None:
    t = m.last
    if t is None or run.truth is None or not m.slot.truncated or m.slot.terminated:
        return None
    if t.truncated or t.terminated:
        return None
    episode = run.truth.episode_of(t.obs)
    if episode is None or episode.ended is not None or not episode.transitions or episode.transitions[-1] != t:
        return None
    return t.next_obs.step


def _cuts(run: Run) -> set[int]:
    """The step counts at which the stack cut episodes the env did not end, over the run."""
    key = ("stack_cuts",)
    if key not in run.memo:
        run.memo[key] = {
            step
            for env in range(run.case.num_envs)
            for m in match_transitions(run, env)[0]
            if (step := _cut(run, m)) is not None
        }
    return run.memo[key]  # type: ignore[no-any-return]


def judge_truncation(ck: Checker, run: Run, m: Match, *, env: int) -> bool:
    """Judge a truncation flag that differs from the env's; True when it was a stack truncation
    (judged here), False when it is no value change and the caller reports it as before."""
    step = stack_truncation(run, m)
    if step is None:
        return False
    end = m.last
    assert end is not None
    where = {"env": env, "agent_step": m.slot.agent_step}
    if declared(run, "time_limit"):
        ck.expect(True, "")
        ck.note(f"the stack truncates episodes after {step} steps, as declared (--intended time_limit)")
        return True
    ended = "terminated it on that step" if end.terminated else "did not end the episode"
    ck.fail(
        f"truncated is True at {end.next_obs.short()} but the env {ended}: the stack cut it "
        f"after {step} steps (a time limit added by the stack); {hint('time_limit')}",
        **where,
    )
    return True


def check_one_time_limit(ck: Checker, run: Run, matches: list[tuple[int, Match]]) -> None:
    """Under a declared time limit: the stack truncates every episode at one step count and lets
    none run past it (a declared time limit is still a contract)."""
    if not declared(run, "time_limit"):
        return
    cuts = {step for _, m in matches if (step := stack_truncation(run, m)) is not None}
    if not cuts:
        return
    ck.expect(
        len(cuts) == 1,
        f"the stack truncated episodes after {' and '.join(map(str, sorted(cuts)))} steps; a time limit cuts "
        "every episode at one step count",
    )
    limit = min(cuts)
    for env, m in matches:
        t = m.last
        if t is None:
            continue
        if t.next_obs.step > limit:
            ck.fail(
                f"{t.next_obs.short()} runs past the stack's time limit of {limit} steps",
                env=env,
                agent_step=m.slot.agent_step,
            )
        else:
            ck.expect(True, "")
