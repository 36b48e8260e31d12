"""A verdict and the status it shows: what a check concludes, and how every report shows it.

Two words, one rule. A verdict's ``status`` is its *outcome*: what the check itself concluded
(:data:`Status`: pass, fail, not_applicable, not_exercised, skipped, not_run, error). Whether a
failure is the user's is decided after the search, by facts kept beside it: ``known`` (rlconform
documents it: a known violation of the system, or a documented approximation), ``expected`` (the
downstream project's expected-failures file) and ``inherited`` (the library under the user's code
fails the same way on its own). Every report shows one vocabulary, :data:`ReportStatus`, made
from the outcome and those facts by :func:`table_status`: the outcome, except that a failure
rlconform documents or the project expects is ``known`` and a failure the library shows on its
own is ``inherited``. The JSON ``status`` field, the text table and listings, JUnit, Markdown and
HTML all show that one word (the JSON keeps the outcome in ``outcome`` and the three facts in
their own fields, so nothing is lost).

The verdict keeps its outcome rather than the shown status because the facts arrive after it is
made (an expected-failures file is applied by each front end) and because the exit status reads
the outcome together with the facts: a known or expected failure never counts (:attr:`Verdict.ok`),
an inherited one counts unless ``--fail-on own``, a plain failure always does.

This lives in core, not with the reports, because core itself summarises verdicts while it runs
(the progress lines, the suite's per-system counts, the crash messages) and core imports no layer
above it; the reports read the same rules from here so that a run's table and its document agree.
"""

from __future__ import annotations

import traceback
from dataclasses import dataclass, field
from typing import Any, Literal, cast, get_args

#: a check's outcome: what :attr:`Verdict.status` holds (the JSON's ``outcome`` field)
Status = Literal["pass", "fail", "not_applicable", "not_exercised", "skipped", "not_run", "error"]
#: the status every report shows (the JSON's ``status`` field): the outcome, with a failure that is
#: known or expected shown as "known" and one the library under the user's code shows on its own
#: as "inherited" (:func:`table_status`)
ReportStatus = Literal[
    "pass", "fail", "inherited", "known", "not_applicable", "not_exercised", "skipped", "not_run", "error"
]
#: the report statuses in report order
REPORT_STATUSES: tuple[ReportStatus, ...] = get_args(ReportStatus)

#: how the message of an error verdict raised by rlconform itself begins
INTERNAL_ERROR = "internal error in rlconform (please report)"
#: innermost frames of an internal error's traceback kept in its message
INTERNAL_ERROR_FRAMES = 12
#: the line after which a crashed system's message carries the native traceback faulthandler wrote
NATIVE_TRACEBACK = "native traceback (faulthandler):"


@dataclass
class Verdict:
    """What one check of one system concluded. ``status`` is the outcome (:data:`Status`); the
    status a report shows is :func:`cell_status` of the verdict (:data:`ReportStatus`)."""

    system_id: str
    spec_id: str
    status: Status
    message: str = ""
    reproducer: str | None = None
    case: Any = None
    violations: list[str] = field(default_factory=list)
    examples: int = 0
    checked: int = 0
    seconds: float = 0.0
    profile: str = ""
    seed: int | None = None
    #: why this failure is known and documented (from the system's known_violations)
    known: str | None = None
    #: why the downstream project expects this check to fail (its expected-failures file)
    expected: str | None = None
    #: the spec's impact class (rlconform.core.impact): how failures are ranked and gated
    impact: str | None = None
    #: a failure's spec and kinds of violation, values left out (rlconform.core.signature)
    signature: str | None = None
    #: the distinct kinds of violation of a failure, sorted (what its signature hashes)
    violation_kinds: list[str] = field(default_factory=list)
    #: a user's failure that the library under the user's code shows on its own, the same way:
    #: which library system, and its FINDINGS row (rlconform.core.inherited)
    inherited: str | None = None
    #: a bundled system's failure that a FINDINGS.md row explains: the row's id (``G7``), from its
    #: family's findings table (rlconform.core.findings); None: no row explains it (a bundled
    #: system's failure that is not known either is new)
    finding: str | None = None
    #: what the libraries under the system said while the search drove it (log warnings of the
    #: family's loggers, warnings raised in library code), by message (ANSI codes stripped), with
    #: how many times: kept off the screen and listed in the results (rlconform.core.library_messages)
    library_messages: dict[str, int] = field(default_factory=dict)

    @property
    def internal_error(self) -> bool:
        """The error is rlconform's own, not the system's (see :func:`internal_error_message`)."""
        return self.status == "error" and self.message.startswith(INTERNAL_ERROR)

    @property
    def ok(self) -> bool:
        return (
            self.status in ("pass", "not_applicable")
            or (self.status == "fail" and self.known is not None)
            or self.expected is not None
        )


def internal_error_message(exc: BaseException) -> str:
    """An exception inside rlconform (adapter, spec, model, strategy) while checking: never a
    verdict on the system, so the message says whose error it is and carries the traceback's
    innermost frames, where the bug is."""
    summary = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else '(no message)'}"
    frames = traceback.extract_tb(exc.__traceback__)[-INTERNAL_ERROR_FRAMES:]
    trace = "".join(traceback.format_list(frames)) + "".join(traceback.format_exception_only(type(exc), exc))
    return f"{INTERNAL_ERROR}: {summary}\nTraceback (innermost {len(frames)} frames):\n{trace.rstrip()}"


#: how a system's skip reason says it could not be exercised (a build that outlasted its limit,
#: rlconform.core.user.slow_build_reason), which is not a missing library: its checks are
#: "not_exercised", with the reason, not "skipped"
NOT_EXERCISED = "not exercised: "


def skip_status(reason: str) -> Status:
    """The status of a check whose system cannot run for ``reason``."""
    return "not_exercised" if reason.startswith(NOT_EXERCISED) else "skipped"


def table_status(status: str, known: str | None, expected: str | None, inherited: str | None = None) -> ReportStatus:
    """The status a verdict shows in every report (:data:`ReportStatus`), from its outcome
    ``status`` and the facts beside it: a failure documented by rlconform (known) or expected by
    the project is "known" (an expected-failures entry also excuses an error or an unexercised
    spec: that too is "known"); a failure the library under the user's code shows on its own is
    "inherited"; everything else shows its outcome. One rule for the run table and listings, the
    progress lines, the plugin's summary, the JSON ``status`` field and every report format.

    A shown status given back as ``status`` maps to itself, so a document's status can be read
    through it whatever its schema version (a v1 document holds the outcome there)."""
    if (status == "fail" and known) or expected:
        return "known"
    if status == "fail" and inherited:
        return "inherited"
    return cast("ReportStatus", status)


def cell_status(verdict: Verdict) -> ReportStatus:
    """:func:`table_status` of a live verdict: the status every report shows for it."""
    return table_status(verdict.status, verdict.known, verdict.expected, verdict.inherited)
