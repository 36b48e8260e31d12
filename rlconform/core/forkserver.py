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
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Sequence

#: the module the fork server imports last (it freezes the server's heap; nothing else imports it)
FROZEN_HEAP = "rlconform.core.frozen_heap"


def preload(modules: Sequence[str]) -> None:
    """Have this process's fork server import ``modules``, then freeze its heap. Only takes effect
    if the fork server has not started yet (the first system to use it decides)."""
    if "forkserver" in multiprocessing.get_all_start_methods():
        multiprocessing.set_forkserver_preload([*modules, FROZEN_HEAP])
