"""The specs of a ready-made vector env (``vector.*``, family ``gymnasium.VectorEnv``), black-box.

Nothing the env returns can be decoded, so each spec compares the env with itself (the same seed
and actions twice; other actions for the other sub-envs), with what it declares (its spaces, its
autoreset mode, its time limit) and, where the user names one, with its single env.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from rlconform.core.compare import first_difference
from rlconform.core.spec import Checker, Outcome, spec
from rlconform.libraries.gymnasium.native_vector import Call, Drive, NativeRun
from rlconform.specs.families import NATIVE_VECTOR

FAMILIES = frozenset({NATIVE_VECTOR})


def _steps(drive: Drive | None) -> Iterator[tuple[int, Call]]:
    for position, call in enumerate(drive.calls if drive else []):
        if call.kind == "step" and call.error is None and isinstance(call.snapshot, tuple) and len(call.snapshot) == 5:
            yield position, call


def _flags(call: Call) -> tuple[np.ndarray, np.ndarray]:
    return np.asarray(call.snapshot[2], dtype=bool), np.asarray(call.snapshot[3], dtype=bool)


def _infos(call: Call) -> Mapping[str, Any]:
    info = call.snapshot[-1] if isinstance(call.snapshot, tuple) else {}
    return info if isinstance(info, Mapping) else {}


def _index(value: Any, i: int, space: Any = None) -> Any:
    """Sub-env ``i``'s part of a batched value: a dict or tuple of batches, or one batch. With the
    single ``space`` it follows the space (Gymnasium batches a Text leaf as a tuple of strings, one
    per sub-env, and a Dict or Tuple space as a dict or tuple of batches)."""
    if space is not None:
        spaces = getattr(space, "spaces", None)
        if isinstance(value, Mapping) and isinstance(spaces, Mapping):
            return {k: _index(v, i, spaces.get(k)) for k, v in value.items()}
        if isinstance(value, tuple) and isinstance(spaces, tuple) and len(spaces) == len(value):
            return tuple(_index(v, i, sub) for v, sub in zip(value, spaces, strict=True))
        return value[i]
    if isinstance(value, Mapping):
        return {k: _index(v, i) for k, v in value.items()}
    if isinstance(value, tuple):
        return tuple(_index(v, i) for v in value)
    return value[i]


@spec(
    "vector.api_shape",
    impact="api-contract",
    statement="reset returns (observations, infos dict) and step returns (observations, rewards, terminated, truncated, infos dict): rewards a float array and both flags bool arrays of shape (num_envs,); num_envs, single_observation_space, single_action_space, observation_space and action_space are set, and close returns without raising or leaving worker processes behind.",
    rationale="Every learner indexes a vector env's outputs per sub-env: a flag array of the wrong shape or dtype, or a missing single space, breaks them at once or, worse, broadcasts silently.",
    families=FAMILIES,
)
def vector_api_shape(run: NativeRun) -> Outcome:
    ck = Checker()
    if run.build_error is not None:
        ck.fail(f"building the env raised {run.build_error}")
        return ck.done()
    for name in ("single_observation_space", "single_action_space", "observation_space", "action_space"):
        ck.expect(getattr(run, name) is not None, f"the env has no {name}")
    ck.expect(run.num_envs == run.case.num_envs, f"num_envs is {run.num_envs}; built with {run.case.num_envs}")
    drive = run.first
    if drive is None:
        return ck.done()
    if drive.error:
        ck.fail(drive.error)
    n = run.case.num_envs
    for position, call in enumerate(drive.calls):
        where = f"call {position} ({call.kind})"
        if call.error is not None:
            ck.fail(f"{where} raised {call.error}")
            continue
        arity = 2 if call.kind == "reset" else 5
        if not isinstance(call.snapshot, tuple) or len(call.snapshot) != arity:
            ck.fail(f"{where} returned a {type(call.snapshot).__name__}; documented: a {arity}-tuple")
            continue
        ck.expect(
            isinstance(call.snapshot[-1], Mapping),
            f"{where}: infos is a {type(call.snapshot[-1]).__name__}, not a dict",
        )
        if call.kind == "step":
            rewards = np.asarray(call.snapshot[1])
            ck.expect(
                rewards.shape == (n,) and np.issubdtype(rewards.dtype, np.floating),
                f"{where}: rewards of shape {rewards.shape} and dtype {rewards.dtype}; documented: floats of shape ({n},)",
            )
            for name, flag in (("terminated", call.snapshot[2]), ("truncated", call.snapshot[3])):
                array = np.asarray(flag)
                ck.expect(
                    array.shape == (n,) and array.dtype == np.bool_,
                    f"{where}: {name} of shape {array.shape} and dtype {array.dtype}; documented: bool of shape ({n},)",
                )
    ck.expect(drive.closed_error is None, f"close() raised {drive.closed_error}")
    ck.expect(drive.orphans == 0, f"{drive.orphans} worker process(es) outlived close()")
    return ck.done()


@spec(
    "vector.observations_in_space",
    impact="api-contract",
    statement="Every batch of observations is an element of observation_space and each sub-env's part an element of single_observation_space, final observations (SAME_STEP's infos['final_obs']) included.",
    rationale="Learners allocate buffers from the declared spaces; an observation outside them is clipped, cast or crashes a buffer, far from the env that produced it.",
    families=FAMILIES,
)
def vector_observations_in_space(run: NativeRun) -> Outcome:
    ck = Checker()
    if run.first is None or run.observation_space is None or run.single_observation_space is None:
        return ck.done()
    for position, call in enumerate(run.first.calls):
        if call.error is not None or not isinstance(call.snapshot, tuple):
            continue
        obs = call.snapshot[0]
        ck.expect(
            bool(run.observation_space.contains(obs)),
            f"call {position} ({call.kind}): the observations are outside observation_space",
        )
        for i in range(run.case.num_envs):
            ck.expect(
                bool(run.single_observation_space.contains(_index(obs, i, run.single_observation_space))),
                f"call {position} ({call.kind}): sub-env {i}'s observation is outside single_observation_space",
            )
        info = _infos(call)
        if "final_obs" in info:
            # without its _final_obs mask (vector.autoreset_mode says so) the entries of the
            # sub-envs that ended are the final observations
            ended = (
                np.logical_or(*_flags(call))
                if call.kind == "step" and len(call.snapshot) == 5
                else np.zeros(run.case.num_envs, dtype=bool)
            )
            mask = np.asarray(info.get("_final_obs", ended), dtype=bool)
            for i in map(int, np.flatnonzero(mask)):
                ck.expect(
                    bool(run.single_observation_space.contains(info["final_obs"][i])),
                    f"call {position}: sub-env {i}'s final observation is outside single_observation_space",
                )
    return ck.done()


@spec(
    "vector.autoreset_mode",
    impact="training-data",
    statement="The env behaves in the autoreset mode it declares (metadata['autoreset_mode'], else the user's --autoreset-mode, else NEXT_STEP): in NEXT_STEP the step after a sub-env ended is a reset step (reward 0, both flags False, the action ignored); in SAME_STEP infos carry final_obs and final_info exactly where a sub-env ended; in DISABLED a sub-env is never reset by the env itself and reset_mask resets exactly the masked sub-envs.",
    rationale="The mode decides which transitions a learner stores: a reset step read as a transition, or a final observation missing where the learner looks for it, is a garbage transition in every batch.",
    families=FAMILIES,
)
def vector_autoreset_mode(run: NativeRun) -> Outcome:
    ck = Checker()
    drive = run.first
    if drive is None:
        return ck.done()
    ck.note(f"autoreset mode {run.mode} ({run.mode_source})")
    if run.horizon is not None and run.horizon.ends_missed and not _any_end(drive):
        ck.note(f"not driven to an episode end: {run.horizon.ends_missed}")
    n = run.case.num_envs
    ended = np.zeros(n, dtype=bool)
    previous_obs: Any = None
    for position, call in enumerate(drive.calls):
        if call.error is not None or not isinstance(call.snapshot, tuple):
            break
        if call.kind == "reset":
            if call.mask is not None and run.mode == "Disabled" and previous_obs is not None:
                for i in map(int, np.flatnonzero(~np.asarray(call.mask, dtype=bool))):
                    space = run.single_observation_space
                    difference = first_difference(_index(call.snapshot[0], i, space), _index(previous_obs, i, space))
                    ck.expect(
                        difference is None,
                        f"call {position}: reset(options={{'reset_mask': {call.mask.tolist()}}}) changed sub-env {i}'s "
                        f"observation, which was not masked ({difference})",
                    )
                ended &= ~np.asarray(call.mask, dtype=bool)
            else:
                ended[:] = False
            previous_obs = call.snapshot[0]
            continue
        terminated, truncated = _flags(call)
        rewards = np.asarray(call.snapshot[1], dtype=float)
        info = _infos(call)
        if run.mode == "NextStep":
            for i in map(int, np.flatnonzero(ended)):
                ck.expect(
                    rewards[i] == 0.0 and not terminated[i] and not truncated[i],
                    f"call {position}: sub-env {i} ended on the step before, so this is its reset step (NEXT_STEP), "
                    f"but it returned reward {rewards[i]!r}, terminated={bool(terminated[i])}, truncated={bool(truncated[i])}"
                    + (" (the env behaves as SAME_STEP: final_obs is in its infos)" if "final_obs" in info else ""),
                )
        done = terminated | truncated
        if run.mode == "SameStep":
            mask = (
                np.asarray(info.get("_final_obs", np.zeros(n, dtype=bool)), dtype=bool)
                if "final_obs" in info
                else np.zeros(n, dtype=bool)
            )
            for i in range(n):
                ck.expect(
                    bool(mask[i]) == bool(done[i]),
                    f"call {position}: sub-env {i} "
                    + (
                        (
                            "ended but infos carry final_obs without the _final_obs mask that marks it"
                            if "final_obs" in info and "_final_obs" not in info
                            else "ended but infos carry no final_obs for it"
                        )
                        if done[i]
                        else "did not end but infos carry a final_obs for it"
                    )
                    + " (SAME_STEP)",
                )
        if run.mode == "Disabled":
            for i in map(int, np.flatnonzero(ended)):
                ck.fail(
                    f"call {position}: sub-env {i} was stepped after it ended without a reset (the driver resets it: DISABLED)"
                )
        if run.mode == "SameStep":
            ended[:] = False  # reset in the same step
        else:
            ended = done if run.mode == "Disabled" else done & ~ended
        previous_obs = call.snapshot[0]
    return ck.done()


def _any_end(drive: Drive) -> bool:
    """Whether a step of ``drive`` ended a sub-env's episode."""
    for call in drive.calls:
        if call.kind == "step" and call.error is None and isinstance(call.snapshot, tuple) and len(call.snapshot) == 5:
            terminated, truncated = _flags(call)
            if (terminated | truncated).any():
                return True
    return False


@spec(
    "vector.reset_step_action_ignored",
    impact="training-data",
    statement="In NEXT_STEP mode the action a sub-env is given on its reset step is ignored: replayed from the same seed with another action for sub-env 0 on each of its reset steps, sub-env 0's outputs are the same throughout.",
    rationale="A reset step that applies its action makes the first transition of every episode depend on an action no learner records.",
    families=FAMILIES,
)
def vector_reset_step_action_ignored(run: NativeRun) -> Outcome:
    ck = Checker()
    if run.mode != "NextStep":
        return ck.not_applicable(f"autoreset mode {run.mode} has no reset step")
    if run.first is None or run.reset_actions is None:
        return ck.not_applicable("sub-env 0 had no reset step in this case (no episode of it ended)")
    if not _reproducible(run):
        return ck.not_applicable(NOT_REPRODUCIBLE)
    _compare_sub_env_0(
        ck,
        run.first,
        run.reset_actions,
        "sub-env 0 was given another action on its reset step(s) only, yet its output differs ({difference}): "
        "the action given on the reset step changed what followed",
        first_episode_only=False,
        space=run.single_observation_space,
    )
    return ck.done()


@spec(
    "vector.time_limit",
    impact="training-data",
    statement="Where the env declares a time limit (the max_episode_steps its sub-envs were built with, env.spec.kwargs, else env.spec.max_episode_steps), no sub-env's episode runs past it, and an episode ended by it is truncated: episodes that end exactly at the limit with terminated and never truncated are a time-out reported as a termination.",
    rationale="A time-out reported as a termination makes a learner bootstrap nothing from states that are not terminal: the value function learns the clock.",
    families=FAMILIES,
)
def vector_time_limit(run: NativeRun) -> Outcome:
    ck = Checker()
    limit = run.max_episode_steps
    if run.stale_time_limit is not None:
        ck.note(run.stale_time_limit)
    if limit is None:
        return ck.not_applicable(run.stale_time_limit or "the env declares no time limit (env.spec.max_episode_steps)")
    n = run.case.num_envs
    lengths = np.zeros(n, dtype=int)
    ended = np.zeros(n, dtype=bool)
    at_limit_terminated: list[str] = []
    at_limit_truncated = 0
    for position, call in enumerate(run.first.calls if run.first else []):
        if call.error is not None or not isinstance(call.snapshot, tuple):
            break
        if call.kind == "reset":
            reset = np.ones(n, dtype=bool) if call.mask is None else np.asarray(call.mask, dtype=bool)
            lengths[reset] = 0
            ended[reset] = False
            continue
        terminated, truncated = _flags(call)
        if run.mode == "NextStep":
            lengths[ended] = -1  # the reset step does not count
        lengths += 1
        ck.expect(
            not (lengths > limit).any(),
            f"call {position}: sub-env(s) {np.flatnonzero(lengths > limit).tolist()} ran past the time limit {limit}",
        )
        for i in map(int, np.flatnonzero(lengths == limit)):
            if truncated[i]:
                at_limit_truncated += 1
            elif terminated[i]:
                at_limit_terminated.append(f"sub-env {i} at call {position}")
        done = terminated | truncated
        if run.mode != "NextStep":
            lengths[done] = 0
        ended = done
    if len(at_limit_terminated) >= 2 and at_limit_truncated == 0:
        ck.fail(
            f"{len(at_limit_terminated)} episodes ended exactly at the time limit {limit} with terminated=True and "
            f"truncated=False ({', '.join(at_limit_terminated[:3])}), none truncated: a time-out reported as a termination"
        )
    return ck.done()


@spec(
    "vector.determinism",
    impact="reproducibility",
    statement="reset(seed=s) followed by the same actions reproduces the whole batch trajectory: observations, rewards, flags and infos (other than wall-clock times).",
    rationale="Seeded reproducibility is what makes experiments, bug reports and comparisons between runs possible.",
    families=FAMILIES,
)
def vector_determinism(run: NativeRun) -> Outcome:
    ck = Checker()
    if run.first is None or run.second is None:
        return ck.done()
    for position, (a, b) in enumerate(zip(run.first.calls, run.second.calls, strict=False)):
        if a.error is not None or b.error is not None:
            break
        difference = first_difference(_outputs(a), _outputs(b), ignore=_volatile)
        ck.expect(
            difference is None,
            f"call {position} ({a.kind}): a second run from the same seed and actions differs ({difference})",
        )
        if difference is not None:
            break
    return ck.done()


def first_parting(a_calls: list[Call], b_calls: list[Call]) -> tuple[int, str, str] | None:
    """Where two drives over the same actions first part: (position, call kind, what differs);
    None where they agree up to the first call that raised in either (a call that raises is
    api_shape's, and a deadline missed under load is no difference of the env's)."""
    for position, (a, b) in enumerate(zip(a_calls, b_calls, strict=False)):
        if a.error is not None or b.error is not None:
            return None
        difference = first_difference(_outputs(a), _outputs(b), ignore=_volatile)
        if difference is not None:
            return position, a.kind, difference
    return None


def _outputs(call: Call) -> Any:
    return call.snapshot[:-1] if isinstance(call.snapshot, tuple) else call.snapshot


#: why a spec that compares two runs of the env cannot tell anything when the env does not repeat itself
NOT_REPRODUCIBLE = (
    "the env does not reproduce its own run from the same seed and actions (vector.determinism fails): "
    "a difference between two runs cannot be told apart from its own randomness"
)


def _reproducible(run: NativeRun) -> bool:
    """Whether the second run from the same seed and actions repeated the first."""
    if run.first is None or run.second is None:
        return False
    for a, b in zip(run.first.calls, run.second.calls, strict=False):
        if a.error is not None or b.error is not None:
            return a.error_type == b.error_type
        left = a.snapshot[:-1] if isinstance(a.snapshot, tuple) else a.snapshot
        right = b.snapshot[:-1] if isinstance(b.snapshot, tuple) else b.snapshot
        if first_difference(left, right, ignore=_volatile) is not None:
            return False
    return True


def _volatile(path: str) -> bool:
    return path.endswith("['t']") or "time" in path


@spec(
    "vector.subenv_independence",
    impact="training-data",
    statement="A sub-env's transitions within its first episode do not depend on the other sub-envs: replayed from the same seed with other actions for every other sub-env, sub-env 0's observations, rewards and flags are the same until its first episode ends.",
    rationale="Sub-envs that share state (one generator drawn in action-dependent order, a shared buffer) make each sub-env's data depend on its neighbours: the batch is not num_envs independent samples.",
    families=FAMILIES,
)
def vector_subenv_independence(run: NativeRun) -> Outcome:
    ck = Checker()
    if run.first is None or run.others is None:
        return ck.done()
    if not _reproducible(run):
        return ck.not_applicable(NOT_REPRODUCIBLE)
    _compare_sub_env_0(
        ck,
        run.first,
        run.others,
        "sub-env 0 took the same actions in both runs, only the other sub-envs' actions differed, yet its output "
        "differs ({difference})",
        first_episode_only=True,
        space=run.single_observation_space,
        rescaled_rewards=True,
    )
    return ck.done()


def _compare_sub_env_0(
    ck: Checker,
    first: Drive,
    other: Drive,
    why: str,
    *,
    first_episode_only: bool,
    space: Any = None,
    rescaled_rewards: bool = False,
) -> None:
    """One fact per call: sub-env 0's output in ``other`` is the one in ``first``, up to the first
    difference (told with ``why``, its ``{difference}`` filled in), the first error, and with
    ``first_episode_only`` the end of sub-env 0's first episode.

    ``rescaled_rewards``: a reward that differs by a positive factor only (same sign, zero where
    the other is zero; observation and flags equal) is no difference. A running reward normalizer
    shared by the sub-envs (Gymnasium's vector ``NormalizeReward`` documents one scale for the
    batch) rescales sub-env 0's rewards by what the other sub-envs earned; the transitions
    themselves do not depend on them. The check says it compared them so."""
    rescaled = False
    for position, (a, b) in enumerate(zip(first.calls, other.calls, strict=False)):
        if a.error is not None or b.error is not None or a.kind != b.kind:
            break
        part_a, part_b = _part(a, 0, space), _part(b, 0, space)
        if rescaled_rewards and a.kind == "step" and _same_up_to_reward_scale(part_a, part_b):
            rescaled = rescaled or part_a[1] != part_b[1]
            part_b = (part_b[0], part_a[1], *part_b[2:])
        difference = first_difference(part_a, part_b)
        ck.expect(difference is None, f"call {position} ({a.kind}): " + why.format(difference=difference))
        ended = a.kind == "step" and bool(_flags(a)[0][0] or _flags(a)[1][0])
        if difference is not None or (first_episode_only and ended):
            break
    if rescaled:
        ck.note(
            "sub-env 0's rewards differed between the runs by a positive factor only (a reward normalizer shared by "
            "the sub-envs, as Gymnasium's vector NormalizeReward documents): compared up to that factor"
        )


def _same_up_to_reward_scale(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    """Step outputs (observation, reward, terminated, truncated) equal but for a reward that the
    same positive factor could map one to the other."""
    if first_difference((a[0], *a[2:]), (b[0], *b[2:])) is not None:
        return False
    ra, rb = a[1], b[1]
    return bool(np.isfinite(ra) and np.isfinite(rb) and np.sign(ra) == np.sign(rb))


def _part(call: Call, i: int, space: Any = None) -> Any:
    if call.kind == "reset":
        return _index(call.snapshot[0], i, space)
    obs, rewards, terminated, truncated, _ = call.snapshot
    return (
        _index(obs, i, space),
        float(np.asarray(rewards)[i]),
        bool(np.asarray(terminated)[i]),
        bool(np.asarray(truncated)[i]),
    )


@spec(
    "vector.no_aliasing",
    impact="training-data",
    statement="What the env returns never changes after it is returned (observations, rewards, flags, infos), and the caller's actions are never modified.",
    rationale="A learner that stores the returned arrays (replay buffers, rollout storage) otherwise finds them overwritten by later steps.",
    families=FAMILIES,
)
def vector_no_aliasing(run: NativeRun) -> Outcome:
    ck = Checker()
    for position, call in enumerate(run.first.calls if run.first else []):
        if call.error is not None:
            continue
        difference = first_difference(call.live, call.snapshot)
        ck.expect(
            difference is None,
            f"call {position} ({call.kind}): what it returned was changed by later calls ({difference})",
        )
        if call.actions_sent is not None:
            changed = first_difference(call.actions, call.actions_sent)
            ck.expect(changed is None, f"call {position}: step modified the caller's actions ({changed})")
    return ck.done()


@dataclass(frozen=True)
class Event:
    """One event of one sub-env: an episode's first observation (``start``) or a transition."""

    values: dict[str, Any]
    #: where it was returned, in words ("call 7, episode 2, step 3")
    where: str


def sub_env_events(run: NativeRun, drive: Drive | None, i: int) -> list[Event]:
    """Sub-env ``i``'s events in ``drive``, as the single env would give them: the first
    observation of each episode (the seeded reset, a NEXT_STEP reset step, a SAME_STEP step's
    observation after an end, a DISABLED masked reset) and each transition, its next observation
    the final one (SAME_STEP's ``final_obs``, dropped where missing: vector.autoreset_mode says so)
    and, in SAME_STEP, the ``final_info`` entries of sub-env i (``info``)."""
    space = run.single_observation_space
    events: list[Event] = []
    episode, step, ended = 0, 0, False
    for position, call in enumerate(drive.calls if drive else []):
        if call.error is not None or not isinstance(call.snapshot, tuple):
            break
        if call.kind == "reset":
            if call.mask is not None and not bool(np.asarray(call.mask, dtype=bool)[i]):
                continue
            episode, step, ended = (episode + 1 if events else 0), 0, False
            events.append(Event({"start": _index(call.snapshot[0], i, space)}, f"call {position}, episode {episode}"))
            continue
        if len(call.snapshot) != 5:
            break
        if run.mode == "NextStep" and ended:
            episode, step, ended = episode + 1, 0, False
            events.append(Event({"start": _index(call.snapshot[0], i, space)}, f"call {position}, episode {episode}"))
            continue
        obs, rewards, terminated, truncated, _ = call.snapshot
        step += 1
        done = bool(np.asarray(terminated)[i]) or bool(np.asarray(truncated)[i])
        values: dict[str, Any] = {
            "next_obs": _index(obs, i, space),
            "reward": float(np.asarray(rewards)[i]),
            "terminated": bool(np.asarray(terminated)[i]),
            "truncated": bool(np.asarray(truncated)[i]),
        }
        if run.mode == "SameStep" and done:
            # the step's observation is the next episode's first: the last one is final_obs
            final = _final_obs(call, i)
            if final is None:
                del values["next_obs"]
            else:
                values["next_obs"] = final[0]
            values["info"] = _entry(_infos(call).get("final_info"), i)
        events.append(Event(values, f"call {position}, episode {episode}, step {step}"))
        ended = done
        if run.mode == "SameStep" and done:
            episode, step, ended = episode + 1, 0, False
            events.append(Event({"start": _index(obs, i, space)}, f"call {position}, episode {episode}"))
    return events


def _entry(info: Any, i: int) -> dict[str, Any]:
    """Sub-env ``i``'s entries of a batched info dict (Gymnasium's layout: ``info[key][i]`` where
    the mask ``info["_" + key]`` is set; a nested dict likewise)."""
    if not isinstance(info, Mapping):
        return {}
    found: dict[str, Any] = {}
    for key, value in info.items():
        if not isinstance(key, str) or key.startswith("_"):
            continue
        mask = info.get(f"_{key}")
        if isinstance(value, Mapping):
            found[key] = _entry(value, i)
            continue
        try:
            if mask is not None and not bool(np.asarray(mask, dtype=bool)[i]):
                continue
            found[key] = value[i]
        except (IndexError, TypeError, KeyError):
            continue
    return found


def _event_difference(got: Event, want: dict[str, Any]) -> str | None:
    """The first difference of a sub-env's event from the single env's (the info entries the
    single env's info has too; observations and rewards up to 1e-6)."""
    values = dict(got.values)
    if ("start" in values) != ("start" in want):
        return (
            "a new episode starts here, where the single env's episode runs on"
            if "start" in values
            else "the single env's episode ended before, so a new one starts here, where the sub-env's runs on"
        )
    expected = {k: want[k] for k in values if k in want and k != "info"}
    if "info" in values and isinstance(want.get("info"), Mapping):
        shared = [k for k in values["info"] if k in want["info"]]
        values["info"] = {k: values["info"][k] for k in shared}
        expected["info"] = {k: want["info"][k] for k in shared}
        if not shared:
            del values["info"], expected["info"]
    else:
        values.pop("info", None)
    return first_difference(values, expected, rtol=1e-6, atol=1e-6)


@dataclass(frozen=True)
class SeedingFacts:
    """What the two seeding drives show (every sub-env given the same actions, reset with the
    seed and with the seed + 1)."""

    #: every sub-env repeated sub-env 0 while another seed changed the batch: seeded alike
    alike: bool
    #: the seed + 1 gave the same batch while the sub-envs differ: the env draws at random, but
    #: not from the seed given to reset
    ignored: bool
    #: where sub-env j of seed s + 1 is not sub-env j + 1 of seed s: the seed+i convention not
    #: followed (None: it is)
    not_seed_plus_i: str | None
    #: the seed decides a fresh instance's batch, while two instances with the same history, reset
    #: again with the seed and with the seed + 1, return the same batch: honoured on the first reset only
    later_ignored: bool = False


def seeding_facts(run: NativeRun) -> SeedingFacts | None:
    """None where the seeding drives were not made (``construction``) or did not run through."""
    if run.alike is None or run.reseeded is None:
        return None
    if any(c.error is not None for d in (run.alike, run.reseeded) for c in d.calls):
        return None
    n = run.case.num_envs
    same = [[e.values for e in sub_env_events(run, run.alike, i)] for i in range(n)]
    other = [[e.values for e in sub_env_events(run, run.reseeded, i)] for i in range(n)]
    all_alike = all(first_difference(same[i], same[0]) is None for i in range(1, n))
    seed_changes = any(first_difference(same[i], other[i]) is not None for i in range(n))
    shifted = None
    for j in range(n - 1):
        if first_difference(other[j], same[j + 1], rtol=1e-6, atol=1e-6) is not None:
            shifted = SHIFT_NOT_HELD
            break
    return SeedingFacts(
        alike=all_alike and seed_changes,
        ignored=not all_alike and not seed_changes,
        not_seed_plus_i=shifted,
        later_ignored=seed_changes and _later_resets_alike(run),
    )


def _later_resets_alike(run: NativeRun) -> bool:
    """Whether the first and second drives, reset again with the seed and the seed + 1 after the
    same history, returned the same outputs at every call (none of them raising)."""
    if run.first is None or run.second is None:
        return False
    a, b = run.first.again, run.second.again
    if not a or len(a) != len(b) or any(c.error is not None for c in (*a, *b)):
        return False
    return first_parting(a, b) is None


#: the seed+i convention, tested without a single env, does not hold
SHIFT_NOT_HELD = (
    "given the same actions, sub-env i reset with seed s + 1 is not sub-env i + 1 reset with seed s, as seed + i "
    "seeding makes it"
)
#: what a seeding fault leaves the single env to replay
_DECLARE = (
    "declare --seeding shared if one generator draws for every sub-env, or construction if it is seeded when built"
)


@spec(
    "vector.seeding",
    impact="reproducibility",
    statement="Under the declared seeding (seed+i or shared; construction seeds at build only), reset(seed=s) decides the batch, on a later reset of the same instance as on its first: a sub-env that draws anything at random draws it from the seed (another seed, another batch), and under seed+i no two sub-envs are seeded alike (given the same actions, the sub-envs do not all repeat one trajectory that another seed changes). Whether sub-env i of seed s is sub-env i - 1 of seed s + 1 (the seed+i convention itself) is told in the verdict.",
    rationale="Sub-envs seeded alike make num_envs copies of one sample: the batch has the variance of one env. A seed that reset ignores makes every seeded run, evaluation and bug report irreproducible from its seed.",
    families=FAMILIES,
)
def vector_seeding(run: NativeRun) -> Outcome:
    ck = Checker()
    if run.seeding == "construction":
        return ck.not_applicable(
            "the declared seeding (construction) seeds the env when it is built: reset(seed=...) is not its seeding"
        )
    facts = seeding_facts(run)
    if facts is None:
        return ck.done()
    ck.expect(
        not facts.ignored,
        f"reset(seed={run.case.seed}) and reset(seed={run.case.seed + 1}), given the same actions, return the same "
        "batch, while the sub-envs differ from one another: the env ignores the seed given to reset (declare "
        "--seeding construction if it is seeded when built)",
    )
    ck.expect(
        not facts.later_ignored,
        f"after one run, the same instance reset again with seed={run.case.seed} and with seed={run.case.seed + 1}, "
        "given the same actions, returns the same batch, while on a fresh instance the seed decides it: the env "
        "honours reset(seed=...) on its first reset only, so a seeded evaluation after training is not the run "
        "its seed names",
    )
    if run.seeding == "seed+i":
        ck.expect(
            not facts.alike,
            f"reset(seed={run.case.seed}) with the same actions for every sub-env: all {run.case.num_envs} sub-envs return "
            "the same trajectory, which another seed changes: they are seeded alike, not with seed + i",
        )
        if facts.not_seed_plus_i is not None and not facts.alike and not facts.ignored:
            ck.note(f"the sub-envs do not follow the seed+i convention ({facts.not_seed_plus_i}): {_DECLARE}")
    if run.system.option("single_env") is None and run.seeding == "seed+i":
        ck.note("without --single-env, no sub-env was compared with the single env (vector.single_env_match)")
    return ck.done()


@spec(
    "vector.single_env_match",
    impact="training-data",
    statement="With --single-env naming the matching single env and seed+i seeding, sub-env i equals the single env reset with seed+i and given the same actions, step for step, across episodes (the single env reset without a seed after each end, continuing its own stream), SAME_STEP's final observation and final_info entries included.",
    rationale="A natively vectorized env is a reimplementation of its single env: where the two part, one of them is not the task the user thinks it trains on.",
    families=FAMILIES,
)
def vector_single_env_match(run: NativeRun) -> Outcome:
    ck = Checker()
    if run.system.option("single_env") is None:
        return ck.not_applicable(
            "no --single-env names the matching single env: left out, each sub-env compared step for step with the "
            "single env reset with seed + i"
        )
    if run.seeding != "seed+i":
        return ck.not_applicable(f"the declared seeding ({run.seeding}) gives sub-env i no seed of its own to replay")
    if run.single_error is not None:
        ck.fail(f"the single env could not be run: {run.single_error}")
        return ck.done()
    if run.single is None or run.first is None:
        return ck.done()
    facts = seeding_facts(run)
    if facts is not None and (facts.alike or facts.ignored):
        fault = "seeded alike" if facts.alike else "reset(seed=...) is ignored"
        return ck.not_applicable(
            f"the sub-envs are not seeded seed + i ({fault}: vector.seeding): the single env has no seed to replay them with"
        )
    if facts is not None and facts.not_seed_plus_i is not None:
        return ck.not_applicable(
            f"seeding note: the sub-envs do not follow the seed+i convention ({facts.not_seed_plus_i}), so the single env "
            f"reset with seed + i replays none of them; that is no sign of wrong data: {_DECLARE}"
        )
    events = [sub_env_events(run, run.first, i) for i in range(run.case.num_envs)]
    for i, (got, want) in enumerate(zip(events, run.single, strict=False)):
        for event, expected in zip(got, want, strict=False):
            diff = _event_difference(event, expected)
            ck.expect(
                diff is None,
                f"sub-env {i}, {event.where}: differs from the single env reset with seed {run.case.seed + i} "
                f"(continued across its episodes) ({diff})",
            )
            if diff is not None:
                break
    return ck.done()


def _final_obs(call: Call, i: int) -> tuple[Any] | None:
    """Sub-env ``i``'s ``infos["final_obs"]`` entry (SAME_STEP), as a 1-tuple; None where the
    infos carry none for it."""
    info = _infos(call)
    if "final_obs" not in info:
        return None
    mask = np.asarray(info.get("_final_obs", np.ones(len(info["final_obs"]), dtype=bool)), dtype=bool)
    return (info["final_obs"][i],) if i < len(mask) and mask[i] else None
