"""The case an SB3 algorithm is checked on (:class:`AlgorithmCase`: the script of its reference envs,
the number of sub-envs, the steps it collects and the VecEnv around them), the strategy that
draws it and the edge cases every search tries first.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rlconform.core.system import System
from rlconform.envs.script import EnvScript, EpisodePlan
from rlconform.envs.spaces import BoxAction, BoxObs, DictObs, DiscreteAction

if TYPE_CHECKING:
    from hypothesis.strategies import SearchStrategy


#: VecNormalize(DummyVecEnv) with SB3's defaults (``clip_obs=10``: FINDINGS S8), and with clipping
#: out of reach, so that what a user's algorithm does with VecNormalize is checked apart from S8
VECNORMALIZE = "VecNormalize"
VECNORMALIZE_UNCLIPPED = "VecNormalize(clip_obs=1e6)"
UNCLIPPED = 1e6
#: a small clip_obs, as users set for bounded inputs: nearly every terminal observation is clipped
VECNORMALIZE_SMALL_CLIP = "VecNormalize(clip_obs=1)"
SMALL_CLIP = 1.0
#: the VecEnvs rlconform hands a user's factory (a bundled system's option ``vec_envs`` names its own)
VEC_ENVS = ("DummyVecEnv", "SubprocVecEnv", VECNORMALIZE_UNCLIPPED)
VEC_ENVS_OPTION = "vec_envs"
#: the observations a case draws: a Box (ReplayBuffer) or a Dict of Boxes (DictReplayBuffer)
BOX_OBS = BoxObs()
DICT_OBS = DictObs(entries=(("state", BoxObs()), ("wide", BoxObs(shape=(7,)))))
DISCRETE_ACTION = DiscreteAction(3)
BOX_ACTION = BoxAction(2)
#: the seed of NumPy's global generator while the buffer is sampled (restored afterwards)
SAMPLE_SEED = 20240527


#: how the note of a factory checked with fewer sub-envs than the family draws starts (the probe
#: writes it among the system's restrictions; every verdict on the system carries it)
SUB_ENVS_NOTE = "checked with "


def sub_envs_note(max_envs: int, refusal: str) -> str:
    """The note of a factory the library refused for more than ``max_envs`` sub-envs."""
    sub_envs = "one sub-env" if max_envs == 1 else f"{max_envs} sub-envs"
    return f"{SUB_ENVS_NOTE}{sub_envs} only: with {max_envs + 1} sub-envs, {refusal}"


def sub_envs_notes(system: System) -> list[str]:
    """The system's sub-env note, if the probe narrowed its sub-envs (as a pass says what it rests on)."""
    return [note for note in system.capabilities.notes if note.startswith(SUB_ENVS_NOTE)]


@dataclass(frozen=True)
class AlgorithmCase:
    """One check: ``model.learn(total_timesteps=steps * num_envs)`` over ``num_envs`` reference
    envs following ``script``, vectorized by ``vec_env``."""

    script: EnvScript
    num_envs: int
    steps: int
    vec_env: str = "DummyVecEnv"


def _vec_envs(system: System) -> tuple[str, ...]:
    allowed = system.option(VEC_ENVS_OPTION)
    return tuple(allowed) if allowed else VEC_ENVS


def _action_spec(system: System) -> Any:
    kinds = system.capabilities.action_kinds
    return DISCRETE_ACTION if "discrete" in kinds else BOX_ACTION


def _obs_specs(system: System) -> list[Any]:
    kinds = system.capabilities.obs_kinds
    return [spec for kind, spec in (("box", BOX_OBS), ("dict", DICT_OBS)) if kind in kinds]


def algorithm_cases(system: System) -> SearchStrategy[AlgorithmCase]:
    from hypothesis import strategies as st

    plans = st.builds(
        EpisodePlan,
        length=st.integers(1, 6),
        end=st.sampled_from(("terminated", "truncated", "both", "never")),
    )

    @st.composite
    def build(draw: Any) -> AlgorithmCase:
        episodes = tuple(draw(st.lists(plans, min_size=1, max_size=4)))
        # an algorithm that trains by episodes (train_freq in episodes) waits in learn for an
        # episode end: the probe then requires a time limit, so that every episode ends
        limited = system.capabilities.time_limit == "required"
        limit = draw(st.integers(2, 6)) if limited else draw(st.none() | st.integers(2, 6))
        if limit is None and all(p.end == "never" for p in episodes):
            limit = 4
        vec_env = draw(st.sampled_from(_vec_envs(system)))
        script = EnvScript(
            obs=draw(st.sampled_from(_obs_specs(system))),
            action=_action_spec(system),
            episodes=episodes,
            env_stride=draw(st.integers(0, 3)),
            max_episode_steps=limit,
        )
        return AlgorithmCase(
            script=script,
            num_envs=draw(st.integers(max(1, system.capabilities.min_envs), min(3, system.capabilities.max_envs))),
            steps=draw(st.integers(1, 24)),
            vec_env=vec_env,
        )

    return build()


def algorithm_boundary_cases(system: System) -> list[AlgorithmCase]:
    """Explicit cases tried first under every profile: terminations and time-outs at different
    steps in different sub-envs, a buffer that wraps, on every VecEnv the system is checked with."""
    action = _action_spec(system)
    mixed = (EpisodePlan(2, "terminated"), EpisodePlan(5, "never"), EpisodePlan(3, "terminated"), EpisodePlan(1))
    found = []
    for obs in _obs_specs(system):
        script = EnvScript(obs=obs, action=action, episodes=mixed, env_stride=1, max_episode_steps=4)
        for vec_env in _vec_envs(system):
            n = min(3, system.capabilities.max_envs)
            found.append(AlgorithmCase(script, n, 12, vec_env))
        # few sub-envs, many steps: the buffer wraps (bundled buffers hold 24 rows)
        found.append(AlgorithmCase(script, max(1, system.capabilities.min_envs), 30, _vec_envs(system)[0]))
    # every step ends an episode from the first on: terminal observations while VecNormalize's
    # running statistics are fresh
    ones = EnvScript(obs=_obs_specs(system)[0], action=action, episodes=(EpisodePlan(1),))
    found.extend(AlgorithmCase(ones, max(1, system.capabilities.min_envs), 3, v) for v in _vec_envs(system))
    return found
