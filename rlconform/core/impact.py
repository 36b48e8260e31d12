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
