"""Isolation must not change what the libraries under test see, and a user's ParallelEnv is checked.

A system checked by ``rlconform check`` runs in a forked worker (:mod:`rlconform.isolation`). The
libraries read multiprocessing's global start method to choose how they start their own workers
(TorchRL's ``ParallelEnv``, Gymnasium's ``AsyncVectorEnv(context=None)``); the isolated worker
must show them the state of the user's process, not the 'fork' that ``Process._bootstrap``
forces on a fork child. A user's ``ParallelEnv`` factory over rlconform's ``env_fn`` must then get
the verdicts the bundled ParallelEnv system gets, isolated or not; a configuration rlconform
cannot drive (workers started with fork) is bad input: exit 2 and one line.
"""

from __future__ import annotations

import functools
import multiprocessing
import os
from collections.abc import Callable, Iterator

import pytest

from rlconform.isolation import can_isolate, run_isolated

pytestmark = pytest.mark.skipif(not can_isolate(), reason="isolation needs fork and process groups")


@pytest.fixture
def start_method() -> Iterator[Callable[[str | None], None]]:
    """Set this process's global start method for one test; the old one is put back after."""
    saved = multiprocessing.get_start_method(allow_none=True)

    def set_to(method: str | None) -> None:
        multiprocessing.set_start_method(method, force=True)

    yield set_to
    multiprocessing.set_start_method(saved, force=True)


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


@pytest.mark.parametrize(
    "library, worker_class",
    [
        ("gymnasium", _gymnasium_worker_class),
        ("stable_baselines3", _sb3_worker_class),
        ("torchrl", _torchrl_worker_class),
    ],
)
def test_libraries_start_their_workers_the_same_way_isolated_as_in_process(
    start_method: Callable[[str | None], None], library: str, worker_class: Callable[[], str]
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


def test_isolated_worker_starts_a_fork_server_of_its_own() -> None:
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
