"""The fork server rlconform preloads freezes its heap after the preload (rlconform.core.forkserver)."""

from __future__ import annotations

import multiprocessing
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from rlconform.core.forkserver import FROZEN_HEAP

SCRIPT = textwrap.dedent(
    """
    import gc
    import multiprocessing

    from rlconform.core.forkserver import preload


    def frozen(queue):
        queue.put(gc.get_freeze_count())


    if __name__ == "__main__":
        preload(["json"])
        print(multiprocessing.forkserver._forkserver._preload_modules)
        context = multiprocessing.get_context("forkserver")
        queue = context.Queue()
        worker = context.Process(target=frozen, args=(queue,))
        worker.start()
        print(queue.get(timeout=60))
        worker.join()
        print(gc.get_freeze_count())
    """
)


def test_workers_inherit_a_frozen_heap_and_this_process_is_left_alone(tmp_path: Path) -> None:
    if "forkserver" not in multiprocessing.get_all_start_methods():
        pytest.skip("no forkserver start method here")
    script = tmp_path / "frozen.py"  # a file: the workers import their target from it
    script.write_text(SCRIPT)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    modules, in_worker, here = done.stdout.split("\n")[:3]
    assert modules == str(["json", FROZEN_HEAP])
    assert int(in_worker) > 1000  # the server's heap: every object it had after the preload
    assert int(here) == 0
