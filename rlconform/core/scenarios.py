"""Case strategies of families whose cases are not plain call sequences.

Most families are driven by a :class:`~rlconform.core.plan.Case` of reset/step calls drawn by
:func:`rlconform.envs.strategies.cases`. A family that drives a larger object (a TorchRL
collector, a replay buffer) draws its own case type, a subclass of ``Case`` with the extra
parameters, so that the runner, the run cache and the reports handle it unchanged; it registers
the strategy for that type here, and :func:`rlconform.core.search.strategy_for` asks here first.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hypothesis.strategies import SearchStrategy

    from rlconform.core.system import System

CaseStrategy = Callable[["System"], "SearchStrategy[Any]"]

_STRATEGIES: dict[str, CaseStrategy] = {}


def register_case_strategy(family: str, strategy: CaseStrategy) -> None:
    """Draw the cases of ``family``'s systems with ``strategy`` instead of call sequences."""
    _STRATEGIES[family] = strategy


def case_strategy(system: System) -> SearchStrategy[Any] | None:
    """The family's own case strategy, or None when it is driven by call sequences."""
    strategy = _STRATEGIES.get(system.family)
    return None if strategy is None else strategy(system)
