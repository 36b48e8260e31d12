"""The case a TorchRL replay buffer is checked on: a :class:`ReplayCase` (a :class:`~rlconform.envs.plan.Case`
with the buffer's parameters), the strategy that draws it and the edge fills every search tries first.

A case fills a buffer from a TorchRL ``Collector`` over reference envs (a GymWrapper, or a SerialEnv for
several sub-envs), batch after batch into a storage small enough to wrap around, then samples slices.
Its single ``Reset`` op stands for "fill, then sample". The batches go in as TorchRL's examples
put them (``batch.reshape(-1)``: each sub-env's frames in a row, "env_major") or interleaved in
time ("time_major", as a vectorized env's steps arrive); the sampler finds trajectories with the
collector's ``("collector", "traj_ids")`` (``traj_key``), with ``("next", "done")``
(``end_key``), or with its defaults.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from rlconform.core.system import System
from rlconform.envs.plan import Case, Reset
from rlconform.envs.script import EnvScript, EpisodePlan
from rlconform.envs.spaces import BoxObs, DiscreteAction
from rlconform.libraries.torchrl.frames import (
    NUM_ACTIONS,
    scenario_scripts,
)
from rlconform.specs.families import TORCHRL_REPLAY

if TYPE_CHECKING:
    from hypothesis.strategies import SearchStrategy


FAMILY_NAME = TORCHRL_REPLAY
FAMILIES = frozenset({FAMILY_NAME})
NEEDS_CASE = "runs only on a ReplayCase (replay the verdict's case, not a plain Case)"
ROLE = "replay_role"

TrajectoryKeys = Literal["traj_key", "end_key", "defaults"]
Layout = Literal["env_major", "time_major"]
#: sampler keyword arguments for each way of finding trajectories
SAMPLER_KEYS: dict[str, str] = {
    "traj_key": 'traj_key=("collector", "traj_ids")',
    "end_key": 'end_key=("next", "done")',
    "defaults": "",
}
#: how a batch of shape [envs, time] (or [time]) goes into the buffer
LAYOUT_SOURCE = {"env_major": "batch.reshape(-1)", "time_major": "batch.transpose(0, -1).reshape(-1)"}


@dataclass(frozen=True)
class ReplayCase(Case):
    """One buffer run: collector batches in, slices out."""

    steps_per_batch: int = 4
    batches: int = 2
    storage_size: int = 8
    slice_len: int = 2
    num_slices: int = 2
    samples: int = 3
    keys: TrajectoryKeys = "end_key"
    layout: Layout = "env_major"
    seed: int = 0

    def sampler_source(self, sampler: str) -> str:
        keys = SAMPLER_KEYS[self.keys]
        return f"{sampler}(slice_len={self.slice_len}{', ' + keys if keys else ''})"


def replay_cases(system: System) -> SearchStrategy[ReplayCase]:
    from hypothesis import strategies as st

    caps = system.capabilities
    return st.builds(
        ReplayCase,
        script=scenario_scripts(),
        num_envs=st.integers(caps.min_envs, caps.max_envs),
        ops=st.just((Reset(),)),
        steps_per_batch=st.integers(2, 8),
        batches=st.integers(1, 4),
        storage_size=st.integers(4, 16),
        slice_len=st.integers(2, 4),
        num_slices=st.integers(1, 4),
        samples=st.integers(1, 4),
        keys=st.sampled_from(("traj_key", "end_key", "defaults")),
        layout=st.sampled_from(("env_major", "time_major")),
        seed=st.integers(0, 2**16),
    )


#: how the edge fills tell the sampler where trajectories end, and how they store the batches:
#: the end key both ways (T3 crosses in both), and the two settings that must not cross
_EDGE_FILLS: tuple[tuple[TrajectoryKeys, Layout], ...] = (
    ("end_key", "env_major"),
    ("end_key", "time_major"),
    ("traj_key", "time_major"),
    ("defaults", "env_major"),
)


def replay_edge_cases(system: System) -> list[ReplayCase]:
    """Fills tried first under every profile. Two sub-envs whose episodes end at different steps
    (a termination two steps in, a truncation three steps in), over two batches: a window of two
    or three steps reaches a termination, a time-out and a batch edge. Then fills whose slices
    can reach across a batch edge: two sub-envs whose episodes outlast a batch, stored sub-env by
    sub-env and interleaved in time, sampled with many slices for every way the sampler may be
    told where trajectories end. A random search needs the end key, an episode longer than a
    batch and a slice drawn over the edge at once (T3), and a small profile could draw none of
    them."""
    caps = system.capabilities
    if not caps.min_envs <= 2 <= caps.max_envs:
        return []
    action = DiscreteAction(NUM_ACTIONS)
    ends = EnvScript(
        obs=BoxObs(), action=action, episodes=(EpisodePlan(2, "terminated"), EpisodePlan(3, "truncated")), env_stride=1
    )
    script = EnvScript(obs=BoxObs(), action=action, episodes=(EpisodePlan(4, "truncated"),))
    return [
        ReplayCase(ends, 2, (Reset(),), steps_per_batch=5, storage_size=64, num_slices=6, samples=2, seed=1),
        *(
            ReplayCase(
                script,
                2,
                (Reset(),),
                steps_per_batch=6,
                storage_size=64,
                num_slices=8,
                keys=keys,
                layout=layout,
                seed=1,
            )
            for keys, layout in _EDGE_FILLS
        ),
    ]
