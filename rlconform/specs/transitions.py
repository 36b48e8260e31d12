"""Specs on the transitions a training loop extracts: exactness, counts, continuity, terminal
observations, flags, reset steps, infos and the episode lifecycle.

They read the recipe's slots and the reference envs' logs, so most of them apply to TorchRL's
``torchrl.EnvBase`` family too. Two do not: ``reset_step.neutral`` (TorchRL's
``step_and_maybe_reset`` has no reset step, it resets ended sub-envs in the same call) and
``infos.aligned`` (TorchRL delivers a Gymnasium info only through an ``info_dict_reader`` the
caller registers; without one there is no info to align)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from rlconform.core.spec import Checker, Outcome, Spec, spec, spec_of
from rlconform.envs.calllog import RejectedRecord, ResetRecord, StepRecord, receipt_value_equal
from rlconform.envs.decode import decode, describe_decoded, stack_problem
from rlconform.envs.plan import Reset
from rlconform.envs.spaces import Garbage, ambiguous, values_changed
from rlconform.envs.stamp import Stamp
from rlconform.specs.families import TRANSITION_FAMILIES, TUPLE_FAMILIES
from rlconform.specs.helpers import (
    agent_step_of_call,
    call_of_records,
    contract_of,
    events_by_call,
    expected_truncated,
    info_stamp,
    match_transitions,
    resets_in,
    reward_precision,
    rewards_equal,
    stamps_survive,
    steps_in,
)
from rlconform.specs.value_changes import (
    action_change,
    check_one_time_limit,
    declared,
    expected_reward,
    frame_skip_change,
    judge,
    judge_truncation,
    misaligned_rewards,
    note_undecodable,
    observation_change,
    pooled_from_span,
    reward_change,
    stack_truncation,
)

if TYPE_CHECKING:
    from rlconform.envs.driver import Run


@spec(
    "transitions.exact",
    impact="training-data",
    statement=(
        "The transitions extracted with the library's documented recipe are exactly the transitions the "
        "environments made: none missing, none invented, in order, with the same observations, actions, "
        "rewards and flags."
    ),
    rationale=(
        "This is the data an agent trains on. Next-step autoreset inserts reset steps that ignore the action; "
        "same-step autoreset hides the true last observation; a recipe or library that gets either wrong "
        "trains on garbage transitions without any error."
    ),
    families=TRANSITION_FAMILIES,
    needs=("usable",),
)
def transitions_exact(run: Run) -> Outcome:
    ck = Checker()
    assert run.truth is not None
    precision = reward_precision(run)
    placed = call_of_records(run)
    for env in range(run.case.num_envs):
        matches, missing = match_transitions(run, env)
        order = {t.obs: i for i, t in enumerate(run.truth.envs[env].transitions)}
        last = -1
        for m in matches:
            slot, where = m.slot, {"env": env, "agent_step": m.slot.agent_step}
            if m.by_position and m.truth is None:
                ck.fail(
                    "invented transition: the recipe extracts more transitions than the env made (matched by "
                    "position: no observation of this env carries a stamp)",
                    **where,
                )
                continue
            if isinstance(m.obs, Garbage) and not m.by_position and m.truth is None:
                ck.fail(f"the extracted transition starts from {m.obs.describe()}", **where)
                continue
            if m.truth is None and isinstance(m.obs, Stamp):
                hint = ""
                episode = run.truth.episode_of(m.obs)
                if episode is not None and episode.terminal == m.obs:
                    hint = " (it starts from a terminal observation: a reset step recorded as a transition?)"
                ck.fail(
                    f"invented transition {m.obs.short()} -> {describe_decoded(m.next_obs, run)}: the env never "
                    f"stepped from {m.obs.short()}{hint}",
                    **where,
                )
                continue
            t = m.truth
            assert t is not None  # unmatched transitions were reported above
            index = order[t.obs]
            ck.expect(index > last, f"transition {t.obs.short()} extracted out of order", **where)
            end = m.last or t
            last = max(last, order[end.obs])
            changed = observation_change(run, m)
            if changed is not None:
                judge(ck, run, "observation", changed, env=env, agent_step=slot.agent_step)
            for name, value in (("obs", slot.obs), ("next_obs", slot.next_obs)):
                leaked = stack_problem(run, value)
                # a frame stack holds only its episode's frames, whatever is declared
                ck.expect(
                    leaked is None,
                    f"{name} is a stack of frames whose older frames are not its episode's: {leaked}",
                    **where,
                )
            if m.span:
                judge(ck, run, "frame_skip", frame_skip_change(m), env=env, agent_step=slot.agent_step)
            ck.expect(
                m.by_position or m.next_obs == end.next_obs or ambiguous(m.next_obs) or pooled_from_span(run, m),
                lambda: (
                    f"next_obs is {describe_decoded(m.next_obs, run)}; expected {describe_decoded(end.next_obs, run)}"
                ),
                **where,
            )
            if receipt_value_equal(slot.action, t.action.value):
                ck.expect(True, "")
            else:
                judge(ck, run, "action", action_change(slot.action, t), env=env, agent_step=slot.agent_step)
            reward = expected_reward(m)
            shifted = misaligned_rewards(run, env, precision)
            if id(m) in shifted:
                ck.fail(shifted[id(m)], **where)
            elif slot.reward is not None and not _close(slot.reward, reward, precision) and shifted:
                # a stack that moves rewards between steps: no declaration is the answer here
                ck.fail(
                    f"{reward_change(m, precision)}; this env's other rewards are misaligned with their steps", **where
                )
            elif slot.reward is not None and not _close(slot.reward, reward, precision):
                judge(ck, run, "reward", reward_change(m, precision), env=env, agent_step=slot.agent_step)
            else:
                ck.expect(
                    slot.reward is not None,
                    f"reward is {slot.reward!r}; the env returned {reward!r} for {end.next_obs.short()}",
                    **where,
                )
            ck.expect(
                slot.terminated == end.terminated,
                f"terminated is {slot.terminated}; the env returned {end.terminated}",
                **where,
            )
            want = expected_truncated(run, end.terminated, end.truncated)
            if slot.truncated == want or not judge_truncation(ck, run, m, env=env):
                ck.expect(
                    slot.truncated == want,
                    f"truncated is {slot.truncated}; the env stack returned truncated={end.truncated}, terminated={end.terminated}",
                    **where,
                )
        by_position = (
            " (matched by position: no observation of this env carries a stamp)"
            if any(m.by_position for m in matches)
            else ""
        )
        for t in missing:
            ck.fail(
                f"missing transition: the env made {t.describe()} but the recipe extracts no transition for it{by_position}",
                env=env,
                agent_step=agent_step_of_call(run, placed.get((env, t.seq), -1)),
            )
    return ck.done()


def _close(a: float, b: float, precision: str) -> bool:
    return rewards_equal(a, b, precision)


@spec(
    "counts.env_steps",
    impact="training-data",
    statement="Each sub-env receives exactly one step call per transition the recipe extracts for it, in the same agent step.",
    rationale=(
        "Step budgets, frame counters and schedules count agent steps; a library that steps an env during a reset "
        "step, steps it twice, or skips it makes every count wrong."
    ),
    families=TRANSITION_FAMILIES,
    needs=("usable",),
)
def env_step_counts(run: Run) -> Outcome:
    ck = Checker()
    _, per_call = events_by_call(run)
    skips = (
        {env: [m for m in match_transitions(run, env)[0] if m.span] for env in range(run.case.num_envs)}
        if declared(run, "frame_skip")
        else {}
    )
    for record in run.calls:
        if not record.agent_step:
            continue
        for env in range(run.case.num_envs):
            stepped = len(steps_in(per_call[record.position], env))
            extracted = sum(
                1 for s in run.slots if s.env == env and s.call == record.position and s.kind == "transition"
            )
            if skips and env in skips:
                # a declared frame skip: one extracted transition stands for the env steps it spans
                extracted += sum(len(m.span) - 1 for m in skips[env] if m.slot.call == record.position)
            ck.expect(
                stepped == extracted,
                f"the env was stepped {stepped} time(s) during this call; the recipe counts {extracted} transition(s)",
                env=env,
                agent_step=record.agent_step,
            )
    return ck.done()


@spec(
    "continuity.no_discarded_episode",
    impact="training-data",
    statement="An episode is only ever cut short by a reset the agent asked for; no autoreset discards a running episode.",
    rationale=(
        "A library that resets an env again after the agent already reset it, or resets every env when one ends, "
        "silently throws episodes away: the agent never sees them and episode statistics are biased."
    ),
    families=TRANSITION_FAMILIES,
    needs=("usable",),
)
def no_discarded_episode(run: Run) -> Outcome:
    ck = Checker()
    assert run.truth is not None
    placed = call_of_records(run)
    for env_truth in run.truth.envs:
        cut = _cut_by_stack(run, env_truth.env)
        discarding = {id(r): ep for r, ep in env_truth.discarding_resets if (ep.env, ep.episode) not in cut}
        for reset in env_truth.resets:
            episode = discarding.get(id(reset))
            position = placed.get((env_truth.env, reset.seq), -1)
            call = run.calls[position] if position >= 0 else None
            asked = call is not None and _user_reset_touches(call, env_truth.env)
            if episode is None or asked:
                ck.expect(True, "")
                continue
            ck.fail(
                f"episode {episode.episode} was discarded after {len(episode.transitions)} step(s), before it ended, "
                f"by a reset the agent did not ask for (during {call.source if call else 'construction'})",
                env=env_truth.env,
                agent_step=call.agent_step if call else None,
            )
    return ck.done()


def _cut_by_stack(run: Run, env: int) -> set[tuple[int, int]]:
    """(env, episode) of the episodes the stack truncated itself (a time limit it adds): the
    agent was told they ended, so the stack's reset after them discards nothing behind its back
    (whether that truncation was intended is flags.truncated's finding)."""
    matches, _ = match_transitions(run, env)
    return {
        (m.truth.env, m.truth.episode) for m in matches if m.truth is not None and stack_truncation(run, m) is not None
    }


def _user_reset_touches(call: object, env: int) -> bool:
    op = getattr(call, "op", None)
    if not isinstance(op, Reset):
        return False
    return op.mask is None or bool(op.mask[env])


@spec(
    "continuity.fresh_first_obs",
    impact="training-data",
    statement="The first transition of every episode starts from that episode's reset observation, never from an observation of the previous episode.",
    rationale=(
        "Recording the last observation of the old episode as the first of the new one splices two trajectories "
        "into one and corrupts bootstrapped targets and recurrent state."
    ),
    families=TRANSITION_FAMILIES,
    needs=("usable",),
)
def fresh_first_obs(run: Run) -> Outcome:
    ck = Checker()
    unreadable = any(not stamps_survive(run, env) for env in range(run.case.num_envs))
    for slot in run.slots:
        if slot.kind != "transition":
            continue
        if not stamps_survive(run, slot.env):
            # without stamps (a transform of the observations) no episode can be told apart
            note_undecodable(ck, run)
            continue
        nxt = decode(run, slot.next_obs)
        if not isinstance(nxt, Stamp) or nxt.step != 1:
            continue
        obs = decode(run, slot.obs)
        expected = Stamp(nxt.env, nxt.episode, 0, nxt.salt)
        if ambiguous(obs):
            ck.note(_AMBIGUOUS)
            continue
        ck.expect(
            obs == expected,
            lambda: (
                f"the first transition of episode {expected.episode} starts from {describe_decoded(obs, run)}; "
                f"expected {expected.short()} (its reset observation)"
            ),
            env=slot.env,
            agent_step=slot.agent_step,
        )
    return _unreadable_under_declaration(ck, run, unreadable)


def _unreadable_under_declaration(ck: Checker, run: Run, unreadable: bool) -> Outcome:
    """Not applicable where the user declared an observation transform that leaves no stamp to
    identify observations by, and nothing was checked: by construction, not for want of examples
    (undeclared, the transform is transitions.exact's finding and this spec is not exercised)."""
    if unreadable and ck.outcome.checked == 0 and declared(run, "observation"):
        where = (
            "(a vector-level transform, or sub-envs in worker processes)"
            if contract_of(run.system).vectorized
            else "(a transform of the env's own observations)"
        )
        return ck.not_applicable(
            "the declared observation transform (--intended observation) leaves no observation that can be "
            f"identified: it runs outside any sub-env layer rlconform can read back {where}, and rlconform has no "
            "inverse for it"
        )
    return ck.done()


@spec(
    "terminal.final_obs",
    impact="training-data",
    statement="The last transition of every episode that ended has the true terminal observation as next observation, for every observation key.",
    rationale=(
        "With same-step autoreset the returned observation already belongs to the next episode; the terminal one "
        "travels out of band (final_obs, terminal_observation). Bootstrapping a truncated episode from the wrong "
        "observation biases every value target."
    ),
    families=TRANSITION_FAMILIES,
    # a family whose data keeps no terminal observation (RSL-RL) says why in its contract
    applies=lambda system: contract_of(system).no_terminal_obs,
    needs=("usable",),
)
def terminal_obs(run: Run) -> Outcome:
    ck = Checker()
    unreadable = any(not stamps_survive(run, env) for env in range(run.case.num_envs))
    for env in range(run.case.num_envs):
        matches, _ = match_transitions(run, env)
        for m in matches:
            t = m.last
            if t is None or not (t.terminated or t.truncated):
                continue
            if m.by_position:
                note_undecodable(ck, run)
                continue
            if ambiguous(m.next_obs):
                ck.note(_AMBIGUOUS)
                continue
            ck.expect(
                m.next_obs == t.next_obs or pooled_from_span(run, m),
                lambda: (
                    f"next_obs is {describe_decoded(m.next_obs, run)}; expected {t.next_obs.short()} (the terminal observation)"
                ),
                env=env,
                agent_step=m.slot.agent_step,
            )
    return _unreadable_under_declaration(ck, run, unreadable)


#: the note of an observation a user's layer around a sub-env returned for several steps
_AMBIGUOUS = (
    "some observations are values the user's layer around each sub-env returned for more than one step (a "
    "normalizer's first output): those were not compared"
)


def _flag_spec(name: str) -> Spec:
    def check(run: Run) -> Outcome:
        ck = Checker()
        for env in range(run.case.num_envs):
            matches, _ = match_transitions(run, env)
            for m in matches:
                end = m.last
                if end is None:
                    continue
                got, want = getattr(m.slot, name), getattr(end, name)
                if name == "truncated":
                    want = expected_truncated(run, end.terminated, end.truncated)
                    if got != want and judge_truncation(ck, run, m, env=env):
                        continue
                ck.expect(
                    got == want,
                    f"{name} is {got} for {end.obs.short()} -> {end.next_obs.short()}; the env stack returned {name}={want}",
                    env=env,
                    agent_step=m.slot.agent_step,
                )
        if name == "truncated":
            check_one_time_limit(
                ck, run, [(env, m) for env in range(run.case.num_envs) for m in match_transitions(run, env)[0]]
            )
        return ck.done()

    statements = {
        "terminated": (
            "The terminated flag of every extracted transition equals the one the env stack returned.",
            "Terminated decides whether a value target bootstraps; a lost or invented termination biases every return.",
        ),
        "truncated": (
            "The truncated flag of every extracted transition equals the one the env stack returned, also when the "
            "same step terminated (Gymnasium's TimeLimit may set both), in the family's documented encoding (SB3: "
            "TimeLimit.truncated = truncated and not terminated).",
            "Truncation says the episode was cut by a time limit, not ended by the task; libraries that fold it into "
            "'done' or drop it when termination coincides lose the distinction.",
        ),
    }
    statement, rationale = statements[name]
    spec(
        f"flags.{name}",
        statement=statement,
        rationale=rationale,
        impact="training-data",
        families=TRANSITION_FAMILIES,
        needs=("usable",),
    )(check)
    return spec_of(check)


#: the specs built as data (the catalog also collects this module's @spec functions)
SPECS = [_flag_spec("terminated"), _flag_spec("truncated")]


def _has_no_reset_step(semantics: Mapping[str, Any]) -> str | None:
    mode = semantics.get("autoreset_mode")
    return None if mode == "NextStep" else f"autoreset mode {mode!r} has no reset step"


@spec(
    "reset_step.neutral",
    impact="training-data",
    statement=(
        "Where a mode has reset steps (next-step autoreset), a reset step resets the env without stepping it: "
        "the action is ignored, the reward is 0, both flags are False and the observation is the new episode's first."
    ),
    rationale=(
        "Gymnasium 1.0's next-step autoreset spends one step per episode on the reset; if that step delivers the "
        "action or carries a reward, the agent is credited for an action that had no effect."
    ),
    families=TUPLE_FAMILIES,
    applies_to_stack=_has_no_reset_step,
    needs=("usable",),
)
def reset_step_neutral(run: Run) -> Outcome:
    ck = Checker()
    _, per_call = events_by_call(run)
    for slot in run.slots:
        if slot.kind != "reset_step":
            continue
        where = {"env": slot.env, "agent_step": slot.agent_step}
        ck.expect(slot.reward == 0.0, f"the reset step returns reward {slot.reward!r}; expected 0", **where)
        ck.expect(
            slot.terminated is False and slot.truncated is False,
            f"the reset step returns terminated={slot.terminated}, truncated={slot.truncated}; expected both False",
            **where,
        )
        nxt = decode(run, slot.next_obs)
        if not stamps_survive(run, slot.env):
            note_undecodable(ck, run)
        ck.expect(
            (isinstance(nxt, Stamp) and nxt.step == 0) or not stamps_survive(run, slot.env),
            lambda: (
                f"the reset step returns {describe_decoded(nxt, run)}; expected the first observation of a new episode"
            ),
            **where,
        )
        events = per_call[slot.call]
        stepped = steps_in(events, slot.env)
        ck.expect(
            not stepped,
            lambda: (
                f"the action given at the reset step reached the env (it stepped episode {stepped[0].episode} to step {stepped[0].step_after})"
            ),
            **where,
        )
        ck.expect(
            len(resets_in(events, slot.env)) == 1,
            f"the env was reset {len(resets_in(events, slot.env))} time(s) during the reset step; expected once",
            **where,
        )
    return ck.done()


@spec(
    "infos.aligned",
    impact="training-data",
    statement="Every info a sub-env returned reaches the caller at that sub-env's index, beside the observation it belongs to, and no sub-env is given another's info.",
    rationale=(
        "Vector infos are batched with masks (Gymnasium) or listed (SB3); an index or mask error attributes episode "
        "statistics, success flags and final infos to the wrong environment."
    ),
    families=TUPLE_FAMILIES,
    needs=("usable",),
)
def infos_aligned(run: Run) -> Outcome:
    ck = Checker()
    assert run.truth is not None
    _, per_call = events_by_call(run)
    for record in run.calls:
        view = record.view
        if view is None or view.kind != "reset" or view.infos is None:
            continue
        for env in range(run.case.num_envs):
            touched = view.touched is None or view.touched[env]
            stamp = info_stamp(view.infos[env])
            if touched:
                expected = _info_beside(
                    run, decode(run, view.obs_in_env_units()[env]), resets_in(per_call[record.position], env)
                )
                ck.expect(
                    stamp == expected,
                    lambda: (
                        f"the reset info is {_describe_info(stamp)}; the observation beside it is {describe_decoded(expected, run)}"
                    ),
                    env=env,
                    call=record.position,
                )
            else:
                ck.expect(
                    stamp is None,
                    f"a partial reset that did not reset this env gives it the info {_describe_info(stamp)}",
                    env=env,
                    call=record.position,
                )
    for env in range(run.case.num_envs):
        matches, _ = match_transitions(run, env)
        for m in matches:
            expected = m.last.next_obs if m.last is not None else m.next_obs
            if values_changed(expected):
                # an observation the stack changed beyond decoding, in a transition no stamp
                # identifies: the change is transitions.exact's story, never a misaligned info
                note_undecodable(ck, run)
                continue
            stamp = info_stamp(m.slot.info)
            ck.expect(
                stamp == expected,
                lambda: f"the info of the transition to {describe_decoded(expected, run)} is {_describe_info(stamp)}",
                env=env,
                agent_step=m.slot.agent_step,
            )
        for slot in run.slots_of(env):
            if slot.kind != "reset_step":
                continue
            expected_reset = _info_beside(run, decode(run, slot.next_obs), resets_in(per_call[slot.call], env))
            stamp = info_stamp(slot.info)
            ck.expect(
                stamp == expected_reset,
                lambda: (
                    f"the info of the reset step is {_describe_info(stamp)}; the observation beside it is {describe_decoded(expected_reset, run)}"
                ),
                env=env,
                agent_step=slot.agent_step,
            )
    return ck.done()


def _info_beside(run: Run, observed: Stamp | Garbage, resets: list[ResetRecord]) -> Stamp | Garbage:
    """The stamp the info beside a reset observation must carry: the observation's, where it is
    one the env produced; else, where the env reset in that call, the stamp of that reset.

    An observation transform inside each sub-env (frame stacking, normalisation) leaves the
    observation undecodable, or decodable by chance as a stamp no env produced, with or without a
    step to match transitions by; the info still carries its own stamp, and the log says which
    reset it must be. A hidden stamp is the observation specs' concern, never a misaligned info."""
    assert run.truth is not None
    if resets and not (isinstance(observed, Stamp) and run.truth.episode_of(observed) is not None):
        return resets[-1].stamp
    return observed


def _describe_info(stamp: object) -> str:
    if stamp is None:
        return "missing (the env's info keys are absent)"
    if isinstance(stamp, Stamp):
        return f"env {stamp.env}'s info for {stamp.short()}"
    if isinstance(stamp, Garbage):
        return stamp.describe()
    return repr(stamp)


@spec(
    "lifecycle.no_step_after_end",
    impact="training-data",
    statement="No env is stepped on an episode that already ended, nor before its first reset.",
    rationale=(
        "Stepping a terminated episode is undefined behaviour in Gymnasium; a vectorizer that does it (for example "
        "when autoreset is disabled and a reset is lost) produces transitions from a state the env never promised."
    ),
    families=TRANSITION_FAMILIES,
    needs=("usable",),
)
def no_step_after_end(run: Run) -> Outcome:
    ck = Checker()
    assert run.truth is not None
    placed = call_of_records(run)
    for env_truth in run.truth.envs:
        late = {r.seq for r in env_truth.steps_after_end}
        for record in env_truth.records:
            if isinstance(record, RejectedRecord):
                ck.fail("the env was stepped before its first reset", env=env_truth.env)
            elif isinstance(record, StepRecord):
                step = record
                ck.expect(
                    step.seq not in late,
                    lambda: (
                        f"the env was stepped on episode {step.episode} after it had ended (it reached step {step.step_after})"
                    ),
                    env=env_truth.env,
                    agent_step=agent_step_of_call(run, placed.get((env_truth.env, record.seq), -1)),
                )
    return ck.done()
