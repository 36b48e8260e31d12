"""Initialize Warp before Isaac Lab does, without its one C-level line on a machine with no GPU.

Importing Isaac Lab initializes Warp (``isaaclab/utils/warp/__init__.py`` calls ``wp.init()``), and
on a machine without an NVIDIA driver Warp's native library writes "Warp CUDA warning: Could not
find or load the NVIDIA CUDA driver. GPU execution will not be available." to the process's stderr
with ``fprintf``: no logger or setting of Warp's silences it. Every worker of an Isaac Lab run
printed it once, between the run's lines. The run's header already says whether a GPU is there
(``accelerator: ...``), so that one line is dropped; anything else Warp's initialization writes to
stderr is passed on unchanged. Once Warp is initialized, Isaac Lab's own ``wp.init()`` does nothing.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import tempfile
from collections.abc import Iterator

from rlconform.core.watchdog import stderr_to

#: the line Warp's native library writes when it finds no CUDA driver
NO_DRIVER_LINE = (
    b"Warp CUDA warning: Could not find or load the NVIDIA CUDA driver. GPU execution will not be available."
)

_DONE = False


def init_warp_quietly() -> None:
    """Initialize Warp (when installed) with :data:`NO_DRIVER_LINE` kept off stderr; once per process."""
    global _DONE
    if _DONE or importlib.util.find_spec("warp") is None:
        return
    _DONE = True
    import warp

    warp.config.quiet = True  # as Isaac Lab's own initialization sets it: no banner
    with stderr_without(NO_DRIVER_LINE):
        warp.init()


@contextlib.contextmanager
def stderr_without(line: bytes) -> Iterator[None]:
    """Collect what is written to file descriptor 2 (C code included) while the block runs
    (:func:`rlconform.core.watchdog.stderr_to`), then write it back without the lines equal to
    ``line``."""
    with tempfile.TemporaryDirectory(prefix="rlconform-stderr-") as folder:
        path = os.path.join(folder, "stderr")
        try:
            with stderr_to(path):
                yield
        finally:
            written = b""
            if os.path.exists(path):
                with open(path, "rb") as collected:
                    written = collected.read()
            kept = [text for text in written.splitlines(keepends=True) if text.rstrip(b"\r\n") != line]
            if kept:
                os.write(2, b"".join(kept))
