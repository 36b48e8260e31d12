"""The options of ``--api gymnasium.Env`` (env-author mode), declared once.

A light module: the library's ``LIBRARY`` lists them for the front ends, which render them without
loading the family, and the family reads them from here.
"""

from __future__ import annotations

from rlconform.core.options import FamilyOption

STACKS_OPTION = "stacks"

ENV_AUTHOR_OPTIONS = (
    FamilyOption(
        STACKS_OPTION,
        "only the stacks your env is run through whose system id matches (glob, e.g. 'gymnasium.SyncVectorEnv.*', "
        "sb3.DummyVecEnv; default: every installed stack); the verdict lists the stacks not chosen",
        metavar="PATTERN",
        repeatable=True,
    ),
)
