"""Every FAIL the corpus gives, judged by reading the library's source.

A judgement is one of three kinds, never "false positive" (a FAIL that is rlconform's fault is
fixed in rlconform, not recorded here):

* ``true positive``: the library does something its own documentation or contract says it must
  not, and training data or code relying on the contract is affected;
* ``documented behaviour``: the library documents doing exactly this (the spec states the stricter
  contract rlconform checks, and the finding cites the library's words);
* ``stack limitation``: the stack cannot take what it was given and says so in its own way.

``finding`` names the row of FINDINGS.md that gives the evidence (file and line of the library).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Kind = Literal["true positive", "documented behaviour", "stack limitation"]


@dataclass(frozen=True)
class Judgement:
    kind: Kind
    finding: str
    reason: str


JUDGEMENTS: dict[tuple[str, str], Judgement] = {}
