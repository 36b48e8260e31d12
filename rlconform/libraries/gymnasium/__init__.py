"""Gymnasium: single envs under Gymnasium's wrappers and a user's own wrapper (family
``gymnasium.Wrapper``), its vector API in every autoreset mode (family ``gymnasium.vector``), their
reference models and planted bugs, and ready-made vector envs checked black-box (family
``gymnasium.VectorEnv``)."""

from rlconform.core.catalog import Library
from rlconform.libraries.gymnasium.options import NATIVE_VECTOR_OPTIONS

LIBRARY = Library(
    name="gymnasium",
    title="Gymnasium single envs and wrappers, vectorizers, and ready-made vector envs",
    modules=(
        "rlconform.libraries.gymnasium.env_family",
        "rlconform.libraries.gymnasium.vector_family",
        "rlconform.libraries.gymnasium.reference_systems",
        "rlconform.libraries.gymnasium.planted_episodes",
        "rlconform.libraries.gymnasium.planted_calls",
        "rlconform.libraries.gymnasium.native_vector",
        "rlconform.libraries.gymnasium.native_vector_specs",
        "rlconform.libraries.gymnasium.native_planted",
        "rlconform.libraries.gymnasium.native_envpool",
    ),
    options={"gymnasium.VectorEnv": NATIVE_VECTOR_OPTIONS},
)
