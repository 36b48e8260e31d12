#!/usr/bin/env python3
"""How long a default-profile check of a small ready-made vector env takes (issue 26's budget: 30 s).

Runs ``rlconform check rlconform.libraries.gymnasium.native_samples:walk --api gymnasium.VectorEnv
--single-env ...:single_walk`` as a user does (a fresh process each time: interpreter start-up,
imports, the probe, the isolated worker, the report), ``--repeats`` times, and prints each wall
time, the median and the machine's load average. Absolute seconds move by 2x between runs on a
shared machine; the budget has a wide margin.

    python benchmarks/native_vector.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

SAMPLES = "rlconform.libraries.gymnasium.native_samples"
COMMAND = ["check", f"{SAMPLES}:walk", "--api", "gymnasium.VectorEnv", "--single-env", f"{SAMPLES}:single_walk"]
BUDGET_SECONDS = 30.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    executable = str(Path(sys.executable).with_name("rlconform"))
    times = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        done = subprocess.run([executable, *COMMAND], capture_output=True, text=True, timeout=600)
        times.append(time.perf_counter() - start)
        if done.returncode != 0:
            print(done.stdout[-2000:], done.stderr[-2000:], file=sys.stderr)
            return 1
    median = statistics.median(times)
    print(f"native vector env check (default profile, --single-env): {', '.join(f'{t:.1f} s' for t in times)}")
    print(f"median {median:.1f} s (budget {BUDGET_SECONDS:.0f} s); load average {os.getloadavg()[0]:.1f}")
    return 0 if median <= BUDGET_SECONDS else 1


if __name__ == "__main__":
    raise SystemExit(main())
