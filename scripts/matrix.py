#!/usr/bin/env python3
"""Run the compatibility matrix on one machine: ``rlconform run`` once per Gymnasium release.

Each release of the matrix has a constraints file, ``constraints/gymnasium-X.Y.Z.txt``: the
shared pins plus its gymnasium pin. tox.ini (and the GitHub workflow) give each release a fresh
virtualenv. On one machine that costs a torch install per release, so this script runs every
release in the current environment instead: the SB3, TorchRL, torch and NumPy pins are the same
for every release (constraints/common.txt says why), so the only package that differs is
Gymnasium itself, which is installed (without dependencies) into a folder of its own per release
and put first on PYTHONPATH for that run. Each run checks that the results document names the
release it was meant to test.

Then the results are aggregated (``rlconform matrix``) and each one is compared with the committed
baseline (``rlconform diff``): a regression (a pass, not-applicable or known verdict that became a
failure or error) fails the script. ``--update-baseline`` stores the new documents as the baseline.

    python scripts/matrix.py                       # every release, gate against the baseline
    python scripts/matrix.py --ci                  # the releases CI gates (CI_ENVIRONMENTS)
    python scripts/matrix.py --env gymnasium-1.0.0 # one release
    python scripts/matrix.py --update-baseline     # accept the current verdicts
    python scripts/matrix.py --docs                # also rewrite the table of docs/matrix.md
    python scripts/matrix.py --docs-only           # rewrite it from the committed baseline only
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONSTRAINTS = ROOT / "constraints"
#: the page showing the baseline matrix, between these two markers
DOCS_PAGE = ROOT / "docs" / "matrix.md"
DOCS_START = "<!-- matrix:start -->"
DOCS_END = "<!-- matrix:end -->"


def _shown(path: Path) -> str:
    """``path`` relative to the repository when it is inside it."""
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def release_of(constraints: Path) -> str:
    """The gymnasium pin of one release's constraints file."""
    for line in constraints.read_text(encoding="utf-8").splitlines():
        match = re.fullmatch(r"gymnasium==(\S+)", line.strip())
        if match:
            return match.group(1)
    raise SystemExit(f"matrix: {constraints} pins no gymnasium release")


def version_key(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", text))


#: the releases CI gates, to keep CI within its time budget: the oldest (its own vector API and
#: same-step autoreset) and the newest (next-step autoreset, the release users install). The
#: others repeat these verdicts but for the rows of M1 to M6 (1.0.0's TorchRL gap, M5, among
#: them), which the full matrix (no --ci) and the GitHub matrix workflow gate; their baselines are kept.
CI_ENVIRONMENTS = ("gymnasium-0.29.1", "gymnasium-1.4.0")


def environments() -> dict[str, str]:
    """Matrix environment name (the constraints file's stem) -> Gymnasium release, oldest first."""
    found = {path.stem: release_of(path) for path in CONSTRAINTS.glob("gymnasium-*.txt")}
    return dict(sorted(found.items(), key=lambda item: version_key(item[1])))


def overlay(env: str, release: str, cache: Path) -> Path:
    """A folder holding just this Gymnasium release, installed by pip from its constraints file."""
    target = cache / env
    marker = target / f"gymnasium-{release}.dist-info"
    if marker.is_dir():
        return target
    shutil.rmtree(target, ignore_errors=True)
    command = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--quiet",
        "--no-deps",
        "--target",
        str(target),
        "-c",
        str(CONSTRAINTS / f"{env}.txt"),
        "gymnasium",
    ]
    subprocess.run(command, check=True)
    if not marker.is_dir():
        raise SystemExit(f"matrix: pip did not install gymnasium {release} into {target}")
    return target


def run_release(env: str, release: str, args: argparse.Namespace) -> Path:
    out = args.out / f"{env}.json"
    target = overlay(env, release, args.cache)
    run_env = dict(os.environ)
    run_env["PYTHONPATH"] = os.pathsep.join(p for p in (str(target), run_env.get("PYTHONPATH", "")) if p)
    command = [sys.executable, "-m", "rlconform.cli", "run", "--profile", args.profile, "--no-reference"]
    command += ["-j", str(args.jobs), "--json", str(out)]
    for pattern in args.system or ():
        command += ["--system", pattern]
    for pattern in args.spec or ():
        command += ["--spec", pattern]
    print(f"matrix: {env}: {' '.join(command[1:])} (gymnasium {release} from {target})", flush=True)
    start = time.perf_counter()
    log = args.out / f"{env}.log"
    with open(log, "w", encoding="utf-8") as handle:
        status = subprocess.run(command, env=run_env, stdout=handle, stderr=subprocess.STDOUT, cwd=ROOT).returncode
    # 1: the run found errors (a system that cannot be built on this release, say): that is the
    # matrix's content, recorded in the document; anything else is a broken run
    if status not in (0, 1) or not out.is_file():
        print(log.read_text(encoding="utf-8")[-4000:], file=sys.stderr)
        raise SystemExit(f"matrix: {env}: rlconform run exited with {status} (log: {log})")
    document = json.loads(out.read_text(encoding="utf-8"))
    tested = document["environment"]["libraries"].get("gymnasium")
    if tested != release:
        raise SystemExit(f"matrix: {env}: the run imported gymnasium {tested}, not {release}")
    print(f"matrix: {env}: {document['summary']} ({time.perf_counter() - start:.0f} s)", flush=True)
    return out


def rlconform(*arguments: str) -> int:
    return subprocess.run([sys.executable, "-m", "rlconform.cli", *arguments], cwd=ROOT).returncode


def store_baseline(document: Path, baseline: Path) -> None:
    """gzip with no name or time in the header, so an unchanged document gives an unchanged file."""
    baseline.mkdir(parents=True, exist_ok=True)
    target = baseline / f"{document.stem}.json.gz"
    with open(target, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as handle:
        handle.write(document.read_bytes())
    print(f"matrix: baseline {_shown(target)} written")


def docs_block(markdown: str) -> str:
    """The matrix Markdown as docs/matrix.md holds it: without its own top-level heading."""
    text = markdown.strip()
    if text.startswith("# "):
        text = text.split("\n", 1)[1].strip() if "\n" in text else ""
    return text


def update_docs(markdown: Path, page: Path = DOCS_PAGE) -> None:
    text = page.read_text(encoding="utf-8")
    if DOCS_START not in text or DOCS_END not in text:
        raise SystemExit(f"matrix: {_shown(page)} has no {DOCS_START} ... {DOCS_END} section")
    head, rest = text.split(DOCS_START, 1)
    _, tail = rest.split(DOCS_END, 1)
    body = docs_block(markdown.read_text(encoding="utf-8"))
    page.write_text(f"{head}{DOCS_START}\n{body}\n{DOCS_END}{tail}", encoding="utf-8")
    print(f"matrix: {_shown(page)} matrix section rewritten")


def write_docs(args: argparse.Namespace) -> None:
    # grouped (one row per spec and pattern), paths relative to the repository as the page shows them
    markdown = args.out / "baseline-matrix.md"
    if rlconform("matrix", _shown(args.baseline), "--grouped", "--markdown", str(markdown)) != 0:
        raise SystemExit("matrix: rlconform matrix failed on the baseline")
    update_docs(markdown)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", action="append", help="a matrix environment (default: every one)")
    parser.add_argument("--ci", action="store_true", help=f"only the releases CI gates: {', '.join(CI_ENVIRONMENTS)}")
    parser.add_argument("--out", type=Path, default=ROOT / "matrix-results", help="results folder")
    parser.add_argument("--baseline", type=Path, default=ROOT / "matrix" / "baseline", help="baseline folder")
    parser.add_argument("--cache", type=Path, default=ROOT / ".matrix", help="per-release Gymnasium folders")
    parser.add_argument("--profile", default="matrix", help="Hypothesis profile (default: matrix)")
    parser.add_argument("-j", "--jobs", type=int, default=2)
    parser.add_argument("--system", action="append", help="only these systems (glob; passed to rlconform run)")
    parser.add_argument("--spec", action="append", help="only these specs (glob; passed to rlconform run)")
    parser.add_argument("--update-baseline", action="store_true", help="store the results as the baseline")
    parser.add_argument(
        "--docs", "--readme", action="store_true", help="rewrite the table of docs/matrix.md from the baseline"
    )
    parser.add_argument(
        "--docs-only",
        "--readme-only",
        action="store_true",
        help="only rewrite the table of docs/matrix.md from the baseline (no runs)",
    )
    args = parser.parse_args(argv)
    if args.docs_only:
        args.out.mkdir(parents=True, exist_ok=True)
        write_docs(args)
        return 0
    known = environments()
    selected = args.env or (list(CI_ENVIRONMENTS) if args.ci else list(known))
    unknown = [env for env in selected if env not in known]
    if unknown:
        raise SystemExit(f"matrix: unknown environment(s) {unknown}; known: {list(known)}")
    shutil.rmtree(args.out, ignore_errors=True)
    args.out.mkdir(parents=True)
    start = time.perf_counter()
    documents = [run_release(env, known[env], args) for env in selected]
    print(f"matrix: {len(documents)} release(s) in {time.perf_counter() - start:.0f} s")
    status = rlconform(
        "matrix", str(args.out), "--markdown", str(args.out / "matrix.md"), "--html", str(args.out / "matrix.html")
    )
    if status != 0:
        return status
    regressions = []
    for document in documents:
        baseline = args.baseline / f"{document.stem}.json.gz"
        if args.update_baseline:
            store_baseline(document, args.baseline)
        elif not baseline.is_file():
            print(f"matrix: {document.stem}: no baseline at {_shown(baseline)}; nothing to compare")
            regressions.append(document.stem)
        elif rlconform("diff", str(baseline), str(document), "--markdown", str(args.out / f"diff-{document.stem}.md")):
            regressions.append(document.stem)
    if args.docs:
        write_docs(args)
    if regressions:
        print(f"matrix: regressions (or no baseline) in {regressions}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
