#!/usr/bin/env python3
"""Run the third-party corpus (``corpus/stacks.py``) the way a user would, and gate its verdicts.

Each entry is checked with ``rlconform check corpus.stacks:NAME --api FAMILY --json ...`` in a
subprocess from the repository root (the user's command, isolated worker included). The verdicts
are compared with the pinned ones in ``corpus/verdicts.json``, and every FAIL must have a judgement
in ``corpus/judgements.py`` (true positive, documented behaviour or stack limitation, with the
finding that explains it). A FAIL without a judgement, or a verdict that changed, fails the script:
after a spec changes, rerun it, read every changed verdict against the library's source, record the
judgement, then ``--update`` the pins.

    python scripts/corpus.py                       # every entry, compared with the pins
    python scripts/corpus.py --entry cartpole      # one entry (repeatable; glob)
    python scripts/corpus.py --update              # accept the current verdicts as the pins
    python scripts/corpus.py --profile ci          # the default profile (the judged run)
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from corpus.judgements import JUDGEMENTS  # noqa: E402
from corpus.stacks import CORPUS, Entry  # noqa: E402

PINS = ROOT / "corpus" / "verdicts.json"
DEFAULT_PROFILE = "matrix"
#: the statuses a pin records; timings, counts and messages change without a verdict changing
PINNED_FIELDS = ("status",)


def check(entry: Entry, profile: str, out: Path) -> dict[str, str]:
    """``rlconform check`` on one entry; spec id -> status (or the one-line reason it could not run)."""
    return check_entry(entry, profile, out)[0]


def check_entry(entry: Entry, profile: str, out: Path) -> tuple[dict[str, str], int]:
    """:func:`check`, and the exit status of the user's command under ``--fail-on own`` (0 where
    every failure is inherited from the library under the stack)."""
    target = out / f"{entry.name}.json"
    target.unlink(missing_ok=True)
    command = [
        sys.executable,
        "-m",
        "rlconform.cli",
        "check",
        entry.target,
        "--api",
        entry.api,
        "--profile",
        profile,
        "--json",
        str(target),
        "--fail-on",
        "own",
        *(["--intended", ",".join(entry.intended)] if entry.intended else []),
        *entry.options,
    ]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800)
    if not target.exists():
        reason = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
        return {"*": f"no results (exit {done.returncode}): {reason}"}, done.returncode
    document = json.loads(target.read_text(encoding="utf-8"))
    # the pins record each check's outcome ("fail" for an inherited failure too: the inherited ones
    # are marked apart, inherited_specs); schema_version 2 writes it as "outcome", 1 as "status"
    verdicts = {
        r["spec"]: r.get("outcome", r["status"]) for r in document["results"] if r["system"].startswith("user:")
    }
    return verdicts, done.returncode


def inherited_specs(document_path: Path) -> set[str]:
    """The specs whose failure the results document names inherited (none if it has no document)."""
    if not document_path.exists():
        return set()
    document = json.loads(document_path.read_text(encoding="utf-8"))
    return {r["spec"] for r in document["results"] if r["system"].startswith("user:") and r.get("inherited")}


def pinned_allows(pinned: str | None, status: str | None) -> bool:
    """Whether a pin admits ``status``: a pin is one status, or several joined by "|" where the
    library's own timing decides between them (judged in corpus/judgements.py, e.g. whether a
    dying TorchRL worker surfaces as an exception or as a hang)."""
    return pinned is not None and status is not None and status in pinned.split("|")


def pinned_update(pinned: str | None, status: str) -> str:
    """The pin ``--update`` stores: the pin as it is when it admits ``status``, else ``status``."""
    return pinned if pinned is not None and pinned_allows(pinned, status) else status


def unjudged(name: str, verdicts: dict[str, str]) -> list[str]:
    return [spec for spec, status in verdicts.items() if status == "fail" and (name, spec) not in JUDGEMENTS]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--entry", action="append", metavar="PATTERN", help="only these entries (glob)")
    parser.add_argument("--profile", default=DEFAULT_PROFILE, help=f"rlconform profile (default {DEFAULT_PROFILE})")
    parser.add_argument("--update", action="store_true", help="store the verdicts as the pins")
    parser.add_argument("-j", "--jobs", type=int, default=2, help="entries checked at once")
    parser.add_argument("--out", default=str(ROOT / "corpus-results"), help="folder for the results documents")
    args = parser.parse_args(argv)
    entries = [e for e in CORPUS if not args.entry or any(fnmatch.fnmatch(e.name, p) for p in args.entry)]
    if not entries:
        print(f"corpus: no entry matches {args.entry}", file=sys.stderr)
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    pins: dict[str, dict[str, str]] = json.loads(PINS.read_text(encoding="utf-8")) if PINS.exists() else {}
    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=max(args.jobs, 1)) as pool:
        found = dict(
            zip([e.name for e in entries], pool.map(lambda e: check(e, args.profile, out), entries), strict=True)
        )
    problems: list[str] = []
    fail_total = inherited_total = 0
    for entry in entries:
        verdicts = found[entry.name]
        fails = sorted(s for s, v in verdicts.items() if v == "fail")
        # a FAIL the library under the stack shows on its own (rlconform.core.inherited) is marked
        inherited = inherited_specs(out / f"{entry.name}.json")
        shown = [f"{spec} (inherited)" if spec in inherited else spec for spec in fails]
        print(f"{entry.name:34s} {entry.api:18s} " + (f"FAIL {', '.join(shown)}" if fails else "no FAIL"))
        inherited_total += len(inherited & set(fails))
        fail_total += len(fails)
        if "*" in verdicts:
            problems.append(f"{entry.name}: {verdicts['*']}")
            continue
        problems += [
            f"{entry.name}: FAIL {spec} has no judgement in corpus/judgements.py"
            for spec in unjudged(entry.name, verdicts)
        ]
        if not args.update:
            pinned = pins.get(entry.name)
            if pinned is None:
                problems.append(f"{entry.name}: no pinned verdicts (run with --update)")
            else:
                for spec in sorted(set(pinned) | set(verdicts)):
                    if not pinned_allows(pinned.get(spec), verdicts.get(spec)):
                        problems.append(f"{entry.name}: {spec} was {pinned.get(spec)}, now {verdicts.get(spec)}")
    print(f"corpus: {len(entries)} entries in {time.perf_counter() - start:.0f} s under profile {args.profile}")
    print(f"corpus: {fail_total} FAIL verdicts, {inherited_total} of them inherited from the library under the stack")
    if args.update:
        pins.update(
            {
                name: {spec: pinned_update(pins.get(name, {}).get(spec), status) for spec, status in sorted(v.items())}
                for name, v in found.items()
                if "*" not in v
            }
        )
        PINS.write_text(json.dumps(dict(sorted(pins.items())), indent=1) + "\n", encoding="utf-8")
        print(f"corpus: pins written to {PINS.relative_to(ROOT)}")
    for problem in problems:
        print(f"corpus: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
