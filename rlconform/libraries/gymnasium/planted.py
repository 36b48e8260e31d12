"""Planted bugs: reference models with one deliberate defect each.

Every spec must catch at least one planted bug of its kind (``plants`` names the specs a bug must
be caught by); the suite's own tests check that it does, and the benchmark measures how fast.
Each bug is the smallest change to a correct model that reproduces a mistake real libraries make.

The planted bugs are split by what is planted: :mod:`.planted_episodes` (what is returned across
steps and episodes) and :mod:`.planted_calls` (how calls are handled), each with its ``SYSTEMS`` and
``MUST_FAIL``; :func:`.planting.plant` registers one. This module only re-exports the names code
imported from it before the split, kept for one release; the catalog does not load it.
"""

from __future__ import annotations

from rlconform.libraries.gymnasium.planted_calls import (
    ExtraInfoKey,
    Float32Rewards,
    Float64Observations,
    LeaksWorker,
    ListActions,
    NoInfoMasks,
    PopsOptions,
    RaisesOnValidAction,
    ReusesBuffer,
    StepsBeforeValidating,
    TruncatesBatch,
)
from rlconform.libraries.gymnasium.planted_episodes import (
    CountsResetSteps,
    DoubleStep,
    DropsTruncation,
    ForgetsTruncatedReset,
    MislabelledMode,
    NormalizesResetSteps,
    ResetAllOnEnd,
    ReversedInfos,
    RewardingAutoreset,
    RewardingResetStep,
    SameSeedEverywhere,
    SeedsOnlyOnce,
    ShiftedReward,
    StaleFirstObs,
    TruncationHidesTermination,
    WrongFinalObs,
)
from rlconform.libraries.gymnasium.planting import plant

__all__ = [
    "CountsResetSteps",
    "DoubleStep",
    "DropsTruncation",
    "ExtraInfoKey",
    "Float32Rewards",
    "Float64Observations",
    "ForgetsTruncatedReset",
    "LeaksWorker",
    "ListActions",
    "MislabelledMode",
    "NoInfoMasks",
    "NormalizesResetSteps",
    "PopsOptions",
    "RaisesOnValidAction",
    "ResetAllOnEnd",
    "ReusesBuffer",
    "ReversedInfos",
    "RewardingAutoreset",
    "RewardingResetStep",
    "SameSeedEverywhere",
    "SeedsOnlyOnce",
    "ShiftedReward",
    "StaleFirstObs",
    "StepsBeforeValidating",
    "TruncatesBatch",
    "TruncationHidesTermination",
    "WrongFinalObs",
    "plant",
]
