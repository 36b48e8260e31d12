"""Stable-Baselines3: the VecEnv API and its wrappers (family ``sb3.VecEnv``), its reference model
and planted bugs, and what its algorithms store in their buffers and compute from their rollouts
(family ``sb3.Algorithm``)."""

from rlconform.core.catalog import Library

LIBRARY = Library(
    name="sb3",
    title="Stable-Baselines3 VecEnvs, and what its algorithms store and compute",
    modules=(
        "rlconform.libraries.sb3.vecenv_family",
        "rlconform.libraries.sb3.reference_systems",
        "rlconform.libraries.sb3.planted",
        "rlconform.libraries.sb3.algorithm_family",
        "rlconform.libraries.sb3.algorithm_specs",
        "rlconform.libraries.sb3.algorithm_rollout_specs",
        "rlconform.libraries.sb3.algorithm_planted",
    ),
)
