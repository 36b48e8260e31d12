"""The options of ``--api gymnasium.VectorEnv`` (a ready-made vector env), declared once.

A light module (no Gymnasium import): the library's ``LIBRARY`` lists them for the front ends,
which render them without loading the family, and the family reads them from here.
"""

from __future__ import annotations

from rlconform.core.options import FamilyOption

#: the autoreset modes a Gymnasium vector env may have, as ``metadata["autoreset_mode"]`` names them
MODES = ("NextStep", "SameStep", "Disabled")
#: how a ready-made vector env may seed its sub-envs
SEEDINGS = ("seed+i", "shared", "construction")

SINGLE_ENV_OPTION = "single_env"
SEEDING_OPTION = "seeding"
AUTORESET_OPTION = "autoreset_mode"

NATIVE_VECTOR_OPTIONS = (
    FamilyOption(
        SINGLE_ENV_OPTION,
        "the factory of the single env each sub-env must equal (make_single() -> gymnasium.Env); without it "
        "the checks that compare sub-envs with a twin are left out, and the verdicts say so",
        metavar="MODULE:CALLABLE",
    ),
    FamilyOption(
        SEEDING_OPTION,
        "how the vector env seeds its sub-envs (default seed+i, Gymnasium's convention; shared: one generator "
        "for all; construction: seeded when built only)",
        choices=SEEDINGS,
    ),
    FamilyOption(
        AUTORESET_OPTION,
        "the autoreset mode of a vector env that declares no metadata['autoreset_mode'] (default NextStep)",
        choices=MODES,
    ),
)
