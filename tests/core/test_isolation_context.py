"""Isolation must not change what the libraries under test see, and a user's ParallelEnv is checked.

A system checked by ``rlconform check`` runs in a forked worker (:mod:`rlconform.core.isolation`). The
libraries read multiprocessing's global start method to choose how they start their own workers
(TorchRL's ``ParallelEnv``, Gymnasium's ``AsyncVectorEnv(context=None)``); the isolated worker
must show them the state of the user's process, not the 'fork' that ``Process._bootstrap``
forces on a fork child. A user's ``ParallelEnv`` factory over rlconform's ``env_fn`` must then get
the verdicts the bundled ParallelEnv system gets, isolated or not; a configuration rlconform
cannot drive (workers started with fork) is bad input: exit 2 and one line.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import json
import multiprocessing
import os
import pickle
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from rlconform.core.isolation import can_isolate, run_isolated

pytestmark = pytest.mark.skipif(not can_isolate(), reason="isolation needs fork and process groups")


@pytest.fixture
def start_method() -> Iterator[Callable[[str | None], None]]:
    """Set this process's global start method for one test; the old one is put back after."""
    saved = multiprocessing.get_start_method(allow_none=True)

    def set_to(method: str | None) -> None:
        multiprocessing.set_start_method(method, force=True)

    yield set_to
    multiprocessing.set_start_method(saved, force=True)


@pytest.fixture
def fork_server_as_found() -> Iterator[None]:
    """A fork server the test starts in this process is stopped after it. The test starts it
    without rlconform's preload; left running, it would serve every later SubprocVecEnv and
    ParallelEnv this pytest worker checks, whose workers would then each import torch and SB3
    (the suite's SubprocVecEnv tests went from 3 s to 40 s, depending on which tests ran first)."""
    from multiprocessing import forkserver

    server: Any = forkserver._forkserver  # type: ignore[attr-defined]
    running_before = server._forkserver_pid is not None
    yield
    if not running_before and server._forkserver_pid is not None:
        server._stop()


def _global_start_method() -> str | None:
    return multiprocessing.get_start_method(allow_none=True)


@pytest.mark.parametrize("method", [None, "spawn", "forkserver"])
def test_isolated_worker_has_the_start_method_of_this_process(
    start_method: Callable[[str | None], None], method: str | None
) -> None:
    start_method(method)
    outcome = run_isolated(_global_start_method, timeout=60)
    assert outcome.failure is None, outcome.failure
    assert outcome.value == method


# ------------------------------------------------------- what the three libraries start their workers with


def _gymnasium_worker_class() -> str:
    import gymnasium

    env = gymnasium.vector.AsyncVectorEnv([functools.partial(gymnasium.make, "CartPole-v1")], shared_memory=False)
    try:
        return type(env.processes[0]).__name__
    finally:
        env.close()


def _sb3_worker_class() -> str:
    import gymnasium
    from stable_baselines3.common.vec_env import SubprocVecEnv

    env = SubprocVecEnv([functools.partial(gymnasium.make, "CartPole-v1")])
    try:
        return type(env.processes[0]).__name__
    finally:
        env.close()


def _torchrl_worker_class() -> str:
    from torchrl.envs import GymEnv, ParallelEnv

    env = ParallelEnv(1, functools.partial(GymEnv, "CartPole-v1"))
    env.start()
    try:
        return type(env._workers[0]).__name__
    finally:
        env.close()


@pytest.mark.slow  # spawned workers import torch again: about a minute on a loaded 2-core machine
@pytest.mark.parametrize(
    "library, worker_class",
    [
        ("gymnasium", _gymnasium_worker_class),
        ("stable_baselines3", _sb3_worker_class),
        ("torchrl", _torchrl_worker_class),
    ],
)
def test_libraries_start_their_workers_the_same_way_isolated_as_in_process(
    start_method: Callable[[str | None], None],
    fork_server_as_found: None,
    library: str,
    worker_class: Callable[[], str],
) -> None:
    """The start method importing TorchRL sets in a user's process (spawn, where none was set):
    isolated, Gymnasium and TorchRL forked their workers instead (and TorchRL's fork copied the
    user's env_fn unpickled into every worker: both built sub-env 0)."""
    pytest.importorskip(library)
    start_method("spawn")
    in_process = worker_class()
    outcome = run_isolated(worker_class, timeout=300)
    assert outcome.failure is None, outcome.failure
    assert outcome.value == in_process


def _forkserver_worker_group() -> tuple[int | None, bool]:
    """Start a worker through the fork server; whether the server is in this process's group."""
    from multiprocessing import forkserver

    process = multiprocessing.get_context("forkserver").Process(target=os.getpid)
    process.start()
    process.join(60)
    server = forkserver._forkserver._forkserver_pid  # type: ignore[attr-defined]
    return process.exitcode, server is not None and os.getpgid(server) == os.getpgid(0)


def test_isolated_worker_starts_a_fork_server_of_its_own(fork_server_as_found: None) -> None:
    """With a fork server running in this process (started by a bundled ParallelEnv or SB3
    system checked in process), an isolated worker could not start forkserver workers:
    ``ensure_running`` waited on the parent's server and raised ChildProcessError."""
    process = multiprocessing.get_context("forkserver").Process(target=os.getpid)
    process.start()
    process.join(60)
    assert process.exitcode == 0
    outcome = run_isolated(_forkserver_worker_group, timeout=120)
    assert outcome.failure is None, outcome.failure
    # its server is in its process group: killed with it, as everything an isolated check starts
    assert outcome.value == (0, True)


class _FinalizedOnlyWhereBuilt:
    """Stands in for a library object that cannot be destroyed in a forked child: envpool's pool,
    whose destructor stops threads the child does not have (an envpool env built in a process,
    then collected in a fork child of it, kills the child with SIGSEGV:
    tests/gymnasium/test_native_envpool.py). Finalized in another process, it does the same."""

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.itself = self  # a reference cycle: only a collection frees it

    def __del__(self) -> None:
        if os.getpid() != self.pid:
            os.kill(os.getpid(), signal.SIGSEGV)


def _collect_garbage() -> int:
    return gc.collect()


def test_the_isolated_worker_leaves_the_garbage_it_inherits_to_this_process() -> None:
    """A user's process (a pytest session) holds an envpool env it no longer needs, not yet
    collected, when rlconform forks a worker to probe or check a factory: the worker's first full
    collection destroyed it there and the worker died from SIGSEGV, reported as the user's
    factory crashing. The worker now freezes the heap it inherits (rlconform.core.isolation)."""
    gc.disable()  # nothing collects the garbage before the fork
    try:
        _FinalizedOnlyWhereBuilt()
        outcome = run_isolated(_collect_garbage, timeout=60)
    finally:
        gc.enable()
        gc.collect()  # here, where it was built: harmless
    assert outcome.failure is None, outcome.failure


# ---------------------------------------------------------------- rlconform's env_fn in worker processes


def _env_fns(sinks: list[Any]) -> list[Callable[[], Any]]:
    from rlconform.envs.reference_env import make_reference_env
    from rlconform.envs.script import EnvScript

    return [functools.partial(make_reference_env, EnvScript(), i, sink) for i, sink in enumerate(sinks)]


def test_pickled_env_fn_builds_the_next_free_sub_env() -> None:
    """What ParallelEnv does under spawn or forkserver: pickle create_env_fn once per worker, in
    worker order. Worker k must build sub-env k (the old env_fn refused to be pickled)."""
    pytest.importorskip("torchrl")
    from rlconform.envs.calllog import MemorySink
    from rlconform.libraries.torchrl.env_user import SubEnvFactory

    env_fn = SubEnvFactory(_env_fns([MemorySink() for _ in range(3)]))
    shadow = env_fn()  # TorchRL's metadata env, built and closed in this process
    assert shadow.unwrapped.index == 0
    shadow.close()
    workers = [pickle.loads(pickle.dumps(env_fn)) for _ in range(2)]
    assert [worker().unwrapped.index for worker in workers] == [0, 1]
    assert env_fn().unwrapped.index == 2  # the sub-env no worker took
    with pytest.raises(IndexError, match="more than 3 sub-envs"):
        pickle.dumps(env_fn)


def test_envs_closed_while_the_factory_builds_leave_no_log() -> None:
    """ParallelEnv wraps a lambda in an EnvCreator, which resets and steps a shadow env in this
    process and closes it: those calls are no part of the run, and in the ground truth they were
    a transition the system 'missed' (a false FAIL of transitions.exact)."""
    pytest.importorskip("torchrl")
    from rlconform.envs.calllog import MemorySink, ResetRecord, StepRecord
    from rlconform.libraries.torchrl.env_user import SubEnvFactory

    sinks = [MemorySink() for _ in range(2)]
    env_fn = SubEnvFactory(_env_fns(sinks))
    shadow = env_fn()
    shadow.reset(seed=3)
    shadow.step(shadow.action_space.sample())
    shadow.close()
    kept = env_fn()  # sub-env 0 again, built by the factory and handed to the run
    kept.reset(seed=5)
    assert sinks[0].read() == []  # held back while the factory builds
    env_fn.built()
    assert [(type(r), r.seed) for r in sinks[0].read() if isinstance(r, ResetRecord)] == [(ResetRecord, 5)]
    kept.step(kept.action_space.sample())
    assert [type(r) for r in sinks[0].read()] == [ResetRecord, StepRecord]  # written as it comes


def _build_in_forked_worker(env_fn: Any) -> None:
    env_fn()


def test_a_forked_copy_of_env_fn_refuses_to_build() -> None:
    """Workers started with fork copy env_fn as it is: each would build the same sub-env."""
    pytest.importorskip("torchrl")
    from rlconform.envs.calllog import MemorySink
    from rlconform.libraries.torchrl.env_user import SubEnvFactory

    env_fn = SubEnvFactory(_env_fns([MemorySink() for _ in range(2)]))
    assert not env_fn.refused_fork()
    worker = multiprocessing.get_context("fork").Process(target=_build_in_forked_worker, args=(env_fn,))
    with open(os.devnull, "w") as devnull, contextlib.redirect_stderr(devnull):
        worker.start()
        worker.join(60)
    assert worker.exitcode == 1
    assert env_fn.refused_fork()


# ------------------------------------------------------------------ a user's ParallelEnv under rlconform check

MYPARALLEL = """
from torchrl.envs import GymWrapper, ParallelEnv


def parallel(env_fn):
    return ParallelEnv(2, lambda: GymWrapper(env_fn()))


def parallel_fork(env_fn):
    return ParallelEnv(2, lambda: GymWrapper(env_fn()), mp_start_method="fork")
"""
#: a handful of specs a wrong sub-env per worker or a shadow env's log fails
PARALLEL_SPECS = ("transitions.exact", "flags.terminated")


def _check(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "RL_WARNINGS": "0", "PYTHONPATH": os.pathsep.join(sys.path)}
    return subprocess.run(
        [sys.executable, "-m", "rlconform.cli", "check", *args, "--api", "torchrl.EnvBase"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )


def _statuses(path: Path) -> dict[str, str]:
    data = json.loads(path.read_text())
    return {result["spec"]: result["status"] for result in data["results"]}


@pytest.mark.slow  # a CLI run building spawn ParallelEnvs: minutes on a loaded 2-core machine
@pytest.mark.parametrize(
    "mode",
    # in process: the exhaustive tier (5 min on a loaded 2-core machine; the isolated run is the CLI's default)
    ["isolated", pytest.param("--in-process", marks=pytest.mark.exhaustive)],
)
def test_a_users_parallel_env_gets_the_bundled_systems_verdicts(tmp_path: Path, mode: str) -> None:
    """Isolated, both workers built sub-env 0 (false FAILs); in process, env_fn refused to be
    pickled (an ERROR for every spec). Now both get what the bundled ParallelEnv system gets: a
    pass of each spec (pinned by the matrix baseline of the installed Gymnasium release, which
    scripts/matrix.py gates, and read from it here rather than searched again)."""
    pytest.importorskip("torchrl")
    (tmp_path / "myparallel.py").write_text(MYPARALLEL)
    specs = [arg for spec in PARALLEL_SPECS for arg in ("--spec", spec)]
    out = tmp_path / "results.json"
    extra = () if mode == "isolated" else (mode,)
    result = _check(tmp_path, "myparallel:parallel", "--profile", "matrix", *specs, "--json", str(out), *extra)
    assert result.returncode == 0, result.stdout + result.stderr
    assert _baseline_statuses("torchrl.ParallelEnv.GymWrapper", PARALLEL_SPECS) == dict.fromkeys(PARALLEL_SPECS, "pass")
    assert _statuses(out) == dict.fromkeys(PARALLEL_SPECS, "pass")


def _baseline_statuses(system: str, specs: tuple[str, ...]) -> dict[str, str]:
    """The bundled ``system``'s statuses of ``specs`` in the matrix baseline of the installed
    Gymnasium release."""
    import gzip

    import gymnasium

    root = Path(__file__).resolve().parents[2]
    document = json.loads(
        gzip.decompress((root / "matrix" / "baseline" / f"gymnasium-{gymnasium.__version__}.json.gz").read_bytes())
    )
    return {r["spec"]: r["status"] for r in document["results"] if r["system"] == system and r["spec"] in specs}


@pytest.mark.slow  # runs the CLI in a subprocess
def test_a_parallel_env_forking_its_workers_is_bad_input(tmp_path: Path) -> None:
    """mp_start_method='fork': the workers copy env_fn unpickled and cannot be told apart."""
    pytest.importorskip("torchrl")
    (tmp_path / "myparallel.py").write_text(MYPARALLEL)
    result = _check(tmp_path, "myparallel:parallel_fork", "--profile", "matrix", "--spec", PARALLEL_SPECS[0])
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "started with fork" in result.stderr and "spawn or forkserver" in result.stderr


def _orthogonal_init() -> int:
    import torch

    weight = torch.empty(256, 256)
    torch.nn.init.orthogonal_(weight)  # a QR: a parallel region where torch has threads
    return torch.get_num_threads()


def test_torch_in_the_isolated_worker_does_not_wait_for_the_parents_threads() -> None:
    """Once this process has run parallel torch code, a forked worker's first parallel region waited
    forever for OpenMP threads it does not have (SB3's orthogonal init hung a probe after PPO had
    sampled here). The worker runs an inherited torch on one thread (rlconform.core.isolation)."""
    torch = pytest.importorskip("torch")
    threads = torch.get_num_threads()
    torch.set_num_threads(max(2, threads))
    try:
        _orthogonal_init()  # this process's OpenMP pool is started
        outcome = run_isolated(_orthogonal_init, timeout=60)
    finally:
        torch.set_num_threads(threads)
    assert outcome.failure is None, outcome.failure
    assert outcome.value == 1
