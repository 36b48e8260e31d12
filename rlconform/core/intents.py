"""Value changes a user declares to be on purpose: the stack transforms rewards, observations,
or ends episodes with a time limit of its own.

A stack that clips rewards, flattens observations or skips frames delivers every transition the envs made,
with some field changed. rlconform reports such a change as what it is ("reward of env 0
episode 1 step 3 changed from 0.25 to 1.0 by the stack"), never as a missing or invented
transition, and as a failure of the spec that owns the field: a stack that silently alters
what the agent trains on is a contract question its user must answer. The answer is a
declaration (``rlconform check --intended reward``, ``--rlconform-intended``,
``parametrize_with_checks(..., intended=[...])``): declared changes pass, and the verdict lists
them as "changed as declared". Library-agnostic: no library is imported here.
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
}


class UnknownIntent(ValueError):
    """A declared intent rlconform does not know; the message names the known ones."""


def parse_intents(values: Iterable[str] | str | None) -> frozenset[str]:
    """``"reward,observation"``, ``["reward", "time_limit"]`` or None -> a set of known intents."""
    if values is None:
        return frozenset()
    items = [values] if isinstance(values, str) else list(values)
    names = {part.strip() for item in items for part in item.split(",") if part.strip()}
    unknown = sorted(names - set(INTENTS))
    if unknown:
        raise UnknownIntent(f"unknown intended change {', '.join(map(repr, unknown))}; known: {', '.join(INTENTS)}")
    return frozenset(names)


def hint(intent: str) -> str:
    """The sentence that ends an undeclared value change's message."""
    return f"declare --intended {intent} if this is on purpose"
