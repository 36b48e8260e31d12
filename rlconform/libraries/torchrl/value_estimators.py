"""``torchrl.ValueEstimator``: advantages and value targets a return estimator computes from
collector output, checked against ground truth.

The family is split by role: the case and its strategy (:mod:`.value_case`), reading a run back
(:mod:`.value_readings`), the family and its systems (:mod:`.value_family`) and the specs
(:mod:`.value_specs`); the torch side is :mod:`.value_torch`. This module only re-exports the names
code imported from it before the split, kept for one release; the catalog does not load it.
"""

from __future__ import annotations

from rlconform.libraries.torchrl.value_case import (
    FAMILY_NAME,
    EstimatorCase,
    estimator_cases,
    estimator_edge_cases,
)
from rlconform.libraries.torchrl.value_family import (
    FAMILY,
    GAMMA,
    LMBDA,
    MUST_FAIL,
    PLANTS,
    SYSTEMS,
    ValueEstimatorFamily,
)
from rlconform.libraries.torchrl.value_readings import Readings, readings, true_rows
from rlconform.libraries.torchrl.value_specs import (
    estimator_advantage,
    estimator_exact_targets,
    estimator_no_cross_env,
    estimator_no_cross_episode,
    estimator_value_target,
)

__all__ = [
    "FAMILY",
    "FAMILY_NAME",
    "GAMMA",
    "LMBDA",
    "MUST_FAIL",
    "PLANTS",
    "SYSTEMS",
    "EstimatorCase",
    "Readings",
    "ValueEstimatorFamily",
    "estimator_advantage",
    "estimator_cases",
    "estimator_edge_cases",
    "estimator_exact_targets",
    "estimator_no_cross_env",
    "estimator_no_cross_episode",
    "estimator_value_target",
    "readings",
    "true_rows",
]
