"""The one list of libraries rlconform checks, and the default catalog made from it.

Adding a library is one new package under ``rlconform/libraries/`` and one line in
:data:`LIBRARIES` (ARCHITECTURE.md, "Adding a library"). This module is the composition root: the
only module that names every library package.
"""

from __future__ import annotations

from rlconform.core.catalog import Catalog, Library
from rlconform.libraries import envauthor, gymnasium, isaaclab, rsl_rl, sb3, skrl, torchrl

#: every library package, in the order of ``rlconform list`` and of the results table
LIBRARIES: tuple[Library, ...] = (
    torchrl.LIBRARY,
    envauthor.LIBRARY,
    gymnasium.LIBRARY,
    isaaclab.LIBRARY,
    rsl_rl.LIBRARY,
    sb3.LIBRARY,
    skrl.LIBRARY,
)

#: the cross-family specs (rlconform/specs/): each applies to every family whose runs it can read
SPEC_MODULES: tuple[str, ...] = (
    "rlconform.specs.dtypes",
    "rlconform.specs.learner",
    "rlconform.specs.aliasing",
    "rlconform.specs.api",
    "rlconform.specs.lifecycle",
    "rlconform.specs.model",
    "rlconform.specs.seeding",
    "rlconform.specs.statistics",
    "rlconform.specs.transitions",
)


def default_catalog() -> Catalog:
    return Catalog(LIBRARIES, SPEC_MODULES)
