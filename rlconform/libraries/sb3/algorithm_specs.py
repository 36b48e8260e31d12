"""The specs of what an SB3 algorithm stores (``algorithm.*``, family ``sb3.Algorithm``).

Each reads the rows the buffer's own ``_get_samples`` returns for every (row, sub-env) after
``model.learn`` (rlconform.libraries.sb3.algorithm_harness) and compares them with the env logs:
the row's observation names the true transition it starts at, and everything else the loss reads
(the action, the reward or n-step return, the next observation, the done, the discount) follows
from the log.

Two documented SB3 options store a known approximation; ``algorithm.buffer_*`` leave their rows
out (a tally says how many) and ``algorithm.exact_targets`` reports them, "known" with the bias
they put in the targets, never a FAIL: ``handle_timeout_termination=False`` stores a time-out as a termination (no
bootstrap), and ``optimize_memory_usage=True`` (which SB3 allows only without time-out handling,
DLR-RM/stable-baselines3#934) keeps the next episode's first observation as the next observation of
an episode's last step, a row whose done is then 1.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from rlconform.core.spec import Checker, Outcome, spec
from rlconform.envs.decode import describe_decoded
from rlconform.envs.spaces import Decoded, Garbage
from rlconform.envs.stamp import Stamp
from rlconform.envs.truth import TrueTransition
from rlconform.libraries.sb3.algorithm_case import sub_envs_notes
from rlconform.libraries.sb3.algorithm_harness import AlgorithmRun, SampledRow
from rlconform.specs.families import SB3_ALGORITHM

FAMILIES = frozenset({SB3_ALGORITHM})
#: float32 storage of rewards and their discounted sums
RTOL, ATOL = 1e-5, 1e-4
TIMEOUT_AS_DONE = (
    "approximation (documented): time-outs stored as terminations, not bootstrapped (handle_timeout_termination=False)"
)
RESET_AS_NEXT = (
    "approximation (documented): episode ends whose next observation is the next episode's first, "
    "in rows whose done is 1 (optimize_memory_usage=True, DLR-RM/stable-baselines3#934)"
)


@dataclass
class Expected:
    """A sampled row and the true n-step window it starts."""

    sample: SampledRow
    stamp: Decoded
    #: the true transitions of the row's sub-env, and the index of the one the row starts at
    transitions: list[TrueTransition]
    start: int | None
    #: the window's length: n, or fewer where the episode or the data ends
    length: int = 0

    @property
    def where(self) -> str:
        at = self.stamp.short() if isinstance(self.stamp, Stamp) else "undecodable observation"
        return f"buffer row {self.sample.row} ({at})"

    @property
    def last_index(self) -> int:
        """The index of the window's last transition in ``transitions``."""
        assert self.start is not None
        return self.start + self.length - 1

    @property
    def last(self) -> TrueTransition:
        return self.transitions[self.last_index]

    @property
    def window(self) -> list[TrueTransition]:
        """The true transitions the row's (n-step) window covers."""
        return self.transitions[self.last_index - self.length + 1 : self.last_index + 1]


def _decode(run: AlgorithmRun, value: Any) -> Decoded:
    try:
        return run.case.script.obs.decode(value)
    except Exception as exc:
        return Garbage(f"undecodable {type(value).__name__}: {exc}")


def _describe(run: AlgorithmRun, decoded: Decoded) -> str:
    text = describe_decoded(decoded)
    if isinstance(decoded, Stamp) and decoded.step > 0 and run.truth is not None:
        episode = run.truth.episode_of(decoded)
        if episode is not None and episode.terminal == decoded:
            text += " (the terminal observation)"
    return text


def expectations(run: AlgorithmRun) -> list[Expected]:
    """Every sampled row with its true window (memoized on the run)."""
    cached = run.memo.get("expected")
    if cached is not None:
        return cached  # type: ignore[no-any-return]
    found: list[Expected] = []
    n = run.buffer.n_steps if run.buffer is not None else 1
    assert run.truth is not None
    index: dict[int, dict[tuple[int, int], int]] = {}
    for true_env in run.truth.envs:
        index[true_env.env] = {(t.obs.episode, t.obs.step): j for j, t in enumerate(true_env.transitions)}
    for sample in run.samples:
        stamp = _decode(run, sample.obs)
        env = stamp.env if isinstance(stamp, Stamp) else sample.env
        if isinstance(stamp, Stamp) and stamp.env != sample.env:
            sample.env = stamp.env
        transitions = run.truth.envs[env].transitions if 0 <= env < len(run.truth.envs) else []
        start = index.get(env, {}).get((stamp.episode, stamp.step)) if isinstance(stamp, Stamp) else None
        if start is not None and transitions[start].obs != stamp:
            start = None  # another salt: not this episode's observation
        item = Expected(sample, stamp, transitions, start)
        if start is not None:
            length = 0
            for j in range(start, min(start + n, len(transitions))):
                length += 1
                if transitions[j].terminated or transitions[j].truncated:
                    break
            item.length = length
        found.append(item)
    run.memo["expected"] = found
    return found


def windows(run: AlgorithmRun) -> list[Expected]:
    """The sampled rows that start a true window (their observation is a transition of their
    sub-env, and the window has at least one step)."""
    return [item for item in expectations(run) if item.start is not None and item.length > 0]


def _usable(run: AlgorithmRun, ck: Checker) -> bool:
    for note in sub_envs_notes(run.system):
        ck.note(note)
    if run.buffer is None:
        ck.not_applicable(
            f"{run.algorithm or 'the model'} has no replay_buffer"
            + (
                ": an on-policy algorithm, its RolloutBuffer is checked by algorithm.rollout_*"
                if run.on_policy
                else ": it keeps neither a rollout nor a replay buffer"
                if run.algorithm
                else ""
            )
        )
        return False
    if run.sample_error is not None:
        ck.fail(f"sampling every row of the {run.buffer.class_name} raised {run.sample_error}")
        return False
    return run.truth is not None


@spec(
    "algorithm.buffer_transitions",
    impact="training-data",
    statement="After model.learn, every row of the replay buffer, as its own _get_samples returns it for each sub-env, is a real transition of that sub-env: its observation is one the sub-env returned and acted on, its action the action the sub-env received, its one-step reward the reward the sub-env returned; the rows hold exactly the newest transitions of each sub-env, none missing, none twice.",
    rationale="A buffer that stores an observation of another sub-env, an action of another step, a shifted reward or a reset observation as a start state trains the agent on transitions that never happened, silently.",
    families=FAMILIES,
)
def algorithm_buffer_transitions(run: AlgorithmRun) -> Outcome:
    ck = Checker()
    if run.learn_error is not None and not run.on_policy:
        ck.fail(f"model.learn(total_timesteps={run.case.steps * run.case.num_envs}) raised {run.learn_error}")
    if not _usable(run, ck):
        return ck.done()
    assert run.buffer is not None and run.truth is not None
    if run.unsampled:
        ck.note(f"{len(run.unsampled)} (row, sub-env) pairs were not sampled (the buffer draws sub-envs its own way)")
    one_step = run.buffer.n_steps <= 1 and all(s.discount is None for s in run.samples)
    held: dict[int, list[int]] = {}
    for item in expectations(run):
        sample = item.sample
        if item.start is None:
            ck.fail(
                f"buffer row {sample.row}: the observation is {_describe(run, item.stamp)}, "
                "not one this sub-env acted on",
                env=sample.env,
            )
            continue
        held.setdefault(sample.env, []).append(item.start)
        true = item.transitions[item.start]
        ck.expect(True, "")
        action = np.asarray(sample.action, dtype=np.float64).reshape(-1)
        want = np.asarray(true.action.value, dtype=np.float64).reshape(-1)
        ck.expect(
            action.shape == want.shape and bool(np.allclose(action, want, rtol=0, atol=1e-5)),
            lambda: f"{item.where}: action {action.tolist()}; the sub-env received {want.tolist()}",
            env=sample.env,
        )
        if one_step:
            ck.expect(
                math.isclose(sample.reward, true.reward, rel_tol=RTOL, abs_tol=ATOL),
                lambda: f"{item.where}: reward {sample.reward!r}; the sub-env returned {true.reward!r}",
                env=sample.env,
            )
    rows = len({s.row for s in run.samples})
    for env in run.truth.envs:
        starts = sorted(held.get(env.env, []))
        total = len(env.transitions)
        wanted = list(range(max(0, total - rows), total))
        if run.unsampled:
            continue  # which rows were left out cannot be told
        ck.expect(
            starts == wanted,
            lambda: (
                f"the buffer holds this sub-env's transitions {_ranges(starts)}; "
                f"expected the newest {len(wanted)} of its {total} ({_ranges(wanted)})"
            ),
            env=env.env,
        )
    return ck.done()


def _ranges(values: list[int]) -> str:
    if not values:
        return "none"
    if values == list(range(values[0], values[-1] + 1)):
        return f"{values[0]}..{values[-1]}"
    return ", ".join(str(v) for v in values[:12]) + (" ..." if len(values) > 12 else "")


@spec(
    "algorithm.buffer_next_obs",
    impact="training-data",
    statement="The next observation of every buffer row is the true observation after the row's transition (after its last step for an n-step row): at an episode end, time-outs included, the true final observation (SB3's infos[i]['terminal_observation']), never the next episode's first.",
    rationale="The bootstrap of a truncated episode reads V(next observation): storing the reset observation there (or a normalised one that cannot be undone) bootstraps from the wrong state, a bias every off-policy learner then trains on.",
    families=FAMILIES,
)
def algorithm_buffer_next_obs(run: AlgorithmRun) -> Outcome:
    ck = Checker()
    if not _usable(run, ck):
        return ck.done()
    assert run.buffer is not None
    approximated = 0
    for item in windows(run):
        last = item.last
        got = _decode(run, item.sample.next_obs)
        if got == last.next_obs:
            ck.expect(True, "")
            continue
        ended = last.terminated or last.truncated
        if (
            ended
            and run.buffer.optimize_memory_usage
            and item.sample.done != 0
            and isinstance(got, Stamp)
            and got.env == last.env
            and got.step == 0
        ):
            approximated += 1
            continue
        ck.fail(
            f"{item.where}: next observation is {_describe(run, got)}; expected {_describe(run, last.next_obs)}"
            + (f" (the end of its {item.length}-step window)" if run.buffer.n_steps > 1 else ""),
            env=item.sample.env,
        )
    if approximated:
        ck.count(RESET_AS_NEXT, approximated)
    return ck.done()


@spec(
    "algorithm.buffer_dones",
    impact="training-data",
    statement="The done the loss reads for every buffer row (SB3: dones * (1 - timeouts), at the last step of an n-step row) is 1 exactly where the sub-env terminated: 0 at a time-out (bootstrapped), 0 mid-episode; a buffer that declares handle_timeout_termination=False stores time-outs as terminations, SB3's documented approximation, left out here and reported by algorithm.exact_targets.",
    rationale="A time-out stored as a termination stops the bootstrap of a state that has a future; a termination bootstrapped adds a value the episode never had. Both bias every target, and neither is visible in the env's outputs.",
    families=FAMILIES,
)
def algorithm_buffer_dones(run: AlgorithmRun) -> Outcome:
    ck = Checker()
    if not _usable(run, ck):
        return ck.done()
    assert run.buffer is not None
    approximated = 0
    for item in windows(run):
        last = item.last
        done = item.sample.done != 0
        if done and not last.terminated and last.truncated and not run.buffer.handle_timeout_termination:
            approximated += 1
            continue
        end = "terminated" if last.terminated else ("a time-out" if last.truncated else "mid-episode")
        ck.expect(
            done == last.terminated,
            lambda: (
                f"{item.where}: done {item.sample.done:g} at {last.next_obs.short()} ({end}); expected {int(last.terminated)}"
                + (
                    " (the buffer declares handle_timeout_termination=True)"
                    if last.truncated and not last.terminated
                    else ""
                )
            ),
            env=item.sample.env,
        )
    if approximated:
        ck.count(TIMEOUT_AS_DONE, approximated)
    return ck.done()


def _applies_nstep(run: AlgorithmRun) -> bool:
    return run.buffer is not None and (run.buffer.n_steps > 1 or any(s.discount is not None for s in run.samples))


@spec(
    "algorithm.nstep_returns",
    impact="training-data",
    statement="An n-step buffer's reward for a row is the sum of gamma^k times the rewards of the row's sub-env from the row's step on, over n steps or up to the episode's end or the newest stored step, whichever comes first (m steps), and the discount of the bootstrap is gamma^m where the row bootstraps.",
    rationale="An n-step sum that runs across an episode end, takes another sub-env's rewards or the rewards behind the write pointer, or a bootstrap discounted by gamma^n after fewer steps, biases every target; nothing in the env's outputs shows it.",
    families=FAMILIES,
)
def algorithm_nstep_returns(run: AlgorithmRun) -> Outcome:
    ck = Checker()
    if not _usable(run, ck):
        return ck.done()
    if not _applies_nstep(run):
        return ck.not_applicable(f"the {run.buffer.class_name if run.buffer else 'buffer'} returns one-step rewards")
    assert run.buffer is not None
    gamma = run.buffer.gamma
    for item in windows(run):
        window = item.window
        want = sum(gamma**k * t.reward for k, t in enumerate(window))
        got = item.sample.reward
        ck.expect(
            math.isclose(got, want, rel_tol=RTOL, abs_tol=ATOL),
            lambda: (
                f"{item.where}: n-step reward {got!r}; expected {want!r}, the sum over {item.length} step(s) "
                f"{window[0].obs.short()} to {window[-1].next_obs.short()} with gamma={gamma:g}"
            ),
            env=item.sample.env,
        )
        if item.sample.discount is not None and not item.last.terminated:
            discount = item.sample.discount
            ck.expect(
                math.isclose(discount, gamma**item.length, rel_tol=RTOL, abs_tol=1e-6),
                lambda: (
                    f"{item.where}: bootstrap discount {discount!r}; expected gamma^{item.length} = {gamma**item.length!r}"
                ),
                env=item.sample.env,
            )
    return ck.done()


#: where SB3 documents the approximations a buffer may declare
TIMEOUT_DOCS = (
    "SB3's ReplayBuffer docstring: handle_timeout_termination=False does not treat a time-out as an "
    "infinite-horizon step (DLR-RM/stable-baselines3#284)"
)
MEMORY_DOCS = (
    "SB3's ReplayBuffer docstring: optimize_memory_usage=True cannot be combined with handle_timeout_termination "
    "(DLR-RM/stable-baselines3#934)"
)


def _bias_summary(biases: list[tuple[float, Expected]]) -> str:
    worst_bias, worst = max(biases, key=lambda b: abs(b[0]))
    mean = sum(abs(b) for b, _ in biases) / len(biases)
    return (
        f"by up to {abs(worst_bias):.4g} (mean |bias| {mean:.4g}), e.g. sub-env {worst.sample.env} {worst.where}: its target lacks "
        f"gamma^{worst.length}*Q'({worst.last.next_obs.short()}) = {-worst_bias:.6g}"
    )


@spec(
    "algorithm.exact_targets",
    impact="training-data",
    statement="The targets an off-policy algorithm computes from its buffer bootstrap every time-out: a row whose window ends in a time-out (and no termination) has done 0. Where the buffer declares one of SB3's documented approximations (handle_timeout_termination=False: a time-out stored as a termination; optimize_memory_usage=True: an episode's last next observation shared with the next episode's first), the approximation is reported with the rows it touches and the bias it puts in their targets: gamma^m times the value the algorithm's own target networks give the true final observation after learn.",
    rationale="A time-out stored as a termination drops the bootstrap of a state that had a future: declared, it is SB3's documented approximation and the user should know how many targets it biases and by how much; undeclared, it is a bug whose size the same measurement gives.",
    families=FAMILIES,
)
def algorithm_exact_targets(run: AlgorithmRun) -> Outcome:
    ck = Checker()
    if not _usable(run, ck):
        return ck.done()
    assert run.buffer is not None
    declared = not run.buffer.handle_timeout_termination
    items = windows(run)
    timeouts = []
    for item in items:
        if not item.last.truncated or item.last.terminated:
            continue
        if item.sample.done != 0:
            timeouts.append(item)
        else:
            ck.expect(True, "")
    biases: list[tuple[float, Expected]] = []
    for item in timeouts:
        value = run.final_values.get((item.sample.env, item.last_index))
        if value is not None:
            biases.append((-(run.buffer.gamma**item.length) * value, item))
    measured = (
        _bias_summary(biases) + f" ({run.final_values_read}, after learn)"
        if biases
        else f"the bias was not measured ({run.final_values_read or 'no value read'})"
    )
    if timeouts and not declared:
        for k, item in enumerate(timeouts):
            ck.fail(
                f"{item.where}: done {item.sample.done:g} at a time-out ({item.last.next_obs.short()}) in a buffer that "
                "declares handle_timeout_termination=True: its target drops the bootstrap gamma^m*Q'(true final "
                f"observation); over the {len(timeouts)} of {len(items)} rows that drop it, {measured}"
                if k == 0
                else f"{item.where}: done {item.sample.done:g} at a time-out ({item.last.next_obs.short()})",
                env=item.sample.env,
            )
        return ck.done()
    parts: list[str] = []
    cited: list[str] = []
    if timeouts:
        cited.append(TIMEOUT_DOCS)
        parts.append(
            f"{len(timeouts)} of {len(items)} rows store a time-out as a termination (handle_timeout_termination=False): "
            f"each target loses its bootstrap gamma^m*Q'(true final observation), {measured}"
        )
    shared = [
        item
        for item in items
        if run.buffer.optimize_memory_usage
        and (item.last.terminated or item.last.truncated)
        and item.sample.done != 0  # a done of 0 here is buffer_next_obs's failure, not the approximation
        and _decode(run, item.sample.next_obs) != item.last.next_obs
    ]
    if shared:
        cited.append(MEMORY_DOCS)
        parts.append(
            f"{len(shared)} of {len(items)} rows at an episode end keep the next episode's first observation as their "
            "next observation (optimize_memory_usage=True; their done is 1, so the target does not read it)"
        )
    if parts:
        ck.approximation("; ".join(cited), "; ".join(parts))
    return ck.done()
