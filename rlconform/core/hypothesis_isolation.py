"""Keep rlconform's own searches independent of the process they run in.

Hypothesis (6.131 and later) mixes "local constants" into generation: numbers and strings it reads
from the source of every module loaded in ``sys.modules`` that lives outside site-packages and the
standard library (rlconform itself when installed editable, the user's package, their conftest's
imports), caching them under ``.hypothesis/constants/`` in the current directory. A derandomized
search then draws different examples depending on which modules happen to be imported: a check
passed from an empty folder and failed once a test module importing the user's package was
collected, and an xdist worker that had imported other modules found another minimal case.

Hypothesis has no setting to switch this off, so for the duration of one rlconform search the
collection is replaced by an empty pool (Hypothesis' fixed global constants stay). The user's own
``@given`` tests in the same process keep their local constants: the hook is restored, and the
cache of permitted constants cleared, when the search ends. Searches run in the calling thread; a
user's Hypothesis test running concurrently in another thread would see the empty pool meanwhile.
"""

from __future__ import annotations

import contextlib
import threading
import warnings
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

_HOOK = "_get_local_constants"
_lock = threading.RLock()
_warned = False


def _providers() -> ModuleType | None:
    try:
        from hypothesis.internal.conjecture import providers
    except ImportError:  # pragma: no cover - a Hypothesis without the providers module
        return None
    return providers


def collects_local_constants() -> bool:
    """Whether the installed Hypothesis collects local constants at all."""
    try:
        import hypothesis.internal.constants_ast  # noqa: F401
    except ImportError:  # pragma: no cover - Hypothesis before 6.131
        return False
    return True


def can_disable_local_constants() -> bool:
    """Whether rlconform knows how to switch local constants off in the installed Hypothesis."""
    providers = _providers()
    return providers is not None and callable(getattr(providers, _HOOK, None)) and hasattr(providers, "Constants")


def _clear_constants_cache(providers: ModuleType) -> None:
    # the cache holds, per choice type and constraints, the constants permitted there, local ones
    # included: entries computed outside the search must not leak into it, nor the reverse
    cache = getattr(providers, "CONSTANTS_CACHE", None)
    inner = getattr(cache, "cache", None)
    if inner is not None and hasattr(inner, "clear"):
        inner.clear()


def _warn_unsupported() -> None:
    global _warned
    if not _warned:
        _warned = True
        warnings.warn(
            "rlconform cannot switch off the local constants of this Hypothesis version: "
            "derandomized verdicts may depend on which modules are imported",
            RuntimeWarning,
            stacklevel=3,
        )


@contextlib.contextmanager
def without_local_constants() -> Iterator[None]:
    """Generate from Hypothesis' global constants only, whatever modules are loaded."""
    if not collects_local_constants():  # pragma: no cover - nothing to switch off
        yield
        return
    providers = _providers()
    if providers is None or not can_disable_local_constants():
        _warn_unsupported()
        yield
        return
    empty = providers.Constants()

    def no_local_constants() -> Any:
        return empty

    with _lock:
        previous: Callable[[], Any] = getattr(providers, _HOOK)
        setattr(providers, _HOOK, no_local_constants)
        _clear_constants_cache(providers)
    try:
        yield
    finally:
        with _lock:
            setattr(providers, _HOOK, previous)
            _clear_constants_cache(providers)
