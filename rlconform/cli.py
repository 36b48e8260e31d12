"""The ``rlconform`` command.

* ``rlconform run``: every bundled system of every installed library against every spec; prints a
  line per system and ends on a summary by library (rlconform.reports.run_summary), writes JSON
  and, beside it, the systems x specs table (Markdown, HTML); exit 1 on a bundled system's failure
  no FINDINGS.md row explains (rlconform.core.findings), or an error.
* ``rlconform check MODULE:CALLABLE --api FAMILY``: a user's system; exit 0 when every applicable
  spec passes, 1 when any does not, 2 for bad input.
* ``--fail-on CLASS`` (run and check): only a failure whose spec's impact class (rlconform.core.impact)
  is CLASS or more severe exits 1; errors always do. Failures are listed by impact, those sharing
  a minimal case once, under their root cause: a crash or hang first, else the most specific spec (rlconform.core.grouping).
* ``rlconform list [--family F] [--specs | --systems]``: the bundled systems and the specs.
* ``rlconform report FILE.json``: a saved results file as Markdown (stdout), HTML or JUnit XML.
* ``rlconform diff OLD.json NEW.json``: the verdicts that changed, regressions first, then the
  checks failing another way (another signature); exit 1 on a regression only.
* ``rlconform matrix DIR``: the verdicts that differ across many results files (releases).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import signal
import sys
import threading
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TextIO

from hypothesis.errors import HypothesisWarning

from rlconform import __version__
from rlconform.core import intents
from rlconform.core.catalog import current
from rlconform.core.config import ConfigError
from rlconform.core.config import validate as validate_config
from rlconform.core.expected import ExpectedFailures, ExpectedFailuresError, paste_line, unlisted
from rlconform.core.findings import new_verdict
from rlconform.core.impact import IMPACTS, at_least, check_fail_on, fail_on_class, fail_on_own
from rlconform.core.options import declared_options
from rlconform.core.profiles import PROFILES
from rlconform.core.progress import LINE_WIDTH, Progress, reporter, wrap
from rlconform.core.selection import SelectionError
from rlconform.core.session import Checked, CheckRequest, Session, skipped_note
from rlconform.core.spec import Spec
from rlconform.core.system import System
from rlconform.core.user import BadInput, factory_signatures, usable_cpus
from rlconform.core.verdict import Verdict
from rlconform.reports import ResultsDocument, ResultsError, load_results, validate, write_reports
from rlconform.reports import render_markdown as render_results_markdown
from rlconform.reports.diff import Diff
from rlconform.reports.diff import render_markdown as render_diff_markdown
from rlconform.reports.diff import render_text as render_diff_text
from rlconform.reports.document import V1_FAMILY_NAMES
from rlconform.reports.left_out import left_out
from rlconform.reports.matrix import Matrix, load_directory
from rlconform.reports.matrix import render_html as render_matrix_html
from rlconform.reports.matrix import render_markdown as render_matrix_markdown
from rlconform.reports.results import (
    Results,
    failure_groups,
    header_lines,
    impact_of,
    render_failures,
    shows_reproducer,
    spec_column,
    status_label,
)
from rlconform.reports.run_summary import compress, render_run_summary

EXIT_OK, EXIT_FAIL, EXIT_BAD_INPUT = 0, 1, 2
#: the shell's status for a process ended by SIGINT (128 + 2)
EXIT_INTERRUPTED = 130
DEFAULT_RESULTS = "rlconform-results/results.json"


def _add_common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--profile",
        choices=sorted(PROFILES),
        default=None,
        help="Hypothesis profile (default: ci, or $RLCONFORM_PROFILE)",
    )
    parser.add_argument("--json", metavar="FILE", help="write the results as JSON")
    _add_report_outputs(parser, "also write the results as")
    parser.add_argument(
        "--spec", action="append", metavar="PATTERN", help="only specs whose id matches (glob); repeatable"
    )
    parser.add_argument(
        "--reproducers",
        metavar="DIR",
        help="write each failure's reproducer to DIR, one .py file per failure group (test_*.py: a pytest "
        "test, for your own factory a regression test you can keep); the listing then "
        "names each file instead of printing the script",
    )
    parser.add_argument(
        "--skip-spec",
        action="append",
        metavar="PATTERN",
        help="leave out the specs whose id matches (glob); repeatable. The report names the specs left out",
    )
    parser.add_argument(
        "-j",
        "--jobs",
        type=int,
        default=None,
        help="worker processes: one system per worker, and with two or more a spec that runs apart "
        "(env.stack_equivalence) in a worker of its own beside its system's other specs (default: 1 for run; "
        "for check, 2 where this machine has two CPUs or more, 1 with --in-process)",
    )
    parser.add_argument(
        "--in-process",
        action="store_true",
        help="check systems in this process (faster to debug; by default each system runs in a worker process "
        "of its own, so that a system that crashes gets an error verdict instead of ending the run)",
    )
    parser.add_argument(
        "--expected-failures",
        metavar="FILE",
        help="your project's expected failures: lines of 'KEY  REASON', KEY a spec id, SYSTEM-SPEC or a glob",
    )
    parser.add_argument(
        "--fail-on",
        metavar="CLASS",
        default=None,
        help=f"exit 1 only for a failure of impact class CLASS or a more severe one ({', '.join(IMPACTS)}, most "
        "severe first; default: any failure, as without it); errors always count. On run it implies --strict "
        "at that class. 'own' (alone or as own,CLASS) leaves out the failures inherited from the library under "
        "your code (it fails the same way on its own)",
    )
    parser.add_argument(
        "--strict-expected",
        action="store_true",
        help="an expected failure that passes is a failure (the file must be kept current)",
    )


def _add_report_outputs(parser: argparse.ArgumentParser, verb: str) -> None:
    parser.add_argument("--html", metavar="FILE", help=f"{verb} one static HTML page")
    parser.add_argument("--junit", metavar="FILE", help=f"{verb} JUnit XML (one testsuite per system)")
    parser.add_argument("--markdown", metavar="FILE", help=f"{verb} Markdown (e.g. $GITHUB_STEP_SUMMARY)")


DESCRIPTION = (
    "Property-based conformance checks of the step/reset semantics of RL environment APIs "
    "(Gymnasium, Stable-Baselines3, TorchRL, Isaac Lab)."
)

CHECK_DESCRIPTION = """\
Check your own env or vectorizer: MODULE:CALLABLE names a factory, and --api says which API it
implements (the factory signatures are below). rlconform drives what the factory returns with
its reference envs (or, for --api gymnasium.Env, drives your env itself and through every
installed stack), searches for a violation of each spec that applies, and prints each failure
with its minimal case and a standalone reproducer.

Exit status: 0 every applicable spec passes; 1 a spec fails or was not exercised, or no spec
applies at all (nothing was checked); 2 bad input (one line on stderr saying why)."""

CHECK_EXAMPLES = """\
examples:
  rlconform check mypkg.vec:make --api gymnasium.vector
  rlconform check mypkg.envs:make_env --api gymnasium.Env --json results.json
  rlconform check mypkg.vec:make --api sb3.VecEnv --spec 'terminal.*' --reproducers repro/
  rlconform check mypkg.vec:make --api gymnasium.vector --expected-failures rlconform-expected-failures.txt

`rlconform list --family FAMILY --specs` lists the specs a family is checked against (your own env,
--api gymnasium.Env, is family gymnasium.Env: a family is named by its --api). More: docs/cli.md."""


def _factory_help() -> str:
    """The --api families of ``check --help``: each with the signature its factory must have."""
    signatures = factory_signatures()
    width = max([len(api) for api in signatures] + [8])
    lines = ["--api FAMILY: the signature MODULE:CALLABLE must have"]
    lines.extend(f"  {api:<{width}}  {signature}" for api, signature in signatures.items())
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rlconform",
        description=DESCRIPTION,
        epilog="`rlconform check --help` shows how to check your own env or vectorizer.",
    )
    parser.add_argument("--version", action="version", version=f"rlconform {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser(
        "run",
        help="every bundled system against every spec; prints a line per system and a summary by library, "
        "writes JSON and the systems x specs table (Markdown, HTML); exit 1 on a failure FINDINGS.md does "
        "not explain",
    )
    _add_common(run)
    run.set_defaults(json=DEFAULT_RESULTS)
    run.add_argument("--print-reproducers", action="store_true", help="also print the reproducer of every failure")
    run.add_argument(
        "--system", action="append", metavar="PATTERN", help="only systems whose id matches (glob); repeatable"
    )
    run.add_argument("--no-reference", action="store_true", help="leave out the reference models (the control rows)")
    run.add_argument(
        "--strict",
        action="store_true",
        help="exit 1 when any library system fails a spec (by default only a failure no FINDINGS.md row "
        "explains, or an error, does)",
    )
    run.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="also print a line per spec that ran (not those that do not apply) and every failure's entry "
        "(by default only those of new failures and errors; all of them are in the reports)",
    )

    check = sub.add_parser(
        "check",
        help="check your own env or vectorizer: MODULE:CALLABLE --api FAMILY",
        description=CHECK_DESCRIPTION,
        epilog=f"{_factory_help()}\n\n{CHECK_EXAMPLES}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    check.add_argument("target", metavar="MODULE:CALLABLE", help="your factory, e.g. mypkg.vec:make")
    check.add_argument(
        "--api",
        required=True,
        metavar="FAMILY",
        help=f"the API your factory implements, one of: {', '.join(factory_signatures())} (signatures below)",
    )
    # each family's own options, from its declaration (rlconform.core.options)
    for option, apis in declared_options(current().libraries):
        option.add_to(check.add_argument, apis=apis)
    check.add_argument(
        "--intended",
        action="append",
        metavar="CHANGES",
        help=intents.help_text(),
    )
    _add_common(check)

    listing = sub.add_parser("list", help="list the bundled systems and the specs")
    listing.add_argument(
        "--family",
        metavar="FAMILY",
        help="only the systems of FAMILY and the specs that apply to it (a family as the list names it: "
        "the --api names (gymnasium.vector, sb3.VecEnv, gymnasium.Env: your own env, ...) and the families "
        "without a user API (torchrl.collector, isaaclab.DirectRLEnv, isaaclab.rsl_rl)",
    )
    only = listing.add_mutually_exclusive_group()
    only.add_argument("--specs", action="store_true", help="only the specs (numbered as the tables' columns)")
    only.add_argument("--systems", action="store_true", help="only the systems")

    report = sub.add_parser(
        "report", help="turn a results JSON file into HTML, JUnit XML or Markdown (default: Markdown on stdout)"
    )
    report.add_argument("file", metavar="FILE.json", help="a results file written by run, check or the pytest plugin")
    _add_report_outputs(report, "write")

    diff = sub.add_parser("diff", help="the verdicts that changed between two results files; exit 1 on a regression")
    diff.add_argument("old", metavar="OLD.json", help="the baseline results file")
    diff.add_argument("new", metavar="NEW.json", help="the results file to compare with it")
    diff.add_argument("--markdown", metavar="FILE", help="also write the listing as Markdown")

    matrix = sub.add_parser(
        "matrix", help="compatibility matrix of the results files under a folder (default: Markdown on stdout)"
    )
    matrix.add_argument("directory", metavar="DIR", help="a folder of results files (*.json, searched recursively)")
    matrix.add_argument("--markdown", metavar="FILE", help="write the matrix as Markdown")
    matrix.add_argument(
        "--grouped",
        action="store_true",
        help="Markdown: one row per spec and pattern of statuses, naming the systems that share it",
    )
    matrix.add_argument("--html", metavar="FILE", help="write the matrix as one static HTML page")
    return parser


@contextlib.contextmanager
def _exit_on_sigterm() -> Iterator[None]:
    """SIGTERM ends the run as Ctrl-C does, through ``finally`` blocks, so that the isolated
    workers (in process groups of their own) are killed with it; the previous handler is put
    back afterwards (``main`` may run inside someone else's process)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if args.command == "list":
            return _list(args)
        if args.command == "report":
            return _report(args)
        if args.command == "diff":
            return _diff(args)
        if args.command == "matrix":
            return _matrix(args)
        validate_config()  # a bad RLCONFORM_* value: one line and exit 2, before anything runs
        # TorchRL sets its logger to RL_LOGGING_LEVEL (INFO by default) when it is first imported,
        # which in a worker can come after rlconform quieted that logger: its INFO lines (one per
        # lazy storage) would land in the report. The user's own setting is kept.
        os.environ.setdefault("RL_LOGGING_LEVEL", "WARNING")
        with _exit_on_sigterm(), _hypothesis_warnings_silenced():
            if args.command == "run":
                return _run(args)
            return _check(args)
    except KeyboardInterrupt:  # before or after the checks (during them: _interrupted)
        print("rlconform: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except (BadInput, ConfigError, SelectionError) as exc:
        print(f"rlconform: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT


@contextlib.contextmanager
def _hypothesis_warnings_silenced() -> Iterator[None]:
    """Hypothesis' warnings are about rlconform's own searches, never about the user's system:
    none reaches the user (the searches silence their own; this also covers what runs around
    them, and the isolated workers forked meanwhile inherit it). The filters are put back
    afterwards (``main`` may run inside someone else's process)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=HypothesisWarning)
        yield


def _list_family(name: str) -> str:
    """The family ``rlconform list --family`` names (an unknown one is bad input)."""
    families = current().families()
    if name not in families:
        renamed = V1_FAMILY_NAMES.get(name)
        if renamed is not None:
            raise BadInput(f"family {name!r} is now named {renamed!r} (a family is named by its --api)")
        raise BadInput(f"unknown family {name!r}; known: {', '.join(sorted(families))}")
    return name


def _list(args: argparse.Namespace) -> int:
    family = _list_family(args.family) if args.family else None
    both = not args.specs and not args.systems
    for library, why in current().unavailable():
        print(f"library {library}: {why}; its families, systems and specs are not listed")
    if args.systems or both:
        for system in Session().bundled_systems():  # what --system selects among
            if family is not None and system.family != family:
                continue
            reason = system.skip_reason()
            note = f"  [{reason}]" if reason else ""
            print(f"{system.id:50s} {system.family:18s} {system.title}{note}")
    if both:
        print()
    if args.specs or both:
        for spec in current().specs():
            if family is not None and family not in spec.families:
                continue
            print(f"{f'[{spec_column(spec.id)}]':>5} {spec.id:38s} {spec.statement}")
    return EXIT_OK


def _request(
    args: argparse.Namespace,
    out: TextIO,
    started: Callable[[Checked], None],
    *,
    progress: Progress | None = None,
    jobs: int = 1,
) -> CheckRequest:
    """What ``run`` and ``check`` share of their request: the specs, the profile, how to run (``jobs``
    where ``-j`` is not given), the project's expected failures (a malformed file is bad input
    before anything is built), and the progress lines on ``out`` (``progress``: other than a line
    per spec and per system)."""
    return CheckRequest(
        specs=args.spec,
        skip_specs=args.skip_spec or (),
        profile=args.profile,
        jobs=args.jobs if args.jobs is not None else jobs,
        isolate=not args.in_process,
        expected=_load_expected(args),
        progress=progress or reporter(out),
        started=started,
    )


def _print_skipped_specs(checked: Checked, out: TextIO) -> None:
    """Name the specs the user left out (the results' notes name them too)."""
    line = skipped_note(checked.skipped_specs, "--skip-spec")
    if line is not None:
        print(f"NOT RUN {line}", file=out)


def _family_options(session: Session, args: argparse.Namespace) -> dict[str, object]:
    """The family's own options; one it does not take, given on the command line, is bad input."""
    return session.family_options(args.api, lambda name: getattr(args, name))


def _fail_on(args: argparse.Namespace) -> str | None:
    """The --fail-on class, checked before the (long) run starts; a bad one is bad input."""
    if args.fail_on is None:
        return None
    try:
        return check_fail_on(args.fail_on)
    except ValueError as exc:
        raise BadInput(f"--fail-on: {exc}") from None


def counts_against(verdict: Verdict, fail_on: str | None) -> bool:
    """Whether ``verdict`` fails the command under ``--fail-on`` (None: any failure does). A
    failure or an unexercised spec below the class does not; an error (no verdict at all) or a
    skip of the user's own system always does."""
    if verdict.ok:
        return False
    if verdict.status == "fail" and verdict.inherited and fail_on_own(fail_on):
        return False  # --fail-on own: the library under the user's code fails the same way alone
    if verdict.status in ("fail", "not_exercised"):
        return at_least(impact_of(verdict), fail_on_class(fail_on))
    return True


def _run(args: argparse.Namespace) -> int:
    """Every bundled system against every spec: a line per system as it finishes, the entries of
    the failures a reader must look at (new ones and errors; every one with ``--verbose`` or
    ``--print-reproducers``), then the summary by library (rlconform.reports.run_summary), last.
    The systems x specs grid goes to the Markdown and HTML reports beside the results JSON."""
    fail_on = _fail_on(args)
    out = sys.stdout

    def started(checked: Checked) -> None:
        for line in header_lines(checked.profile, checked.seed):
            print(wrap(line), file=out)
        for line in skipped_systems(checked.plan.skipped):
            print(line, file=out)
        _print_skipped_specs(checked, out)
        for line in without_specs_lines(checked.plan.without_specs):
            print(line, file=out)

    progress = reporter(out, per_spec=args.verbose, not_applicable=False, line_width=LINE_WIDTH)
    request = _request(args, out, started, progress=progress)
    request.systems, request.reference = args.system, not args.no_reference
    checked = Session().check(request)
    results = Results.from_checked(checked, every_library=True)
    if checked.interrupted:
        return _interrupted(args, results, checked.finished, applicable_only=True)
    _print_expected_warnings(checked)
    systems = {system.id: system for system in results.systems}
    new = [v for v in results.verdicts if new_verdict(systems[v.system_id], v) and counts_against(v, fail_on)]
    every = args.verbose or args.print_reproducers
    shown = {id(v) for v in (results.verdicts if every else [*new, *_errors(results)])}
    paths = reproducer_paths(args.reproducers, results.verdicts, results.specs)
    failures = render_failures(
        [v for v in results.verdicts if id(v) in shown],
        with_reproducers=args.print_reproducers,
        specs=results.specs,
        reproducer_paths=paths,
        systems=results.systems,
        width=LINE_WIDTH,
    )
    if failures:
        print(file=out)
        print(failures, file=out)
    _print_unlisted(request.expected, results.verdicts, out)
    try:
        document = validate(json.loads(json.dumps(results.to_json(), default=str)), "the results of this run")
    except ResultsError as exc:
        raise BadInput(str(exc)) from None
    files = _write_run_files(args, results, document, paths)
    errors = any(v.status == "error" and not v.ok for v in results.verdicts)
    failed = any(v.status in ("fail", "not_exercised") and counts_against(v, fail_on) for v in results.verdicts)
    status = EXIT_FAIL if errors or new or ((args.strict or fail_on is not None) and failed) else EXIT_OK
    said = results.library_messages_line(written=bool(args.json))
    closing = [*files, *([said] if said else [])]
    closing.append(_run_status_line(status, results.verdicts, new, strict=args.strict, fail_on=fail_on))
    print(file=out)
    print(render_run_summary(document, closing), file=out)
    return status


def _errors(results: Results) -> list[Verdict]:
    return [v for v in results.verdicts if v.status == "error" and not v.ok]


def skipped_systems(systems: Sequence[System]) -> list[str]:
    """The systems that cannot run here, one line per reason (``SKIPPED 8 systems: isaaclab.*: not
    installed: isaaclab``): a missing library is said once, not once per system."""
    by_reason: dict[str, list[str]] = {}
    for system in systems:
        by_reason.setdefault(system.skip_reason() or "", []).append(system.id)
    return [
        wrap(f"SKIPPED {compress(ids)}: {reason}; {'its' if len(ids) == 1 else 'their'} specs were not run")
        for reason, ids in by_reason.items()
    ]


def without_specs_lines(lines: Mapping[str, str]) -> list[str]:
    """The systems no selected spec applies to: each line when they are few, else one line (the
    results' notes name each)."""
    if len(lines) <= 3:
        return [wrap(line) for line in lines.values()]
    return [wrap(f"NO SPECS {compress(list(lines))}: no selected spec applies to their families; not run")]


#: the reports ``run`` writes beside its results JSON, named after it (``results.json``:
#: ``results.md``, ``results.html``; the systems x specs grid, then every failure with its
#: reproducer), unless --markdown or --html name where
RUN_REPORTS = {"markdown": ".md", "html": ".html"}


#: what the reports ``run`` writes hold, said where the summary names them
RUN_REPORT_NOTES = {
    "markdown": " (the systems x specs table, then every failure)",
    "html": " (the same as one page)",
}


def _write_run_files(
    args: argparse.Namespace, results: Results, document: ResultsDocument, paths: dict[tuple[str, str], str]
) -> list[str]:
    """Write the results JSON, the reports asked for and, beside the JSON, the Markdown and HTML
    reports that hold the systems x specs grid (:data:`RUN_REPORTS`); returns the line that names
    each file written, for the summary."""
    files = []
    if args.json:
        results.write_json(args.json)
        files.append(f"results written to {args.json}")
    stem = os.path.splitext(args.json or DEFAULT_RESULTS)[0]
    outputs = {
        "markdown": args.markdown or stem + RUN_REPORTS["markdown"],
        "html": args.html or stem + RUN_REPORTS["html"],
        "junit": args.junit,
    }
    try:
        for name, path in outputs.items():
            for written in write_reports(document, {name: path}):
                files.append(f"report written to {written}{RUN_REPORT_NOTES.get(name, '')}")
    except ResultsError as exc:
        raise BadInput(str(exc)) from None
    _write_reproducers(args, results.verdicts, paths)
    return files


def _run_status_line(
    status: int, verdicts: Sequence[Verdict], new: Sequence[Verdict], *, strict: bool, fail_on: str | None
) -> str:
    """The last line of ``run``: its exit status and why (new failures, errors, ``--strict``)."""
    failures = [v for v in verdicts if v.status == "fail" and not v.ok]
    errors = sum(1 for v in verdicts if v.status == "error" and not v.ok)
    explained = sum(1 for v in failures if v.finding)
    if status == EXIT_OK:
        if not failures:
            return "exit status 0: no failures"
        if explained == len(failures):
            return f"exit status 0: every failure is a FINDINGS.md row ({explained})"
        below = len(failures) - explained
        return f"exit status 0: {below} new failure(s) below --fail-on {fail_on}; {explained} are FINDINGS.md rows"
    reasons = []
    new_failures = sum(1 for v in new if v.status == "fail")
    if new_failures:
        reasons.append(f"{new_failures} new failure{'' if new_failures == 1 else 's'}, no FINDINGS.md row explains")
    if errors:
        reasons.append(f"{errors} error{'' if errors == 1 else 's'}")
    if not reasons and (strict or fail_on is not None):
        reasons.append(f"failures of library systems count ({'--strict' if strict else f'--fail-on {fail_on}'})")
    return f"exit status 1: {'; '.join(reasons)}"


def _finish(args: argparse.Namespace, results: Results, paths: dict[tuple[str, str], str], out: TextIO) -> None:
    """What follows the summary line of ``run`` and ``check``: how much the libraries said, the
    results file, the other reports, the reproducers."""
    said = results.library_messages_line(written=bool(args.json))
    if said is not None:
        print(said, file=out)
    if args.json:
        results.write_json(args.json)
        print(f"results written to {args.json}", file=out)
    _write_reports(args, results)
    _write_reproducers(args, results.verdicts, paths)


def _interrupted(args: argparse.Namespace, results: Results, finished: int, *, applicable_only: bool = False) -> int:
    """Ctrl-C during the checks: the workers are gone (suite.run_checks); write the verdicts
    finished so far and the others as not run, marked as partial, and end with the shell's status
    for SIGINT, no traceback. ``applicable_only``: the finished verdicts listed leave out the
    specs that do not apply (``run``: thousands of them)."""
    with _sigint_ignored():  # a second Ctrl-C must not cut the results file short
        return _write_partial(args, results, list(results.verdicts), finished, applicable_only=applicable_only)


@contextlib.contextmanager
def _sigint_ignored() -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _write_partial(
    args: argparse.Namespace, results: Results, verdicts: list[Verdict], finished: int, *, applicable_only: bool = False
) -> int:
    results.verdicts = verdicts
    results.interrupted = True
    planned = len(verdicts)
    results.notes.append(
        f"interrupted (Ctrl-C): partial results, {finished} of {planned} verdicts finished before the interruption; "
        "the others are not run"
    )
    where = ""
    if args.json:
        results.write_json(args.json)
        where = f"; partial results written to {args.json}"
    with contextlib.suppress(BadInput):
        _write_reports(args, results)
    _print_finished(results, applicable_only=applicable_only)
    print(f"rlconform: interrupted after {finished} of {planned} verdicts{where}", file=sys.stderr)
    return EXIT_INTERRUPTED


def _print_finished(results: Results, *, applicable_only: bool = False) -> None:
    """The verdicts finished before a Ctrl-C, as a finished check prints them (one line each, then
    the failures with their minimal cases and reproducers), so that nothing the run already found
    is lost when no --json was given; ``applicable_only``: not those of specs that do not apply."""
    out = sys.stdout
    left_out = ("not_run", "not_applicable") if applicable_only else ("not_run",)
    done = [verdict for verdict in results.verdicts if verdict.status not in left_out]
    if not done:
        return
    print("\nfinished before the interruption:", file=out)
    for line in _verdict_lines(done, several_systems=len({v.system_id for v in done}) > 1):
        print(line, file=out)
    failures = render_failures(done, with_reproducers=True, specs=results.specs)
    if failures:
        print(file=out)
        print(failures, file=out)
    print(f"\nsummary (partial): {results.summary_text()}", file=out)
    said = results.library_messages_line(written=False)
    if said is not None:
        print(said, file=out)


def _load_expected(args: argparse.Namespace) -> ExpectedFailures | None:
    if not args.expected_failures:
        return None
    try:
        return ExpectedFailures.load(args.expected_failures, strict=args.strict_expected)
    except ExpectedFailuresError as exc:
        raise BadInput(str(exc)) from None


def _print_expected_warnings(checked: Checked) -> None:
    """The expected-failures entries that matched nothing (the results' notes carry them too)."""
    for warning in checked.warnings:
        print(f"warning: {warning}", file=sys.stderr)


def _print_unlisted(expected: ExpectedFailures | None, verdicts: Sequence[Verdict], out: TextIO) -> None:
    """With --expected-failures: a paste-ready line for every failure the file does not list
    (pinned to the failure's signature, so that the same spec failing differently is not excused)."""
    if expected is None:
        return
    lines = [paste_line(verdict) for verdict in unlisted(list(verdicts), expected)]
    if not lines:
        return
    print(f"\nnot in {expected.source}: to expect a failure, add its line there and say why", file=out)
    for line in lines:
        print(f"  {line}", file=out)


def _write_reports(args: argparse.Namespace, results: Results) -> None:
    """--html / --junit / --markdown of run and check: rendered from the run's JSON document."""
    outputs = {"html": args.html, "junit": args.junit, "markdown": args.markdown}
    if not any(outputs.values()):
        return
    try:
        document = validate(json.loads(json.dumps(results.to_json(), default=str)), "the results of this run")
        for path in write_reports(document, outputs):
            print(f"report written to {path}")
    except ResultsError as exc:
        raise BadInput(str(exc)) from None


def _report(args: argparse.Namespace) -> int:
    outputs = {"html": args.html, "junit": args.junit, "markdown": args.markdown}
    try:
        document = load_results(args.file)
        if not any(outputs.values()):
            sys.stdout.write(render_results_markdown(document))
            return EXIT_OK
        for path in write_reports(document, outputs):
            print(f"report written to {path}")
    except ResultsError as exc:
        raise BadInput(str(exc)) from None
    return EXIT_OK


def _write_text(path: str, text: str, what: str) -> None:
    """Write a diff or matrix output; an unwritable path is bad input with a one-line reason."""
    try:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(path, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
    except OSError as exc:
        raise ResultsError(f"cannot write the {what} to {path}: {exc.strerror or exc}") from None


def _diff(args: argparse.Namespace) -> int:
    try:
        diff = Diff(args.old, args.new, load_results(args.old), load_results(args.new))
        sys.stdout.write(render_diff_text(diff))
        if args.markdown:
            _write_text(args.markdown, render_diff_markdown(diff), "Markdown diff")
    except ResultsError as exc:
        raise BadInput(str(exc)) from None
    return EXIT_FAIL if diff.regressions else EXIT_OK


def _matrix(args: argparse.Namespace) -> int:
    try:
        matrix = Matrix.build(load_directory(args.directory))
        if not args.markdown and not args.html:
            sys.stdout.write(render_matrix_markdown(matrix, grouped=args.grouped))
        if args.markdown:
            _write_text(args.markdown, render_matrix_markdown(matrix, grouped=args.grouped), "Markdown matrix")
            print(f"matrix written to {args.markdown}")
        if args.html:
            _write_text(args.html, render_matrix_html(matrix), "HTML matrix")
            print(f"matrix written to {args.html}")
    except ResultsError as exc:
        raise BadInput(str(exc)) from None
    return EXIT_OK


def _safe_name(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", text).strip("_") or "x"


def reproducer_path(directory: str, verdict: Verdict, taken: set[str]) -> str:
    """Where ``--reproducers DIR`` writes ``verdict``'s reproducer: ``test_SYSTEM__SPEC.py`` when it
    holds a pytest test (every reproducer does: ``rlconform.core.reproducer.write``), else
    ``repro_SYSTEM__SPEC.py``; letters, digits and '_' only, numbered when two names would meet."""
    source = verdict.reproducer or ""
    prefix = "test" if re.search(r"^def test_", source, re.MULTILINE) else "repro"
    stem = f"{prefix}_{_safe_name(verdict.system_id)}__{_safe_name(verdict.spec_id)}"
    name, n = f"{stem}.py", 1
    while name in taken:
        n += 1
        name = f"{stem}_{n}.py"
    taken.add(name)
    return os.path.join(directory, name)


def reproducer_paths(
    directory: str | None, verdicts: Sequence[Verdict], specs: Sequence[Spec]
) -> dict[tuple[str, str], str]:
    """``--reproducers DIR``: the file each failure group's reproducer goes to (the reproducer the
    listing would show), by (system id, spec id) of the group's head; none without DIR."""
    if not directory:
        return {}
    heads = [group[0] for group in failure_groups(list(verdicts), specs)]
    taken: set[str] = set()
    return {
        (verdict.system_id, verdict.spec_id): reproducer_path(directory, verdict, taken)
        for verdict in heads
        if shows_reproducer(verdict)
    }


def _write_reproducers(
    args: argparse.Namespace, verdicts: Sequence[Verdict], paths: dict[tuple[str, str], str]
) -> None:
    """``--reproducers DIR``: one file per failure group, at ``paths`` (:func:`reproducer_paths`)."""
    if not args.reproducers:
        return
    scripts = {(verdict.system_id, verdict.spec_id): verdict.reproducer or "" for verdict in verdicts}
    written = []
    try:
        os.makedirs(args.reproducers, exist_ok=True)
        for key, path in paths.items():
            with open(path, "w", encoding="utf-8", newline="\n") as handle:
                handle.write(scripts[key])
            written.append(path)
    except OSError as exc:
        raise BadInput(f"cannot write the reproducers to {args.reproducers}: {exc.strerror or exc}") from None
    tests = sum(os.path.basename(path).startswith("test_") for path in written)
    kept = f" ({tests} of them pytest regression tests: test_*.py)" if tests else ""
    print(f"reproducers written to {args.reproducers}: {len(written)} file(s){kept}")


def _verdict_lines(verdicts: Sequence[Verdict], *, several_systems: bool) -> list[str]:
    """One line per verdict, labelled with its status as the listing of failures and every report
    show it (:func:`status_label`: INHERITED, KNOWN for a known or expected failure); the specs not
    run for one reason (a hang, a crash) share one line, so that a hanging system reads as one
    failure and one note, not as thirty lines saying the same."""

    def headline(verdict: Verdict) -> str:
        return verdict.message.splitlines()[0] if verdict.message else ""

    def whose(verdict: Verdict) -> str:
        return f"[{verdict.system_id}] " if several_systems else ""

    not_run: dict[tuple[str, str], list[str]] = {}
    for verdict in verdicts:
        if verdict.status == "not_run" and not verdict.expected:
            not_run.setdefault((whose(verdict), headline(verdict)), []).append(verdict.spec_id)
    lines = []
    for verdict in verdicts:
        key = (whose(verdict), headline(verdict))
        if verdict.status == "not_run" and not verdict.expected:
            specs = not_run.pop(key, None)
            if specs:  # the group's line stands where its first spec stood
                named = specs[0] if len(specs) == 1 else f"{len(specs)} specs"
                lines.append(f"  {'NOT_RUN':15s} {key[0]}{named}: {key[1]}")
            continue
        label = status_label(verdict)
        lines.append(f"  {label:15s} {key[0]}{verdict.spec_id}: {key[1]}")
    return lines


def _check(args: argparse.Namespace) -> int:
    session = Session()
    fail_on = _fail_on(args)
    out = sys.stdout
    options = _family_options(session, args)  # an unknown --api, or an option it does not take, first

    def started(checked: Checked) -> None:
        assert checked.user is not None
        for line in header_lines(checked.profile, checked.seed, checked.families):
            print(line, file=out)
        print(f"checking {checked.user.title} as {args.api}", file=out)
        gap = left_out(checked.user.capabilities.notes)
        if gap is not None:
            # before the verdicts: a pass says nothing about the kinds the factory refused
            print(gap.heading(), file=out)
            for line in gap.lines():
                print(f"  {line}", file=out)
        _print_skipped_specs(checked, out)

    # a user's env checked on two cores: its stack-equivalence search beside its other specs
    # (--in-process: in this process, as it says)
    request = _request(args, out, started, jobs=1 if args.in_process else min(2, usable_cpus()))
    request.target, request.api, request.options, request.intended = args.target, args.api, options, args.intended
    checked = session.check(request)
    results = Results.from_checked(checked)
    if checked.interrupted:
        return _interrupted(args, results, checked.finished)
    system = checked.user
    assert system is not None
    _print_expected_warnings(checked)
    for line in _verdict_lines(results.verdicts, several_systems=len(results.systems) > 1):
        print(line, file=out)
    # with --reproducers DIR, each group names the file its reproducer is written to, not the script
    paths = reproducer_paths(args.reproducers, results.verdicts, results.specs)
    failures = render_failures(
        results.verdicts, with_reproducers=not args.reproducers, specs=results.specs, reproducer_paths=paths
    )
    if failures:
        print(file=out)
        print(failures, file=out)
    _print_unlisted(request.expected, results.verdicts, out)
    gap = left_out(system.capabilities.notes)
    caveat = "" if gap is None else f" ({gap.clause()})"
    print(f"\nsummary: {results.summary_text()}{caveat}", file=out)
    own = [v for v in results.verdicts if v.system_id == system.id]
    nothing = nothing_checked(own)
    if nothing is not None:
        print(nothing, file=out)
    _finish(args, results, paths, out)
    failed = any(counts_against(v, fail_on) for v in own) or any(
        counts_against(v, fail_on) and v.status != "skipped" for v in results.verdicts if v.system_id != system.id
    )
    return EXIT_FAIL if failed or nothing is not None else EXIT_OK


def nothing_checked(verdicts: list[Verdict]) -> str | None:
    """The line that says a check checked nothing: every spec of the API was not applicable to the
    user's object (sb3-contrib's ARS keeps no buffer, so no learner-data spec applies). Such a check
    is not a pass: it exits 1 with this line, naming why the specs did not apply."""
    if not verdicts or any(v.status != "not_applicable" for v in verdicts):
        return None
    reasons = list(dict.fromkeys(v.message for v in verdicts if v.message))
    why = f": {reasons[0]}" if len(reasons) == 1 else f" ({len(reasons)} reasons, listed above)" if reasons else ""
    return f"nothing was checked: none of the {len(verdicts)} specs of this --api applies to it{why}; exit status 1"


if __name__ == "__main__":
    raise SystemExit(main())
