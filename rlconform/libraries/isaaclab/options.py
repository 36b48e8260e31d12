"""The options of ``--api isaaclab`` (the torch tier), declared once.

A light module (no torch import): the library's ``LIBRARY`` lists them for the front ends, which
render them without loading the family, and the family reads them from here.
"""

from __future__ import annotations

from rlconform.core.options import FamilyOption

TORCH_TIER_OPTIONS = (
    FamilyOption("num_envs", "how many sub-envs your factory builds (default 16)", metavar="N", convert=int),
    FamilyOption(
        "device", "the torch device of its sub-envs (default: cuda if there is one, else cpu)", metavar="DEVICE"
    ),
)
