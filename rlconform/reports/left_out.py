"""What the factory probe left out of a user's system, read back from the system's restrictions.

A factory that refuses some observation or action kinds is checked with the kinds it accepted
only (rlconform.envs.factory_probe). A run that passes then says nothing about the kinds left
out: an image wrapper printed "19 passed" having transposed nothing, because no image observation
was ever drawn. So every report format names what was left out and why, from the one place the
results document keeps it: the probe's note among the system's ``restrictions`` (the JSON's
``systems[].restrictions``, ``Capabilities.notes`` of a live system). Reading it from there, not
from live objects, is what lets ``rlconform report`` say it for a saved file as well.

The note is written by ``Acceptance.restrict``; tests/reports/test_left_out.py reads notes the
real probe wrote, so a change to its wording fails there rather than silently dropping the lines.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

#: how the probe's note starts, and how its parts are introduced (factory_probe.Acceptance.restrict)
PROBE_PREFIX = "probed: exercised with "
_REFUSED = "; not exercised (refused by the factory, or an internal error): "
_PARTIAL = "; partial resets not exercised (refused by the factory: "
#: one refused trial: "<obs kind> observations with <action kind> actions: <reason>"
_TRIAL = re.compile(r"(?:^|; )(\w+) observations with (\w+) actions: ")
_CLASS = re.compile(r"<class '[\w.]+'>")
_EXERCISED = re.compile(r"^(?P<obs>.*) observations and (?P<actions>.*) actions$", re.DOTALL)

#: the spaces' own names, as a user reads them in Gymnasium
SPACE_NAMES = {
    "box": "Box",
    "discrete": "Discrete",
    "multidiscrete": "MultiDiscrete",
    "multibinary": "MultiBinary",
    "dict": "Dict",
    "tuple": "Tuple",
    # uint8 Boxes of shape (height, width, channels), tried only on a factory that refused a flat Box
    # (rlconform.envs.spaces.IMAGE_KINDS)
    "image": "RGB image",
    "gray_image": "grayscale image",
    # a Discrete(1025), tried only on a factory that refused the stamp-packing Discrete (a one-hot
    # encoder: rlconform.envs.spaces.SmallDiscreteObs)
    "small_discrete": "small Discrete (one-hot sized)",
}


def space_name(kind: str) -> str:
    return SPACE_NAMES.get(kind, kind)


def and_list(words: Iterable[str]) -> str:
    """'A', 'A and B', 'A, B and C'."""
    items = list(words)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


@dataclass(frozen=True)
class Omission:
    """One thing no case used: an observation or action kind, a Dict with non-Box leaves, or
    partial resets, with the refusal the probe recorded for it."""

    #: "observation", "action" or "call" (a partial reset; Dicts with non-Box leaves count as
    #: observations but not as a kind: Dicts were drawn, with Box leaves)
    axis: str
    #: the kind's name in the probe's note ("dict"); for a call, what it is ("partial resets")
    kind: str
    reason: str
    #: False: a variant of a kind that was drawn (Dict observations with non-Box leaves)
    whole_kind: bool = True

    @property
    def label(self) -> str:
        if self.axis == "call":
            return self.kind
        if not self.whole_kind:
            return f"{space_name(self.kind)} observations with non-Box leaves"
        return f"{space_name(self.kind)} {self.axis}s"


@dataclass(frozen=True)
class LeftOut:
    """What the probe of one system found: the kinds drawn, and what was left out with why."""

    obs_kinds: tuple[str, ...]
    action_kinds: tuple[str, ...]
    omissions: tuple[Omission, ...]

    def refused(self, axis: str) -> list[Omission]:
        return [o for o in self.omissions if o.axis == axis and o.whole_kind]

    def lines(self) -> list[str]:
        """One line per reason: the kinds refused for the same reason share it, in probe order.
        A reason that differs from another only in naming the refused space ("requires a Box
        observation space, got <class '...Discrete'>") is the same reason, written with "...".
        """
        grouped: dict[str, list[Omission]] = {}
        for omission in self.omissions:
            grouped.setdefault(_generic(omission), []).append(omission)
        lines = []
        for generic, members in grouped.items():
            reason = members[0].reason if len(members) == 1 else generic
            by_axis: dict[tuple[str, bool], list[str]] = {}
            for m in members:
                by_axis.setdefault((m.axis, m.whole_kind), []).append(m.kind)
            names = []
            for (axis, whole), kinds in by_axis.items():
                if axis == "call" or not whole:
                    names += [Omission(axis, k, reason, whole).label for k in kinds]
                else:
                    names.append(f"{and_list(space_name(k) for k in kinds)} {axis}s")
            lines.append(f"{and_list(names)}: {reason}")
        return lines

    def heading(self) -> str:
        """What the lines are about, for the line above them."""
        return "left out (refused by the factory, so no case used them):"

    def clause(self, *, see_above: bool = True) -> str:
        """The summary's parenthesis: 'checked with Box and Discrete observations only: 4
        observation kinds refused, see above' (``see_above``: the lines are printed above it)."""
        only = []
        counts = []
        for axis, drawn in (("observation", self.obs_kinds), ("action", self.action_kinds)):
            refused = self.refused(axis)
            if refused:
                only.append(f"{and_list(space_name(k) for k in drawn)} {axis}s")
                counts.append(f"{len(refused)} {axis} kind{'' if len(refused) == 1 else 's'}")
        others = [o.label for o in self.omissions if o.axis == "call" or not o.whole_kind]
        if only:
            text = f"checked with {and_list(only)} only: {and_list(counts + others)} refused"
        else:
            text = f"checked without {and_list(others)}: refused"
        return text + ", see above" if see_above else text


def _generic(omission: Omission) -> str:
    """The omission's reason with the refused space's own name and class written as '...'."""
    text = _CLASS.sub("<class '...'>", omission.reason)
    if omission.axis != "call":
        text = re.sub(rf"\b{re.escape(space_name(omission.kind))}\b", "...", text)
    return text


def left_out(restrictions: Iterable[str]) -> LeftOut | None:
    """What the probe's note among ``restrictions`` says was left out; None when there is no probe
    note or it left nothing out (a factory that accepts every kind has no such lines)."""
    note = next((r for r in restrictions if r.startswith(PROBE_PREFIX)), None)
    if note is None:
        return None
    body = note[len(PROBE_PREFIX) :]
    partial = None
    at = body.rfind(_PARTIAL)
    if at >= 0 and body.endswith(")"):
        body, partial = body[:at], body[at + len(_PARTIAL) : -1]
    refused_text = ""
    at = body.find(_REFUSED)
    if at >= 0:
        body, refused_text = body[:at], body[at + len(_REFUSED) :]
    exercised = _EXERCISED.match(body)
    if exercised is None:
        return None
    obs_kinds = _in_order(exercised["obs"])
    action_kinds = _in_order(exercised["actions"])
    omissions = _omissions(refused_text, set(obs_kinds), set(action_kinds))
    if partial is not None:
        omissions.append(Omission("call", "partial resets", (partial.strip().splitlines() or [""])[0]))
    if not omissions:
        return None
    return LeftOut(obs_kinds, action_kinds, tuple(omissions))


def _in_order(listed: str) -> tuple[str, ...]:
    """The kinds of the note's comma-separated list, in the order of :data:`SPACE_NAMES`."""
    order = list(SPACE_NAMES)
    kinds = [k.strip() for k in listed.split(",") if k.strip()]
    return tuple(sorted(kinds, key=lambda k: order.index(k) if k in order else len(order)))


def _omissions(text: str, obs_drawn: set[str], actions_drawn: set[str]) -> list[Omission]:
    """Each kind no case used, with the reason of the trial that best isolates it: one that paired
    it with a kind that was drawn (the probe tries each kind against an accepted base)."""
    parts = _TRIAL.split(text) if text else []
    trials = [(parts[i], parts[i + 1], parts[i + 2]) for i in range(1, len(parts) - 2, 3)]
    best: dict[tuple[str, str], tuple[int, str]] = {}
    variants: list[Omission] = []
    for obs, action, full in trials:
        # the first line: a report line per kind, not the traceback a message may carry
        reason = (full.strip().splitlines() or [""])[0]
        if obs in obs_drawn and action in actions_drawn:
            # both kinds were drawn: the Dict trial with a non-Box leaf
            if not any(v.kind == obs for v in variants):
                variants.append(Omission("observation", obs, reason, whole_kind=False))
            continue
        for axis, kind, other_drawn in (
            ("observation", obs, action in actions_drawn),
            ("action", action, obs in obs_drawn),
        ):
            if kind in (obs_drawn if axis == "observation" else actions_drawn):
                continue
            score = 0 if other_drawn else 1
            if (axis, kind) not in best or score < best[(axis, kind)][0]:
                best[(axis, kind)] = (score, reason)
    found = [Omission(axis, kind, reason) for (axis, kind), (_score, reason) in best.items()]
    order = list(SPACE_NAMES)
    found.sort(key=lambda o: (o.axis != "observation", order.index(o.kind) if o.kind in order else len(order)))
    return found + variants
