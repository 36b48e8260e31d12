"""The ``rlconform`` command.

* ``rlconform run``: every bundled system of every installed library against every spec; prints
  the systems x specs table and writes JSON.
* ``rlconform check MODULE:CALLABLE --api FAMILY``: a user's system; exit 0 when every applicable
  spec passes, 1 when any does not, 2 for bad input.
* ``rlconform list``: the bundled systems and the specs.
"""

from __future__ import annotations

import argparse
import fnmatch
import sys
from collections.abc import Sequence

from rlconform.profiles import PROFILES, get_profile, session_seed
from rlconform.report import Results, header_lines, render_failures, render_skips, render_table
from rlconform.specs.registry import Spec, all_specs
from rlconform.suite import print_progress, run_checks
from rlconform.systems import System, all_systems
from rlconform.user import FACTORY_SIGNATURES, BadInput, probe, user_system

EXIT_OK, EXIT_FAIL, EXIT_BAD_INPUT = 0, 1, 2
DEFAULT_RESULTS = "rlconform-results/results.json"


def _select(items: Sequence[System] | Sequence[Spec], patterns: Sequence[str] | None) -> list:  # type: ignore[type-arg]
    if not patterns:
        return list(items)
    return [item for item in items if any(fnmatch.fnmatch(item.id, p) or p == item.id for p in patterns)]


def _add_common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--profile",
        choices=sorted(PROFILES),
        default=None,
        help="Hypothesis profile (default: ci, or $RLCONFORM_PROFILE)",
    )
    parser.add_argument("--json", metavar="FILE", help="write the results as JSON")
    parser.add_argument(
        "--spec", action="append", metavar="PATTERN", help="only specs whose id matches (glob); repeatable"
    )
    parser.add_argument("--reproducers", action="store_true", help="print the reproducer of every failure")
    parser.add_argument("-j", "--jobs", type=int, default=1, help="worker processes (one system per worker)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rlconform", description=__doc__.split("\n\n")[0] if __doc__ else None)
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="every bundled system against every spec; prints the table and writes JSON")
    _add_common(run)
    run.set_defaults(json=DEFAULT_RESULTS)
    run.add_argument(
        "--system", action="append", metavar="PATTERN", help="only systems whose id matches (glob); repeatable"
    )
    run.add_argument("--no-reference", action="store_true", help="leave out the reference models (the control rows)")
    run.add_argument("--strict", action="store_true", help="exit 1 when any library system fails a spec")

    check = sub.add_parser("check", help="check your own system: MODULE:CALLABLE")
    check.add_argument("target", metavar="MODULE:CALLABLE")
    check.add_argument(
        "--api", required=True, metavar="FAMILY", help=f"one of: {', '.join(sorted(FACTORY_SIGNATURES))}"
    )
    _add_common(check)

    sub.add_parser("list", help="list the bundled systems and the specs")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if args.command == "list":
            return _list()
        if args.command == "run":
            return _run(args)
        return _check(args)
    except BadInput as exc:
        print(f"rlconform: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT


def _list() -> int:
    for system in all_systems():
        if system.kind == "planted":
            continue
        missing = system.missing_requirements()
        note = f"  [not installed: {', '.join(missing)}]" if missing else ""
        print(f"{system.id:50s} {system.family:18s} {system.title}{note}")
    print()
    for spec in all_specs():
        print(f"{spec.id:38s} {spec.statement}")
    return EXIT_OK


def _specs(args: argparse.Namespace) -> list[Spec]:
    specs = _select(all_specs(), args.spec)
    if not specs:
        raise BadInput(f"no spec matches {args.spec}")
    return specs


def _run(args: argparse.Namespace) -> int:
    profile = get_profile(args.profile)
    seed = None if profile.derandomize else session_seed()
    systems = [s for s in all_systems() if s.kind in ("library", "reference")]
    if args.no_reference:
        systems = [s for s in systems if s.kind != "reference"]
    systems = _select(systems, args.system)
    if not systems:
        raise BadInput(f"no system matches {args.system}")
    families = {s.family for s in systems}
    specs = [spec for spec in _specs(args) if spec.families & families]
    out = sys.stdout
    for line in header_lines(profile, seed):
        print(line, file=out)
    results = Results(profile=profile, seed=seed, systems=systems, specs=specs)
    skips = render_skips(results)
    if skips:
        print(skips, file=out)
    runnable = [s for s in systems if not s.missing_requirements()]
    results.verdicts = run_checks(runnable, specs, profile, jobs=args.jobs, progress=print_progress(out))
    results.verdicts += _skipped_verdicts([s for s in systems if s.missing_requirements()], specs, profile.name, seed)
    print(file=out)
    print(render_table(results), file=out)
    failures = render_failures(results.verdicts, with_reproducers=args.reproducers)
    if failures:
        print(file=out)
        print(failures, file=out)
    print(f"\nsummary: {results.summary()}", file=out)
    if args.json:
        results.write_json(args.json)
        print(f"results written to {args.json}", file=out)
    errors = any(v.status == "error" for v in results.verdicts)
    failed = any(v.status in ("fail", "not_exercised") and not v.known for v in results.verdicts)
    return EXIT_FAIL if errors or (args.strict and failed) else EXIT_OK


def _skipped_verdicts(systems: Sequence[System], specs: Sequence[Spec], profile: str, seed: int | None) -> list:  # type: ignore[type-arg]
    from rlconform.search import Verdict

    return [
        Verdict(
            s.id,
            spec.id,
            "skipped",
            f"not installed: {', '.join(s.missing_requirements())}",
            profile=profile,
            seed=seed,
        )
        for s in systems
        for spec in specs
    ]


def _check(args: argparse.Namespace) -> int:
    profile = get_profile(args.profile)
    seed = None if profile.derandomize else session_seed()
    system = probe(user_system(args.target, args.api))
    specs = [spec for spec in _specs(args) if system.family in spec.families]
    if not specs:
        raise BadInput(f"no spec matches {args.spec} for family {args.api}")
    out = sys.stdout
    for line in header_lines(profile, seed):
        print(line, file=out)
    print(f"checking {system.title} as {args.api}", file=out)
    results = Results(profile=profile, seed=seed, systems=[system], specs=specs)
    results.verdicts = run_checks([system], specs, profile, progress=print_progress(out))
    for verdict in results.verdicts:
        print(
            f"  {verdict.status.upper():15s} {verdict.spec_id}: {verdict.message.splitlines()[0] if verdict.message else ''}",
            file=out,
        )
    failures = render_failures(results.verdicts, with_reproducers=True)
    if failures:
        print(file=out)
        print(failures, file=out)
    if args.json:
        results.write_json(args.json)
        print(f"results written to {args.json}", file=out)
    ok = all(v.status in ("pass", "not_applicable") for v in results.verdicts)
    return EXIT_OK if ok else EXIT_FAIL


if __name__ == "__main__":
    raise SystemExit(main())
