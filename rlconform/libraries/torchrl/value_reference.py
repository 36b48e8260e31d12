"""The ground truth a return estimator is checked against: lambda-returns and advantages computed
in float64, in plain Python, from the env's own log (never from TorchRL's functional code).

A collector's batch is read back into rows, one per sub-env, in time order; each frame is matched
to the transition the reference env logged for its observation, so the episode structure (where
each episode ends, and whether it terminated or was truncated) comes from the log, not from the
done flags the stack wrote. The value network is a fixed linear function of the observation
(:data:`VALUE_WEIGHTS`), evaluated here on the true observations.

For a row of frames ``t = 0 .. T-1`` with reward ``r_t``, ``V_t = V(obs_t)`` and ``V'_t`` the
value of the transition's true next observation (the final observation at an episode end,
time-outs included; the collector's next observation at the batch's end)::

    delta_t = r_t + gamma * (1 - terminated_t) * V'_t - V_t
    A_t     = delta_t + gamma * lambda * (1 - ended_t) * A_{t+1}     (A_T = 0)
    G_t     = A_t + V_t                                              (the value target)

``ended_t`` is true at an episode end (terminated or truncated) and at the row's last frame
(the batch edge): the trace stops there and the target bootstraps from ``V'_t`` unless the
episode terminated. TD(0) is ``lambda = 0``, TD(1) ``lambda = 1``; GAE's advantage and the
TD(lambda) target are the same numbers. The *variants* compute what a known kind of bug or a
documented approximation would give; a failure names the first one that matches the value given.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from rlconform.envs.stamp import Stamp

#: the value network: V(obs) = sum_k w_k obs_k over the Box observation's stamp fields (sub-env,
#: episode, step, salt, checksum): a final observation, the next episode's first observation and
#: another sub-env's observation all have different values
VALUE_WEIGHTS = (0.25, 0.125, 0.5, 0.01, 0.02)

#: float32 computation against a float64 reference: |given - true| <= ATOL + RTOL * |true|
ATOL = 1e-4
RTOL = 1e-5


def close(given: float, true: float) -> bool:
    return bool(np.isfinite(given)) and abs(given - true) <= ATOL + RTOL * abs(true)


def true_value(codec: Any, stamp: Stamp) -> float:
    """V of the observation ``stamp`` encodes, in float64."""
    obs = np.asarray(codec.encode(stamp), dtype=np.float64).reshape(-1)
    return float(np.dot(obs[: len(VALUE_WEIGHTS)], np.asarray(VALUE_WEIGHTS, dtype=np.float64)))


@dataclass(frozen=True)
class RefStep:
    """One frame of one sub-env, from the env's log."""

    obs: Stamp
    next_obs: Stamp
    reward: float
    terminated: bool
    truncated: bool
    value: float
    next_value: float

    @property
    def ended(self) -> bool:
        return self.terminated or self.truncated

    def describe(self) -> str:
        end = (
            " (terminated and truncated)"
            if self.terminated and self.truncated
            else " (terminated)"
            if self.terminated
            else " (truncated)"
            if self.truncated
            else ""
        )
        return f"env {self.obs.env} episode {self.obs.episode} step {self.obs.step} -> {self.next_obs.step}{end}"


#: variant -> what it says about the estimator when its values match the given ones
CAUSES: dict[str, str] = {
    "bootstraps_terminations": "it bootstrapped at a termination (V of the terminal observation where 0 was due)",
    "truncation_as_termination": "it did not bootstrap at a time-out (a truncation treated as a termination)",
    "ignores_ends": "it accumulated across an episode end (the trace was not cut where the episode ended)",
    "cuts_on_terminated_only": "it accumulated across a time-out (the trace cut at terminations only, done read as terminated)",
    "across_envs": "it accumulated from one sub-env into the next (the batch flattened across sub-envs)",
    "lambda_without_gamma": "the trace decayed by lambda where gamma*lambda was due (gamma^k missing from the k-step terms)",
    "gamma_without_lambda": "the trace decayed by gamma where gamma*lambda was due (lambda ignored)",
    "value_at_truncation": "it bootstrapped a time-out from V(s_t), the value of the step's own observation, where V(final observation) was due",
    "next_episode_value": "it bootstrapped an episode end from the next episode's first observation where V(final observation) was due",
}


def gae(
    rows: Sequence[Sequence[RefStep]], gamma: float, lmbda: float, variants: frozenset[str] = frozenset()
) -> list[list[tuple[float, float]]]:
    """(advantage, value target) of every frame of every row, in float64; ``variants`` compute
    known wrong ways (:data:`CAUSES`) or documented approximations instead."""
    if "across_envs" in variants:
        flat = [step for row in rows for step in row]
        joined = gae([flat], gamma, lmbda, variants - {"across_envs"})[0]
        split, k = [], 0
        for row in rows:
            split.append(joined[k : k + len(row)])
            k += len(row)
        return split
    if "next_episode_value" in variants:
        rows = [_next_episode_values(row) for row in rows]
    decay = gamma * lmbda
    if "lambda_without_gamma" in variants:
        decay = lmbda
    elif "gamma_without_lambda" in variants:
        decay = gamma
    found = []
    for row in rows:
        out: list[tuple[float, float]] = []
        following = 0.0
        for t in range(len(row) - 1, -1, -1):
            step = row[t]
            terminated = step.terminated
            if "bootstraps_terminations" in variants:
                terminated = False
            elif "truncation_as_termination" in variants:
                terminated = step.ended
            next_value = step.value if "value_at_truncation" in variants and step.truncated else step.next_value
            cut = step.ended
            if "ignores_ends" in variants:
                cut = False
            elif "cuts_on_terminated_only" in variants:
                cut = step.terminated
            if t == len(row) - 1:
                cut = True
            delta = step.reward + gamma * (0.0 if terminated else next_value) - step.value
            advantage = delta + (0.0 if cut else decay * following)
            following = advantage
            out.append((advantage, advantage + step.value))
        found.append(out[::-1])
    return found


def _next_episode_values(row: Sequence[RefStep]) -> list[RefStep]:
    """The row with each episode end's next value replaced by the value of the row's following
    frame (the next episode's first observation), where there is one."""
    return [
        replace(step, next_value=row[t + 1].value) if step.ended and t + 1 < len(row) else step
        for t, step in enumerate(row)
    ]


def diagnose(
    rows: Sequence[Sequence[RefStep]],
    gamma: float,
    lmbda: float,
    base: frozenset[str],
    which: int,
    row: int,
    t: int,
    given: float,
    correction: int | None = None,
) -> str | None:
    """The cause (:data:`CAUSES`) whose variant, on top of the declared computation ``base``,
    gives ``given`` at (``row``, ``t``): ``which`` is 0 for the advantage, 1 for the value
    target; None when none does. ``correction`` (0 or 1) compares advantages standardized over
    the whole batch (:func:`standardized`) with that correction of the standard deviation."""

    standard = correction is not None and which == 0
    if standard:
        assert correction is not None
        # compared in the advantage's own units: standardized, then scaled back with the exact
        # advantages' moments (the same tolerance as an advantage that is not standardized)
        mean, scale = batch_moments([[a for a, _ in r] for r in gae(rows, gamma, lmbda, base)], correction)
        given = given * scale + mean

    def at(variants: frozenset[str]) -> float:
        found = gae(rows, gamma, lmbda, variants)
        if standard:
            assert correction is not None
            return standardized([[a for a, _ in r] for r in found], correction)[row][t] * scale + mean
        return found[row][t][which]

    true = at(base)
    for variant, cause in CAUSES.items():
        if variant in base:
            continue
        candidate = at(base | {variant})
        if not close(candidate, true) and close(given, candidate):
            return cause
    return None


# ---------------------------------------------------------------- standardized advantages

#: the smallest scale an advantage is divided by (TorchRL's GAE: ``adv.std().clamp_min(1e-4)``)
STD_FLOOR = 1e-4


def batch_moments(values: Sequence[Sequence[float]], correction: int) -> tuple[float, float]:
    """(mean, scale) of every value of every row: the scale is the standard deviation with
    ``correction`` (1: Bessel's, torch's default; 0: the population's), at least :data:`STD_FLOOR`."""
    flat = [v for row in values for v in row]
    mean = sum(flat) / len(flat)
    dof = len(flat) - correction
    variance = sum((v - mean) ** 2 for v in flat) / dof if dof > 0 else 0.0
    return mean, max(variance**0.5, STD_FLOOR)


def standardized(values: Sequence[Sequence[float]], correction: int) -> list[list[float]]:
    """``values`` standardized over the whole batch, as ``GAE(average_gae=True)`` documents it
    ("the resulting GAE values will be standardized"): (v - mean) / scale."""
    mean, scale = batch_moments(values, correction)
    return [[(v - mean) / scale for v in row] for row in values]


# ------------------------------------------------------------------ what a batch gave


@dataclass(frozen=True)
class Declared:
    """What an estimator declares of its computation (read from its attributes)."""

    gamma: float | None
    lmbda: float | None
    #: TorchRL's single-call value path (``shifted=True``): samples an internal truncation
    #: displaces past ``T + shifted_budget`` are dropped (``"shifted_valid"``)
    shifted: bool = False
    shifted_budget: int = 1
    #: GAE(auto_reset_env=True): a time-out bootstraps from V(s_t)
    auto_reset_env: bool = False
    #: GAE(average_gae=True): its advantages are standardized over the batch (TorchRL's GAE
    #: docstring: "the resulting GAE values will be standardized"); its value targets are not
    average_gae: bool = False
    #: average_rewards=True: the rewards are standardized over the batch before any target is
    #: computed, so neither target is the return's own
    average_rewards: bool = False
    #: the nearest TorchRL estimator class it is or derives from (None: none of TorchRL's), and
    #: whether it runs vectorized: the bundled system a user's failure may be inherited from
    library_class: str | None = None
    #: it is an instance of that TorchRL class itself, not of a subclass of the user's
    library_own: bool = False
    vectorized: bool = True
    #: why rlconform cannot drive it (then nothing it computes is compared), or None
    undriven: str | None = None

    @property
    def standardized(self) -> str | None:
        """What it standardizes over the batch, as a clause (None: nothing)."""
        if self.average_rewards:
            return "it standardizes the rewards over the batch (average_rewards=True)"
        if self.average_gae:
            return "it standardizes its advantages over the batch (average_gae=True)"
        return None

    @property
    def variants(self) -> frozenset[str]:
        """The documented approximations its targets follow (gae's variants)."""
        return frozenset({"value_at_truncation"}) if self.auto_reset_env else frozenset()

    def citation(self) -> str:
        """Where TorchRL documents the approximations it declares."""
        cited = []
        if self.auto_reset_env:
            cited.append(
                "TorchRL's GAE docstring, auto_reset_env: the value, not next_value, bootstraps truncated episodes"
            )
        if self.shifted:
            cited.append(
                "TorchRL's ValueEstimatorBase docstring, shifted_budget: a T+1 budget drops the samples an internal reset displaces"
            )
        return "; ".join(cited)

    def approximations(self) -> list[str]:
        found = []
        if self.auto_reset_env:
            found.append(
                "auto_reset_env=True (documented: a truncated episode is bootstrapped from V(s_t), the value of the "
                "step's own observation, not from the final observation's)"
            )
        if self.shifted:
            found.append(
                f"shifted=True with shifted_budget={self.shifted_budget} (documented: the samples an internal "
                "truncation displaces past the budget are dropped, marked by shifted_valid, so the returns of the "
                "retained ones stop at the last retained sample)"
            )
        return found


@dataclass(frozen=True)
class Leak:
    """A frame whose target changed when frames it must not depend on changed."""

    row: int
    t: int
    key: str
    before: float
    after: float


@dataclass
class BatchReading:
    """One collector batch and what the estimator computed from it."""

    #: (sub-envs, steps): the batch read as rows of sub-envs
    shape: tuple[int, int]
    #: the batch's frames, decoded, sub-env by sub-env
    frames: list[Any]
    advantage: list[list[float]] | None = None
    value_target: list[list[float]] | None = None
    #: the estimator's "shifted_valid" mask, where it wrote one
    valid: list[list[bool]] | None = None
    #: why the targets could not be read
    missing: str | None = None
    #: (sub-env, its first episode end, the leaks into the frames up to it)
    cross_episode: list[tuple[int, int, list[Leak]]] = field(default_factory=list)
    #: (perturbed sub-env, -1, the leaks into the other sub-envs)
    cross_env: list[tuple[int, int, list[Leak]]] = field(default_factory=list)


def retained(rows: Sequence[Sequence[RefStep]], budget: int) -> list[list[bool]]:
    """Which frames TorchRL's shifted=True path keeps, by its documented rule: each internal
    truncation (done and not terminated, before the row's last frame) shifts the later samples
    one slot right in a sequence of ``T + budget`` slots; a sample whose next slot falls outside
    is dropped."""
    found = []
    for row in rows:
        steps = len(row)
        before = 0
        keep = []
        for t, step in enumerate(row):
            keep.append(t + before + 1 < steps + budget)
            if step.truncated and not step.terminated and t < steps - 1:
                before += 1
        found.append(keep)
    return found
