"""Planted bugs of env-author mode: small user envs with one classic bug each
(:mod:`rlconform.libraries.envauthor.sample_envs`)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

from rlconform.core.system import Capabilities, EnvFn, System, SystemTable
from rlconform.specs.families import USER_ENV

#: this module's systems, read by the catalog (rlconform.core.catalog)
SYSTEMS = SystemTable()


def _call_factory(factory: Callable[[], Any], env_fns: Sequence[EnvFn]) -> Any:
    return factory()


def _register_user_envs() -> None:
    from rlconform.libraries.envauthor import sample_envs as user_envs

    bugs = {
        "global_random": ("env.determinism",),
        "seed_once": ("env.reset_reproducible",),
        "reused_buffer": ("env.no_aliasing",),
        "float64_obs": ("env.observations_in_space",),
        "four_tuple": ("env.api_shape",),
        "leaky": ("env.step_after_end",),
        "shared_state": ("env.stack_equivalence",),
        "with_terminating_limit": ("env.wrapper_layers",),
        "with_reset_info_dropper": ("env.wrapper_layers",),
        "with_delayed_reward": ("env.wrapper_layers",),
        "last_step_out_of_space": ("env.observations_in_space",),
        "edge_rejecting": ("env.edge_actions",),
        "constant_reseed": ("env.seed_stream",),
    }
    for name, plants in bugs.items():
        factory = getattr(user_envs, name)
        doc = (factory().__class__.__doc__ or name).strip()
        SYSTEMS.add(
            System(
                id=f"planted.user_env.{name}",
                family=USER_ENV,
                title=f"planted bug (user env): {doc}",
                build=functools.partial(_call_factory, factory),
                source=f"rlconform.libraries.envauthor.sample_envs:{name}",
                requires=("gymnasium",),
                kind="planted",
                capabilities=Capabilities(partial_reset=False, max_envs=3),
                plants=plants,
                description=doc,
                env_factory=factory,
            )
        )


_register_user_envs()

#: the exact specs each planted bug fails (tests/specs/test_specificity.py)
MUST_FAIL: dict[str, frozenset[str]] = {
    f"planted.{name}": frozenset(specs)
    for name, specs in {
        # an env drawing from the global RNG reproduces nothing: not a reset, not a stack's run
        "user_env.global_random": (
            "env.determinism",
            "env.reset_reproducible",
            "env.stack_equivalence",
            "env.step_after_end",
        ),
        # seeded once, a later reset(seed) (the probe's after a step past the end) differs
        "user_env.seed_once": ("env.reset_reproducible", "env.step_after_end"),
        # a stack that keeps the returned array sees it overwritten
        "user_env.reused_buffer": ("env.no_aliasing", "env.stack_equivalence"),
        "user_env.float64_obs": ("env.observations_in_space",),
        # no stack can unpack a 4-tuple
        "user_env.four_tuple": ("env.api_shape", "env.stack_equivalence", "env.step_after_end"),
        "user_env.leaky": ("env.step_after_end",),
        "user_env.shared_state": ("env.stack_equivalence",),
        # a layer compared with the env it wraps: each bug shows only there
        "user_env.with_terminating_limit": ("env.wrapper_layers",),
        "user_env.with_reset_info_dropper": ("env.wrapper_layers",),
        "user_env.with_delayed_reward": ("env.wrapper_layers",),
        # 200-step episodes: the bad observation comes only on the last step, which every example
        # now reaches (it drives each copy past its first episode end)
        "user_env.last_step_out_of_space": ("env.observations_in_space",),
        # sampled Box actions never land on a bound: only the edges show it
        "user_env.edge_rejecting": ("env.edge_actions",),
        # the same env after every reset without a seed: one seed's run cannot show it
        "user_env.constant_reseed": ("env.seed_stream",),
    }.items()
}
