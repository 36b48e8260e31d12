"""What the fork server that starts library workers preloads.

Systems whose library starts its workers with the forkserver method (TorchRL's ``ParallelEnv``,
SB3's ``SubprocVecEnv``) have the server import the libraries once
(``multiprocessing.set_forkserver_preload``), so that each worker starts at fork speed with the
same semantics. :func:`preload` sets that list with :data:`FROZEN_HEAP` last: importing it freezes
the server's heap (``gc.freeze``), so that a worker's garbage collections skip the objects it
inherits from the preloaded libraries. A full collection in a worker with torch imported took
half a second (TorchRL's ParallelEnv workers collect on close, and close() waits for them); with
the inherited heap frozen it takes milliseconds. Objects are frozen, not changed: what a worker
computes is the same.

Before its target runs, a forkserver (or spawn) worker runs this process's ``__main__`` again, as
``__mp_main__``. Under rlconform's own command line (``rlconform``, ``python -m rlconform.cli``)
or the ``pytest`` console script that is an import of rlconform's CLI or of pytest in every
worker: 0.13 s each, with the libraries loaded, which doubled the time of checking a
SubprocVecEnv. :func:`main_modules` names those imports, and the server preloads them too, so the
worker finds them done; it still runs ``__main__`` as before.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import importlib.util
import multiprocessing
import os
import sys
import sysconfig
from collections.abc import Iterator, Sequence

#: the module the fork server imports last (it freezes the server's heap; nothing else imports it)
FROZEN_HEAP = "rlconform.core.frozen_heap"
#: rlconform's command line, run as ``python -m rlconform.cli``
CLI_MODULE = "rlconform.cli"


def preload(modules: Sequence[str]) -> None:
    """Have this process's fork server import ``modules`` and what its workers' run of ``__main__``
    imports, then freeze its heap. Only takes effect if the fork server has not started yet (the
    first system to use it decides)."""
    if "forkserver" in multiprocessing.get_all_start_methods():
        extra = [name for name in main_modules() if name not in modules]
        multiprocessing.set_forkserver_preload([*modules, *extra, FROZEN_HEAP])


@contextlib.contextmanager
def spawn_from_fork_server(modules: Sequence[str], *, replace: Sequence[str | None] | None = None) -> Iterator[None]:
    """Inside, the global start method is forkserver with ``modules`` preloaded (:func:`preload`);
    it is put back on leaving.

    Why: TorchRL's multi-process objects (``ParallelEnv`` without ``mp_start_method``, the
    multi-process collectors, which take none) read the global start method when they start their
    workers, and importing TorchRL sets it to spawn. A spawned worker imports torch and TorchRL
    again: seconds per worker, per build. A forkserver worker starts as a spawned one does (a fresh
    process forked from a server that never ran the caller's code, its target and arguments
    pickled to it, ``__main__`` run again), with the imports already done.

    ``replace``: the start methods it switches from (None: any). A user's objects are switched
    only from spawn (TorchRL's default, whose semantics forkserver keeps), never from a fork the
    user chose. Nothing changes on a platform without forkserver."""
    previous = multiprocessing.get_start_method(allow_none=True)
    if "forkserver" not in multiprocessing.get_all_start_methods() or (replace is not None and previous not in replace):
        yield
        return
    preload(modules)
    multiprocessing.set_start_method("forkserver", force=True)
    try:
        yield
    finally:
        multiprocessing.set_start_method(previous, force=True)


def main_modules() -> list[str]:
    """The modules a worker imports when it runs this process's ``__main__`` again, where that
    ``__main__`` is rlconform's CLI or a console script of this environment (``rlconform``,
    ``pytest``): the module ``-m`` ran, or those the script imports at its top level. Only modules
    this process has already imported are named (the server imports them the same way). A user's
    own script or module is left alone; ``-c``, the interactive prompt and ``python -m
    package`` (a ``__main__`` module) are not run again in workers."""
    main = sys.modules.get("__main__")
    spec_name = getattr(getattr(main, "__spec__", None), "name", None)
    if spec_name is not None:
        if spec_name != CLI_MODULE:
            return []
        # not the CLI itself: a worker runs it again as ``__mp_main__`` with runpy, which warns
        # (a RuntimeWarning on the user's stderr per worker) when it is already imported under its
        # own name; what it imports at its top level is what the workers' run of it needs
        spec = importlib.util.find_spec(CLI_MODULE)
        origin = getattr(main, "__file__", None) or (spec.origin if spec is not None else None)
        if not isinstance(origin, str):
            return []
        return [name for name in _top_level_imports(origin) if name in sys.modules and name != CLI_MODULE]
    path = getattr(main, "__file__", None)
    if not isinstance(path, str):
        return []
    return [name for name in _console_script_imports(path) if name in sys.modules]


@functools.cache
def _console_script_imports(path: str) -> tuple[str, ...]:
    """The modules ``import X`` and ``from X import Y`` name at the top level of ``path`` if it is a
    console script of this environment; none otherwise. Worked out once per path: :func:`preload`
    runs before every build of a forkserver system, and the main script does not change."""
    scripts = sysconfig.get_path("scripts")
    if not scripts or os.path.dirname(os.path.abspath(path)) != os.path.abspath(scripts):
        return ()
    return _top_level_imports(path)


@functools.cache
def _top_level_imports(path: str) -> tuple[str, ...]:
    """The modules ``import X`` and ``from X import Y`` name at the top level of the file ``path``
    (none where it cannot be read or parsed)."""
    try:
        with open(path, encoding="utf-8") as handle:
            tree = ast.parse(handle.read(), filename=path)
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return ()
    names: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.append(node.module)
    return tuple(dict.fromkeys(names))
