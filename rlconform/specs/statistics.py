"""Statistics specs: episode statistics and running normalizers count only real transitions and
real episodes."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from rlconform.core.spec import Checker, Outcome, spec
from rlconform.envs.calllog import ResetRecord, StepRecord
from rlconform.specs.families import TUPLE_FAMILIES
from rlconform.specs.helpers import contract_of, events_by_call, match_transitions, model_counterpart, reward_precision
from rlconform.specs.value_changes import stack_truncation

if TYPE_CHECKING:
    from rlconform.envs.driver import Run

RMS_EPSILON = 1e-4


def _inside(run: Run, *, one: bool = False) -> str:
    """Where a layer reported per sub-env sits, in words: around each sub-env of a vector env, or
    in a single env's own wrapper chain."""
    if not contract_of(run.system).vectorized:
        return "in the env's wrapper chain"
    return "inside a sub-env" if one else "inside each sub-env"


def _owner(run: Run) -> str:
    return "sub-env's" if contract_of(run.system).vectorized else "env's"


#: the semantics key of the counts a user's own normalizer's statistics started from
#: (rlconform.specs.own_normalizers); the libraries' start at :data:`RMS_EPSILON`
NORMALIZER_BASE_COUNTS = "normalizer_base_counts"
#: the semantics key naming a user's own normalizer layer, for the messages
NORMALIZER_LAYER = "normalizer_layer"


#: the info key a recorder reports an ended episode's statistics under, in both documented layouts:
#: Gymnasium's ``info["episode"] = {"r", "l", "t"}`` (batched under the mask ``info["_episode"]`` by a
#: vector env) and SB3's ``infos[i]["episode"]``
EPISODE_KEY = "episode"

#: the ``episode_statistics`` reading of a stack with a layer of the user's own (its class defined
#: outside the libraries and rlconform): such a layer may record episodes, and whether it does is
#: read from what the stack reports (:func:`reported_statistics`), not from its class name
BY_OUTPUT = "episode (if reported)"

#: the top-level packages whose classes rlconform knows by name; a layer of any other package is
#: the user's own
KNOWN_PACKAGES = frozenset({"gymnasium", "gym", "stable_baselines3", "torchrl", "shimmy", "rlconform", "builtins"})

NOTHING_REPORTED = (
    "the system keeps no episode statistics: no layer is a recorder rlconform knows, and no call reported "
    "info['episode'] with 'r' and 'l' (the documented layouts of Gymnasium and SB3)"
)


def episode_statistics_reading(chain: Sequence[Any], recorder: str) -> str | None:
    """What a family's ``describe_semantics`` says of a stack's episode statistics, ``chain`` being
    its layers from the outside in (``core.family.layer_chain``): ``"episode"`` when a layer is
    the library's ``recorder`` (``RecordEpisodeStatistics``, ``VecMonitor``) or its reference
    model; :data:`BY_OUTPUT` when a layer is the user's own (:data:`KNOWN_PACKAGES`), whose
    statistics, if it reports any, ``statistics.episode`` checks by what it reports; None when
    the stack is made of known layers only and none records episodes. A user's class and the
    library's class that report the same statistics then get the same verdict."""
    if any(is_a(layer, recorder, f"Model{recorder}") for layer in chain):
        return EPISODE_KEY
    if any(user_layer(layer) for layer in chain):
        return BY_OUTPUT
    return None


def user_layer(layer: Any) -> bool:
    """Whether ``layer``'s class is the user's own: defined outside :data:`KNOWN_PACKAGES`."""
    module = getattr(type(layer), "__module__", "") or ""
    return module.split(".")[0] not in KNOWN_PACKAGES


def reported_statistics(run: Run) -> tuple[str, str] | None:
    """(key, place) of the episode statistics the stack reported in this run, read off its outputs
    in the documented layouts: an info's :data:`EPISODE_KEY` holding ``r`` and ``l``, in a step's
    info (``"info"``) or only ever in a same-step vectorizer's ``final_info`` (``"final_info"``,
    a recorder around each sub-env); None when no call reported any."""
    in_final = False
    for call in run.calls:
        view = call.view
        if view is None or call.failed:
            continue
        for infos, final in ((view.infos, False), (view.final_infos, True)):
            for info in infos or ():
                stats = info.get(EPISODE_KEY) if isinstance(info, Mapping) else None
                if stats is None or _get(stats, "r") is None or _get(stats, "l") is None:
                    continue
                if not final:
                    return EPISODE_KEY, "info"
                in_final = True
    return (EPISODE_KEY, "final_info") if in_final else None


def _keeps_no_statistics(semantics: Mapping[str, Any]) -> str | None:
    if semantics.get("episode_statistics"):
        return None
    workers = semantics.get("sub_env_workers")
    if workers:
        # the sub-envs' layers are in other processes: a recorder there may well exist, and its
        # statistics arrive in the infos, but nothing says which key and over which rewards
        return (
            f"the stack keeps no episode statistics outside its sub-envs, and they run in {workers}'s worker "
            "processes: statistics kept inside them (a RecordEpisodeStatistics or Monitor around each sub-env, whose "
            "statistics arrive in the infos) cannot be read from this process, so they are not checked"
        )
    return "the system keeps no episode statistics"


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
        workers = semantics.get("sub_env_workers")
        if workers:
            return (
                f"the stack has no running normalizer outside its sub-envs, and they run in {workers}'s worker "
                "processes: a normalizer inside them (NormalizeObservation or NormalizeReward around each sub-env) cannot "
                "be read from this process, so it is not checked"
            )
        return "the system has no running normalizer"
    frozen = [n for n in normalizers if _is_frozen(n)]
    if len(frozen) == len(normalizers):
        return (
            f"the running normalizer is frozen ({', '.join(map(str, frozen))}, its documented evaluation "
            "setup): it updates no statistics, so there are none to check"
        )
    return None


#: where an ended episode's statistics are read from (the ``episode_statistics_in`` semantics): the
#: info of the step that ends it, or the ``final_info`` a same-step vectorizer keeps the ended
#: sub-env's step info in (its top-level info then holds the info of the reset it made)
STATISTICS_PLACES = ("info", "final_info")


def sub_env_layers_of_class(
    layers_by_env: Mapping[int, Sequence[Any]], class_name: str
) -> dict[int, tuple[Any, list[Any]]]:
    """For each sub-env (:func:`rlconform.envs.tap.sub_env_layers`), its outermost layer whose class
    (or a base class) is named ``class_name``, with the layers below it (outermost first)."""
    found: dict[int, tuple[Any, list[Any]]] = {}
    for env, layers in layers_by_env.items():
        for at, layer in enumerate(layers):
            if is_a(layer, class_name):
                found[env] = (layer, list(layers[at + 1 :]))
                break
    return found


def user_sub_env_layers(layers_by_env: Mapping[int, Sequence[Any]]) -> dict[int, tuple[Any, list[Any]]]:
    """For each sub-env, its outermost layer of the user's own (:func:`user_layer`), with the
    layers below it: where a recorder of the user's own around each sub-env may be, to be read by
    what it reports (:data:`BY_OUTPUT`), as a library recorder there is read by class."""
    found: dict[int, tuple[Any, list[Any]]] = {}
    for env, layers in layers_by_env.items():
        for at, layer in enumerate(layers):
            if user_layer(layer):
                found[env] = (layer, list(layers[at + 1 :]))
                break
    return found


def is_a(layer: Any, *class_names: str) -> bool:
    """Whether ``layer``'s class or one of its bases is named one of ``class_names``."""
    return any(cls.__name__ in class_names for cls in type(layer).__mro__)


def sub_env_statistics(
    recorders: Mapping[int, tuple[Any, list[Any]]],
    *,
    key: str,
    place: str,
    decimals: int | None,
    reward_changers: Sequence[str],
) -> dict[str, Any]:
    """The semantics of episode recorders inside the sub-envs (``recorders``, from
    :func:`sub_env_layers_of_class`): the info ``key`` they write, the sub-envs that have one,
    where an ended episode's statistics are (:data:`STATISTICS_PLACES`), the decimals the
    recorder documents rounding the return to, and, per sub-env, the layers below its recorder
    whose classes are named in ``reward_changers`` (the recorder sums the rewards they changed).
    Empty without recorders."""
    if place not in STATISTICS_PLACES:
        raise ValueError(f"{place!r} is not one of {STATISTICS_PLACES}")
    if not recorders:
        return {}
    changed = {
        env: names
        for env, (_, below) in recorders.items()
        if (names := [type(layer).__name__ for layer in below if is_a(layer, *reward_changers)])
    }
    return {
        "episode_statistics": key,
        "episode_statistics_envs": sorted(recorders),
        "episode_statistics_in": place,
        "episode_statistics_decimals": decimals,
        "episode_statistics_rewards_changed_by": changed,
    }


def sub_env_normalizer(name: str) -> str:
    """The ``normalizers`` entry of a running normalizer the user put inside each sub-env."""
    return f"sub-env {name}"


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
    needs=("usable",),
)
def episode_statistics(run: Run) -> Outcome:
    ck = Checker()
    key = run.semantics["episode_statistics"]  # applies_to_stack: the stack keeps statistics
    assert run.truth is not None
    # a recorder inside each sub-env (CleanRL's RecordEpisodeStatistics per env thunk, SB3's
    # Monitor) sums the sub-env's own rewards, before a vectorizer stores them in its batch
    envs = run.semantics.get("episode_statistics_envs")
    per_env = envs is not None
    place = run.semantics.get("episode_statistics_in") or "info"
    if key == BY_OUTPUT:
        # a layer of the user's own: a recorder is whatever reports statistics in the documented
        # layout, and it is held to what the library's recorders are held to
        reported = reported_statistics(run)
        if reported is None:
            return ck.not_applicable(NOTHING_REPORTED)
        key, place = reported
        ck.note(
            "episode statistics reported by a layer of the user's own (info['episode'] with 'r' and 'l') are "
            "checked as the library's recorders are"
        )
    decimals = run.semantics.get("episode_statistics_decimals")
    changed_by: Mapping[int, list[str]] = run.semantics.get("episode_statistics_rewards_changed_by") or {}
    rel = 1e-5 if reward_precision(run) == "float32" and not per_env else 1e-9
    if per_env:
        where_read = "the ended sub-env's final_info" if place == "final_info" else "the step's info"
        ck.note(f"episode statistics recorded {_inside(run)} are read from {where_read}")
    if decimals is not None:
        ck.note(f"the recorder documents its return rounded to {decimals} decimals: compared within that rounding")
    for env in range(run.case.num_envs):
        if envs is not None and env not in envs:
            continue
        if changed_by.get(env):
            ck.note(
                f"env {env}: the recorder sums the rewards {', '.join(changed_by[env])} below it changed; "
                "its returns are not compared with the env's"
            )
        matches, _ = match_transitions(run, env)
        delivered = _delivered_returns(run, env, matches)
        for m in matches:
            t = m.truth
            call = run.calls[m.slot.call]
            stats = _statistics_at(call.view, env, key, place)
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
            episode = run.truth.envs[env].episode(t.episode)
            assert episode is not None
            true_return = math.fsum(x.reward for x in episode.transitions)
            true_length = len(episode.transitions)
            missing = f"episode {t.episode} ended but no episode statistics were reported"
            if place == "final_info":
                missing += " in its final_info"
            if not ck.expect(stats is not None, missing, **where):
                continue
            got_r, got_l = _get(stats, "r"), _get(stats, "l")
            if not changed_by.get(env):
                rounding = (
                    "" if decimals is None else f" (rounded to {decimals} decimals: {round(true_return, decimals)!r})"
                )
                # a recorder above a layer that changes rewards sums the changed rewards: the
                # rewards the stack delivered for the episode, when every one of them was delivered
                agent_return = delivered.get(t.episode)
                as_delivered = (
                    got_r is not None
                    and agent_return is not None
                    and not _same_return(agent_return, true_return, rel, decimals)
                    and _same_return(float(got_r), agent_return, rel, decimals)
                )
                if as_delivered:
                    ck.note(
                        "a recorder above a layer that changes rewards reports the sum of the rewards the stack "
                        "delivered: compared with that sum"
                    )
                ck.expect(
                    got_r is not None and (as_delivered or _same_return(float(got_r), true_return, rel, decimals)),
                    f"episode {t.episode} is reported with return {_plain(got_r)!r}; its {true_length} real transitions "
                    f"sum to {true_return!r}{rounding}"
                    + ("" if agent_return is None else f" and the stack delivered rewards summing to {agent_return!r}"),
                    **where,
                )
            ck.expect(
                got_l is not None and int(got_l) == true_length,
                f"episode {t.episode} is reported with length {_plain(got_l)!r}; it had {true_length} real transitions",
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


def _delivered_returns(run: Run, env: int, matches: Sequence[Any]) -> dict[int, float]:
    """Per episode of ``env``, the sum of the rewards the stack delivered for its transitions, for
    the episodes all of whose real transitions were delivered one by one (no frame skip)."""
    assert run.truth is not None
    rewards: dict[int, list[float]] = {}
    for m in matches:
        t = m.truth
        view = run.calls[m.slot.call].view
        if t is None or m.span or view is None or view.rewards is None:
            continue
        rewards.setdefault(t.episode, []).append(float(view.rewards[env]))
    sums: dict[int, float] = {}
    for episode, values in rewards.items():
        truth = run.truth.envs[env].episode(episode)
        if truth is not None and len(values) == len(truth.transitions):
            sums[episode] = math.fsum(values)
    return sums


def _statistics_at(view: Any, env: int, key: str, place: str) -> Any:
    """The statistics ``env``'s entry of a call's output holds: in its info, or, for a sub-env the
    call reports ended and a recorder documented to be read from ``final_info``, in that."""
    if view is None:
        return None
    ended = bool(
        view.terminated is not None and view.truncated is not None and (view.terminated[env] or view.truncated[env])
    )
    final = view.final_infos[env] if place == "final_info" and view.final_infos is not None else None
    # a sub-env that goes on has no final_info: statistics there, or in its info, are reported
    places = (
        [final] if ended and place == "final_info" else [final, view.infos[env] if view.infos is not None else None]
    )
    found = [info.get(key) for info in places if isinstance(info, Mapping) and info.get(key) is not None]
    return found[0] if found else None


def _same_return(got: float, want: float, rel: float, decimals: int | None) -> bool:
    """``got`` is ``want``; with ``decimals``, ``want`` rounded to that many decimals (half a unit
    of the last decimal, plus the float representation of the rounded value, and no more)."""
    if decimals is None:
        return math.isclose(got, want, rel_tol=rel, abs_tol=1e-9)
    return abs(got - want) <= 0.5 * 10.0**-decimals + 4 * math.ulp(max(1.0, abs(want)))


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
    needs=("usable",),
)
def normalizer_statistics(run: Run) -> Outcome:
    ck = Checker()
    assert run.truth is not None
    gamma = run.semantics.get("normalizer_gamma")
    # the counts the statistics started from: a user's own normalizer reports them when the stack
    # is built (rlconform.specs.own_normalizers); the libraries' start at their epsilon
    base: Mapping[str, float] = run.semantics.get(NORMALIZER_BASE_COUNTS) or {}
    return_base, obs_base = base.get("return_rms", RMS_EPSILON), base.get("obs_rms", RMS_EPSILON)
    # a user's own normalizer is named in the message (the library's is the stack's only one)
    layer = run.semantics.get(NORMALIZER_LAYER)
    of = f" of {layer}" if layer else ""
    before, per_call = events_by_call(run)
    _check_sub_env_normalizers(run, ck, before, per_call)
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
                math.isclose(count, return_base + real_steps, abs_tol=1e-6),
                f"the return statistics{of} count {count - return_base:g} samples; {real_steps} real transitions had been made",
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
                math.isclose(count, obs_base + observations, abs_tol=1e-6),
                f"the observation statistics{of} count {count - obs_base:g} samples; {observations} observations had been returned",
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


def _check_sub_env_normalizers(run: Run, ck: Checker, before: list[Any], per_call: list[list[Any]]) -> None:
    """The running normalizers the user put inside each sub-env (the family reads their statistics
    after each call into ``extra["sub_env_normalizers"]``): each counts its own sub-env only. A
    NormalizeReward takes one sample per real step of its sub-env; a NormalizeObservation one per
    observation its sub-env returned, the first of each episode (from ``reset``) included, as
    Gymnasium documents it (its statistics are updated "every time step or reset is called")."""
    gammas: Mapping[int, float] = run.semantics.get("sub_env_normalizer_gamma") or {}
    n = run.case.num_envs
    built_with = {env for env, _ in before}
    steps, observations, returns = [0] * n, [0] * n, [0.0] * n
    for call in run.calls:
        last_real_step: dict[int, StepRecord] = {}
        for env, record in per_call[call.position]:
            if isinstance(record, ResetRecord):
                observations[env] += 1
                returns[env] = 0.0
                last_real_step.pop(env, None)
            elif isinstance(record, StepRecord):
                observations[env] += 1
                if not record.after_end:
                    steps[env] += 1
                    if env in gammas:
                        returns[env] = returns[env] * gammas[env] + record.reward
                    last_real_step[env] = record
        normalizers: Mapping[int, Mapping[str, Any]] = call.extra.get("sub_env_normalizers") or {}
        for env, stats in sorted(normalizers.items()):
            if env in built_with:
                ck.note(
                    f"env {env} was reset or stepped while the stack was built: its normalizer's count is not checked"
                )
                continue
            where = {"env": env, "agent_step": call.agent_step or None, "call": call.position}
            if "obs_count" in stats:
                ck.note(
                    f"a NormalizeObservation {_inside(run, one=True)} counts every observation its env returns, the "
                    "first of each episode (from reset) included, as Gymnasium documents"
                )
                count = stats["obs_count"]
                ck.expect(
                    math.isclose(count, RMS_EPSILON + observations[env], abs_tol=1e-6),
                    f"the observation statistics of the sub-env's {stats.get('obs_layer', 'normalizer')} count "
                    f"{count - RMS_EPSILON:g} samples; the sub-env had returned {observations[env]} observations",
                    **where,
                )
            if "return_count" not in stats:
                continue
            count = stats["return_count"]
            ck.expect(
                math.isclose(count, RMS_EPSILON + steps[env], abs_tol=1e-6),
                f"the return statistics of the sub-env's {stats.get('return_layer', 'normalizer')} count "
                f"{count - RMS_EPSILON:g} samples; the sub-env had made {steps[env]} real transitions",
                **where,
            )
            changed_by = stats.get("rewards_changed_by") or []
            if changed_by:
                ck.note(
                    f"env {env}: the reward normalizer accumulates the rewards {', '.join(changed_by)} below it "
                    "changed; its discounted return is not compared with the env's"
                )
                continue
            record = last_real_step.get(env)
            accumulated = stats.get("accumulated_reward")
            if record is None or accumulated is None or env not in gammas:
                continue
            if record.terminated or record.truncated or _ended_by_limit(run, record):
                continue
            ck.expect(
                math.isclose(float(accumulated), returns[env], rel_tol=1e-5, abs_tol=1e-6),
                f"the discounted return of episode {record.episode} after {record.step_after} step(s) is "
                f"{float(accumulated)!r} in the {_owner(run)} {stats.get('return_layer', 'normalizer')}; its real "
                f"rewards discount to {returns[env]!r}",
                env=env,
                agent_step=call.agent_step or None,
            )


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


def _plain(value: Any) -> Any:
    """A NumPy scalar as the Python number it holds (``3``, not ``np.int64(3)``), for messages."""
    return value.item() if isinstance(value, np.generic) else value


def _fmt(value: Any) -> str:
    array = np.asarray(value, dtype=np.float64)
    if array.shape == ():
        return f"{float(array):.6g}"
    return np.array2string(array, precision=4, max_line_width=60)
