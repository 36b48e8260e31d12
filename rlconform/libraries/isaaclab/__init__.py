"""Vectorized checks of Isaac Lab's torch-native env contract (``DirectRLEnv`` / ``ManagerBasedRLEnv``).

Why a separate path from the trace-based families: an Isaac Lab env steps thousands of sub-envs
per call on a GPU. Recording every call as per-sub-env NumPy rows (what the ``isaaclab`` family
does for the reference env's exact checks) costs a Python loop per sub-env per step and a host
copy of every output. The checks here stay in torch on the env's device: each step is checked
with a few tensor operations whatever the number of sub-envs.
"""

from rlconform.core.catalog import Library
from rlconform.libraries.isaaclab.options import TORCH_TIER_OPTIONS

LIBRARY = Library(
    name="isaaclab",
    title="Isaac Lab: the DirectRLEnv contract, its RL-library wrappers, and the torch tier at scale",
    modules=(
        "rlconform.libraries.isaaclab.direct_family",
        "rlconform.libraries.isaaclab.rsl_rl_family",
        "rlconform.libraries.isaaclab.wrapper_systems",
        "rlconform.libraries.isaaclab.torch_tier",
    ),
    # the torch tier's specs need torch only: a user's torch-batched env following DirectRLEnv's
    # contract is checked without Isaac Lab (--api isaaclab). The bundled systems subclass Isaac
    # Lab's DirectRLEnv: without isaaclab the trace-based rows above already say "not installed"
    modules_when_importable={
        "torch": (
            "rlconform.libraries.isaaclab.torch_specs",
            "rlconform.libraries.isaaclab.device_specs",
        ),
        "isaaclab": ("rlconform.libraries.isaaclab.bundled",),
    },
    options={"isaaclab": TORCH_TIER_OPTIONS},
)
