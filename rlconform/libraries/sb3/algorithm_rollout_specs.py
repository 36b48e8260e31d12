"""The specs of what an SB3 on-policy algorithm collects (``algorithm.rollout_*``, family
``sb3.Algorithm``).

Each reads the rollout buffer as ``OnPolicyAlgorithm.collect_rollouts`` left it at
``on_rollout_end`` (after ``compute_returns_and_advantage``, before ``train``) and compares row t
of sub-env e with that sub-env's t-th true step and with rlconform's float64 reference GAE
(:mod:`rlconform.libraries.sb3.algorithm_rollouts`): the model's own value function on the true
observations, SB3's time-out bootstrap ``r + gamma * V(terminal observation)`` in the reward of a
step that truncated, 0 after a termination, V(next observation) at the rollout's end.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import numpy as np

from rlconform.core.spec import Checker, Outcome, spec
from rlconform.envs.decode import describe_decoded
from rlconform.envs.spaces import Garbage
from rlconform.envs.stamp import Stamp
from rlconform.envs.truth import TrueTransition
from rlconform.libraries.sb3.algorithm_case import sub_envs_notes
from rlconform.libraries.sb3.algorithm_harness import AlgorithmRun
from rlconform.specs.families import SB3_ALGORITHM

FAMILIES = frozenset({SB3_ALGORITHM})
#: float32 storage; the values, returns and advantages are float32 network outputs and sums
RTOL, ATOL = 1e-5, 1e-4


def _close(got: float, want: float) -> bool:
    return math.isclose(got, want, rel_tol=RTOL, abs_tol=ATOL)


def _usable(run: AlgorithmRun, ck: Checker, *, report_errors: bool = False, needs_reference: bool = True) -> bool:
    for note in sub_envs_notes(run.system):
        ck.note(note)
    if not run.on_policy:
        ck.not_applicable(
            f"{run.algorithm or 'the model'} has no rollout_buffer"
            + (
                ": an off-policy algorithm, its replay buffer is checked by algorithm.buffer_*"
                if run.buffer is not None
                else ": it keeps neither a rollout nor a replay buffer"
                if run.algorithm
                else ""
            )
        )
        return False
    problem = None
    if run.learn_error is not None:
        problem = f"model.learn (one rollout) raised {run.learn_error}"
    elif run.rollout_error is not None:
        problem = run.rollout_error
    if problem is not None:
        if report_errors:
            ck.fail(problem)
            return False
        ck.not_applicable(f"no rollout to check: {problem} (failed by algorithm.rollout_transitions)")
        return False
    if needs_reference and run.reference_unavailable is not None:
        ck.not_applicable(run.reference_unavailable)
        return False
    return run.rollout is not None and run.truth is not None and (run.reference is not None or not needs_reference)


def _rows(run: AlgorithmRun) -> Iterator[tuple[int, int, TrueTransition]]:
    """(sub-env, buffer row, the sub-env's true transition at that row) for every row of the rollout."""
    assert run.truth is not None and run.rollout is not None
    for env in range(run.rollout.n_envs):
        for row, true in enumerate(run.truth.envs[env].transitions[: run.rollout.rows]):
            yield env, row, true


def _end(true: TrueTransition) -> str:
    if true.terminated:
        return ", terminated"
    if true.truncated:
        return ", a time-out"
    return ""


def _where(env: int, row: int, true: TrueTransition) -> str:
    return f"sub-env {env}, buffer row {row} ({true.obs.short()} -> {true.next_obs.short()}{_end(true)})"


def _stored_obs(run: AlgorithmRun, row: int, env: int) -> Any:
    assert run.rollout is not None
    obs = run.rollout.observations
    if isinstance(obs, dict):
        return {k: v[row, env] for k, v in obs.items()}
    return obs[row, env]


def _same_input(got: Any, want: Any) -> bool:
    if isinstance(want, dict):
        return isinstance(got, dict) and all(_same_input(got.get(k), v) for k, v in want.items())
    a = np.asarray(got, dtype=np.float64).reshape(-1)
    b = np.asarray(want, dtype=np.float64).reshape(-1)
    return a.shape == b.shape and bool(np.allclose(a, b, rtol=RTOL, atol=ATOL))


@spec(
    "algorithm.rollout_transitions",
    impact="training-data",
    statement="After one rollout of an on-policy algorithm (read at on_rollout_end, before any gradient step), row t of sub-env e of its rollout buffer holds sub-env e's t-th step: the observation the sub-env returned and the policy acted on (normalised as the VecEnv handed it), the action the sub-env received (for a Box, once clipped to the bounds, as SB3 stores the unclipped sample), and the model's own value of that observation.",
    rationale="A rollout buffer that stores another sub-env's observation, another step's action or a value of another state trains the policy and value losses on pairs that never happened; nothing in the env's outputs shows it.",
    families=FAMILIES,
)
def algorithm_rollout_transitions(run: AlgorithmRun) -> Outcome:
    ck = Checker()
    if not _usable(run, ck, report_errors=True):
        return ck.done()
    facts, ref = run.rollout, run.reference
    assert facts is not None and ref is not None
    box = run.case.script.action.kind == "box"
    for env, row, true in _rows(run):
        where = _where(env, row, true)
        stored = _stored_obs(run, row, env)
        if not _same_input(stored, ref.inputs[row][env]):
            if facts.normalized:
                seen = "another (normalised) observation"
            else:
                try:
                    decoded = run.case.script.obs.decode(stored)
                except Exception as exc:
                    decoded = Garbage(f"undecodable: {exc}")
                seen = decoded.describe() if isinstance(decoded, Stamp) else describe_decoded(decoded)
            ck.fail(f"{where}: the stored observation is {seen}; expected {true.obs.describe()}", env=env)
        else:
            ck.expect(True, "")
        action = np.asarray(facts.actions[row, env], dtype=np.float64).reshape(-1)
        if box:
            action = np.clip(action, -1.0, 1.0)
        want = np.asarray(true.action.value, dtype=np.float64).reshape(-1)
        ck.expect(
            action.shape == want.shape and bool(np.allclose(action, want, rtol=0, atol=1e-5)),
            lambda: f"{where}: action {action.tolist()}; the sub-env received {want.tolist()}",
            env=env,
        )
        got, value = float(facts.values[row, env]), float(ref.v_obs[row, env])
        ck.expect(
            _close(got, value),
            lambda: f"{where}: stored value {got!r}; the model's V of the true observation is {value!r}",
            env=env,
        )
    return ck.done()


@spec(
    "algorithm.rollout_episode_starts",
    impact="training-data",
    statement="The rollout buffer's episode_starts is 1 exactly at the rows whose observation is the first of an episode (a reset observation, every sub-env's first row included) and 0 everywhere else.",
    rationale="SB3's GAE cuts the trace and the bootstrap at episode_starts[t + 1]: a start flag missing or misplaced lets the advantages of one episode run into the next, or cuts an episode in the middle; recurrent policies also reset their state on it.",
    families=FAMILIES,
)
def algorithm_rollout_episode_starts(run: AlgorithmRun) -> Outcome:
    ck = Checker()
    if not _usable(run, ck, needs_reference=False):
        return ck.done()
    facts = run.rollout
    assert facts is not None
    for env, row, true in _rows(run):
        want = 1.0 if true.obs.step == 0 else 0.0
        got = float(facts.episode_starts[row, env])
        ck.expect(
            got == want,
            lambda: (
                f"{_where(env, row, true)}: episode_starts {got:g}; expected {want:g} "
                + ("(the episode's first observation)" if want else "(mid-episode)")
            ),
            env=env,
        )
    return ck.done()


@spec(
    "algorithm.rollout_rewards",
    impact="training-data",
    statement="The reward of every rollout-buffer row is the sub-env's one-step reward (normalised as the VecEnv returned it), plus gamma * V(true final observation) exactly where the step truncated the episode without terminating it (SB3's documented time-out bootstrap, the model's own value function), and nothing added elsewhere.",
    rationale="SB3's GAE treats every episode end as terminal and carries the time-out's future in the reward instead: a rollout whose time-outs are not bootstrapped (or whose terminations are) teaches the value function that a time limit is the end of the world, a bias no env check can see.",
    families=FAMILIES,
)
def algorithm_rollout_rewards(run: AlgorithmRun) -> Outcome:
    ck = Checker()
    if not _usable(run, ck):
        return ck.done()
    facts, ref = run.rollout, run.reference
    assert facts is not None and ref is not None
    for env, row, true in _rows(run):
        got, want = float(facts.rewards[row, env]), float(ref.rewards[row, env])
        plain = float(ref.plain_rewards[row, env])
        timeout = true.truncated and not true.terminated

        def message(got: float = got, want: float = want, plain: float = plain, timeout: bool = timeout) -> str:
            text = f"{_where(env, row, true)}: reward {got!r}; expected {want!r}"
            if timeout:
                text += f" = {plain!r} + gamma * V(final observation {true.next_obs.short()})"
                if _close(got, plain):
                    text += " (the time-out was not bootstrapped)"
            elif true.terminated and not _close(got, plain):
                text += " (a termination: no bootstrap)"
            return text

        ck.expect(_close(got, want), message, env=env)
    return ck.done()


@spec(
    "algorithm.rollout_returns",
    impact="training-data",
    statement="The rollout buffer's advantages and returns (returns = advantages + values) equal the GAE(gamma, gae_lambda) of the buffer's own gamma and gae_lambda computed in float64 from the env logs and the model's value function on the true observations: with the rows' rewards (time-outs bootstrapped there), 0 after a termination or time-out, V(next observation) after the rollout's last row, the trace cut at every episode end and never crossing from one sub-env into another.",
    rationale="GAE that runs across an episode end, bootstraps a termination, takes the next sub-env's values or rewards, or misses the bootstrap at the rollout's end biases every policy-gradient step and value target, silently: the agent still learns, just worse.",
    families=FAMILIES,
)
def algorithm_rollout_returns(run: AlgorithmRun) -> Outcome:
    ck = Checker()
    if not _usable(run, ck):
        return ck.done()
    facts, ref = run.rollout, run.reference
    assert facts is not None and ref is not None
    for env, row, true in _rows(run):
        where = _where(env, row, true)
        for name, got_array, want_array in (
            ("advantage", facts.advantages, ref.advantages),
            ("return", facts.returns, ref.returns),
        ):
            got, want = float(got_array[row, env]), float(want_array[row, env])
            ck.expect(
                _close(got, want),
                lambda name=name, got=got, want=want: (  # type: ignore[misc]
                    f"{where}: {name} {got!r}; expected {want!r} (GAE gamma={facts.buffer_gamma:g}, "
                    f"lambda={facts.gae_lambda:g}"
                    + (", the rollout's last row: V(next observation)" if row == facts.rows - 1 else "")
                    + ")"
                ),
                env=env,
            )
    return ck.done()
