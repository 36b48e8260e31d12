"""The specs of TorchRL's return estimators: the advantage and value target of every frame match the
reference computed from the env's own log (float64, at the gamma and lambda the estimator
declares; TD(0): lambda 0, TD(1): lambda 1), no target moves when the frames after an episode
end, or another sub-env's frames, change, and ``estimator.exact_targets`` reports a documented
approximation with its measured bias.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from rlconform.core.spec import Checker, Outcome, spec
from rlconform.envs.stamp import Stamp
from rlconform.libraries.torchrl.value_case import FAMILIES, NEEDS_CASE, EstimatorCase
from rlconform.libraries.torchrl.value_readings import Readings, readings, true_rows
from rlconform.libraries.torchrl.value_reference import (
    BatchReading,
    Declared,
    RefStep,
    batch_moments,
    close,
    diagnose,
    gae,
    retained,
    standardized,
)

if TYPE_CHECKING:
    from rlconform.envs.driver import Run


def _start(run: Run, c: Checker) -> Readings | Outcome:
    if not isinstance(run.case, EstimatorCase):
        return c.not_applicable(NEEDS_CASE)
    found = readings(run)
    if found.refused is not None:
        return c.not_applicable(
            f"the estimator and collector were not built: {found.refused.error_type}: {found.refused.error_message}"
        )
    if found.declared is not None and found.declared.undriven is not None:
        return c.not_applicable(found.declared.undriven)
    return found


# ----------------------------------------------------------------------------------- specs


def _targets(run: Run, which: int) -> Outcome:
    key = ("advantage", "value_target")[which]
    c = Checker()
    found = _start(run, c)
    if isinstance(found, Outcome):
        return found
    declared = found.declared
    assert declared is not None
    if declared.gamma is None or declared.lmbda is None:
        missing = "gamma" if declared.gamma is None else "lmbda"
        return c.not_applicable(
            f"the estimator declares no {missing} (no {missing!r} attribute): nothing to compute its targets with"
        )
    if declared.average_rewards:
        return c.not_applicable(f"{declared.standardized}: its {key} is not the return's own")
    standard = which == 0 and declared.average_gae
    base = declared.variants
    for number, reading in enumerate(found.batches):
        if reading.missing is not None:
            c.fail(f"batch {number}: {reading.missing}")
            continue
        rows = true_rows(run, reading)
        if isinstance(rows, str):
            return c.not_applicable(rows)
        keep = retained(rows, declared.shifted_budget) if declared.shifted else [[True] * len(row) for row in rows]
        if declared.shifted and reading.valid is not None:
            for i, (expected_row, given_row) in enumerate(zip(keep, reading.valid, strict=True)):
                c.expect(
                    expected_row == given_row,
                    f"batch {number}: sub-env {i}'s shifted_valid is {given_row}; by the documented rule "
                    f"(T + shifted_budget slots, one more per internal truncation) {expected_row}",
                    env=i,
                )
        kept_rows = [row[: sum(k)] for row, k in zip(rows, keep, strict=True)]
        reference = gae(kept_rows, declared.gamma, declared.lmbda, base)
        given_rows = reading.advantage if which == 0 else reading.value_target
        assert given_rows is not None
        if standard:
            _standardized_advantages(c, number, kept_rows, given_rows, reference, declared, base)
            continue
        for i, row in enumerate(kept_rows):
            wrong = [t for t in range(len(row)) if not close(given_rows[i][t], reference[i][t][which])]
            message = (
                _mismatch(number, key, which, i, wrong, row, kept_rows, given_rows, reference, declared, base, rows)
                if wrong
                else ""
            )
            c.expect(not wrong, message, env=i)
    if found.failed is not None:
        c.fail(f"{found.failed.source} raised {found.failed.error_type}: {found.failed.error_message}")
    if base or declared.shifted:
        c.note("compared with the documented approximation it declares: " + "; ".join(declared.approximations()))
    if standard:
        c.note(_STANDARDIZED_NOTE)
    return c.done()


#: TorchRL's GAE docstring, ``average_gae``
_AVERAGE_GAE_DOC = "TorchRL's GAE docstring, average_gae: 'the resulting GAE values will be standardized'"
_STANDARDIZED_NOTE = (
    "its advantage is standardized over the batch (average_gae=True, documented by "
    f"{_AVERAGE_GAE_DOC}): compared with the exact advantages standardized the same way "
    "(the batch's mean, its standard deviation with or without Bessel's correction, at least 1e-4)"
)


def _standardized_advantages(
    c: Checker,
    number: int,
    rows: list[list[RefStep]],
    given_rows: list[list[float]],
    reference: list[list[tuple[float, float]]],
    declared: Declared,
    base: frozenset[str],
) -> None:
    """An estimator that standardizes its advantages (GAE's ``average_gae=True``): every frame's
    advantage is the exact one less the batch's mean, over the batch's standard deviation. TorchRL
    divides by ``std()`` (Bessel's correction) and, over a ``shifted_valid`` mask, by the
    population's; either is a standardization, so either passes. Compared in the advantage's own
    units (the given value scaled back with the exact advantages' moments)."""
    exact = [[a for a, _ in row] for row in reference]
    best: tuple[int, int, list[list[int]]] | None = None
    for correction in (1, 0):
        mean, scale = batch_moments(exact, correction)
        wrong = [
            [t for t in range(len(row)) if not close(given_rows[i][t] * scale + mean, exact[i][t])]
            for i, row in enumerate(rows)
        ]
        count = sum(len(w) for w in wrong)
        if best is None or count < best[0]:
            best = (count, correction, wrong)
    assert best is not None
    _, correction, wrong = best
    mean, scale = batch_moments(exact, correction)
    expected = standardized(exact, correction)
    total = sum(len(row) for row in rows)
    for i, row in enumerate(rows):
        message = ""
        if wrong[i]:
            t = wrong[i][-1]
            assert declared.gamma is not None and declared.lmbda is not None
            cause = diagnose(rows, declared.gamma, declared.lmbda, base, 0, i, t, given_rows[i][t], correction)
            more = f"; {len(wrong[i]) - 1} earlier frame(s) of sub-env {i} differ too" if len(wrong[i]) > 1 else ""
            message = (
                f"batch {number}, sub-env {i}, step {t} ({row[t].describe()}): standardized advantage "
                f"{given_rows[i][t]:.6g}, expected {expected[i][t]:.6g} (the exact advantage {exact[i][t]:.6g} "
                f"standardized over the batch's {total} frames: mean {mean:.6g}, std {scale:.6g}; gamma "
                f"{declared.gamma:g}, lambda {declared.lmbda:g})" + (f": {cause}" if cause else "") + more
            )
        c.expect(not wrong[i], message, env=i)


def _mismatch(
    number: int,
    key: str,
    which: int,
    i: int,
    wrong: list[int],
    row: list[RefStep],
    rows: list[list[RefStep]],
    given_rows: list[list[float]],
    reference: list[list[tuple[float, float]]],
    declared: Declared,
    base: frozenset[str],
    rows_all: list[list[RefStep]],
) -> str:
    """The latest wrong frame of the row (where an error in a backward recursion starts), with
    its likely cause, and how many earlier frames differ too."""
    t = wrong[-1]
    assert declared.gamma is not None and declared.lmbda is not None
    cause = diagnose(rows, declared.gamma, declared.lmbda, base, which, i, t, given_rows[i][t])
    if cause is None and key == "advantage":
        # a cause the value target shows as well (the advantage is the target less V(s_t))
        cause = diagnose(rows, declared.gamma, declared.lmbda, base, 1, i, t, given_rows[i][t] + row[t].value)
    more = f"; {len(wrong) - 1} earlier frame(s) of sub-env {i} differ too" if len(wrong) > 1 else ""
    if declared.shifted and t == len(row) - 1 and len(row) < len(rows_all[i]):
        more += " (the last sample shifted=True retains before the ones it drops)"
    return (
        f"batch {number}, sub-env {i}, step {t} ({row[t].describe()}): {key} {given_rows[i][t]:.6g}, expected "
        f"{reference[i][t][which]:.6g} (gamma {declared.gamma:g}, lambda {declared.lmbda:g})"
        + (f": {cause}" if cause else "")
        + more
    )


_RATIONALE = (
    "The advantage and the value target are what the policy and value losses train on; a termination "
    "bootstrapped, a time-out not bootstrapped, a trace run on across an episode end or from one sub-env "
    "into another biases every update silently, and no environment check can see it."
)


@spec(
    "estimator.advantage",
    impact="training-data",
    statement="The advantage an estimator writes for every frame of a collector batch equals the lambda-return computed from the env's own log less V(s_t): bootstrapped with V(final observation) at a time-out, 0 at a termination, V(next observation) at the batch's end, and never accumulated across an episode end or a sub-env boundary (at the gamma and lambda the estimator declares; where it declares one of TorchRL's documented approximations, the approximation's own formula).",
    rationale=_RATIONALE,
    families=FAMILIES,
)
def estimator_advantage(run: Run) -> Outcome:
    return _targets(run, 0)


@spec(
    "estimator.value_target",
    impact="training-data",
    statement="The value target an estimator writes for every frame of a collector batch equals the lambda-return computed from the env's own log: bootstrapped with V(final observation) at a time-out, 0 at a termination, V(next observation) at the batch's end, and never accumulated across an episode end or a sub-env boundary (at the gamma and lambda the estimator declares; where it declares one of TorchRL's documented approximations, the approximation's own formula).",
    rationale=_RATIONALE,
    families=FAMILIES,
)
def estimator_value_target(run: Run) -> Outcome:
    return _targets(run, 1)


def _leaks(run: Run, attribute: str, what: Callable[[BatchReading, int, int, int], str]) -> Outcome:
    c = Checker()
    found = _start(run, c)
    if isinstance(found, Outcome):
        return found
    declared = found.declared
    if declared is not None and declared.average_rewards:
        # the rewards are standardized with the batch's mean and deviation before any target
        return c.not_applicable(
            f"{declared.standardized}: every target depends on every reward of the batch, by its documented "
            "design (TorchRL's value estimators, average_rewards), so no target can be compared alone"
        )
    # standardized advantages move with every frame of the batch (its mean and deviation): the
    # value target, which is not standardized, shows what the recursion itself reads
    only_targets = declared is not None and declared.average_gae
    for number, reading in enumerate(found.batches):
        for source, end, all_leaks in getattr(reading, attribute):
            leaks = [leak for leak in all_leaks if not (only_targets and leak.key == "advantage")]
            message = ""
            if leaks:
                first = leaks[0]
                message = (
                    f"batch {number}, sub-env {first.row}, step {first.t}: its {first.key} moved from "
                    f"{first.before:.6g} to {first.after:.6g} when {what(reading, source, end, first.row)}"
                    + (f" ({len(leaks) - 1} more such change(s))" if len(leaks) > 1 else "")
                    + (f" ({_TARGETS_ONLY})" if only_targets else "")
                )
            c.expect(not leaks, message, env=source)
    if only_targets:
        c.note(_TARGETS_ONLY)
    return c.done()


_TARGETS_ONLY = (
    "compared on the value target only: it standardizes its advantages over the whole batch (average_gae=True, "
    f"{_AVERAGE_GAE_DOC}), so every frame's advantage moves with the batch's mean and deviation when any frame "
    "changes; the value target is not standardized"
)


def _after_end(reading: BatchReading, row: int, end: int, into: int) -> str:
    frame = reading.frames[row * reading.shape[1] + end]
    how = "terminated" if frame.terminated else "truncated"
    obs = frame.obs.short() if isinstance(frame.obs, Stamp) else "?"
    return (
        f"the rewards and observations after its episode end at step {end} ({obs}, {how}) changed: "
        "it accumulated across an episode end"
    )


def _other_env(reading: BatchReading, source: int, end: int, into: int) -> str:
    return (
        f"sub-env {source}'s rewards and observations changed: it accumulated from sub-env {source} into sub-env {into}"
    )


@spec(
    "estimator.no_cross_episode",
    impact="training-data",
    statement="An estimator's advantage and value target for a frame do not depend on any reward or observation after the end of the frame's episode (by termination or truncation) in the same sub-env.",
    rationale="GAE or a lambda-return run on across an episode end credits an action with the next episode's rewards: the bug of done read from the wrong step, or of done ignored.",
    families=FAMILIES,
)
def estimator_no_cross_episode(run: Run) -> Outcome:
    return _leaks(run, "cross_episode", _after_end)


@spec(
    "estimator.no_cross_env",
    impact="training-data",
    statement="An estimator's advantage and value target for a frame of one sub-env do not depend on any reward or observation of another sub-env of the batch.",
    rationale="A batch of shape [envs, time] flattened into one sequence, or a recursion run along the wrong dimension, credits one sub-env's actions with another sub-env's rewards.",
    families=FAMILIES,
)
def estimator_no_cross_env(run: Run) -> Outcome:
    return _leaks(run, "cross_env", _other_env)


@spec(
    "estimator.exact_targets",
    impact="training-data",
    statement="An estimator's declared computation gives the exact targets: where it declares one of TorchRL's documented approximations (GAE's auto_reset_env=True bootstrapping a time-out from V(s_t); shifted=True dropping the samples an internal truncation displaces past its budget and stopping the returns before them), the approximation is reported with the bias it measured on the case.",
    rationale="A documented approximation is no bug, but it is not the return either: the learner trains on targets biased at every time-out (or on fewer samples), and the user should know by how much.",
    families=FAMILIES,
)
def estimator_exact_targets(run: Run) -> Outcome:
    c = Checker()
    found = _start(run, c)
    if isinstance(found, Outcome):
        return found
    declared = found.declared
    assert declared is not None
    if declared.gamma is None or declared.lmbda is None:
        return c.not_applicable("the estimator declares no gamma or lambda")
    base = declared.variants
    for number, reading in enumerate(found.batches):
        rows = true_rows(run, reading)
        if isinstance(rows, str):
            return c.not_applicable(rows)
        keep = retained(rows, declared.shifted_budget) if declared.shifted else [[True] * len(row) for row in rows]
        kept_rows = [row[: sum(k)] for row, k in zip(rows, keep, strict=True)]
        exact = gae(rows, declared.gamma, declared.lmbda)
        approx = gae(kept_rows, declared.gamma, declared.lmbda, base)
        biases = [
            (approx[i][t][1] - exact[i][t][1], i, t)
            for i, row in enumerate(kept_rows)
            for t in range(len(row))
            if not close(approx[i][t][1], exact[i][t][1])
        ]
        dropped = sum(len(row) for row in rows) - sum(len(row) for row in kept_rows)
        total = sum(len(row) for row in rows)
        parts = []
        if biases:
            worst = max(biases, key=lambda b: abs(b[0]))
            mean = sum(abs(b[0]) for b in biases) / len(biases)
            i, t = worst[1], worst[2]
            parts.append(
                f"value targets biased at {len(biases)} of {total} frames, by up to {abs(worst[0]):.4g} "
                f"(mean |bias| {mean:.4g}), e.g. sub-env {i} step {t} ({rows[i][t].describe()}): "
                f"{approx[i][t][1]:.6g} where the exact target is {exact[i][t][1]:.6g}"
            )
        if dropped:
            parts.append(f"{dropped} of {total} samples dropped (shifted_valid False)")
        approximations = "; ".join(declared.approximations())
        if parts:
            c.approximation(declared.citation(), f"batch {number}: {approximations}: " + "; ".join(parts))
        else:
            c.expect(True, "")
    return c.done()
