"""Impact classes: what a failing spec costs the user, so that failures can be ranked and gated.

A conformance run on a real stack can report a dozen failures; they do not weigh the same. Every
spec declares (in its ``@spec(...)`` decorator) one of four classes, in a fixed order from the
most to the least severe:

1. ``training-data``: the learner trains on wrong data (a shifted reward, a wrong terminal
   observation, an overwritten buffer), silently;
2. ``reproducibility``: seeded runs differ or correlate, so experiments and bug reports are not
   comparable;
3. ``api-contract``: the system returns or accepts something else than its family documents
   (types, dtypes, devices, structure); code written against the documentation breaks;
4. ``robustness``: misuse or failure handling (a wrong-size batch accepted, a failed call with side
   effects, a hang or a leaked worker).

Reports list failures in this order, and ``--fail-on CLASS`` fails a run only on a failure of
that class or a more severe one. This module is library-agnostic and imports nothing else of
rlconform, so that the report formats can use it on any saved document.
"""

from __future__ import annotations

from typing import Literal

Impact = Literal["training-data", "reproducibility", "api-contract", "robustness"]

#: the classes, most severe first
IMPACTS: tuple[Impact, ...] = ("training-data", "reproducibility", "api-contract", "robustness")

#: what each class means, as printed beside a failure
TITLES: dict[str, str] = {
    "training-data": "corrupts training data",
    "reproducibility": "breaks reproducibility",
    "api-contract": "breaks the API contract",
    "robustness": "robustness",
}

#: shown for a result whose document predates impact classes
UNCLASSIFIED = "unclassified"


def rank(impact: str | None) -> int:
    """0 for the most severe class; an unknown or missing class sorts after every known one."""
    return IMPACTS.index(impact) if impact in IMPACTS else len(IMPACTS)  # type: ignore[arg-type]


def title(impact: str | None) -> str:
    return TITLES.get(impact or "", UNCLASSIFIED)


def at_least(impact: str | None, threshold: str | None) -> bool:
    """Whether a failure of class ``impact`` counts under ``--fail-on threshold`` (None: every
    failure counts, whatever its class, which is the behaviour without ``--fail-on``)."""
    if threshold is None:
        return True
    return rank(impact) <= rank(threshold)


def check_impact(value: str) -> Impact:
    """``value`` as a class; ValueError with a one-line reason otherwise."""
    for impact in IMPACTS:
        if value == impact:
            return impact
    raise ValueError(f"unknown impact class {value!r}; one of: {', '.join(IMPACTS)} (most severe first)")


#: the ``--fail-on`` word that leaves out the failures a user's stack inherits from the library
#: under it (rlconform.core.inherited), alone or with a class: ``own``, ``own,training-data``
OWN = "own"


def check_fail_on(value: str) -> str:
    """A ``--fail-on`` value (a class, ``own``, or both joined by a comma), normalised to
    ``own,CLASS`` / ``own`` / ``CLASS``; ValueError with a one-line reason otherwise."""
    parts = [part.strip() for part in value.split(",") if part.strip()]
    classes = [part for part in parts if part != OWN]
    if not parts or len(classes) > 1 or parts.count(OWN) > 1:
        raise ValueError(f"{value!r}: expected an impact class, {OWN!r}, or both ({OWN},CLASS)")
    chosen: list[str] = [check_impact(classes[0])] if classes else []
    return ",".join([OWN] * (OWN in parts) + chosen)


def fail_on_class(fail_on: str | None) -> str | None:
    """The impact class of a ``--fail-on`` value checked by :func:`check_fail_on` (None: any class)."""
    if fail_on is None:
        return None
    classes = [part for part in fail_on.split(",") if part != OWN]
    return classes[0] if classes else None


def fail_on_own(fail_on: str | None) -> bool:
    """Whether a ``--fail-on`` value leaves out the failures inherited from the library."""
    return fail_on is not None and OWN in fail_on.split(",")
