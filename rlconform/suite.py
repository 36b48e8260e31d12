"""Run many (system, spec) searches: sequentially or one system per worker process.

A system's specs always run in the same process, so that they share that process's run cache;
results come back in a fixed order whatever the number of workers, so that verdicts and reports
do not depend on parallelism.
"""

from __future__ import annotations

import concurrent.futures
import multiprocessing
import sys
import time
from collections.abc import Callable, Sequence
from typing import TextIO

from rlconform.profiles import Profile
from rlconform.search import Verdict, check_spec
from rlconform.specs.registry import Spec, get_spec
from rlconform.systems import System

Progress = Callable[[int, int, System, list[Verdict], float], None]


def check_system(system: System, specs: Sequence[Spec], profile: Profile) -> list[Verdict]:
    return [check_spec(system, spec, profile) for spec in specs]


def _check_system_by_id(
    system_id: str, spec_ids: Sequence[str], profile: Profile, user: tuple[str, str] | None
) -> tuple[list[Verdict], float]:
    start = time.perf_counter()
    if user is not None:
        from rlconform.user import user_system

        system = user_system(*user)
    else:
        from rlconform.systems import get_system

        system = get_system(system_id)
    verdicts = check_system(system, [get_spec(s) for s in spec_ids], profile)
    return verdicts, time.perf_counter() - start


def run_checks(
    systems: Sequence[System],
    specs: Sequence[Spec],
    profile: Profile,
    *,
    jobs: int = 1,
    progress: Progress | None = None,
    user_refs: dict[str, tuple[str, str]] | None = None,
) -> list[Verdict]:
    """Verdicts for every (system, spec), ordered by system then spec."""
    results: dict[str, list[Verdict]] = {}
    total = len(systems)
    done = 0
    if jobs <= 1 or total <= 1:
        for system in systems:
            start = time.perf_counter()
            results[system.id] = check_system(system, specs, profile)
            done += 1
            if progress:
                progress(done, total, system, results[system.id], time.perf_counter() - start)
    else:
        spec_ids = [s.id for s in specs]
        context = multiprocessing.get_context("fork" if sys.platform.startswith("linux") else "spawn")
        started: dict[concurrent.futures.Future[tuple[list[Verdict], float]], System] = {}
        with concurrent.futures.ProcessPoolExecutor(max_workers=jobs, mp_context=context) as pool:
            for system in systems:
                user = (user_refs or {}).get(system.id)
                started[pool.submit(_check_system_by_id, system.id, spec_ids, profile, user)] = system
            for future in concurrent.futures.as_completed(started):
                system = started[future]
                results[system.id], seconds = future.result()
                done += 1
                if progress:
                    progress(done, total, system, results[system.id], seconds)
    return [verdict for system in systems for verdict in results[system.id]]


def print_progress(stream: TextIO) -> Progress:
    def report(done: int, total: int, system: System, verdicts: list[Verdict], seconds: float) -> None:
        counts: dict[str, int] = {}
        for verdict in verdicts:
            key = "known" if verdict.status == "fail" and verdict.known else verdict.status
            counts[key] = counts.get(key, 0) + 1
        summary = ", ".join(f"{n} {k}" for k, n in sorted(counts.items()))
        print(f"[{done}/{total}] {system.id}: {summary} ({seconds:.1f} s)", file=stream, flush=True)

    return report
