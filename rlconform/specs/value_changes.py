"""Transitions delivered with a field changed by the stack, judged against the user's declared
intents (rlconform.core.intents).

A transition identified by its stamp (or, where no stamp survives, by its position) was
delivered: if its reward, observation, action or truncation differs from what the env returned, that
is a value change, reported by the spec that owns the field in these terms, and accepted when
the user declared it. Nothing here turns a delivered transition into a missing or invented one.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rlconform.core.intents import KINDS, hint, kind_of
from rlconform.core.spec import Checker
from rlconform.envs.calllog import receipt_value_equal
from rlconform.envs.decode import flattened_shape, read_through_layers, stacked_frames, transposed_shape
from rlconform.envs.plan import Reset
from rlconform.envs.spaces import ambiguous, values_changed
from rlconform.specs.helpers import (
    Match,
    made_of_frames,
    match_transitions,
    reward_precision,
    rewards_equal,
)

if TYPE_CHECKING:
    from rlconform.envs.driver import Run
    from rlconform.envs.truth import TrueTransition

#: how the spec owning observations tells a value-changing transform (a normalisation the user
#: did not declare); the other specs do not report those observations at all
OBSERVATION_VALUES_CHANGED = "the observation values were changed (looks like normalization/scaling)"

#: what every spec that reads decoded observations says, once, where the stack changed them
#: beyond decoding and nothing declared it: the change itself is ``transitions.exact``'s story
#: (:func:`observation_change`), never a lost first, terminal or reset observation
UNDECODABLE = "not decodable: the stack changes observations (declare --intended observation)"

#: the note a declared change leaves on the verdict, per intent
_DECLARED = {
    "reward": "rewards changed by the stack, as declared (--intended reward)",
    "observation": "observations changed by the stack, as declared (--intended observation)",
    "frame_skip": "the stack steps the env several times per transition, as declared (--intended frame_skip)",
    "action": "actions changed by the stack on their way to the env, as declared (--intended action)",
}


def declared(run: Run, intent: str) -> bool:
    """Whether the user declared a change of ``intent``, plain or narrow (``reward=scale``
    comes with ``reward``: rlconform.core.intents.parse_intents)."""
    return intent in run.system.intended


def note_undecodable(ck: Checker, run: Run) -> None:
    """Say once why observations were not read: the stack changed them and nothing declared it
    (declared, the spec is not applicable where it read none: ``transitions``'s
    ``_unreadable_under_declaration``)."""
    if not declared(run, "observation"):
        ck.note(UNDECODABLE)


def judge(ck: Checker, run: Run, intent: str, change: str, *, env: int, agent_step: int | None) -> None:
    """One checked fact: ``change`` (what the stack changed, in decoded terms) passes when the
    user declared ``intent`` and, for a narrow declaration (``reward=scale``), when it is a change
    of that kind; it fails as a value change otherwise. A reward scaled from another step's reward
    (:func:`scaled_from_other_steps`) fails whatever is declared, with no hint to declare it."""
    where = {"env": env, "agent_step": agent_step}
    if intent == "reward":
        moved = scaled_from_other_steps(run, env).get(agent_step)
        if moved is not None:
            ck.fail(f"{change}; {moved}", **where)
            return
    if not declared(run, intent):
        ck.fail(f"{change}; {hint(intent)}", **where)
        return
    kind = kind_of(run.system.intended, intent)
    if kind is None:
        ck.expect(True, "")
        ck.note(_DECLARED.get(intent, f"{change}, as declared (--intended {intent})"))
        return
    problem = _narrow_problem(run, intent, kind, change, env, agent_step)
    if problem is not None:
        ck.fail(
            f"{change}; the declared {intent}={kind} accepts {KINDS[intent][kind]}, and this is not one: {problem}",
            **where,
        )
        return
    ck.expect(True, "")
    ck.note(f"{intent}s changed by the stack, as declared (--intended {intent}={kind}: {KINDS[intent][kind]})")


def _narrow_problem(run: Run, intent: str, kind: str, change: str, env: int, agent_step: int | None) -> str | None:
    """Why ``change`` is not a change of the declared ``kind``; None when it is one."""
    if intent == "observation":
        flattened = "flattened to shape" in change
        if kind == "flatten" and not flattened:
            return "the observation was not flattened"
        if kind == "stack" and "reached the agent as a stack of" not in change:
            return "the observation was not stacked"
        if kind == "normalize" and (flattened or "transposed to channel-first" in change or "as a stack of" in change):
            return "its layout changed, not its values"
        return None
    if intent == "action":
        return _sticky_problems(run, env).get(agent_step) if kind == "sticky" else None
    if intent != "reward":
        return None
    problems = {"scale": _scale_problems, "clip": _clip_problems, "normalize": _normalize_problems}[kind](run, env)
    return problems.get(agent_step)


# --- narrow reward declarations -------------------------------------------------------------

#: the slack on the rise of a normalizer's gain r'/r between neighbouring transitions, above the
#: bound a running statistic allows (float32 rewards, a user's running estimate computed otherwise)
NORMALIZE_SLACK = 1.05


@dataclass(frozen=True)
class _Reward:
    """One delivered transition of a sub-env, for the narrow reward rules."""

    agent_step: int | None
    got: float
    env_reward: float
    #: how many step calls the run had made up to this one (the updates a normalizer may count)
    steps: int
    #: how many explicit resets the run had made before it
    resets: int
    #: the env's real step this transition is (its index among the env's real transitions)
    seq: int


def _rewards(run: Run, env: int) -> list[_Reward]:
    """``env``'s delivered transitions of one env step each, in delivery order."""
    key = ("narrow_rewards", env)
    if key in run.memo:
        return run.memo[key]  # type: ignore[no-any-return]
    assert run.truth is not None
    steps: list[int] = []
    resets: list[int] = []
    made_steps = made_resets = 0
    for call in run.calls:
        if isinstance(call.op, Reset):
            made_resets += 0 if call.implied else 1
        elif call.view is not None and call.view.kind == "step":
            made_steps += 1
        steps.append(made_steps)
        resets.append(made_resets - (1 if isinstance(call.op, Reset) and not call.implied else 0))
    order = {id(t): i for i, t in enumerate(run.truth.envs[env].transitions)}
    found: list[_Reward] = []
    for m in match_transitions(run, env)[0]:
        t = m.truth
        if t is None or m.span or m.slot.reward is None or id(t) not in order:
            continue
        at = m.slot.call
        found.append(_Reward(m.slot.agent_step, float(m.slot.reward), t.reward, steps[at], resets[at], order[id(t)]))
    run.memo[key] = found
    return found


def _zero(value: float, precision: str) -> bool:
    return rewards_equal(value, 0.0, precision)


def _scale_problems(run: Run, env: int) -> dict[int | None, str]:
    """``reward=scale``: one constant c > 0 with r' = c * r for every transition of the sub-env."""
    precision = reward_precision(run)
    items = _rewards(run, env)
    gains = [(r, r.got / r.env_reward) for r in items if r.env_reward != 0.0]
    problems: dict[int | None, str] = {}
    for r in items:
        if r.env_reward == 0.0 and not _zero(r.got, precision):
            problems[r.agent_step] = f"the env's reward is 0 and a scale keeps it 0, not {r.got!r}"
    if not gains:
        return problems
    first, c = gains[0]
    for r, gain in gains:
        if gain <= 0.0:
            problems[r.agent_step] = (
                f"r' = {_num(r.got, precision)} for r = {_num(r.env_reward, precision)}: r'/r = "
                f"{_num(gain, precision)} is not a positive constant"
            )
        elif not rewards_equal(r.got, c * r.env_reward, precision):
            problems[r.agent_step] = (
                f"r' = {_num(r.got, precision)} for r = {_num(r.env_reward, precision)} here (r'/r = "
                f"{_num(gain, precision)}), but r' = {_num(first.got, precision)} for r = "
                f"{_num(first.env_reward, precision)} at agent step {first.agent_step} (r'/r = {_num(c, precision)}): "
                f"a scale is one constant over the run"
            )
    return problems


def _num(value: float, precision: str) -> str:
    """A reward or a ratio of rewards as precise as the rewards were produced: float32 values
    with the digits float32 holds (not 0.4999999823048717 for a float32 0.5 over a float64 1.0)."""
    return f"{value:.7g}" if precision == "float32" else repr(value)


def _clip_problems(run: Run, env: int) -> dict[int | None, str]:
    """``reward=clip``: r' = r inside the bounds and the bound outside, one lower and one upper
    bound for the sub-env (read off the rewards it cut), so monotone."""
    precision = reward_precision(run)
    items = _rewards(run, env)
    changed = [r for r in items if not rewards_equal(r.got, r.env_reward, precision)]
    above = [r for r in changed if r.got < r.env_reward]
    below = [r for r in changed if r.got > r.env_reward]
    high = min((r.got for r in above), default=math.inf)
    low = max((r.got for r in below), default=-math.inf)
    kept = [r for r in items if r not in changed]
    problems: dict[int | None, str] = {}
    for r in above:
        if not rewards_equal(r.got, high, precision):
            problems[r.agent_step] = (
                f"it cut {r.env_reward!r} to {r.got!r}, but another reward to {high!r}: a clip has one upper bound"
            )
        elif past := next((k for k in kept if k.got > high and not rewards_equal(k.got, high, precision)), None):
            problems[r.agent_step] = (
                f"it cut {r.env_reward!r} to {high!r}, but left the env's {past.env_reward!r} above that bound "
                f"unchanged at agent step {past.agent_step}"
            )
    for r in below:
        if not rewards_equal(r.got, low, precision):
            problems[r.agent_step] = (
                f"it raised {r.env_reward!r} to {r.got!r}, but another reward to {low!r}: a clip has one lower bound"
            )
        elif past := next((k for k in kept if k.got < low and not rewards_equal(k.got, low, precision)), None):
            problems[r.agent_step] = (
                f"it raised {r.env_reward!r} to {low!r}, but left the env's {past.env_reward!r} below that bound "
                f"unchanged at agent step {past.agent_step}"
            )
    if above and below and low > high:
        for r in above + below:
            problems.setdefault(r.agent_step, f"its lower bound {low!r} is above its upper bound {high!r}")
    return problems


def _gain_problems(items: list[_Reward], bases: list[float | None], precision: str) -> dict[int, str]:
    """Where ``items`` (one sub-env's delivered rewards, in order) are not r' = base / sigma with
    sigma > 0 moving as a running statistic does, ``bases`` being the env rewards they are
    compared with (None: none to compare with): keyed by position in ``items``.

    The rule (``reward=normalize``, rlconform.core.intents.KINDS): r' has the sign of its base,
    zero for zero; and between two neighbouring transitions (no explicit reset between them) the
    gain r'/base rises by at most sqrt((n + k) / n) * NORMALIZE_SLACK, n being the transitions
    the sub-env delivered up to the earlier one and k the step calls from it to the later one. A
    running variance over N samples (Gymnasium's NormalizeReward, SB3's VecNormalize, one over
    every sub-env's batch or one per sub-env) cannot shrink by more than N / (N + added) in an
    update, and N >= n * (samples per step call): sigma may grow fast (a large return), never
    fall fast, so the gain may fall freely and rise only slowly. A reward taken from another
    step breaks it where the two steps' rewards differ most (an episode's first step after a
    long one, the first step of a run)."""
    problems: dict[int, str] = {}
    previous: tuple[int, float] | None = None
    for at, (r, base) in enumerate(zip(items, bases, strict=True)):
        if base is None:
            previous = None
            continue
        if base == 0.0 or _zero(base, "float64"):
            if not _zero(r.got, precision):
                problems[at] = f"the env's reward is {base!r}, and no scale makes it {r.got!r}"
            previous = None
            continue
        gain = r.got / base
        if gain <= 0.0 or _zero(r.got, precision):
            problems[at] = f"r' = {r.got!r} for r = {base!r}: dividing by sigma > 0 keeps the sign and never gives 0"
            previous = None
            continue
        if previous is not None:
            before, last_gain = previous
            earlier = items[before]
            if earlier.resets == r.resets:
                n, k = before + 1, max(1, r.steps - earlier.steps)
                bound = math.sqrt((n + k) / n) * NORMALIZE_SLACK
                if gain > last_gain * bound:
                    problems[at] = (
                        f"r'/r rose from {last_gain:.6g} (agent step {earlier.agent_step}) to {gain:.6g} in {k} "
                        f"step(s), more than the {bound:.4g}x a running normalizer's scale allows after {n} "
                        "transition(s)"
                    )
        previous = (at, gain)
    return problems


def _normalize_problems(run: Run, env: int) -> dict[int | None, str]:
    """``reward=normalize``: r' = r / sigma (:func:`_gain_problems`)."""
    items = _rewards(run, env)
    found = _gain_problems(items, [r.env_reward for r in items], reward_precision(run))
    return {items[at].agent_step: text for at, text in found.items()}


#: the offsets (in the sub-env's own steps) at which :func:`scaled_from_other_steps` looks for
#: the step whose reward the stack scaled
_OFFSETS = (-1, 1, -2, 2)


def scaled_from_other_steps(run: Run, env: int) -> dict[int | None, str]:
    """``env``'s delivered transitions (by agent step) whose reward is another step's reward
    rescaled: the rewards are a normalization (:func:`_gain_problems`) of the env's rewards the
    same number of its steps away, every one of them, and are none of its own rewards' at
    :data:`MISALIGNED_AT_LEAST` transitions or more (a normalizer whose scaler divides the
    previous step's reward: r'_t = r_{t-1} / sigma). As for :func:`misaligned_rewards`, no
    declaration covers it: a transform changes a step's reward, it does not take another's."""
    key = ("scaled_from_other_steps", env)
    if key in run.memo:
        return run.memo[key]  # type: ignore[no-any-return]
    assert run.truth is not None
    precision = reward_precision(run)
    items = _rewards(run, env)
    found: dict[int | None, str] = {}
    changed = [r for r in items if not rewards_equal(r.got, r.env_reward, precision)]
    if changed:
        own = _gain_problems(items, [r.env_reward for r in items], precision)
        if len(own) >= MISALIGNED_AT_LEAST:
            truth = run.truth.envs[env].transitions
            for offset in _OFFSETS:
                bases: list[float | None] = []
                for r in items:
                    other = r.seq + offset
                    # before the env's first step there is no reward: a scaler of the previous
                    # one starts from none (0)
                    bases.append(truth[other].reward if 0 <= other < len(truth) else (0.0 if other < 0 else None))
                if sum(b is not None for b in bases) <= MISALIGNED_AT_LEAST:
                    continue
                if _gain_problems(items, bases, precision):
                    continue
                when = f"{abs(offset)} step{'s' if abs(offset) > 1 else ''} {'earlier' if offset < 0 else 'later'}"
                for r, base in zip(items, bases, strict=True):
                    if r in changed:
                        found[r.agent_step] = (
                            f"it is the env's reward of the step {when} ({base!r}) rescaled, not this step's "
                            f"({r.env_reward!r}): the stack scales rewards misaligned with their steps "
                            f"({len(own)} of this env's transitions fit no scale of their own reward); no declaration "
                            "covers this"
                        )
                break
    run.memo[key] = found
    return found


def expected_reward(m: Match) -> float:
    """The env's reward for a delivered transition: the sum over the env steps it spans."""
    assert m.truth is not None
    return sum(t.reward for t in m.span) if m.span else m.truth.reward


def action_change(sent: object, t: TrueTransition) -> str:
    """Wording of a delivered transition whose action is not the one the env received."""
    return (
        f"the env received action {t.action.value!r} for {t.obs.short()}, the agent sent {sent!r}: the stack changed it"
    )


def _sticky_problems(run: Run, env: int) -> dict[int | None, str]:
    """``action=sticky``: each action the env received is the agent's or the one it received on
    the step before in the same episode (the first step of an episode gets the agent's)."""
    key = ("sticky_actions", env)
    if key in run.memo:
        return run.memo[key]  # type: ignore[no-any-return]
    assert run.truth is not None
    before: dict[int, TrueTransition] = {}
    transitions = run.truth.envs[env].transitions
    for previous, t in itertools.pairwise(transitions):
        if previous.episode == t.episode and previous.next_obs == t.obs:
            before[id(t)] = previous
    problems: dict[int | None, str] = {}
    for m in match_transitions(run, env)[0]:
        made = m.truth
        if made is None or m.span or receipt_value_equal(m.slot.action, made.action.value):
            continue
        earlier = before.get(id(made))
        if earlier is None:
            problems[m.slot.agent_step] = (
                f"{made.obs.short()} is its episode's first step, and the env got no action before"
            )
        elif not receipt_value_equal(earlier.action.value, made.action.value):
            problems[m.slot.agent_step] = f"the env received {earlier.action.value!r} on the step before"
    run.memo[key] = problems
    return problems


def reward_change(m: Match, precision: str = "float64") -> str:
    """Wording of a delivered transition whose reward is not the env's (the reward as precise as
    the stack returned it: :func:`rlconform.specs.helpers.reward_precision`)."""
    end = m.last
    assert end is not None and m.slot.reward is not None
    over = f" (the sum over the {len(m.span)} env steps it spans)" if m.span else ""
    return (
        f"reward is {_num(m.slot.reward, precision)} but the env returned {expected_reward(m)!r}{over} for "
        f"{end.next_obs.short()}: the stack changed it"
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


def pooled_from_span(run: Run, m: Match) -> bool:
    """Under a declared frame skip and observation change: whether every component of the
    delivered next observation is that component of one of the frames the env made over the
    transition (a max or min pool over the last frames, as Gymnasium's MaxAndSkipObservation and
    Atari preprocessing do). A component none of those frames holds came from elsewhere (a frame
    kept from an earlier call)."""
    if not (declared(run, "frame_skip") and declared(run, "observation")):
        return False
    return made_of_frames(run, m)


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
        depth = stacked_frames(run, value)
        if depth is not None:
            return f"{name} reached the agent as a stack of {depth} frames by the stack ({_stamp_text(m, name)})"
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
    TimeLimit does): that counts too, at a step count where the stack also cut an episode, or,
    where it cut none, when no episode of the run went past that step count.
    """
    step = _cut(run, m)
    if step is not None:
        return step
    t = m.last
    if t is None or not (m.slot.truncated and m.slot.terminated and t.terminated) or t.truncated:
        return None
    step, cuts = t.next_obs.step, _cuts(run)
    if step in cuts:
        return step
    # no episode was cut elsewhere in the run: a limit at this step count is still the story when
    # no episode of the run went past it (the search rarely draws both kinds of episode end)
    return step if not cuts and step >= _longest_episode(run) else None


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


def _longest_episode(run: Run) -> int:
    """The most steps any episode of the run reached in the stack's transitions."""
    key = ("longest_episode",)
    if key not in run.memo:
        run.memo[key] = max(
            (
                m.last.next_obs.step
                for env in range(run.case.num_envs)
                for m in match_transitions(run, env)[0]
                if m.last
            ),
            default=0,
        )
    return run.memo[key]  # type: ignore[no-any-return]


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
