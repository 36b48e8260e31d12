"""Standalone reproducers: a Python script that replays a failing case without Hypothesis.

Each family writes its own (:meth:`rlconform.core.family.Family.reproducer`); every one imports
only from :mod:`rlconform.replay`, the stable entry point, so that rlconform's internals can move
without breaking the reproducers users keep.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rlconform.core.family import get_family

if TYPE_CHECKING:
    from rlconform.core.spec import Spec
    from rlconform.core.system import System


def reproducer_source(system: System, spec: Spec, case: Any, run: Any = None) -> str:
    return get_family(system.family).reproducer(system, spec, case, run)
