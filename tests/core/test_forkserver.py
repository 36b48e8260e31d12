"""The fork server rlconform preloads freezes its heap after the preload (rlconform.core.forkserver)."""

from __future__ import annotations

import ast
import multiprocessing
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from unittest import mock

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


@pytest.mark.slow  # runs a script in a subprocess
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


def _main(monkeypatch: pytest.MonkeyPatch, *, spec_name: str | None = None, path: Path | None = None) -> None:
    """Make ``__main__`` look as it does under ``python -m spec_name`` or ``python path``."""
    import importlib.machinery
    import types

    main = types.ModuleType("__main__")
    main.__spec__ = importlib.machinery.ModuleSpec(spec_name, None) if spec_name else None
    if path is not None:
        main.__file__ = str(path)
    monkeypatch.setitem(sys.modules, "__main__", main)


def _scripts(monkeypatch: pytest.MonkeyPatch, folder: Path) -> None:
    import sysconfig

    real = sysconfig.get_path
    monkeypatch.setattr(sysconfig, "get_path", lambda name, *a, **k: str(folder) if name == "scripts" else real(name))


#: a console script as pip writes it (here: rlconform's own)
CONSOLE_SCRIPT = textwrap.dedent(
    """\
    #!/usr/bin/python3
    # -*- coding: utf-8 -*-
    import re
    import sys
    from rlconform.cli import main
    if __name__ == '__main__':
        import json
        sys.exit(main())
    """
)


def test_workers_find_the_imports_of_rlconforms_command_line_done(monkeypatch: pytest.MonkeyPatch) -> None:
    """Under ``python -m rlconform.cli`` the fork server preloads what the CLI imports, not the CLI
    itself: a worker runs it again as ``__mp_main__`` with runpy, which printed a RuntimeWarning
    per worker on the user's stderr when the module was already imported under its own name."""
    import rlconform.cli  # noqa: F401  (what python -m rlconform.cli has imported by the time a worker starts)
    from rlconform.core.forkserver import CLI_MODULE, main_modules

    _main(monkeypatch, spec_name=CLI_MODULE)  # python -m rlconform.cli
    preloaded = main_modules()
    assert CLI_MODULE not in preloaded
    assert {"rlconform.core.session", "rlconform.reports.results", "argparse"} <= set(preloaded)


def test_a_console_script_has_its_top_level_imports_preloaded(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import rlconform.cli  # noqa: F401  (imported here, as the script does before any worker starts)
    from rlconform.core.forkserver import main_modules

    script = tmp_path / "rlconform"
    script.write_text(CONSOLE_SCRIPT)
    _scripts(monkeypatch, tmp_path)
    _main(monkeypatch, path=script)
    # what the workers' run of the script imports (json is imported under the guard: not run again)
    assert main_modules() == ["re", "sys", "rlconform.cli"]
    # a module this process has not imported is not named: the server must import what worked here
    other = tmp_path / "other-tool"
    other.write_text(CONSOLE_SCRIPT.replace("from rlconform.cli import main", "from not_imported_here import main"))
    _main(monkeypatch, path=other)
    assert main_modules() == ["re", "sys"]


@pytest.mark.parametrize(
    "shape",
    ["python -c", "python -m pytest", "python -m user_module", "python user_script.py", "unreadable script"],
)
def test_a_users_own_main_is_left_alone(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, shape: str) -> None:
    """Workers run these as before: multiprocessing does not run ``-c`` or a ``__main__`` module
    again, and what a user's own module or script imports is the user's business."""
    from rlconform.core.forkserver import main_modules

    user_script = tmp_path / "user_script.py"
    user_script.write_text("import json\n")
    scripts = tmp_path / "bin"
    scripts.mkdir()
    _scripts(monkeypatch, scripts)
    if shape == "python -c":
        _main(monkeypatch)
    elif shape == "python -m pytest":
        _main(monkeypatch, spec_name="pytest.__main__")
    elif shape == "python -m user_module":
        _main(monkeypatch, spec_name="json")
    elif shape == "python user_script.py":
        _main(monkeypatch, path=user_script)
    else:
        binary = scripts / "tool"
        binary.write_bytes(b"\x7fELF\x00\xff")
        _main(monkeypatch, path=binary)
    assert main_modules() == []


#: a process whose ``__main__`` is rlconform's CLI, as under ``python -m rlconform.cli``: the fork
#: server's list, and how many objects a forkserver worker inherits frozen
MAIN_IS_CLI = textwrap.dedent(
    """
    import concurrent.futures, gc, importlib.util, multiprocessing, sys
    if sys.argv[1] == "cli":  # as under python -m rlconform.cli: what it imports, not itself by its name
        sys.modules["__main__"].__spec__ = importlib.util.find_spec("rlconform.cli")
        import rlconform.cli
        del sys.modules["rlconform.cli"]
    from rlconform.core.forkserver import preload
    preload(["json"])
    print(multiprocessing.forkserver._forkserver._preload_modules)
    context = multiprocessing.get_context("forkserver")
    with concurrent.futures.ProcessPoolExecutor(1, mp_context=context) as pool:
        print(pool.submit(gc.get_freeze_count).result(timeout=120))
    """
)


@pytest.mark.slow  # runs the CLI in a subprocess
def test_under_the_command_line_the_server_imports_it_before_freezing(tmp_path: Path) -> None:
    """End to end: under ``-m rlconform.cli`` the server imports what the CLI imports (rlconform's
    modules and what they import) before its heap is frozen, so a worker inherits them instead of
    importing them; not the CLI itself, which a worker's runpy run of ``__main__`` would warn about."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        pytest.skip("no forkserver start method here")
    runs = {}
    for main in ("cli", "plain"):
        done = subprocess.run(
            [sys.executable, "-c", MAIN_IS_CLI, main], capture_output=True, text=True, timeout=180, cwd=tmp_path
        )
        assert done.returncode == 0, done.stderr
        modules, frozen = done.stdout.strip().splitlines()[-2:]
        runs[main] = (modules, int(frozen))
    cli = ast.literal_eval(runs["cli"][0])
    assert cli[0] == "json" and cli[-1] == FROZEN_HEAP and "rlconform.cli" not in cli
    assert {"rlconform.core.session", "rlconform.reports.results"} <= set(cli)
    assert runs["plain"][0] == str(["json", FROZEN_HEAP])
    assert runs["cli"][1] > runs["plain"][1] + 10_000  # rlconform's modules and hypothesis


@pytest.fixture
def global_start_method() -> Iterator[None]:
    """The global start method is put back after the test."""
    previous = multiprocessing.get_start_method(allow_none=True)
    try:
        yield
    finally:
        multiprocessing.set_start_method(previous, force=True)


@pytest.mark.skipif("forkserver" not in multiprocessing.get_all_start_methods(), reason="no forkserver here")
@pytest.mark.parametrize(("before", "inside"), [("spawn", "forkserver"), ("fork", "fork"), (None, "forkserver")])
def test_a_users_torchrl_build_starts_spawn_workers_from_the_fork_server(
    before: str | None, inside: str, global_start_method: None
) -> None:
    """A user's TorchRL env is built with the global start method switched from spawn (TorchRL's
    default, which a ParallelEnv without ``mp_start_method`` reads, also where none is set) to forkserver,
    and put back after; a fork the user chose is left as it is (env_user.build_user_env)."""
    pytest.importorskip("torchrl")
    from rlconform.libraries.torchrl.env_user import build_user_env

    multiprocessing.set_start_method(before, force=True)
    seen: list[str | None] = []

    def factory(env_fn: object) -> object:
        seen.append(multiprocessing.get_start_method(allow_none=True))
        return object()

    with mock.patch("rlconform.libraries.torchrl.env_user._base", side_effect=lambda env: env):
        build_user_env(factory, [])
    assert seen == [inside]
    assert multiprocessing.get_start_method(allow_none=True) == before
