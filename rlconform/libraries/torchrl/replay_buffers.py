"""TorchRL replay buffers with slice samplers: every sampled slice lies within one episode.

The family is split by role: the case and its strategy (:mod:`.replay_case`), building and
driving a buffer (:mod:`.replay_harness`), the family and its systems (:mod:`.replay_family`) and
the specs (:mod:`.replay_specs`). This module only re-exports the names code imported from it
before the split, kept for one release; the catalog does not load it.
"""

from __future__ import annotations

from rlconform.libraries.torchrl.replay_case import FAMILY_NAME, ReplayCase, replay_cases, replay_edge_cases
from rlconform.libraries.torchrl.replay_family import FAMILY, MUST_FAIL, SYSTEMS, ModelSliceBuffer, ReplayFamily
from rlconform.libraries.torchrl.replay_harness import Filled, ReplayHarness, Sample
from rlconform.libraries.torchrl.replay_specs import (
    bootstrap_targets,
    multistep_returns,
    rows_are_transitions,
    slices_within_episode,
)

__all__ = [
    "FAMILY",
    "FAMILY_NAME",
    "MUST_FAIL",
    "SYSTEMS",
    "Filled",
    "ModelSliceBuffer",
    "ReplayCase",
    "ReplayFamily",
    "ReplayHarness",
    "Sample",
    "bootstrap_targets",
    "multistep_returns",
    "replay_cases",
    "replay_edge_cases",
    "rows_are_transitions",
    "slices_within_episode",
]
