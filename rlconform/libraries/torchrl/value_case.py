"""The case a TorchRL return estimator is checked on: an :class:`EstimatorCase` (a
:class:`~rlconform.envs.plan.Case` with the collector's parameters), the strategy that draws it and
the edge cases every search tries first.

A case builds a TorchRL ``Collector`` over reference envs (a GymWrapper, or a SerialEnv for several
sub-envs: batches of shape [time] or [envs, time], with terminations and truncations inside them
and a batch edge mid-episode) and hands each batch to the estimator.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from rlconform.core.system import System
from rlconform.envs.plan import Case, Reset
from rlconform.envs.script import EnvScript, EpisodePlan
from rlconform.envs.spaces import BoxObs, DiscreteAction
from rlconform.libraries.torchrl.frames import (
    NUM_ACTIONS,
    env_source,
    scenario_scripts,
)
from rlconform.specs.families import TORCHRL_VALUE_ESTIMATOR

if TYPE_CHECKING:
    from hypothesis.strategies import SearchStrategy


FAMILY_NAME = TORCHRL_VALUE_ESTIMATOR
FAMILIES = frozenset({FAMILY_NAME})
NEEDS_CASE = "runs only on an EstimatorCase (replay the verdict's case, not a plain Case)"
ROLE = "estimator_role"


@dataclass(frozen=True)
class EstimatorCase(Case):
    """One run: ``batches`` collector batches of ``steps`` steps per sub-env, each handed to the
    estimator."""

    steps: int = 4
    batches: int = 1

    def collector_source(self) -> str:
        frames = self.steps * self.num_envs
        return (
            f"Collector({env_source(self.num_envs)}, policy, frames_per_batch={frames}, "
            f"total_frames={frames * self.batches})"
        )


def estimator_cases(system: System) -> SearchStrategy[EstimatorCase]:
    from hypothesis import strategies as st

    caps = system.capabilities
    return st.builds(
        EstimatorCase,
        script=scenario_scripts(),
        num_envs=st.integers(caps.min_envs, caps.max_envs),
        ops=st.just((Reset(),)),
        steps=st.integers(2, 8),
        batches=st.integers(1, 2),
    )


def _script(*episodes: EpisodePlan, stride: int = 0, limit: int | None = None) -> EnvScript:
    return EnvScript(
        obs=BoxObs(), action=DiscreteAction(NUM_ACTIONS), episodes=episodes, env_stride=stride, max_episode_steps=limit
    )


def estimator_edge_cases(system: System) -> list[EstimatorCase]:
    """Batches tried first under every profile: two sub-envs whose episodes end at different steps
    (a termination and a truncation inside the batch, a batch edge mid-episode); a truncation
    followed by a termination (shifted=True's budget); a step both terminated and truncated; and
    one sub-env alone (a batch of shape [time])."""
    caps = system.capabilities
    found = [
        EstimatorCase(
            _script(EpisodePlan(2, "terminated"), EpisodePlan(3, "truncated"), stride=1), 2, (Reset(),), steps=6
        ),
        EstimatorCase(_script(EpisodePlan(2, "truncated"), EpisodePlan(2, "terminated")), 2, (Reset(),), steps=5),
        EstimatorCase(_script(EpisodePlan(3, "terminated"), limit=3), 2, (Reset(),), steps=5),
        EstimatorCase(_script(EpisodePlan(2, "terminated"), EpisodePlan(4, "never"), limit=3), 1, (Reset(),), steps=7),
    ]
    return [case for case in found if caps.min_envs <= case.num_envs <= caps.max_envs]
