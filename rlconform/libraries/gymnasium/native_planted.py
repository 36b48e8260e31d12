"""The natively vectorized envs of :mod:`rlconform.libraries.gymnasium.native_samples` as bundled
systems of family ``gymnasium.VectorEnv``: planted bugs, the correct walk (the control) and
Gymnasium's own CartPole made by ``gymnasium.make_vec``. Nothing here imports Gymnasium: each build
imports the samples module, so the catalog loads without it."""

from __future__ import annotations

import functools
from typing import Any

from rlconform.core.system import Capabilities, System, SystemTable
from rlconform.libraries.gymnasium.options import MODES
from rlconform.specs.families import NATIVE_VECTOR

SYSTEMS = SystemTable()
SAMPLES = "rlconform.libraries.gymnasium.native_samples"
#: the single env a seed+i walk's sub-env equals
SINGLE_WALK = f"{SAMPLES}:single_walk"

#: planted system name -> (env class in native_samples, mode, options, the exact specs it fails)
PLANTS: dict[str, tuple[str, str, tuple[tuple[str, str], ...], tuple[str, ...]]] = {
    "reset_step_reward": ("ResetStepReward", "NextStep", (), ("vector.autoreset_mode",)),
    "reset_step_applies_action": ("ResetStepAppliesAction", "NextStep", (), ("vector.reset_step_action_ignored",)),
    "no_final_obs": ("NoFinalObs", "SameStep", (), ("vector.autoreset_mode",)),
    "timeout_terminates": ("TimeoutTerminates", "NextStep", (), ("vector.time_limit",)),
    # the action of a reset step decides whether the shared generator is drawn: it is not ignored
    "shared_noise": (
        "SharedNoise",
        "NextStep",
        (),
        ("vector.subenv_independence", "vector.reset_step_action_ignored"),
    ),
    "reused_buffer": ("ReusedBuffer", "SameStep", (), ("vector.no_aliasing",)),
    "ignores_seed": ("IgnoresSeed", "NextStep", (), ("vector.determinism",)),
    "int_flags": ("IntFlags", "NextStep", (), ("vector.api_shape",)),
    "undeclared_float64": ("UndeclaredFloat64", "NextStep", (), ("vector.observations_in_space",)),
    "doubled_reward": ("DoubledReward", "NextStep", (("single_env", SINGLE_WALK),), ("vector.single_env_match",)),
    # issue 36: final_info values packed from index 0, the _key masks right (seen against the single env)
    "packed_final_info": ("PackedFinalInfo", "SameStep", (("single_env", SINGLE_WALK),), ("vector.single_env_match",)),
    # every sub-env seeded with seed: copies of one another, seen without a single env
    "same_seed_everywhere": ("SameSeedEverywhere", "NextStep", (), ("vector.seeding",)),
    # every episode after the first replays the first: seen against the single env's later episodes
    "replays_first_episode": (
        "ReplaysFirstEpisode",
        "NextStep",
        (("single_env", SINGLE_WALK),),
        ("vector.single_env_match",),
    ),
    # reset(seed=...) ignored (seeded i when built): another seed gives the same batch
    "ignores_reset_seed": ("IgnoresResetSeed", "NextStep", (("single_env", SINGLE_WALK),), ("vector.seeding",)),
    # reset(seed=...) honoured on the first reset only: a later seeded reset of the same instance
    # continues the old streams, whatever the seed (issue 36)
    "seed_only_on_first_reset": ("SeedOnlyOnFirstReset", "NextStep", (), ("vector.seeding",)),
    # a rewarded reset step after 150-step episodes: seen only when driven past an end (issue 36)
    "long_reset_step_reward": ("LongResetStepReward", "NextStep", (), ("vector.autoreset_mode",)),
    # a time-out reported as a termination, behind a stale spec.max_episode_steps (FINDINGS G10)
    "stale_spec_timeout_terminates": ("StaleSpecTimeoutTerminates", "NextStep", (), ("vector.time_limit",)),
}


def build_sample(class_name: str, mode: str, num_envs: int) -> Any:
    """``native_samples.<class_name>(num_envs, mode)``, imported when built."""
    import importlib

    return getattr(importlib.import_module(SAMPLES), class_name)(num_envs, mode)


def build_factory(name: str, num_envs: int) -> Any:
    import importlib

    return getattr(importlib.import_module(SAMPLES), name)(num_envs)


def _no_autoreset_mode() -> str | None:
    import gymnasium

    return (
        None
        if hasattr(gymnasium.vector, "AutoresetMode")
        else "the sample vector envs declare gymnasium.vector.AutoresetMode, new in Gymnasium 1.1"
    )


def _no_make_vec() -> str | None:
    import gymnasium

    major = int(gymnasium.__version__.split(".")[0])
    return None if major >= 1 else "gymnasium.make_vec's vector_entry_point arrived in Gymnasium 1.0"


def _system(
    system_id: str,
    title: str,
    build: Any,
    source: str,
    kind: Any,
    options: tuple[tuple[str, str], ...] = (),
    **extra: Any,
) -> System:
    return System(
        id=system_id,
        family=NATIVE_VECTOR,
        title=title,
        build=build,
        source=source,
        requires=("gymnasium",),
        kind=kind,
        capabilities=Capabilities(partial_reset=True, min_envs=2, max_envs=4),
        options=options,
        **extra,
    )


for _name, (_cls, _mode, _options, _fails) in PLANTS.items():
    SYSTEMS.add(
        _system(
            f"planted.native_vector.{_name}",
            f"planted bug (native vector env): {_cls}",
            functools.partial(build_sample, _cls, _mode),
            f"{SAMPLES}:{_cls}({_mode!r})",
            "planted",
            _options,
            plants=_fails,
            availability=_no_autoreset_mode,
        )
    )
for _mode in MODES:
    SYSTEMS.add(
        _system(
            f"reference.native_vector.{_mode}",
            f"BatchedWalk, a correct NumPy-batched vector env ({_mode})",
            functools.partial(build_sample, "BatchedWalk", _mode),
            f"{SAMPLES}:BatchedWalk({_mode!r})",
            "reference",
            (("single_env", SINGLE_WALK),) if _mode == "NextStep" else (),
            description="a correct natively vectorized env: the control of the gymnasium.VectorEnv specs",
            availability=_no_autoreset_mode,
        )
    )
# CartPoleVectorEnv draws every sub-env's start from one generator (its reset seeds one
# np_random), not seed+i: declared shared, as its user would declare it
for _name, _factory, _title, _seeding in (
    (
        "vector_entry_point",
        "cartpole_vector",
        "gymnasium.make_vec('CartPole-v1', vectorization_mode='vector_entry_point') (CartPoleVectorEnv)",
        "shared",
    ),
    ("sync", "cartpole_sync", "gymnasium.make_vec('CartPole-v1', vectorization_mode='sync')", "seed+i"),
):
    SYSTEMS.add(
        _system(
            f"gymnasium.make_vec.CartPole.{_name}",
            _title,
            functools.partial(build_factory, _factory),
            f"{SAMPLES}:{_factory}",
            "library",
            ((("single_env", f"{SAMPLES}:cartpole_single"), ("seeding", _seeding))),
            availability=_no_make_vec,
        )
    )

#: the exact specs each planted bug fails (tests/specs/test_specificity.py)
MUST_FAIL: dict[str, frozenset[str]] = {
    f"planted.native_vector.{name}": frozenset(fails) for name, (_, _, _, fails) in PLANTS.items()
}
