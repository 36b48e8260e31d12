"""Which FINDINGS.md row explains a failure of a bundled system, and which failures nothing explains.

A full ``rlconform run`` fails about two hundred checks, and nearly all of them are the library
defects FINDINGS.md describes (Gymnasium's G1 alone reaches 24 systems). A reader of the run needs
two things from them: which documented defect each failure is, and which failures are *new*, the
ones no row describes, which are what the run is for. So each family's ``findings`` table
((bundled system id pattern, spec id) -> row, :meth:`rlconform.core.family.Family.findings_row`,
the same table a user's inherited failures are named with) is read once more here, for the bundled
systems' own failures: a failure it matches carries the row's id (``Verdict.finding``), in every
report, and a failure of a bundled system it does not match, and that is not a documented
behaviour (``known``) either, is new. ``rlconform run`` exits 1 on a new failure only.

The verdicts are marked in the parent process as each system finishes (``core.suite``), so that the
progress line already names the rows, and whatever the worker that made the verdict.
"""

from __future__ import annotations

from collections.abc import Iterable

from rlconform.core.family import get_family
from rlconform.core.system import BUNDLED_KINDS, System
from rlconform.core.verdict import Verdict

#: the outcomes a reader must look at unless something explains them: a failure, and an error (no
#: verdict at all). A spec no example exercised is a gap, not a finding (a slow build on a loaded
#: machine leaves some); it is counted, and ``--strict`` counts it against the run
UNEXPLAINED_OUTCOMES = ("fail", "error")


def finding_of(system: System, spec_id: str) -> str | None:
    """The FINDINGS.md row (``G7``) of the library defect bundled ``system`` shows on ``spec_id``;
    None for a system of a user's or a planted bug (FINDINGS describes the libraries only)."""
    if system.kind not in BUNDLED_KINDS:
        return None
    return get_family(system.family).findings_row(system.id, spec_id)


def mark(system: System, verdicts: Iterable[Verdict]) -> None:
    """Set ``finding`` on each failure of ``system`` that a FINDINGS row explains (known failures
    included: envpool's documented P1 is still row P1)."""
    for verdict in verdicts:
        if verdict.status == "fail" and verdict.finding is None:
            verdict.finding = finding_of(system, verdict.spec_id)


def is_new(kind: str, outcome: str, *, finding: str | None, excused: bool) -> bool:
    """Whether a result of a system of ``kind`` is a failure no one has explained: a bundled
    system's failure or error that is neither a FINDINGS row nor documented or expected
    (``excused``). A user's own failures are never "new": they are all the user's to read."""
    return kind in BUNDLED_KINDS and outcome in UNEXPLAINED_OUTCOMES and finding is None and not excused


def new_verdict(system: System, verdict: Verdict) -> bool:
    """:func:`is_new` of a live verdict of ``system``."""
    return is_new(system.kind, verdict.status, finding=verdict.finding, excused=bool(verdict.known or verdict.expected))
