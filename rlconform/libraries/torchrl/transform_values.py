"""``torchrl.transform_values``: the values TorchRL's RewardSum, StepCounter and InitTracker add.

Why: these entries are read as facts about the episode. ``episode_reward`` (RewardSum) is the
return users log and select checkpoints by; ``step_count`` (StepCounter) is a time feature and the
counter a ``max_steps`` truncation is decided from; ``is_init`` (InitTracker) tells a recurrent
policy to reset its hidden state. A sum that carries over an autoreset, a count that is not zeroed
with a sub-env's reset, or an ``is_init`` missing on the first observation of an autoreset episode
all reach training as plausible numbers.

What is checked, per sub-env, on the TensorDicts the driver captured (the family's views, read from
the snapshots, :mod:`rlconform.libraries.torchrl.env_family`), for each entry the stack's
transforms add (``added_entries`` in the run's semantics; custom keys are followed):

* at every ``env.reset()``: the entry's initial value (0, 0, True);
* at the root of each ``step_and_maybe_reset`` transition (the observation the step starts from,
  which is the root the previous call returned, resets of ended sub-envs included) and under its
  ``"next"``: the value ground truth gives for that point of the episode the transition belongs to
  (found by its observation's stamp, :func:`rlconform.specs.helpers.match_transitions`):
  ``episode_reward`` the sum of the episode's rewards so far (0 at its first observation), either
  the real ones or those the stack itself reports under the RewardSum's in_key (a reward transform
  before it changes what it sums); ``step_count`` the number of agent steps of the episode so far;
  ``is_init`` True exactly at the episode's first observation.

A transition no real one matches is left to ``transitions.exact``; a step count is not checked past
a transition of the episode that was not matched (the count of agent steps is not known there).
The root a last call returns is the one no later transition starts from: it is not checked.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rlconform.core.spec import Checker, Outcome, spec
from rlconform.specs.families import TORCHRL_ENVBASE
from rlconform.specs.helpers import match_transitions

if TYPE_CHECKING:
    from collections.abc import Mapping

    from rlconform.envs.driver import Run
    from rlconform.envs.truth import TrueEpisode

SPEC_ID = "torchrl.transform_values"

NOT_APPLICABLE = (
    "the stack has no RewardSum, StepCounter or InitTracker whose entries rlconform reads (transforms of a "
    "ParallelEnv's sub-envs live in its worker processes and are not read): it adds no episode reward, step "
    "count or is_init to check"
)

#: float32 spacing at 1: the tolerance of a sum accumulated in float32 grows with its terms
_EPS32 = 2.0**-23


def added_of(semantics: Mapping[str, Any]) -> list[dict[str, Any]]:
    return list(semantics.get("added_entries") or [])


@dataclass
class _Point:
    """Where in an episode a value was read: after ``steps`` agent steps (None: not known) and
    ``env_steps`` of the env's transitions, whose rewards are ``real`` and, as the stack reported
    them under each RewardSum in_key, ``reported`` (None where one was not read)."""

    episode: int
    env_steps: int
    steps: int | None
    real: list[float]
    reported: dict[str, list[float] | None]

    def where(self) -> str:
        if self.env_steps == 0:
            return f"the first observation of episode {self.episode}"
        return f"episode {self.episode} after {self.env_steps} step(s)"


def _sum_close(got: float, terms: list[float]) -> bool:
    want = math.fsum(terms)
    tolerance = (len(terms) + 1) * _EPS32 * math.fsum(abs(t) for t in terms) + 1e-6
    return abs(got - want) <= tolerance


def _fmt(values: list[float]) -> str:
    return "[" + ", ".join(f"{v:.9g}" for v in values) + "]"


def _check_value(ck: Checker, entry: dict[str, Any], where: str, got: Any, point: _Point, **at: Any) -> None:
    """One added value against what ground truth gives at ``point``."""
    kind, name = entry["transform"], entry["name"]
    label = f"{where}{name} ({entry['class']}) at {point.where()}"
    if kind == "RewardSum":
        real = point.real
        reported = point.reported.get(entry["in_name"])
        ok = isinstance(got, (int, float)) and (
            _sum_close(float(got), real) or (reported is not None and _sum_close(float(got), reported))
        )
        also = (
            f" (as the stack reported them under {entry['in_name']!r}: {_fmt(reported)}, sum {math.fsum(reported):.9g})"
            if reported is not None and not _sum_close(math.fsum(reported), real)
            else ""
        )
        ck.expect(
            ok,
            lambda: (
                f"{label} is {got!r}; expected "
                + (
                    f"{math.fsum(real):.9g}, the sum of the episode's {len(real)} real reward(s) so far {_fmt(real)}{also}"
                    if real
                    else "0: the episode has had no reward yet"
                )
            ),
            **at,
        )
    elif kind == "StepCounter":
        if point.steps is None:
            return
        ck.expect(
            isinstance(got, int) and not isinstance(got, bool) and got == point.steps,
            lambda: f"{label} is {got!r}; expected {point.steps}, the agent steps of the episode so far",
            **at,
        )
    elif kind == "InitTracker":
        want = point.env_steps == 0
        ck.expect(
            isinstance(got, bool) and got is want,
            lambda: (
                f"{label} is {got!r}; expected {want}"
                + (" (the first observation of an episode)" if want else " (not the first observation of its episode)")
            ),
            **at,
        )


def _value(values: Any, env: int) -> Any:
    return values[env] if isinstance(values, list) and env < len(values) else None


def _unreadable(ck: Checker, entry: dict[str, Any], where: str, values: Any, **at: Any) -> bool:
    """Report an entry the stack declares but did not return readably; True when it did not."""
    if isinstance(values, list):
        return False
    why = "it is absent" if values in (None, "absent") else f"it could not be read ({values})"
    ck.fail(f"{where}{entry['name']} ({entry['class']}) is declared by the stack's transform but {why}", **at)
    return True


@spec(
    SPEC_ID,
    impact="training-data",
    statement=(
        "The entries TorchRL's RewardSum, StepCounter and InitTracker add hold, for each sub-env, the sum of the "
        "current episode's rewards so far, its number of steps so far and whether the observation is the episode's "
        "first, from reset and across every autoreset of step_and_maybe_reset."
    ),
    rationale=(
        "Users log and select checkpoints by episode_reward, feed step_count to policies and max_steps "
        "truncation, and reset recurrent states on is_init: a value that carries over an autoreset, is not "
        "zeroed with a sub-env's reset, or mixes sub-envs reaches training as a plausible number."
    ),
    families=frozenset({TORCHRL_ENVBASE}),
    needs=("usable",),
)
def transform_values(run: Run) -> Outcome:
    ck = Checker()
    entries = added_of(run.semantics)
    if not entries:
        return ck.not_applicable(NOT_APPLICABLE)
    assert run.truth is not None
    in_names = sorted({e["in_name"] for e in entries if e["transform"] == "RewardSum"})
    for env in range(run.case.num_envs):
        for call in run.calls:
            # the family's reset views carry ``added``, its transition views ``added_root``/``added_next``
            added = getattr(call.view, "added", None)
            if call.failed or call.view is None or call.view.kind != "reset" or added is None:
                continue
            at = {"env": env, "call": call.position}
            label = f"after {call.source}: "
            for entry in entries:
                values = added.get(entry["name"])
                if not _unreadable(ck, entry, label, values, **at):
                    _check_initial(ck, entry, label, _value(values, env), **at)
        _check_transitions(ck, run, env, entries, in_names)
    return ck.done()


def _check_initial(ck: Checker, entry: dict[str, Any], label: str, got: Any, **at: Any) -> None:
    """A reset's value: 0, 0 or True whatever episode it starts."""
    kind, name = entry["transform"], entry["name"]
    want: Any = {"RewardSum": 0.0, "StepCounter": 0, "InitTracker": True}[kind]
    if kind == "RewardSum":
        ok = isinstance(got, (int, float)) and not isinstance(got, bool) and got == 0.0
    elif kind == "StepCounter":
        ok = isinstance(got, int) and not isinstance(got, bool) and got == 0
    else:
        ok = got is True
    ck.expect(
        ok,
        lambda: (
            f"{label}{name} ({entry['class']}) is {got!r}; expected {want!r} at the first observation of an episode"
        ),
        **at,
    )


def _check_transitions(ck: Checker, run: Run, env: int, entries: list[dict[str, Any]], in_names: list[str]) -> None:
    assert run.truth is not None
    matches, _ = match_transitions(run, env)
    # per episode: (env transitions covered so far, agent steps so far or None once not known,
    # the stack's reported in_key values so far per in_key or None once one was not read)
    progress: dict[int, tuple[int, int | None, dict[str, list[float] | None]]] = {}
    for match in matches:
        truth = match.truth
        call = run.calls[match.slot.call]
        view = call.view
        if truth is None or view is None or not hasattr(view, "added_root"):
            continue
        episode: TrueEpisode | None = run.truth.envs[env].episode(truth.episode)
        if episode is None:
            continue
        transitions = episode.transitions
        start = transitions.index(truth)
        end = transitions.index(match.last) + 1 if match.last is not None else start + 1
        covered, steps, reported = progress.get(truth.episode, (0, 0, {name: [] for name in in_names}))
        if covered != start:
            # a transition of the episode before this one was not matched: agent steps and the
            # stack's own rewards are not known from here on
            steps, reported = None, dict.fromkeys(in_names, None)
        real = [t.reward for t in transitions]
        at = {"env": env, "agent_step": match.slot.agent_step}
        before = _Point(truth.episode, start, steps, real[:start], reported)
        added_root: dict[str, Any] = getattr(view, "added_root", {})
        added_next: dict[str, Any] = getattr(view, "added_next", {})
        now: dict[str, list[float] | None] = {}
        for name in in_names:
            so_far, value = reported.get(name), _value(added_next.get(name), env)
            now[name] = None if so_far is None or not isinstance(value, (int, float)) else [*so_far, float(value)]
        after = _Point(truth.episode, end, None if steps is None else steps + 1, real[:end], now)
        for entry in entries:
            for where, values, point in (
                ("", added_root.get(entry["name"]), before),
                ("next/", added_next.get(entry["name"]), after),
            ):
                if _unreadable(ck, entry, where, values, **at):
                    continue
                _check_value(ck, entry, where, _value(values, env), point, **at)
        progress[truth.episode] = (end, after.steps, now)
