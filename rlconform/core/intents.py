"""Value changes a user declares to be on purpose: the stack transforms rewards, observations or
the actions the env receives, or ends episodes with a time limit of its own.

A stack that clips rewards, flattens observations or skips frames delivers every transition the envs made,
with some field changed. rlconform reports such a change as what it is ("reward of env 0
episode 1 step 3 changed from 0.25 to 1.0 by the stack"), never as a missing or invented
transition, and as a failure of the spec that owns the field: a stack that silently alters
what the agent trains on is a contract question its user must answer. The answer is a
declaration (``rlconform check --intended reward``, ``--rlconform-intended``,
``parametrize_with_checks(..., intended=[...])``): declared changes pass, and the verdict lists
them as "changed as declared". A narrow declaration names the kind of change
(``--intended reward=scale``, :data:`KINDS`) and is checked: a change of another kind fails.
Library-agnostic: no library is imported here.
"""

from __future__ import annotations

from collections.abc import Iterable

#: intent -> what declaring it accepts
INTENTS: dict[str, str] = {
    "reward": "the stack changes rewards (clipping, scaling, normalisation, any reward transform)",
    "observation": (
        "the stack changes observations (flattening, normalisation, dtype casts, any observation transform); "
        "transitions whose observations no longer carry a stamp are matched by position"
    ),
    "time_limit": "the stack adds a time limit: it truncates episodes the env did not end, at one step count",
    "frame_skip": (
        "the stack steps the env several times per transition (frame skip): the transition spans those env steps, "
        "its reward is their sum (declare reward too if the stack does not sum them)"
    ),
    "action": (
        "the stack changes the action the env receives (sticky or repeated actions, any action transform); an "
        "action space the stack declares is honoured without a declaration: actions are drawn from it"
    ),
}


#: narrow declarations, ``field=kind``: what kind of change is intended, checked as such
#: (rlconform.specs.value_changes): intent -> kind -> what the declaration accepts
KINDS: dict[str, dict[str, str]] = {
    "reward": {
        "scale": "r' = c * r, with one constant c > 0 per sub-env over the whole run",
        "clip": "r' = r inside the bounds and the bound outside (one lower and one upper bound per sub-env)",
        "normalize": (
            "r' = r / sigma with sigma > 0 moving as a running statistic does: the same sign as r (zero for zero), "
            "and between two neighbouring transitions of a sub-env r'/r rises by at most sqrt((n + k) / n) "
            "(n transitions delivered so far, k steps in between; it may fall freely)"
        ),
    },
    "action": {
        "sticky": (
            "the env receives the agent's action or the action it received on the step before in the same episode "
            "(Gymnasium's StickyAction); the first step of an episode gets the agent's action"
        ),
    },
    "observation": {
        "normalize": "observations whose values the stack changed (normalised, scaled), any layout kept",
        "flatten": "observations flattened by the stack to one vector",
        "stack": (
            "the last k observations of the episode stacked along a new leading axis (FrameStackObservation), "
            "zeros or copies of the episode's first observation before it: never a frame of another episode"
        ),
    },
}


class UnknownIntent(ValueError):
    """A declared intent rlconform does not know; the message names the known ones."""


def known() -> list[str]:
    """Every declaration rlconform knows, plain and narrow."""
    return [*INTENTS, *(f"{intent}={kind}" for intent, kinds in KINDS.items() for kind in kinds)]


def parse_intents(values: Iterable[str] | str | None) -> frozenset[str]:
    """``"reward,observation"``, ``["reward=scale", "time_limit"]`` or None -> a set of known intents.

    A narrow declaration ``field=kind`` comes with its plain ``field`` (``{"reward", "reward=scale"}``):
    whatever accepts a declared change of the field accepts it, and the kind is checked on top
    (:func:`kind_of`). One kind per field: two kinds of one field are bad input."""
    if values is None:
        return frozenset()
    items = [values] if isinstance(values, str) else list(values)
    names = {part.strip().replace(" ", "") for item in items for part in item.split(",") if part.strip()}
    unknown = sorted(names - set(known()))
    if unknown:
        raise UnknownIntent(f"unknown intended change {', '.join(map(repr, unknown))}; known: {', '.join(known())}")
    for intent in KINDS:
        kinds = sorted(name for name in names if name.startswith(f"{intent}="))
        if len(kinds) > 1:
            raise UnknownIntent(
                f"{' and '.join(kinds)} declare two kinds of {intent} change; declare one kind, or --intended "
                f"{intent} for any change of it"
            )
        if kinds:
            names.add(intent)
    return frozenset(names)


def kind_of(intended: Iterable[str], intent: str) -> str | None:
    """The kind of ``intent``'s change declared in ``intended`` (``"scale"`` for ``reward=scale``);
    None when it is declared plain or not at all."""
    kinds = sorted(name.split("=", 1)[1] for name in intended if name.startswith(f"{intent}="))
    return kinds[0] if kinds else None


def help_text() -> str:
    """What ``--intended`` accepts, for the front ends' help (one wording for all of them)."""
    narrow = ", ".join(f"{intent}={'|'.join(kinds)}" for intent, kinds in KINDS.items())
    return (
        f"value changes made on purpose, comma-separated: {', '.join(INTENTS)} (accepted and listed as 'changed "
        f"as declared'), or narrowly, the kind of change, which is then checked: {narrow}; repeatable"
    )


def hint(intent: str) -> str:
    """The sentence that ends an undeclared value change's message."""
    return f"declare --intended {intent} if this is on purpose"
