"""The SB3 reference models as systems: driven and checked like any library system, and every
spec must pass on them (the suite's control group)."""

from __future__ import annotations

from typing import Any

from rlconform.core.system import Capabilities, SystemTable
from rlconform.libraries.gymnasium.reference_systems import model_system
from rlconform.libraries.sb3 import model as sb3_model
from rlconform.specs.families import SB3_VECENV

#: this module's systems, read by the catalog (rlconform.core.catalog)
SYSTEMS = SystemTable()


def _register_sb3_models() -> None:
    box_or_dict = Capabilities(
        obs_kinds=frozenset({"box", "dict"}), composite_box_leaves_only=True, partial_reset=False
    )
    clipping = (
        "SB3 documents that VecNormalize clips normalised observations to clip_obs (default 10) and normalises "
        "terminal_observation the same way; its off-policy recipe then calls unnormalize_obs, which cannot undo "
        "the clipping, so a terminal observation further than clip_obs deviations from the running mean is lost"
    )
    known = {
        "VecNormalize": (("transitions.exact", clipping), ("terminal.final_obs", clipping)),
    }
    # the builds of the wrapper models take the wrapper's parameters as keywords (a user's stack
    # configured otherwise, see ModelMatch); without any they build the bundled stacks' models
    entries: list[tuple[str, Any, str, Capabilities]] = [
        (
            "VecEnv",
            lambda fns: sb3_model.ModelVecEnv(fns),
            "models.ModelVecEnv(env_fns)",
            Capabilities(partial_reset=False),
        ),
        (
            "VecNormalize",
            lambda fns, **parameters: sb3_model.ModelVecNormalize(sb3_model.ModelVecEnv(fns), **parameters),
            "models.ModelVecNormalize(models.ModelVecEnv(env_fns))",
            box_or_dict,
        ),
        (
            "VecFrameStack",
            lambda fns, n_stack=3: sb3_model.ModelVecFrameStack(sb3_model.ModelVecEnv(fns), n_stack=n_stack),
            "models.ModelVecFrameStack(models.ModelVecEnv(env_fns), n_stack=3)",
            box_or_dict,
        ),
        (
            "VecMonitor",
            lambda fns: sb3_model.ModelVecMonitor(sb3_model.ModelVecEnv(fns)),
            "models.ModelVecMonitor(models.ModelVecEnv(env_fns))",
            Capabilities(partial_reset=False),
        ),
    ]
    for name, build, source, capabilities in entries:
        SYSTEMS.add(
            model_system(
                f"reference.sb3.{name}",
                SB3_VECENV,
                f"reference model: SB3 {name}",
                build,
                source,
                capabilities,
                requires=("gymnasium",),
                known_violations=known.get(name, ()),
            )
        )


_register_sb3_models()
