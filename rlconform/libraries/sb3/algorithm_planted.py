"""Planted bugs and innocent variants of family ``sb3.Algorithm``: SB3's DQN with a replay buffer
of :mod:`rlconform.libraries.sb3.algorithm_buffers` passed as ``replay_buffer_class``, and SB3's
PPO with a rollout buffer of that module passed as ``rollout_buffer_class``, as a user's own buffer
is (and PPO over a user's VecEnv wrapper that drops the time-out flag). Nothing here imports SB3:
each build imports the buffers module."""

from __future__ import annotations

import functools
from typing import Any

from rlconform.core.system import Capabilities, System, SystemTable
from rlconform.libraries.sb3.algorithm_case import VEC_ENVS_OPTION
from rlconform.libraries.sb3.algorithm_family import make_algorithm, make_on_policy
from rlconform.specs.families import SB3_ALGORITHM

SYSTEMS = SystemTable()
BUFFERS = "rlconform.libraries.sb3.algorithm_buffers"
N_STEPS = 3

#: name -> (buffer class, n-step buffer, fewest sub-envs, the exact specs it fails)
PLANTS: dict[str, tuple[str, bool, int, tuple[str, ...]]] = {
    "reset_as_terminal": ("ResetAsTerminalBuffer", False, 1, ("algorithm.buffer_next_obs",)),
    "timeout_dropped": ("TimeoutDroppedBuffer", False, 1, ("algorithm.buffer_dones", "algorithm.exact_targets")),
    "reward_of_next_env": ("RewardOfNextEnvBuffer", False, 2, ("algorithm.buffer_transitions",)),
    "nstep_mixed_envs": ("MixedEnvNStepBuffer", True, 2, ("algorithm.nstep_returns",)),
    "nstep_cross_episode": (
        "CrossEpisodeNStepBuffer",
        True,
        1,
        ("algorithm.nstep_returns", "algorithm.buffer_next_obs", "algorithm.buffer_dones"),
    ),
    "nstep_gamma_n": ("GammaNNStepBuffer", True, 1, ("algorithm.nstep_returns",)),
}
#: innocent variants: correct in another way than SB3's own buffers
INNOCENT: dict[str, tuple[str, bool, str]] = {
    "copying_buffer": ("CopyingBuffer", False, "a ReplayBuffer subclass that copies what it stores"),
    "own_nstep": ("OwnNStepBuffer", True, "an n-step buffer sampled by a loop of its own"),
    "nstep_gamma_n_at_terminations": (
        "GammaNAtTerminationsBuffer",
        True,
        "an n-step buffer discounting by gamma^n where the row terminates (no bootstrap there)",
    ),
}


def make_with_buffer(class_name: str, nstep: bool, venv: Any) -> Any:
    """SB3's DQN over ``venv`` with the replay buffer class ``class_name``."""
    from rlconform.libraries.sb3 import algorithm_buffers

    buffer_class = getattr(algorithm_buffers, class_name)
    kwargs: dict[str, Any] = {"n_steps": N_STEPS, "gamma": 0.99} if nstep else {}
    return make_algorithm("DQN", venv, replay_buffer_class=buffer_class, replay_buffer_kwargs=kwargs)


#: on-policy: name -> (rollout buffer class, or the VecEnv wrapper, fewest sub-envs, the exact specs it fails)
ROLLOUT_PLANTS: dict[str, tuple[str, int, tuple[str, ...]]] = {
    "gae_cross_episode": ("CrossEpisodeGAEBuffer", 1, ("algorithm.rollout_returns",)),
    "gae_bootstraps_terminations": ("BootstrapsTerminationsGAEBuffer", 1, ("algorithm.rollout_returns",)),
    "gae_mixed_envs": ("MixedEnvGAEBuffer", 2, ("algorithm.rollout_returns",)),
    "episode_starts_ignored": (
        "NoEpisodeStartsBuffer",
        1,
        ("algorithm.rollout_episode_starts", "algorithm.rollout_returns"),
    ),
    "observation_of_next_env": ("ObservationOfNextEnvBuffer", 2, ("algorithm.rollout_transitions",)),
    "timeout_bootstrap_dropped": (
        "DropsTimeLimitInfo",
        1,
        ("algorithm.rollout_rewards", "algorithm.rollout_returns"),
    ),
}
#: innocent rollout buffers
ROLLOUT_INNOCENT: dict[str, tuple[str, str]] = {
    "own_gae_loop": ("OwnGAERolloutBuffer", "a RolloutBuffer whose GAE is its own float64 loop, sub-env by sub-env"),
    "vector_gae": ("VectorGAERolloutBuffer", "a RolloutBuffer whose GAE is vectorized over the sub-envs in float64"),
}
WRAPPERS = frozenset({"DropsTimeLimitInfo"})


def make_with_rollout_buffer(class_name: str, venv: Any) -> Any:
    """SB3's PPO over ``venv`` with the rollout buffer class ``class_name`` (or over ``venv``
    wrapped in the VecEnv wrapper ``class_name``)."""
    from rlconform.libraries.sb3 import algorithm_buffers

    cls = getattr(algorithm_buffers, class_name)
    if class_name in WRAPPERS:
        return make_on_policy("PPO", cls(venv))
    return make_on_policy("PPO", venv, rollout_buffer_class=cls)


def _system(
    system_id: str,
    title: str,
    class_name: str,
    nstep: bool,
    kind: Any,
    min_envs: int,
    *,
    on_policy: bool = False,
    **extra: Any,
) -> System:
    short = BUFFERS.rsplit(".", 1)[1]
    if not on_policy:
        build = functools.partial(make_with_buffer, class_name, nstep)
        source = f"DQN(policy, env, replay_buffer_class={short}.{class_name})"
    else:
        build = functools.partial(make_with_rollout_buffer, class_name)
        source = (
            f"PPO(policy, {short}.{class_name}(env))"
            if class_name in WRAPPERS
            else f"PPO(policy, env, rollout_buffer_class={short}.{class_name})"
        )
    return System(
        id=system_id,
        family=SB3_ALGORITHM,
        title=title,
        build=build,
        source=source,
        requires=("stable-baselines3",),
        kind=kind,
        costly=True,
        capabilities=Capabilities(
            obs_kinds=frozenset({"box"}),
            action_kinds=frozenset({"discrete"}),
            min_envs=min_envs,
            max_envs=3,
            partial_reset=False,
        ),
        options=((VEC_ENVS_OPTION, ("DummyVecEnv",)),),
        **extra,
    )


for _name, (_cls, _nstep, _min, _fails) in PLANTS.items():
    SYSTEMS.add(
        _system(
            f"planted.sb3_algorithm.{_name}",
            f"planted bug (SB3 replay buffer): {_cls}",
            _cls,
            _nstep,
            "planted",
            _min,
            plants=_fails,
        )
    )
for _name, (_cls, _nstep, _what) in INNOCENT.items():
    SYSTEMS.add(
        _system(
            f"reference.sb3_algorithm.{_name}",
            f"innocent variant (SB3 replay buffer): {_what}",
            _cls,
            _nstep,
            "reference",
            1,
            description=f"{_what}: correct, the control of the algorithm.* specs",
        )
    )

for _name, (_cls, _min, _fails) in ROLLOUT_PLANTS.items():
    SYSTEMS.add(
        _system(
            f"planted.sb3_algorithm.{_name}",
            f"planted bug (SB3 {'VecEnv wrapper under PPO' if _cls in WRAPPERS else 'rollout buffer'}): {_cls}",
            _cls,
            False,
            "planted",
            _min,
            on_policy=True,
            plants=_fails,
        )
    )
for _name, (_cls, _what) in ROLLOUT_INNOCENT.items():
    SYSTEMS.add(
        _system(
            f"reference.sb3_algorithm.{_name}",
            f"innocent variant (SB3 rollout buffer): {_what}",
            _cls,
            False,
            "reference",
            1,
            on_policy=True,
            description=f"{_what}: correct, the control of the algorithm.rollout_* specs",
        )
    )

#: the exact specs each planted bug fails (tests/specs/test_specificity.py)
MUST_FAIL: dict[str, frozenset[str]] = {
    **{f"planted.sb3_algorithm.{name}": frozenset(fails) for name, (_, _, _, fails) in PLANTS.items()},
    **{f"planted.sb3_algorithm.{name}": frozenset(fails) for name, (_, _, fails) in ROLLOUT_PLANTS.items()},
}
