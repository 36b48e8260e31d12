"""A results document as typed objects: what every report format reads.

The renderers work from the JSON document, never from live ``Verdict`` objects, so that a report
can be made later, elsewhere (a CI artifact), by a newer rlconform, and so that the CLI's and the
plugin's documents render alike. This module holds only what the formats share: statuses, their
symbols, the grid's rows and columns, and the list of failures.

A result has two words (``rlconform.core.verdict``): its ``status``, the one vocabulary every
format shows (pass, fail, inherited, known, not_applicable, not_exercised, skipped, not_run,
error), and its ``outcome``, what the check itself concluded (a known, expected or inherited
failure's outcome is fail), which the listings read to group failures and to say which results
have a section of their own. A document is read through its schema version: schema_version 2
writes both; schema_version 1 wrote the outcome as ``status``, and its shown status is made from it
by the same rule (``table_status``), so that a v1 and a v2 document of the same verdicts read
alike (``rlconform diff`` of an old baseline and a new run shows no change of vocabulary).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from rlconform.core.findings import is_new
from rlconform.core.grouping import failing_from_json, groups
from rlconform.core.impact import rank
from rlconform.core.verdict import REPORT_STATUSES, table_status
from rlconform.reports.left_out import LeftOut, left_out

#: the statuses every format shows, in report order (``rlconform.core.verdict.ReportStatus``):
#: "known" is a failure that is known (documented) or expected, "inherited" a failure the library
#: under the user's code shows on its own
STATUSES: tuple[str, ...] = REPORT_STATUSES
#: the symbols of the text table printed by ``rlconform run`` (rlconform.reports.results uses these)
SYMBOLS = {
    "pass": "ok",
    "fail": "FAIL",
    "inherited": "inh",
    "known": "known",
    "not_applicable": ".",
    "not_exercised": "n/e",
    "skipped": "skip",
    "not_run": "n/r",
    "error": "ERR",
}


LABELS = {
    "pass": "pass",
    "fail": "violation found",
    "inherited": "violation found that the library under the system shows on its own (inherited)",
    "known": "documented or expected failure",
    "not_applicable": "not applicable",
    "not_exercised": "not exercised by any example",
    "skipped": "not run (library not installed, or not in the installed release)",
    "not_run": "not run (the system hung or crashed, or the run was interrupted, before this spec was checked)",
    "error": "error",
}
#: outcomes that get a section of their own (message, violations, reproducer): known, expected
#: and inherited failures included
REPORTED = ("fail", "not_exercised", "error")

#: the family names results of schema version 1 were written with, by the name the family has
#: since version 2: a family a user checks a factory with is named by the ``--api`` the user types
#: (rlconform.specs.families). Two old names now name other families ("gymnasium.Env" was the
#: wrapper family, now the user's own env; "isaaclab" was DirectRLEnv's, now the torch tier's): only
#: the document's schema version says which family such a name means. A name not listed is unchanged.
V1_FAMILY_NAMES = {
    "gymnasium.Env": "gymnasium.Wrapper",
    "user.env": "gymnasium.Env",
    "torchrl.replay": "torchrl.ReplayBuffer",
    "isaaclab": "isaaclab.DirectRLEnv",
    "isaaclab.torch": "isaaclab",
}


def family_name(name: str, schema_version: int) -> str:
    """The family ``name`` of a document of ``schema_version`` as rlconform names it now."""
    return V1_FAMILY_NAMES.get(name, name) if schema_version < 2 else name


@dataclass(frozen=True)
class SpecInfo:
    id: str
    statement: str = ""
    rationale: str = ""
    families: tuple[str, ...] = ()
    #: None in a document written before impact classes
    impact: str | None = None
    #: the number heading the spec's column in every table (its position in the catalog of the
    #: rlconform that wrote the document); None in a document written before column numbers
    column: int | None = None


@dataclass(frozen=True)
class SystemInfo:
    id: str
    family: str = ""
    title: str = ""
    kind: str = ""
    #: the system's restrictions (``Capabilities.notes``): a user's system holds the probe's note
    #: of what it was checked with and what it refused (rlconform.reports.left_out)
    restrictions: tuple[str, ...] = ()

    def left_out(self) -> LeftOut | None:
        """What the probe of a user's factory left out; None: nothing (or not probed)."""
        return left_out(self.restrictions)


@dataclass(frozen=True)
class Result:
    system: str
    spec: str
    #: the status every format shows (``rlconform.core.verdict.ReportStatus``)
    status: str
    message: str
    violations: tuple[str, ...]
    reproducer: str | None
    known: str | None
    expected: str | None
    case: str | None
    examples: int
    checked: int
    seconds: float
    seed: int | None
    #: the spec's impact class (rlconform.core.impact); None in a document that predates them
    impact: str | None = None
    #: spec and kinds of violation of a failure (rlconform.core.signature); None: not a failure, or a
    #: document that predates signatures (never compared as a change)
    signature: str | None = None
    violation_kinds: tuple[str, ...] = ()
    #: why a user's failure is the library's (rlconform.core.inherited); None: the user's own
    inherited: str | None = None
    #: what the check concluded (``rlconform.core.verdict.Status``): fail for a known, expected or
    #: inherited failure; "" only for a Result built by hand without one (then read off its status)
    outcome: str = ""
    #: what the libraries said during the check, (message, count) sorted by message
    #: (rlconform.core.library_messages); empty in documents written before it was captured
    library_messages: tuple[tuple[str, int], ...] = ()
    #: the FINDINGS.md row that explains a bundled system's failure (rlconform.core.findings);
    #: None: none does, or a document written before findings were named
    finding: str | None = None

    def __post_init__(self) -> None:
        # one rule whatever wrote the result: the status shown is made from the outcome and the facts
        outcome = self.outcome or ("fail" if self.status in ("known", "inherited") else self.status)
        object.__setattr__(self, "outcome", outcome)
        object.__setattr__(self, "status", table_status(self.status, self.known, self.expected, self.inherited))

    @property
    def cell(self) -> str:
        """The status shown in a table's cell: :attr:`status` (kept for the formats' readers)."""
        return self.status

    @property
    def failed(self) -> bool:
        """The check found a violation, whether or not it counts (known, expected, inherited)."""
        return self.outcome == "fail"

    @property
    def reported(self) -> bool:
        return self.outcome in REPORTED

    @property
    def excuse(self) -> str | None:
        """Why this failure does not count: the known or expected reason, labelled."""
        if self.known:
            return f"known violation: {self.known}"
        if self.expected:
            return f"expected failure: {self.expected}"
        return None

    @property
    def headline(self) -> str:
        return self.message.splitlines()[0] if self.message else ""


@dataclass
class ResultsDocument:
    rlconform_version: str
    created: str
    profile: dict[str, Any]
    environment: dict[str, Any]
    notes: list[str]
    specs: list[SpecInfo]
    systems: list[SystemInfo]
    results: list[Result]
    summary: dict[str, int]
    #: the schema_version the document was written with (read through it: :meth:`from_json`)
    schema_version: int = 2
    _index: dict[tuple[str, str], Result] = field(default_factory=dict, repr=False)
    #: (system, spec) of a failure -> the spec heading its group (rlconform.core.grouping)
    group_heads: dict[tuple[str, str], str] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self._index = {(r.system, r.spec): r for r in self.results}
        if not self.group_heads:
            self.group_heads = {pair: group[0] for group in self._grouped() for pair in group[1]}

    def _grouped(self) -> list[tuple[str, list[tuple[str, str]]]]:
        """(head spec, members' (system, spec)) per group, recomputed from the results (so that a
        document written before groups is grouped by the same rule)."""
        rows = [
            {
                "system": r.system,
                "spec": r.spec,
                "status": r.status,
                "outcome": r.outcome,
                "case": r.case,
                "known": r.known,
                "expected": r.expected,
                "inherited": r.inherited,
                "impact": self.impact_of(r),
                "violations": r.violations,
            }
            for r in self.results
        ]
        found = groups(failing_from_json(rows, [s.id for s in self.specs]))
        return [(g[0].spec, [(m.system, m.spec) for m in g]) for g in found]

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ResultsDocument:
        """Build from a document that already passed schema validation, through its schema version:
        a v1 document's ``status`` is the outcome (a known, expected or inherited failure is "fail"
        there), shown as :func:`~rlconform.core.verdict.table_status` makes it; a v2 document
        writes the shown status and the outcome both."""
        version = int(data.get("schema_version", 2))
        return cls(
            rlconform_version=data["rlconform_version"],
            created=data["created"],
            profile=dict(data["profile"]),
            environment=dict(data["environment"]),
            notes=list(data["notes"]),
            specs=[
                SpecInfo(
                    s["id"],
                    s["statement"],
                    s["rationale"],
                    tuple(family_name(f, version) for f in s["families"]),
                    s.get("impact"),
                    s.get("column"),
                )
                for s in data["specs"]
            ],
            systems=[
                SystemInfo(
                    s["id"],
                    family_name(s["family"], version),
                    s["title"],
                    s["kind"],
                    tuple(s.get("restrictions") or ()),
                )
                for s in data["systems"]
            ],
            results=[
                Result(
                    system=r["system"],
                    spec=r["spec"],
                    status=r["status"],
                    message=r["message"],
                    violations=tuple(r["violations"]),
                    reproducer=r["reproducer"],
                    known=r["known"],
                    expected=r.get("expected"),
                    case=r["case"],
                    examples=int(r["examples"]),
                    checked=int(r["checked"]),
                    seconds=float(r["seconds"]),
                    seed=r["seed"],
                    impact=r.get("impact"),
                    signature=r.get("signature"),
                    violation_kinds=tuple(r.get("violation_kinds") or ()),
                    inherited=r.get("inherited"),
                    outcome=r["status"] if version < 2 else r["outcome"],
                    library_messages=tuple(sorted((r.get("library_messages") or {}).items())),
                    finding=r.get("finding"),
                )
                for r in data["results"]
            ],
            summary=dict(data["summary"]),
            schema_version=version,
        )

    # -- header -----------------------------------------------------------------------------

    @property
    def profile_name(self) -> str:
        return str(self.profile["name"])

    @property
    def seed_text(self) -> str:
        seed = self.profile.get("seed")
        if self.profile.get("derandomize"):
            return "derandomized"
        return f"seed {seed} (RLCONFORM_SEED={seed} reproduces this run)" if seed is not None else "seed not recorded"

    @property
    def libraries(self) -> dict[str, str | None]:
        return dict(self.environment.get("libraries", {}))

    @property
    def library_messages(self) -> dict[str, int]:
        """What the libraries said during every check of the document, by message."""
        total: Counter[str] = Counter()
        for result in self.results:
            total.update(dict(result.library_messages))
        return dict(sorted(total.items()))

    def versions_text(self) -> str:
        return ", ".join(f"{name} {version or 'not installed'}" for name, version in self.libraries.items())

    # -- grid ------------------------------------------------------------------------------

    def rows(self) -> list[SystemInfo]:
        """The systems listed, then any system a result names that the list lacks."""
        rows = list(self.systems)
        seen = {s.id for s in rows}
        for result in self.results:
            if result.system not in seen:
                seen.add(result.system)
                rows.append(SystemInfo(result.system))
        return rows

    def columns(self) -> list[SpecInfo]:
        """The specs listed, then any spec a result names that the list lacks."""
        columns = list(self.specs)
        seen = {s.id for s in columns}
        for result in self.results:
            if result.spec not in seen:
                seen.add(result.spec)
                columns.append(SpecInfo(result.spec))
        return columns

    def column_numbers(self) -> list[int]:
        """The number heading each of :meth:`columns`: the spec's own (the same in the tables of
        ``run``, ``check`` and ``report``), else one past every number used (a document that
        predates them: then numbered by position)."""
        columns = self.columns()
        numbers = [spec.column for spec in columns]
        if any(n is None for n in numbers) and all(n is None for n in numbers):
            return list(range(1, len(columns) + 1))
        spare = max([n for n in numbers if n is not None] + [0])
        out = []
        for n in numbers:
            if n is None:
                spare += 1
                n = spare
            out.append(n)
        return out

    def left_out(self) -> list[tuple[SystemInfo, LeftOut]]:
        """The systems whose factory refused some kinds, each with what it left out."""
        found = [(system, system.left_out()) for system in self.systems]
        return [(system, gap) for system, gap in found if gap is not None]

    def result(self, system_id: str, spec_id: str) -> Result | None:
        return self._index.get((system_id, spec_id))

    def kind_of(self, system_id: str) -> str:
        """The kind of the system ``system_id`` (library, reference, user, planted), "" when the
        document does not list it."""
        for system in self.systems:
            if system.id == system_id:
                return system.kind
        return ""

    def is_new(self, result: Result) -> bool:
        """Whether ``result`` is a bundled system's failure that no FINDINGS.md row explains and
        that is not known or expected (rlconform.core.findings): what a reader must look at."""
        excused = bool(result.known or result.expected)
        return is_new(self.kind_of(result.system), result.outcome, finding=result.finding, excused=excused)

    def explanation(self, result: Result) -> str | None:
        """What the reports say of a reported result's origin: the FINDINGS.md row that explains
        it, or that it is new; None for anything else (a user's failure, a known one)."""
        if result.finding:
            return f"FINDINGS.md {result.finding}: a library defect rlconform found and documented"
        if self.is_new(result):
            return "NEW: no row of FINDINGS.md explains this failure of a bundled system"
        return None

    def results_of(self, system_id: str) -> list[Result]:
        return [r for r in self.results if r.system == system_id]

    def counts(self) -> dict[str, int]:
        """Results per table status, in report order (computed from the results, as ``summary``)."""
        counts = Counter(r.cell for r in self.results)
        return {status: counts[status] for status in (*STATUSES, *sorted(counts)) if counts[status]}

    def reported(self) -> list[Result]:
        """Every failure, error and unexercised spec, in grid order (known ones included)."""
        order = {s.id: i for i, s in enumerate(self.rows())}
        spec_order = {s.id: i for i, s in enumerate(self.columns())}
        return sorted((r for r in self.results if r.reported), key=lambda r: (order[r.system], spec_order[r.spec]))

    def impact_of(self, result: Result) -> str | None:
        """The result's impact class, else its spec's as the document lists it."""
        if result.impact:
            return result.impact
        for spec in self.specs:
            if spec.id == result.spec:
                return spec.impact
        return None

    def group_head(self, result: Result) -> str | None:
        """The spec heading the group of a failure; None for any other result."""
        return self.group_heads.get((result.system, result.spec))

    def failure_groups(self, results: list[Result] | None = None) -> list[list[Result]]:
        """The reported results (or ``results``) as groups in listing order: a group of failures
        sharing a minimal case (head first, ``rlconform.core.grouping``), or one error or unexercised
        spec. Failures by their head's impact class then spec id; errors and unexercised specs
        after them, each kind by impact then spec id."""
        chosen = self.reported() if results is None else results
        chosen_pairs = {(r.system, r.spec) for r in chosen}
        system_order = {s.id: i for i, s in enumerate(self.rows())}
        found: list[list[Result]] = []
        for _head, members in self._grouped():
            group = [self._index[pair] for pair in members if pair in chosen_pairs]
            if group:
                found.append(group)
        found += [[r] for r in chosen if not r.failed]

        def key(group: list[Result]) -> tuple[int, int, str, int]:
            head = group[0]
            category = {"fail": 0, "error": 1}.get(head.outcome, 2)
            return (category, rank(self.impact_of(head)), head.spec, system_order.get(head.system, 0))

        return sorted(found, key=key)

    def statement(self, spec_id: str) -> str:
        for spec in self.specs:
            if spec.id == spec_id:
                return spec.statement
        return ""
