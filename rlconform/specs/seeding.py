"""Seeding specs: reset(seed) determinism, seed + i per sub-env, distinct sub-env seeds.

``seeding.seed_plus_i`` and ``seeding.distinct_seeds`` read Gymnasium's and SB3's documented
``reset(seed=s)`` convention and leave ``torchrl.EnvBase`` out: TorchRL documents no seed + i; it
seeds through ``env.set_seed(s)``, whose convention differs by env class (a batched env chains
``torchrl._utils.seed_generator``, a GymWrapper around a vector env passes s on), see
:mod:`rlconform.libraries.torchrl.env_family`. ``seeding.reset_determinism`` needs no convention and applies."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from rlconform.core.spec import Checker, Outcome, spec
from rlconform.envs.calllog import LogRecord, ResetRecord, StepRecord
from rlconform.envs.decode import decode
from rlconform.envs.plan import Reset
from rlconform.envs.spaces import SmallDiscreteObs, values_changed
from rlconform.envs.stamp import Stamp
from rlconform.specs.families import TRANSITION_FAMILIES, VECTOR_FAMILIES
from rlconform.specs.helpers import events_by_call, observation_leaves, resets_in, rewards_equal
from rlconform.specs.value_changes import declared

if TYPE_CHECKING:
    from rlconform.envs.driver import Run
    from rlconform.envs.trace import CallRecord


def _seeded_resets(run: Run) -> list[CallRecord]:
    return [
        c for c in run.calls if isinstance(c.op, Reset) and not c.implied and c.op.seed is not None and not c.failed
    ]


def _touched(call: CallRecord, env: int) -> bool:
    op = call.op
    assert isinstance(op, Reset)
    return op.mask is None or bool(op.mask[env])


@spec(
    "seeding.seed_plus_i",
    impact="reproducibility",
    statement="reset(seed=s) on a vector env resets sub-env i with seed s + i, exactly once.",
    rationale=(
        "Gymnasium and SB3 document seed + i; experiment scripts rely on it to reproduce runs. A vectorizer that "
        "passes s to every sub-env, or drops the seed, makes 'seeded' runs irreproducible or correlated."
    ),
    families=VECTOR_FAMILIES,
    needs=("usable",),
)
def seed_plus_i(run: Run) -> Outcome:
    ck = Checker()
    _, per_call = events_by_call(run)
    for call in _seeded_resets(run):
        assert isinstance(call.op, Reset) and call.op.seed is not None
        for env in range(run.case.num_envs):
            if not _touched(call, env):
                continue
            resets = resets_in(per_call[call.position], env)
            seeds = [r.seed for r in resets]
            ck.expect(
                seeds == [call.op.seed + env],
                f"{call.source} reset the env with seed(s) {seeds}; expected [{call.op.seed + env}] (seed + index)",
                env=env,
                call=call.position,
            )
    return ck.done()


@spec(
    "seeding.distinct_subenv_seeds",
    impact="training-data",
    statement="One seeded reset gives every sub-env a different seed.",
    rationale="Sub-envs that share a seed produce identical trajectories: the batch holds copies, not samples.",
    families=VECTOR_FAMILIES,
    needs=("usable",),
)
def distinct_seeds(run: Run) -> Outcome:
    ck = Checker()
    _, per_call = events_by_call(run)
    for call in _seeded_resets(run):
        seen: dict[int | None, int] = {}
        for env in range(run.case.num_envs):
            if not _touched(call, env):
                continue
            for reset in resets_in(per_call[call.position], env):
                other = seen.get(reset.seed)
                ck.expect(
                    other is None,
                    f"{call.source} gave env {env} the seed {reset.seed}, which env {other} also received",
                    env=env,
                    call=call.position,
                )
                seen[reset.seed] = env
    return ck.done()


#: the place of an observation that carries no stamp in :func:`_content`'s rows
_HIDDEN = ("garbage",)
#: how observations are told whose values the stack changes and gives no inverse for (a running
#: normaliser of the user's own): they differ between the seeded runs where the env's agree
_RENORMALIZED = (
    "observations whose values the stack changes (normalised, scaled) with no inverse to read them back are not "
    "compared across seeded runs: a running normaliser's statistics are not reset by a seeded reset"
)
#: a reward the stack changes as declared and does not give back in env units: a declared change
#: may depend on the history (a running normalizer inside each sub-env scales by every reward
#: since it was built), so two seeded runs need not agree on it
_DECLARED_REWARD = "changed as declared"
_REWARDS_NOT_COMPARED = (
    "rewards changed by the stack as declared (--intended reward) and not given back in env units are not "
    "compared across seeded runs: a declared change may depend on the history (a running normalizer's scale)"
)


def _logged(events: list[tuple[int, LogRecord]], env: int) -> Stamp | None:
    """The stamp of the observation ``env`` last made in a call, by its log (None: it made none)."""
    made = _made(events, env)
    return made[-1] if made else None


def _made(events: list[tuple[int, LogRecord]], env: int) -> list[Stamp]:
    """The stamps of every observation ``env`` made in a call, in order (a frame skip makes several)."""
    return [record.stamp for e, record in events if e == env and isinstance(record, (ResetRecord, StepRecord))]


def _where(stamp: Stamp | None) -> tuple[int, ...] | None:
    """(env, step, salt): the lifetime episode counter left out, as in :func:`_content`."""
    return None if stamp is None else (stamp.env, stamp.step, stamp.salt)


def _differs_where_env_agrees(run: Run, made_a: list[Stamp], made_b: list[Stamp], obs_a: Any, obs_b: Any) -> str | None:
    """Where two seeded runs' observations of one sub-env differ although the env returned the
    same values there, worded; None where they agree or cannot be compared.

    ``made_a`` and ``made_b`` are the observations the env made during each call, by its log:
    one per env step, several under a frame skip whose output may pool them (a max over the last
    frames), so a component counts as agreeing only where every frame of the call agrees.

    Two ``reset(seed=s)`` runs of a reference env differ only in its lifetime episode counter
    (and the checksum and filler it feeds): the log gives both observations the env returned
    (``la``, ``lb``). A deterministic stack returns the same values wherever those agree,
    whatever it does to them (a clip cuts the counter in one run and not in the other, and
    leaves the rest as it was); a stack that keeps state across a seeded reset (a clip whose
    bound moves with the calls it has seen) does not. Observations of another layout than the
    env's, and small Discrete codes (a code is the env call's serial, which differs between the
    runs), are not compared."""
    codec = run.case.script.obs
    if isinstance(codec, SmallDiscreteObs) or not made_a or len(made_a) != len(made_b):
        return None
    la, lb = made_a[-1], made_b[-1]
    got_a, got_b = observation_leaves(obs_a), observation_leaves(obs_b)
    if got_a is None or got_b is None:
        return None
    agree = np.ones(got_a.shape, dtype=bool)
    for fa, fb in zip(made_a, made_b, strict=True):
        env_a, env_b = observation_leaves(codec.encode(fa)), observation_leaves(codec.encode(fb))
        if env_a is None or env_b is None or not env_a.shape == env_b.shape == got_a.shape == got_b.shape:
            return None
        agree &= env_a == env_b
    env_a = observation_leaves(codec.encode(la))
    assert env_a is not None
    differ = agree & ~np.isclose(got_a, got_b, rtol=0.0, atol=1e-3, equal_nan=True)
    if not np.any(differ):
        return None
    i = int(np.flatnonzero(differ)[0])
    more = int(np.count_nonzero(differ)) - 1
    others = f" (and {more} more such component{'s' if more > 1 else ''})" if more else ""
    return (
        f"component {i} of the observation is {got_b[i]:g} here but {got_a[i]:g} after the earlier reset, where the "
        f"env returned the same value ({env_a[i]:g}) both times{others}: the env's observations were {la.short()} "
        f"and {lb.short()}, which differ only in its lifetime episode counter"
    )


def _stack_changed_values(run: Run, value: Any) -> bool:
    """Whether an observation's values were changed by the stack beyond decoding (a normaliser)."""
    return values_changed(decode(run, value))


def _made_by_env(run: Run, decoded: Any) -> bool:
    """Whether ``decoded`` is a stamp some env of the run made: the stack gave an env's
    observation back (a transform's output can decode by chance to a stamp no env made)."""
    if not isinstance(decoded, Stamp) or run.truth is None:
        return isinstance(decoded, Stamp)
    key = ("made_stamps",)
    made = run.memo.get(key)
    if made is None:
        made = {
            record.stamp
            for env in run.truth.envs
            for record in env.records
            if isinstance(record, (ResetRecord, StepRecord))
        }
        run.memo[key] = made
    return decoded in made


#: how the rewards of a running normalizer are told: rescaled in both runs, by scales that differ
_RESCALED = (
    "rewards the stack rescales by a positive factor that differs between the seeded runs (a running "
    "normalizer's scale, which a seeded reset does not reset) are compared in env units: the env's rewards agree"
)


def _env_reward(events: list[tuple[int, LogRecord]], env: int) -> float | None:
    """The reward of ``env``'s one real step in a call, by its log (None: not exactly one)."""
    steps = [r for e, r in events if e == env and isinstance(r, StepRecord) and not r.after_end]
    return steps[0].reward if len(steps) == 1 else None


def _rescaled(got_a: Any, got_b: Any, env_a: float | None, env_b: float | None) -> bool:
    """Whether two seeded runs' rewards differ only by a normalizer's scale: the env made the same
    reward in both, and each run delivered it changed, times a positive factor. A stack
    that normalizes rewards behaves so whatever its class (VecNormalize's rewards are read back
    in env units by the family; a user's own normalizer gives none back): the same verdict for
    the same behaviour."""
    if env_a is None or env_b is None or not rewards_equal(env_a, env_b, "float64"):
        return False
    try:
        a, b = float(got_a), float(got_b)
    except (TypeError, ValueError):
        return False
    if env_a == 0.0 or rewards_equal(a, env_a, "float32") or rewards_equal(b, env_b, "float32"):
        # the stack gave the env's reward back in one run (a stale or lost value in the other is
        # the state a seeded reset must clear), or there is no scale to read
        return False
    return a / env_a > 0.0 and b / env_b > 0.0


def _same_reward(a: Any, b: Any) -> bool:
    if _DECLARED_REWARD in (a, b):
        return bool(a == b)
    return rewards_equal(a, b, "float64")


def _content(run: Run, call: CallRecord) -> list[tuple[Any, ...]]:
    """What a call returned, with the env's lifetime episode counter left out."""
    view = call.view
    assert view is not None
    rows: list[tuple[Any, ...]] = []
    rewards: list[Any] | None = view.rewards_in_env_units()
    if rewards is not None and view.env_rewards is None and declared(run, "reward"):
        rewards = [_DECLARED_REWARD] * len(rewards)
    for env in range(run.case.num_envs):
        stamp = decode(run, view.obs_in_env_units()[env])
        where = _where(stamp) if isinstance(stamp, Stamp) and _made_by_env(run, stamp) else _HIDDEN
        row: tuple[Any, ...] = (where,)
        if view.kind == "step":
            assert view.terminated is not None and view.truncated is not None
            row += (None if rewards is None else rewards[env], view.terminated[env], view.truncated[env])
        rows.append(row)
    return rows


@spec(
    "seeding.reset_determinism",
    impact="reproducibility",
    statement="After reset(seed=s), the same actions give the same observations, rewards and flags, every time.",
    rationale=(
        "Reproducibility is the point of seeding; a vectorizer that keeps state across a seeded reset (a pending "
        "autoreset, a stale buffer) makes two seeded runs diverge."
    ),
    scenario="reseed",
    families=TRANSITION_FAMILIES,
    needs=("usable",),
)
def reset_determinism(run: Run) -> Outcome:
    ck = Checker()
    segments: dict[int, list[list[CallRecord]]] = {}
    current: list[CallRecord] | None = None
    for call in run.calls:
        if isinstance(call.op, Reset) and not call.implied:
            current = None
            if call.op.seed is not None and call.op.mask is None and not call.failed:
                current = [call]
                segments.setdefault(call.op.seed, []).append(current)
            continue
        if current is not None:
            current.append(call)
    _, per_call = events_by_call(run)
    for seed, runs in segments.items():
        first = runs[0]
        for other in runs[1:]:
            for a, b in zip(first, other, strict=False):
                if a.op != b.op or a.implied != b.implied:
                    break
                if a.failed or b.failed or a.view is None or b.view is None:
                    ck.expect(
                        a.failed == b.failed,
                        f"{b.source} failed after one seeded reset and not after the other",
                        call=b.position,
                    )
                    break
                ca, cb = _content(run, a), _content(run, b)
                for env, (ra, rb) in enumerate(zip(ca, cb, strict=True)):
                    if _HIDDEN in (ra[0], rb[0]):
                        # a transform hid the stamp in one run or both (a clip keeps a small
                        # lifetime episode counter and cuts a larger one): where the env was is
                        # read from its log, the stack's rewards and flags as returned, and its
                        # observations are compared where the env returned the same values
                        la, lb = _logged(per_call[a.position], env), _logged(per_call[b.position], env)
                        ra, rb = (_where(la), *ra[1:]), (_where(lb), *rb[1:])
                        obs_a, obs_b = a.view.obs_in_env_units()[env], b.view.obs_in_env_units()[env]
                        differs = _differs_where_env_agrees(
                            run, _made(per_call[a.position], env), _made(per_call[b.position], env), obs_a, obs_b
                        )
                        if differs is not None and (
                            _stack_changed_values(run, obs_a) or _stack_changed_values(run, obs_b)
                        ):
                            ck.note(_RENORMALIZED)
                        elif differs is not None:
                            ck.fail(
                                f"after reset(seed={seed}) the same calls returned another observation than after the "
                                f"earlier reset(seed={seed}): {differs}",
                                env=env,
                                agent_step=b.agent_step or None,
                                call=b.position,
                            )
                    if len(ra) > 1 and ra[1] == _DECLARED_REWARD:
                        ck.note(_REWARDS_NOT_COMPARED)
                    same_reward = len(ra) < 2 or _same_reward(ra[1], rb[1])
                    if not same_reward and _rescaled(
                        ra[1],
                        rb[1],
                        _env_reward(per_call[a.position], env),
                        _env_reward(per_call[b.position], env),
                    ):
                        ck.note(_RESCALED)
                        same_reward = True
                    same = ra[0] == rb[0] and ra[2:] == rb[2:] and same_reward
                    ck.expect(
                        same,
                        f"after reset(seed={seed}) the same calls returned {rb} here but {ra} after the earlier reset(seed={seed}) "
                        "(fields: (env, step, salt), reward, terminated, truncated)",
                        env=env,
                        agent_step=b.agent_step or None,
                        call=b.position,
                    )
    return ck.done()
