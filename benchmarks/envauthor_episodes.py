"""What driving every example to its episode ends costs env-author mode (issue 25, single envs).

Run ``python benchmarks/envauthor_episodes.py [--baseline ROOT] [--repeats N]``. For each target,
``rlconform check MODULE:FACTORY --api gymnasium.Env --json FILE`` runs in a fresh process, timed
from outside, as a user runs it; with ``--baseline`` the other checkout's check runs just before
each of this checkout's (the same interpreter, ``PYTHONPATH`` set to each checkout), so that the
ratio compares two measurements taken back to back. Reported: the median wall seconds of each,
their ratio, the number of specs and the statuses of each run (a status that differs between the
two checkouts is listed).

Targets: ``counter`` (a small env, episodes of at most 8 steps: the "at most 10 s" target),
``pendulum`` (Gymnasium's Pendulum from the corpus, ``corpus.stacks:pendulum``: episodes of 200 steps,
which every example now drives to their end through every stack; the same factory in both checkouts),
and issue 39's real envs, each to be checked in at most 60 s (``benchmarks/real_envs.py``:
``acrobot``, ``mountaincar``, ``doorkey``, ``carracing``; a baseline checkout without that module
imports it from this one). ``--keep DIR`` keeps each run's results JSON there
(``DIR/now-TARGET.json``, ``DIR/baseline-TARGET.json``) for ``rlconform diff``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGETS = {
    "counter": "rlconform.libraries.envauthor.sample_envs:counter",
    "pendulum": "corpus.stacks:pendulum",
    # issue 39's real envs (benchmarks/real_envs.py): each at most 60 s on a 2-core machine alone
    "acrobot": "benchmarks.real_envs:acrobot",
    "mountaincar": "benchmarks.real_envs:mountain_car_continuous",
    "doorkey": "benchmarks.real_envs:minigrid_doorkey",
    "carracing": "benchmarks.real_envs:car_racing",
}


def check(root: Path, reference: str, out: Path) -> tuple[float, dict[str, str]]:
    """Wall seconds of one ``rlconform check`` of ``reference`` from checkout ``root``, and its statuses."""
    # this checkout after ``root``: a baseline checkout older than benchmarks/real_envs.py finds it here
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(dict.fromkeys([str(root), str(ROOT)])))
    command = [sys.executable, "-m", "rlconform.cli", "check", reference, "--api", "gymnasium.Env", "--json", str(out)]
    start = time.perf_counter()
    subprocess.run(command, cwd=root, env=env, capture_output=True, text=True, timeout=1800, check=False)
    seconds = time.perf_counter() - start
    try:
        results = json.loads(out.read_text())
    except (OSError, ValueError):
        return seconds, {}
    return seconds, {v["spec"]: v["status"] for v in results.get("results", []) if isinstance(v, dict)}


#: what a target needs beyond the project's own extras, and how to install it (``minigrid`` is in
#: ``dev``; Box2D is not, its wheel being for CarRacing alone)
REQUIRES = {"doorkey": ("minigrid", "pip install minigrid"), "carracing": ("Box2D", "pip install box2d")}


def _missing(name: str) -> str | None:
    """Why target ``name`` cannot run here (its module is not installed), or None."""
    module, install = REQUIRES.get(name, ("", ""))
    if module and importlib.util.find_spec(module) is None:
        return f"{module} is not installed ({install})"
    return None


def _round(i: int) -> str:
    """The suffix of round ``i``'s results file: none for the first."""
    return f"-{i + 1}" if i else ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, help="another checkout to time alternately")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--targets", nargs="+", default=list(TARGETS), choices=list(TARGETS))
    parser.add_argument("--keep", type=Path, help="a folder to keep each run's results JSON in")
    args = parser.parse_args()
    print(f"{'target':11} {'wall s':>7} {'specs':>5}", end="")
    print(f" {'baseline s':>10} {'specs':>5} {'ratio':>6}  statuses changed" if args.baseline else "")
    with tempfile.TemporaryDirectory() as scratch:
        tmp = args.keep or Path(scratch)
        tmp.mkdir(parents=True, exist_ok=True)
        for name in args.targets:
            missing = _missing(name)
            if missing is not None:
                print(f"{name:11} skipped: {missing}")
                continue
            now: list[float] = []
            base: list[float] = []
            statuses: dict[str, str] = {}
            before: dict[str, str] = {}
            for i in range(args.repeats):
                if args.baseline:
                    seconds, before = check(
                        args.baseline.resolve(), TARGETS[name], tmp / f"baseline-{name}{_round(i)}.json"
                    )
                    base.append(seconds)
                seconds, statuses = check(ROOT, TARGETS[name], tmp / f"now-{name}{_round(i)}.json")
                now.append(seconds)
                print(f"  {name} round {i + 1}: {seconds:.1f} s", file=sys.stderr)
            line = f"{name:11} {statistics.median(now):7.1f} {len(statuses):5}"
            if args.baseline:
                changed = [f"{k}: {before.get(k)} -> {v}" for k, v in sorted(statuses.items()) if before.get(k) != v]
                ratio = statistics.median(now) / statistics.median(base)
                line += (
                    f" {statistics.median(base):10.1f} {len(before):5} {ratio:5.2f}x  {'; '.join(changed) or 'none'}"
                )
            print(line)


if __name__ == "__main__":
    main()
