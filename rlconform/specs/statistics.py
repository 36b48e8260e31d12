"""Statistics specs: episode statistics and running normalizers count only real transitions and
real episodes."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from rlconform.core.spec import Checker, Outcome, spec
from rlconform.envs.calllog import ResetRecord, StepRecord
from rlconform.specs.families import TUPLE_FAMILIES
from rlconform.specs.helpers import events_by_call, match_transitions, model_counterpart, reward_precision
from rlconform.specs.value_changes import stack_truncation

if TYPE_CHECKING:
    from rlconform.envs.driver import Run

RMS_EPSILON = 1e-4


def _keeps_no_statistics(semantics: Mapping[str, Any]) -> str | None:
    return None if semantics.get("episode_statistics") else "the system keeps no episode statistics"


#: the documented settings that freeze a running normalizer's statistics: SB3's
#: ``VecNormalize(training=False)`` (its evaluation setup) and Gymnasium's
#: ``NormalizeObservation``/``NormalizeReward`` with ``update_running_mean = False``
FROZEN_SETTINGS = ("training=False", "update_running_mean=False")


def frozen_normalizer(name: str, setting: str = "training=False") -> str:
    """The ``normalizers`` entry of a normalizer whose statistics are frozen on purpose by
    ``setting`` (one of :data:`FROZEN_SETTINGS`): ``"VecNormalize(training=False)"``."""
    if setting not in FROZEN_SETTINGS:
        raise ValueError(f"{setting!r} is not a setting that freezes a normalizer: {FROZEN_SETTINGS}")
    return f"{name}({setting})"


def _is_frozen(entry: object) -> bool:
    return any(str(entry).endswith(f"({setting})") for setting in FROZEN_SETTINGS)


def _has_no_normalizer(semantics: Mapping[str, Any]) -> str | None:
    """Not applicable without a normalizer, and with only frozen ones: a frozen normalizer
    updates no statistics by construction, so no example could exercise the spec, and calling
    that "not exercised" would fail a correct evaluation stack."""
    normalizers = list(semantics.get("normalizers") or ())
    if not normalizers:
        return "the system has no running normalizer"
    frozen = [n for n in normalizers if _is_frozen(n)]
    if len(frozen) == len(normalizers):
        return (
            f"the running normalizer is frozen ({', '.join(map(str, frozen))}, its documented evaluation "
            "setup): it updates no statistics, so there are none to check"
        )
    return None


@spec(
    "statistics.episode",
    impact="api-contract",
    statement="Episode statistics (return and length) are reported exactly once per ended episode, on the step that ends it, and equal the sum of its real rewards and the number of its real transitions.",
    rationale=(
        "Learning curves are drawn from these numbers; counting the reset step of next-step autoreset, or losing "
        "the statistics of one sub-env on a partial reset, makes every curve wrong."
    ),
    families=TUPLE_FAMILIES,
    applies_to_stack=_keeps_no_statistics,
)
def episode_statistics(run: Run) -> Outcome:
    ck = Checker()
    if not run.usable:
        return ck.done()
    key = run.semantics["episode_statistics"]  # applies_to_stack: the stack keeps statistics
    assert run.truth is not None
    rel = 1e-5 if reward_precision(run) == "float32" else 1e-9
    for env in range(run.case.num_envs):
        matches, _ = match_transitions(run, env)
        reported_calls: set[int] = set()
        for m in matches:
            t = m.truth
            call = run.calls[m.slot.call]
            info = call.view.infos[env] if call.view is not None and call.view.infos is not None else {}
            stats = info.get(key)
            where = {"env": env, "agent_step": m.slot.agent_step}
            if t is None:
                continue
            # an episode also ends where the stack cut it (a TimeLimit the user put around each
            # sub-env): the env never ended it, but the agent was told it did
            if not (t.terminated or t.truncated or stack_truncation(run, m) is not None):
                ck.expect(
                    stats is None,
                    f"episode statistics {_short(stats)} reported while episode {t.episode} continues",
                    **where,
                )
                continue
            reported_calls.add(m.slot.call)
            episode = run.truth.envs[env].episode(t.episode)
            assert episode is not None
            true_return = math.fsum(x.reward for x in episode.transitions)
            true_length = len(episode.transitions)
            if not ck.expect(
                stats is not None, f"episode {t.episode} ended but no episode statistics were reported", **where
            ):
                continue
            got_r, got_l = _get(stats, "r"), _get(stats, "l")
            ck.expect(
                got_r is not None and math.isclose(float(got_r), true_return, rel_tol=rel, abs_tol=1e-9),
                f"episode {t.episode} is reported with return {got_r!r}; its {true_length} real transitions sum to {true_return!r}",
                **where,
            )
            ck.expect(
                got_l is not None and int(got_l) == true_length,
                f"episode {t.episode} is reported with length {got_l!r}; it had {true_length} real transitions",
                **where,
            )
        for slot in run.slots_of(env):
            if slot.kind == "reset_step":
                call = run.calls[slot.call]
                info = call.view.infos[env] if call.view is not None and call.view.infos is not None else {}
                ck.expect(
                    key not in info,
                    f"episode statistics {_short(info.get(key))} reported on a reset step",
                    env=env,
                    agent_step=slot.agent_step,
                )
    return ck.done()


def _get(stats: Any, field: str) -> Any:
    try:
        return stats[field]
    except Exception:
        return None


def _short(stats: Any) -> str:
    if not isinstance(stats, dict):
        return repr(stats)
    return "{" + ", ".join(f"{k}={v!r}" for k, v in stats.items() if k != "t") + "}"


@spec(
    "statistics.normalizer",
    impact="training-data",
    statement=(
        "Running normalizers count one sample per real transition (returns) or per returned observation, "
        "accumulate discounted returns within an episode only, and agree with the reference model's statistics."
    ),
    rationale=(
        "Reward and observation normalisation rescale everything the agent learns from; counting reset steps, "
        "carrying a discounted return across an episode boundary, or zeroing other sub-envs' returns on a partial "
        "reset skews the scale silently."
    ),
    families=TUPLE_FAMILIES,
    applies_to_stack=_has_no_normalizer,
)
def normalizer_statistics(run: Run) -> Outcome:
    ck = Checker()
    if not run.usable:
        return ck.done()
    assert run.truth is not None
    gamma = run.semantics.get("normalizer_gamma")
    _, per_call = events_by_call(run)
    n = run.case.num_envs
    real_steps = 0
    observations = 0
    returns = [0.0] * n
    for call in run.calls:
        last_real_step: dict[int, StepRecord] = {}
        for env, record in per_call[call.position]:
            if isinstance(record, ResetRecord):
                returns[env] = 0.0
                last_real_step.pop(env, None)
            elif isinstance(record, StepRecord) and not record.after_end:
                real_steps += 1
                if gamma is not None:
                    returns[env] = returns[env] * gamma + record.reward
                last_real_step[env] = record
        if call.failed or call.view is None:
            continue
        touched = call.view.touched or [True] * n
        observations += sum(touched)
        where = {"agent_step": call.agent_step or None, "call": call.position}
        if "return_rms" in call.extra:
            count = call.extra["return_rms"][2]
            ck.expect(
                math.isclose(count, RMS_EPSILON + real_steps, abs_tol=1e-6),
                f"the return statistics count {count - RMS_EPSILON:g} samples; {real_steps} real transitions had been made",
                **where,
            )
            accumulated = call.extra.get("accumulated_reward")
            if accumulated is not None and gamma is not None:
                for env, record in last_real_step.items():
                    if record.terminated or record.truncated or _ended_by_limit(run, record):
                        continue
                    ck.expect(
                        math.isclose(float(accumulated[env]), returns[env], rel_tol=1e-5, abs_tol=1e-6),
                        f"the discounted return of episode {record.episode} after {record.step_after} step(s) is "
                        f"{float(accumulated[env])!r}; its real rewards discount to {returns[env]!r}",
                        env=env,
                        agent_step=call.agent_step or None,
                    )
        if "obs_rms" in call.extra:
            count = call.extra["obs_rms"][2]
            ck.expect(
                math.isclose(count, RMS_EPSILON + observations, abs_tol=1e-6),
                f"the observation statistics count {count - RMS_EPSILON:g} samples; {observations} observations had been returned",
                **where,
            )
        model_call = model_counterpart(run, call.position)
        if model_call is not None:
            for key in ("return_rms", "obs_rms"):
                if key in call.extra and key in model_call.extra:
                    got, want = call.extra[key], model_call.extra[key]
                    same = _same_statistics(got, want)
                    ck.expect(
                        same,
                        f"{key} (mean {_fmt(got[0])}, var {_fmt(got[1])}) differs from the reference model's "
                        f"(mean {_fmt(want[0])}, var {_fmt(want[1])})",
                        **where,
                    )
    return ck.done()


def _same_statistics(got: Any, want: Any) -> bool:
    """Running mean and variance equal up to the rounding of statistics kept in float32 (as
    Gymnasium's NormalizeObservation keeps them): a variance computed in float32 carries an error
    of order eps32 * mean**2. Counting the wrong samples moves them by far more."""
    mean_got, mean_want = np.asarray(got[0], dtype=np.float64), np.asarray(want[0], dtype=np.float64)
    var_got, var_want = np.asarray(got[1], dtype=np.float64), np.asarray(want[1], dtype=np.float64)
    scale = 1.0 + mean_want**2
    return bool(
        np.allclose(mean_got, mean_want, rtol=1e-5, atol=1e-5)
        and np.all(np.abs(var_got - var_want) <= 1e-4 * np.abs(var_want) + 1e-5 * scale)
    )


def _ended_by_limit(run: Run, record: StepRecord) -> bool:
    limit = run.case.script.max_episode_steps
    return limit is not None and record.step_after >= limit


def _fmt(value: Any) -> str:
    array = np.asarray(value, dtype=np.float64)
    if array.shape == ():
        return f"{float(array):.6g}"
    return np.array2string(array, precision=4, max_line_width=60)
