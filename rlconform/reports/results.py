"""Results: the versioned JSON document and the systems x specs table printed at the end of a run.

The JSON schema is stable: fields are only added, and ``schema_version`` changes when a field
changes meaning. Every result carries its status, message, violations and reproducer.

Every result's ``status`` is the status every report shows, the one vocabulary of
``rlconform.core.verdict.ReportStatus`` (a known or expected failure is "known", an inherited one
"inherited"), with the check's own outcome in ``outcome`` and the facts that decided the status in
``known``, ``expected`` and ``inherited``; the text table and the listing of failures print the
same word (:func:`status_label`).
"""

from __future__ import annotations

import datetime as _dt
import json
import platform
import sys
import textwrap
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from rlconform import __version__
from rlconform.core.findings import new_verdict
from rlconform.core.grouping import Failing, annotate, group_rank, groups, reports_crash
from rlconform.core.impact import rank, title
from rlconform.core.library_messages import merged, summary_line
from rlconform.core.profiles import Profile
from rlconform.core.spec import Spec, all_specs, registered_impact
from rlconform.core.system import System, library_version
from rlconform.core.verdict import NATIVE_TRACEBACK, ReportStatus, Verdict, cell_status, table_status
from rlconform.reports.document import STATUSES
from rlconform.reports.document import SYMBOLS as REPORT_SYMBOLS
from rlconform.reports.load import SCHEMA_VERSION

if TYPE_CHECKING:
    from rlconform.core.family import Family
    from rlconform.core.session import Checked

SCHEMA = "rlconform/results"
LIBRARIES = (
    "gymnasium",
    "stable-baselines3",
    "torch",
    "torchrl",
    "tensordict",
    "isaaclab",
    "envpool",
    "numpy",
    "hypothesis",
    "pytest",
)
#: the distributions every check depends on, whatever its family (the header of ``check`` adds
#: the libraries of the family checked: :attr:`rlconform.core.family.Family.libraries`)
BASE_LIBRARIES = ("numpy", "hypothesis", "pytest")

#: the table's cell symbols, shared with the report formats (rlconform.reports)
SYMBOLS = REPORT_SYMBOLS


def library_versions(names: Iterable[str] = LIBRARIES) -> dict[str, str | None]:
    return {name: library_version(name) for name in names}


def family_libraries(families: Iterable[Family]) -> tuple[str, ...]:
    """The distributions that matter to a check of ``families``: theirs and the base ones, in the
    order of :data:`LIBRARIES` (a family's library not listed there comes after)."""
    wanted = {*BASE_LIBRARIES}
    for family in families:
        wanted.update(family.libraries)
    return (*(n for n in LIBRARIES if n in wanted), *sorted(wanted.difference(LIBRARIES)))


@dataclass
class Results:
    profile: Profile
    seed: int | None
    systems: list[System]
    specs: list[Spec]
    verdicts: list[Verdict] = field(default_factory=list)
    started: str = field(default_factory=lambda: _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"))
    notes: list[str] = field(default_factory=list)
    #: the run was interrupted (Ctrl-C): the results are those finished by then
    interrupted: bool = False
    #: the distributions the document's header lists (``environment.libraries``): those of the
    #: families checked (``check``, the plugin: :func:`family_libraries`); None: every library
    #: rlconform knows (``rlconform run`` of the bundled systems)
    libraries: tuple[str, ...] | None = None
    #: results already in the document's form, in place of :attr:`verdicts` (the plugin's: the
    #: xdist workers hand their verdicts over as JSON), and the entries of systems and specs they
    #: name beyond :attr:`systems` and :attr:`specs` (checks of ``rlconform.testing``)
    rows: list[dict[str, Any]] | None = None
    extra_systems: list[dict[str, Any]] = field(default_factory=list)
    extra_specs: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    def from_checked(cls, checked: Checked, *, every_library: bool = False) -> Results:
        """The results of a :class:`~rlconform.core.session.Checked` (what ``Session.check`` gives
        back); ``every_library``: the header lists every library rlconform knows (``run``), else
        only those of the families checked."""
        return cls(
            profile=checked.profile,
            seed=checked.seed,
            systems=list(checked.systems),
            specs=list(checked.specs),
            verdicts=list(checked.verdicts),
            notes=list(checked.notes),
            interrupted=checked.interrupted,
            libraries=None if every_library else family_libraries(checked.families),
        )

    def verdict(self, system_id: str, spec_id: str) -> Verdict | None:
        for verdict in self.verdicts:
            if verdict.system_id == system_id and verdict.spec_id == spec_id:
                return verdict
        return None

    def results_json(self) -> list[dict[str, Any]]:
        """The document's results: :attr:`rows`, else one per verdict (not yet grouped)."""
        if self.rows is not None:
            return [dict(row) for row in self.rows]
        return [verdict_json(v) for v in self.verdicts]

    def summary(self) -> dict[str, int]:
        """Results per status every report shows, in report order."""
        if self.rows is not None:
            return summary_of(row["status"] for row in self.rows)
        return summary_of(cell_status(v) for v in self.verdicts)

    def summary_text(self) -> str:
        """The summary as a sentence: '12 passed, 1 failed, 1 expected failure, 3 not applicable'."""
        if self.rows is not None:
            return summary_sentence(
                Counter(
                    summary_status(r["status"], r["known"], r.get("expected"), r.get("inherited")) for r in self.rows
                )
            )
        return summary_sentence(summary_counts(self.verdicts))

    def library_messages(self) -> dict[str, int]:
        """What the libraries said during every check, by message (rlconform.core.library_messages)."""
        if self.rows is not None:
            return merged(row.get("library_messages") or {} for row in self.rows)
        return merged(verdict.library_messages for verdict in self.verdicts)

    def library_messages_line(self, written: bool) -> str | None:
        """``library messages: 19 (torchrl: 2 distinct; in the results JSON)`` after the summary
        (None when the libraries said nothing); ``written``: a results document is written."""
        where = "in the results JSON" if written else "listed in the results JSON (--json FILE)"
        return summary_line(self.library_messages(), where)

    def to_json(self) -> dict[str, Any]:
        results = self.results_json()
        specs = [spec_json(s) for s in self.specs] + list(self.extra_specs)
        annotate(results, [s["id"] for s in specs])
        return {
            "schema": SCHEMA,
            "schema_version": SCHEMA_VERSION,
            "rlconform_version": __version__,
            "created": self.started,
            "profile": {**asdict(self.profile), "seed": self.seed},
            "environment": {
                "python": sys.version.split()[0],
                "platform": platform.platform(),
                "libraries": library_versions(LIBRARIES if self.libraries is None else self.libraries),
            },
            "notes": self.notes,
            "specs": specs,
            "systems": [system_json(s) for s in self.systems] + list(self.extra_systems),
            "results": results,
            "summary": self.summary(),
            "library_messages": self.library_messages(),
            "interrupted": self.interrupted,
        }

    def write_json(self, path: str) -> None:
        import os

        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(path, "w", encoding="utf-8") as handle:
            json.dump(self.to_json(), handle, indent=2, default=str)
            handle.write("\n")


def spec_json(spec: Spec) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "id": spec.id,
        "statement": spec.statement,
        "rationale": spec.rationale,
        "families": sorted(spec.families),
        "scenario": spec.scenario,
        "impact": spec.impact,
    }
    column = spec_column(spec.id)
    if column is not None:
        entry["column"] = column
    return entry


def spec_column(spec_id: str) -> int | None:
    """The number that heads ``spec_id``'s column in every table (``run``, ``check``, ``report``):
    its position in the catalog (``rlconform list --specs``), whatever specs a run selected, so
    that column 3 is the same spec in every table of one installation. None: not in the catalog."""
    for i, spec in enumerate(all_specs()):
        if spec.id == spec_id:
            return i + 1
    return None


#: how the summary sentence names each status (``expected``: a failure the project expects)
SUMMARY_WORDS = {
    "pass": ("passed", "passed"),
    "fail": ("failed", "failed"),
    "inherited": ("inherited failure", "inherited failures"),
    "known": ("known (documented) failure", "known (documented) failures"),
    "expected": ("expected failure", "expected failures"),
    "not_applicable": ("not applicable", "not applicable"),
    "not_exercised": ("not exercised", "not exercised"),
    "skipped": ("skipped", "skipped"),
    "not_run": ("not run", "not run"),
    "error": ("error", "errors"),
}


def summary_status(status: str, known: str | None, expected: str | None, inherited: str | None = None) -> str:
    """A verdict's status in the summary sentence: its status (:func:`table_status`), with the
    failures the project expects counted apart from those rlconform documents (both have the
    status "known" in every report; the sentence says how many of them the project expects)."""
    if expected:
        return "expected"
    return table_status(status, known, expected, inherited)


def summary_of(statuses: Iterable[str]) -> dict[str, int]:
    """How many results have each status (every report's word), in report order."""
    counts = Counter(statuses)
    order = (*STATUSES, *sorted(set(counts).difference(STATUSES)))
    return {status: counts[status] for status in order if counts[status]}


def summary_counts(verdicts: Iterable[Verdict]) -> dict[str, int]:
    return dict(Counter(summary_status(v.status, v.known, v.expected, v.inherited) for v in verdicts))


def summary_sentence(counts: Mapping[str, int]) -> str:
    """'12 passed, 1 failed, 1 expected failure, 3 not applicable' (statuses in report order)."""
    order = [*SUMMARY_WORDS, *sorted(set(counts).difference(SUMMARY_WORDS))]
    parts = []
    for status in order:
        n = counts.get(status, 0)
        if n:
            one, many = SUMMARY_WORDS.get(status, (status.replace("_", " "),) * 2)
            parts.append(f"{n} {one if n == 1 else many}")
    return ", ".join(parts) if parts else "no checks ran"


def system_json(system: System) -> dict[str, Any]:
    return {
        "id": system.id,
        "family": system.family,
        "title": system.title,
        "kind": system.kind,
        "source": system.source,
        "requires": list(system.requires),
        "missing": system.missing_requirements(),
        "restrictions": list(system.capabilities.notes),
        "known_violations": [{"spec": k, "reason": r} for k, r in system.known_violations],
    }


def impact_of(verdict: Verdict) -> str | None:
    """The verdict's impact class: its own, else its spec's (a verdict made outside a search)."""
    return verdict.impact or registered_impact(verdict.spec_id)


def verdict_json(verdict: Verdict) -> dict[str, Any]:
    """One result of the document; ``group`` is set by ``grouping.annotate`` over all of them.
    ``status`` is the status every report shows (:func:`~rlconform.core.verdict.cell_status`),
    ``outcome`` the verdict's own (what the check concluded)."""
    return {
        "system": verdict.system_id,
        "spec": verdict.spec_id,
        "status": cell_status(verdict),
        "outcome": verdict.status,
        "known": verdict.known,
        "expected": verdict.expected,
        "inherited": verdict.inherited,
        "finding": verdict.finding,
        "message": verdict.message,
        "violations": verdict.violations,
        "reproducer": verdict.reproducer,
        "case": None if verdict.case is None else repr(verdict.case),
        "examples": verdict.examples,
        "checked": verdict.checked,
        "seconds": round(verdict.seconds, 3),
        "profile": verdict.profile,
        "seed": verdict.seed,
        "impact": impact_of(verdict),
        "signature": verdict.signature,
        "violation_kinds": list(verdict.violation_kinds),
        "group": None,
        "library_messages": dict(verdict.library_messages),
    }


def accelerator(bundled: bool = True) -> str:
    """Which accelerator the torch-backed families could use; said explicitly when there is none.
    ``bundled``: also say what it means for the bundled systems (the header of ``run``)."""
    if library_version("torch") is None:
        return "none checked (torch not installed)"
    try:
        import torch

        # device_count, not get_device_name: naming the device creates a CUDA context, and the
        # checks run in forked children, which cannot use CUDA after their parent initialised it
        if torch.cuda.is_available():
            found = f"cuda ({torch.cuda.device_count()} device(s))"
            return f"{found}: the isaaclab.torch *.cuda systems run on it" if bundled else found
        none = "no GPU available (torch.cuda.is_available() is False)"
        if not bundled:
            return none
        return f"{none}: the isaaclab.torch *.cuda systems are skipped, nothing else runs on a GPU"
    except Exception as exc:  # a broken torch install must not stop the report
        return f"unknown (importing torch failed: {type(exc).__name__})"


def header_lines(profile: Profile, seed: int | None, families: Sequence[Family] | None = None) -> list[str]:
    """The lines a run starts with. ``families``: the families checked (``check``, the plugin):
    only their libraries are named, and the accelerator only where one of them uses torch
    devices; None (``run``): every library rlconform knows, and the accelerator."""
    names = LIBRARIES if families is None else family_libraries(families)
    versions = ", ".join(f"{name} {version or 'not installed'}" for name, version in library_versions(names).items())
    seed_text = "derandomized" if profile.derandomize else f"seed {seed} (RLCONFORM_SEED={seed} reproduces this run)"
    lines = [f"rlconform {__version__} on Python {sys.version.split()[0]}", f"libraries: {versions}"]
    if families is None:
        lines.append(f"accelerator: {accelerator()}")
    elif any(family.uses_accelerator for family in families):
        lines.append(f"accelerator: {accelerator(bundled=False)}")
    lines.append(
        f"profile: {profile.name} ({profile.max_examples} examples per search, "
        f"{profile.max_examples_out_of_process} for systems with worker processes; {seed_text})"
    )
    return lines


def render_table(results: Results, systems: Sequence[System] | None = None, specs: Sequence[Spec] | None = None) -> str:
    """A systems x specs grid with numbered spec columns and a legend. A column's number is its
    spec's (:func:`spec_column`): the same in ``run``, ``check`` and ``report``."""
    systems = list(systems or results.systems)
    specs = list(specs or results.specs)
    numbers = column_numbers([spec.id for spec in specs])
    width = max([len(s.id) for s in systems] + [6])
    cell = max([6, *(len(str(n)) + 2 for n in numbers)])
    lines = ["specs: " + "  ".join(f"[{n}] {spec.id} ({spec.impact})" for n, spec in zip(numbers, specs, strict=True))]
    lines.append(" " * width + " " + "".join(f"{n:>{cell}}" for n in numbers))
    for system in systems:
        row = []
        for spec in specs:
            verdict = results.verdict(system.id, spec.id)
            row.append(f"{SYMBOLS[cell_status(verdict)] if verdict else '':>{cell}}")
        lines.append(f"{system.id:<{width}} " + "".join(row))
    lines.append(
        "legend: ok pass | FAIL violation found | inh inherited (the library under the system fails it alone) | "
        "known documented or expected failure | "
        ". not applicable | n/e not exercised by any example | skip not installed or not in this release | "
        "n/r not run (the system hung or crashed first) | ERR error"
    )
    lines.append(
        "impact (most severe first): training-data corrupts training data | reproducibility breaks reproducibility "
        "| api-contract breaks the API contract | robustness"
    )
    return "\n".join(lines)


def column_numbers(spec_ids: Sequence[str]) -> list[int]:
    """The column number of each spec: its catalog number, else one past every number given."""
    numbers = [spec_column(spec_id) for spec_id in spec_ids]
    spare = max([n for n in numbers if n is not None] + [0])
    out = []
    for n in numbers:
        if n is None:
            spare += 1
            n = spare
        out.append(n)
    return out


def status_label(verdict: Verdict) -> str:
    """How the text listings name a verdict: its status (:func:`cell_status`) in capitals, the
    same word in the listing of failures and in ``check``'s per-spec list (FAIL, INHERITED, KNOWN
    for a known or expected failure, NOT_EXERCISED, ...), as the JSON and every report show it."""
    status: ReportStatus = cell_status(verdict)
    return status.upper()


def _case_line(case: Any) -> str:
    ops = getattr(case, "ops", None)
    if ops is not None:
        return f"    minimal case: {len(ops)} calls on {case.num_envs} sub-env(s)"
    return f"    minimal case: {case!r}"


def failure_groups(verdicts: Sequence[Verdict], specs: Sequence[Spec] | None = None) -> list[list[Verdict]]:
    """The reported verdicts (failures, errors, unexercised specs) in listing order, failures that
    share a minimal case in one group headed by its root cause, then its most specific spec
    (``rlconform.core.grouping``).

    Order: failures that count, by the most severe impact class of their group, then spec id; then
    errors and unexercised specs (no verdict on the system: they are not ranked below any
    failure they might hide); then the failures a user's stack inherits from the library under it;
    then the known and expected ones, grouped the same way.
    """
    spec_order = {spec.id: i for i, spec in enumerate(specs or ())}
    for verdict in verdicts:
        spec_order.setdefault(verdict.spec_id, len(spec_order))
    system_order: dict[str, int] = {}
    for verdict in verdicts:
        system_order.setdefault(verdict.system_id, len(system_order))
    failed = [v for v in verdicts if v.status == "fail"]
    by_pair = {(v.system_id, v.spec_id): v for v in failed}
    failing = [
        Failing(
            system=v.system_id,
            spec=v.spec_id,
            case=None if v.case is None else repr(v.case),
            excused=bool(v.known or v.expected),
            inherited=bool(v.inherited),
            impact=impact_of(v),
            violations=len(v.violations),
            spec_order=spec_order[v.spec_id],
            system_order=system_order[v.system_id],
            crash=reports_crash(v.spec_id, v.violation_kinds or v.violations),
        )
        for v in failed
    ]
    found = groups(failing)
    #: a group is ranked by its most severe member, even when a crash of a milder class heads it
    worst = {(g[0].system, g[0].spec): group_rank(g) for g in found}
    grouped = [[by_pair[(f.system, f.spec)] for f in group] for group in found]
    others = [[v] for v in verdicts if v.status in ("error", "not_exercised")]

    def key(group: list[Verdict]) -> tuple[int, int, str, int]:
        head = group[0]
        category = (
            4 if head.known or head.expected else 3 if head.inherited else {"fail": 0, "error": 1}.get(head.status, 2)
        )
        severity = worst.get((head.system_id, head.spec_id), rank(impact_of(head)))
        return (category, severity, head.spec_id, system_order[head.system_id])

    return sorted(grouped + others, key=key)


def render_failures(
    verdicts: Iterable[Verdict],
    *,
    with_reproducers: bool = False,
    specs: Sequence[Spec] | None = None,
    reproducer_paths: Mapping[tuple[str, str], str] | None = None,
    systems: Sequence[System] = (),
    width: int | None = None,
) -> str:
    """The failures, errors and unexercised specs: one entry per group, ranked by impact, each
    with its impact class, its signature, the specs that also fail on its minimal case, and (with
    ``with_reproducers``) one reproducer, printed flush-left between blank lines so that it can be
    pasted as it is (a failure the project expects has none: its entry says why it is excused).
    ``reproducer_paths`` (``--reproducers DIR``: the file each group's reproducer was written to,
    by (system id, spec id)) puts the path in the entry, one line instead of the script. A bundled
    system's failure names the FINDINGS.md row that explains it, or, given its system among
    ``systems``, says that none does (rlconform.core.findings). ``width``: the entries' own lines
    are wrapped to fit it (a reproducer, flush-left, is printed as it is)."""
    lines: list[str] = []
    paths = reproducer_paths or {}
    by_id = {system.id: system for system in systems}

    def add(text: str) -> None:
        if width is None or len(text) <= width:
            lines.append(text)
            return
        indent = " " * (len(text) - len(text.lstrip(" ")))
        lines.extend(
            textwrap.wrap(
                text.lstrip(" "),
                width,
                initial_indent=indent,
                subsequent_indent=indent + "    ",
                break_long_words=False,
                break_on_hyphens=False,
            )
        )

    for group in failure_groups(list(verdicts), specs):
        verdict = group[0]
        impact = impact_of(verdict)
        add(f"{status_label(verdict)} [{title(impact)}] {verdict.system_id} :: {verdict.spec_id}")
        add(f"    {verdict.message.splitlines()[0] if verdict.message else ''}")
        if NATIVE_TRACEBACK in verdict.message:
            # a crashed or stuck worker's native traceback, told once (its other specs are "not run")
            for line in verdict.message.split("\n\n", 1)[1].splitlines():
                add("    " + line)
        if len(group) > 1:
            also = ", ".join(f"{v.spec_id} ({impact_of(v)})" for v in group[1:])
            add(f"    also fails on the same minimal case: {also}")
        if verdict.signature:
            add(f"    signature: {verdict.signature}")
        if verdict.inherited:
            add(f"    inherited: {verdict.inherited}")
        if verdict.finding:
            add(f"    FINDINGS.md {verdict.finding}: a library defect rlconform found and documented")
        elif verdict.system_id in by_id and new_verdict(by_id[verdict.system_id], verdict):
            add("    NEW: no row of FINDINGS.md explains this failure of a bundled system")
        if verdict.known:
            add(f"    known because: {verdict.known}")
        if verdict.expected:
            add(f"    expected by the project: {verdict.expected}")
        if verdict.case is not None:
            add(_case_line(verdict.case))
        path = paths.get((verdict.system_id, verdict.spec_id))
        if path is not None:
            how = "pytest" if path.replace("\\", "/").rsplit("/", 1)[-1].startswith("test_") else "python"
            add(f"    reproducer: {path} (run it with {how}: it fails while the bug is there)")
        if with_reproducers and shows_reproducer(verdict):
            assert verdict.reproducer is not None
            add("    reproducer: (flush-left below; save it as a .py file and run it: exit status 1 while it fails)")
            lines.append("")
            lines.extend(verdict.reproducer.rstrip("\n").splitlines())
            lines.append("")
    return "\n".join(lines).rstrip("\n")


def shows_reproducer(verdict: Verdict) -> bool:
    """Whether a failure's reproducer is printed (and written by ``--reproducers DIR``): every one
    but those of failures the project expects (its expected-failures file already names them)."""
    return bool(verdict.reproducer) and not verdict.expected


def render_skips(results: Results) -> str:
    """Systems whose library is missing or whose installed release lacks them, stated explicitly
    (never silently dropped)."""
    lines = []
    for system in results.systems:
        reason = system.skip_reason()
        if reason:
            lines.append(f"SKIPPED {system.id}: {reason}; its specs were not run")
    return "\n".join(lines)
