"""The specs of TorchRL's replay buffers: every sampled slice lies within one episode, every row is a
transition the env made, n-step returns and bootstrapped targets are the documented ones.

Each slice is decoded, so "lies within one episode of one sub-env and is contiguous in time" is
checked against the stamps themselves.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rlconform.core.spec import Checker, Outcome, spec
from rlconform.envs.spaces import Decoded
from rlconform.envs.stamp import Stamp
from rlconform.envs.truth import EnvTruth, TrueTransition
from rlconform.libraries.torchrl.frames import (
    describe,
)
from rlconform.libraries.torchrl.replay_case import FAMILIES, NEEDS_CASE, ROLE, ReplayCase
from rlconform.libraries.torchrl.replay_harness import Sample, fills
from rlconform.libraries.torchrl.value_reference import close, true_value

if TYPE_CHECKING:
    from rlconform.envs.driver import Run


# ------------------------------------------------------------------------------------------ spec


def _samples(run: Run, c: Checker) -> list[tuple[int, Sample]] | Outcome:
    """(call position, sample) of every sample drawn; an Outcome where the run has none to read."""
    case = run.case
    if not isinstance(case, ReplayCase):
        return c.not_applicable(NEEDS_CASE)
    found = []
    for record in run.calls:
        role = record.extra.get(ROLE)
        if role == "fill" and record.failed:
            return c.not_applicable(f"the buffer could not be filled: {record.error_type}: {record.error_message}")
        if role != "sample":
            continue
        if record.failed:
            # strict slices need a trajectory of slice_len frames; a buffer without one refuses
            c.note(f"a sample was refused: {record.error_type}: {(record.error_message or '')[:160]}")
            continue
        found.append((record.position, record.result_live))
    return found


@spec(
    "replay.slices_within_episode",
    impact="training-data",
    statement="Every slice a slice sampler returns lies within one episode of one sub-env and is contiguous in time: its observations are consecutive steps of that episode, each frame's next observation the following frame's observation (n-step rows: the observations consecutive).",
    rationale="Sequence models and n-step returns read a slice as one stretch of experience; a slice that crosses an episode end (by termination or truncation only), the storage's wrap-around point or a boundary between sub-envs teaches the model a transition that never happened.",
    families=FAMILIES,
)
def slices_within_episode(run: Run) -> Outcome:
    c = Checker()
    found = _samples(run, c)
    if isinstance(found, Outcome):
        return found
    case = run.case
    assert isinstance(case, ReplayCase)
    if all(f.slice_len is None for f in fills(run)):
        return c.not_applicable("the buffer's sampler draws rows one by one, not slices")
    unsliced = [sample.unsliced for _, sample in found if sample.unsliced is not None]
    if found and len(unsliced) == len(found):
        return c.not_applicable(unsliced[0])
    for reason in dict.fromkeys(unsliced):
        c.note(f"some samples left out: {reason}")
    for position, sample in found:
        if sample.unsliced is not None:
            continue
        # the user's own sampler, as built; rlconform's model buffers have none and take the case's
        sampler = sample.sampler or case.sampler_source("sampler")
        for number, frames in enumerate(sample.slices()):
            problem = _slice_problem([(f.obs, f.next_obs) for f in frames], sample.multistep)
            c.expect(problem is None, f"slice {number} of {sampler}: {problem}", call=position)
    return c.done()


#: what ends a slice at a boundary between sub-envs (FINDINGS T3): the sampler's trajectory
#: ids, or end marks the collector writes on each batch's last frame
CROSSING_FIX = (
    'nothing marks the boundary between sub-envs as an end; give the sampler traj_key=("collector", '
    '"traj_ids") (or leave both keys to its defaults), or build the Collector with set_truncated=True'
)


def _slice_problem(frames: list[tuple[Decoded, Decoded]], multistep: bool = False) -> str | None:
    stamps = " | ".join(f"{describe(o)} -> {describe(n)}" for o, n in frames)
    for k, (obs, nxt) in enumerate(frames):
        if not (isinstance(obs, Stamp) and isinstance(nxt, Stamp)):
            return f"frame {k} is not a real observation: [{stamps}]"
        if k == 0:
            continue
        prev_obs, prev_next = frames[k - 1]
        assert isinstance(prev_obs, Stamp)
        if obs.env != prev_obs.env:
            return (
                f"crosses from env {prev_obs.env} episode {prev_obs.episode} to env {obs.env} episode {obs.episode}: "
                f"[{stamps}]; {CROSSING_FIX}"
            )
        if obs.episode != prev_obs.episode:
            return f"crosses from env {prev_obs.env} episode {prev_obs.episode} to env {obs.env} episode {obs.episode}: [{stamps}]"
        if obs.step != prev_obs.step + 1 or (obs != prev_next and not multistep):
            return f"not contiguous in time: [{stamps}]"
    return None


# ----------------------------------------------------------------------------- the rows' truth


def _index(run: Run) -> dict[Stamp, tuple[EnvTruth, int]]:
    """Every observation an env stepped from -> (its env's log, the transition's position)."""
    assert run.truth is not None
    return {t.obs: (env, k) for env in run.truth.envs for k, t in enumerate(env.transitions)}


def _window(env: EnvTruth, position: int, n: int) -> list[TrueTransition]:
    """The transitions an n-step row from ``position`` covers: n of them, fewer where the episode
    ends (by termination or truncation) first."""
    found: list[TrueTransition] = []
    for t in env.transitions[position : position + n]:
        if found and t.episode != found[0].episode:
            break
        found.append(t)
        if t.terminated or t.truncated:
            break
    return found


def _row_name(sample_number: int, k: int, truth: TrueTransition) -> str:
    return f"sample {sample_number} row {k} (sub-env {truth.env}, episode {truth.episode}, step {truth.obs.step})"


def _next_problem(given: Decoded, true: Stamp, window: list[TrueTransition]) -> str:
    if not isinstance(given, Stamp):
        return f"next observation {describe(given)}, expected {_where(true)}"
    first = window[0]
    if given.env != first.env:
        why = f"sub-env {given.env}'s observation, not sub-env {first.env}'s"
    elif given.episode != first.episode:
        end = window[-1]
        why = f"from episode {given.episode}: past the episode's end at step {end.obs.step}"
    else:
        why = f"step {given.step} where step {true.step} is due"
    return f"next observation {_where(given)}, expected {_where(true)} ({why})"


def _where(stamp: Stamp) -> str:
    return f"sub-env {stamp.env} {stamp.short()}"


@spec(
    "replay.rows_are_transitions",
    impact="training-data",
    statement="Every row a replay buffer samples is a transition one sub-env really made: its observation and action those the env logged, and (for a buffer without an n-step transform) its next observation the true next one (the true final observation at an episode end), its reward and its terminated/truncated flags those of the log.",
    rationale="An off-policy learner trains on sampled rows alone: a next observation from another sub-env or from the next episode, a lost flag or a stale reward is a transition that never happened, and no environment check sees it.",
    families=FAMILIES,
)
def rows_are_transitions(run: Run) -> Outcome:
    c = Checker()
    found = _samples(run, c)
    if isinstance(found, Outcome):
        return found
    index = _index(run)
    for number, (position, sample) in enumerate(found):
        for k, frame in enumerate(sample.frames):
            hit = index.get(frame.obs) if isinstance(frame.obs, Stamp) else None
            if hit is None:
                c.fail(
                    f"sample {number} row {k}: observation {describe(frame.obs)} is no step any env made", call=position
                )
                continue
            truth = hit[0].transitions[hit[1]]
            name = _row_name(number, k, truth)
            problems = []
            if frame.action != truth.action.code:
                problems.append(f"action {frame.action}, the env received {truth.action.code}")
            if not sample.multistep:
                if frame.next_obs != truth.next_obs:
                    problems.append(_next_problem(frame.next_obs, truth.next_obs, [truth]))
                if not close(sample.rewards[k], truth.reward):
                    problems.append(f"reward {sample.rewards[k]:.6g}, expected {truth.reward:.6g}")
                # a slice sampler marks the end of every slice truncated (its documented
                # truncated_key), so that a learner bootstraps there
                truncated_ok = frame.truncated == truth.truncated or (sample.slice_end(k) and frame.truncated)
                if frame.terminated != truth.terminated or not truncated_ok:
                    problems.append(
                        f"terminated={frame.terminated}, truncated={frame.truncated}, expected "
                        f"terminated={truth.terminated}, truncated={truth.truncated}"
                    )
            c.expect(not problems, f"{name}: " + "; ".join(problems), env=truth.env, call=position)
    return c.done()


@spec(
    "replay.multistep_returns",
    impact="training-data",
    statement="Every row of a buffer with an n-step transform (n_steps, gamma) is one window of one episode of one sub-env: from step t it covers m = min(n_steps, the steps to the episode's end) steps, its reward is sum_k gamma^k r_{t+k} over them, its next observation the one m steps later (the true final observation where the episode ended) and its steps_to_next_obs m; it never sums across an episode end or across sub-envs.",
    rationale="An n-step learner bootstraps from the row's next observation with gamma^m: a window summed across an episode end or into another sub-env, or a wrong m, trains every Q-value on a return that was never earned.",
    families=FAMILIES,
)
def multistep_returns(run: Run) -> Outcome:
    c = Checker()
    found = _samples(run, c)
    if isinstance(found, Outcome):
        return found
    if all(f.declared is None for f in fills(run)) and not any(sample.steps is not None for _, sample in found):
        return c.not_applicable("the buffer has no n-step transform (replay.rows_are_transitions checks its rows)")
    index = _index(run)
    for number, (position, sample) in enumerate(found):
        if sample.declared is None:
            return c.not_applicable("its rows carry steps_to_next_obs, but no transform declares n_steps and gamma")
        n, gamma = sample.declared
        for k, frame in enumerate(sample.frames):
            hit = index.get(frame.obs) if isinstance(frame.obs, Stamp) else None
            if hit is None:
                continue  # replay.rows_are_transitions
            window = _window(hit[0], hit[1], n)
            first, last = window[0], window[-1]
            m, total = len(window), sum(gamma**j * t.reward for j, t in enumerate(window))
            problems = []
            if frame.next_obs != last.next_obs:
                problems.append(_next_problem(frame.next_obs, last.next_obs, window))
            if sample.steps is None:
                problems.append(f"no steps_to_next_obs, expected {m}")
            elif sample.steps[k] != m:
                problems.append(f"steps_to_next_obs {sample.steps[k]}, expected {m}")
            if not close(sample.rewards[k], total):
                rewards = " + ".join(f"{gamma:g}^{j}*{t.reward:g}" for j, t in enumerate(window))
                problems.append(f"reward {sample.rewards[k]:.6g}, expected {rewards} = {total:.6g}")
            ended = " (the episode ends there)" if last.terminated or last.truncated else ""
            c.expect(
                not problems,
                f"{_row_name(number, k, first)}, a window of {m} step(s) to step {last.obs.step}{ended}: "
                + "; ".join(problems),
                env=first.env,
                call=position,
            )
    return c.done()


@spec(
    "replay.bootstrap_targets",
    impact="training-data",
    statement="The one-step bootstrapped target TD0Estimator computes from every sampled row (at the n-step transform's gamma, else 0.9) equals the true target of the row's window: its discounted reward plus gamma^m V(observation m steps later), without that bootstrap where the window ends in a termination.",
    rationale="The target is what the value loss trains on: a row whose flags do not say that its window ended in a termination bootstraps from a terminal observation, and a row without the right steps_to_next_obs discounts the bootstrap by gamma where gamma^m is due; both bias every update silently.",
    families=FAMILIES,
)
def bootstrap_targets(run: Run) -> Outcome:
    c = Checker()
    found = _samples(run, c)
    if isinstance(found, Outcome):
        return found
    codec = run.case.script.obs
    index = _index(run)
    for number, (position, sample) in enumerate(found):
        if sample.declared is None and sample.steps is not None:
            return c.not_applicable("its rows carry steps_to_next_obs, but no transform declares n_steps and gamma")
        if sample.target_error is not None or sample.targets is None:
            c.fail(f"sample {number}: TD0Estimator could not compute targets from the rows: {sample.target_error}")
            continue
        n, gamma = sample.declared or (1, sample.gamma)
        for k, frame in enumerate(sample.frames):
            hit = index.get(frame.obs) if isinstance(frame.obs, Stamp) else None
            if hit is None:
                continue  # replay.rows_are_transitions
            window = _window(hit[0], hit[1], n)
            first, last = window[0], window[-1]
            m, total = len(window), sum(gamma**j * t.reward for j, t in enumerate(window))
            value = true_value(codec, last.next_obs)
            expected = total + (0.0 if last.terminated else gamma**m * value)
            given = sample.targets[k]
            cause = ""
            if close(given, expected):
                c.expect(True, "")
                continue
            if last.terminated and close(given, total + gamma**m * value):
                cause = (
                    f": it bootstraps a termination (the window ends in the termination at step "
                    f"{last.obs.step}, but the row's terminated flag is {frame.terminated})"
                )
            elif m > 1 and close(given, total + (0.0 if last.terminated else gamma * value)):
                cause = f": the bootstrap is discounted by gamma where gamma^{m} is due"
            c.fail(
                f"{_row_name(number, k, first)}, a window of {m} step(s) to step {last.obs.step}: target "
                f"{given:.6g}, expected {expected:.6g} (gamma {gamma:g}){cause}",
                env=first.env,
                call=position,
            )
    return c.done()
