"""Failure signatures: which spec failed and how, without the values of the case that showed it.

Two runs, or two releases of a library, can fail the same spec for different reasons: a release
that fixes one statistics bug and adds another still fails ``statistics.episode``. The status alone
hides that. A signature names the spec and the kinds of violation it found, each kind being the
violation's message with every number (env indices, steps, episode numbers, values, addresses)
replaced by ``#``: it stays the same when only the minimal case's indices change, and changes
when the message says something else. ``rlconform diff`` and ``rlconform matrix`` compare them.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable

#: a number that is not part of a name (float64, obs_2 and sha1 keep their digits)
_NUMBER = re.compile(r"(?<![\w.#])[-+]?(?:0x[0-9a-fA-F]+|\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|\.\d+)(?![\w.])")
#: runs of numbers (an array's items, a list of indices) collapse to one: their length is a value
_RUN = re.compile(r"#(?:[\s,;]+#)+")


def violation_kind(message: str) -> str:
    """The message with its values replaced: the kind of violation it reports."""
    text = _NUMBER.sub("#", message)
    text = _RUN.sub("#", text)
    return " ".join(text.split())


def signature(spec_id: str, kinds: Iterable[str]) -> str:
    """``SPEC#HASH``: the spec and a short hash of the distinct kinds of its violations (in a
    sorted order, so that the order in which a search met them does not matter)."""
    distinct = sorted(set(kinds))
    digest = hashlib.sha256("\n".join(distinct).encode("utf-8")).hexdigest()[:8]
    return f"{spec_id}#{digest}"


def short(signature_text: str | None) -> str:
    """The hash part of a signature (what a matrix cell shows), '' for none."""
    if not signature_text:
        return ""
    return signature_text.rsplit("#", 1)[-1]
