"""What a system was asked and what it answered, recorded literally, before any interpretation.

Each call keeps both the live objects (the very arguments passed, the very objects returned) and
deep snapshots taken at the moment of the call, so that the aliasing specs can tell whether a
later call mutated an earlier result, or whether the library mutated the caller's arguments.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, Literal

from rlconform.envs.plan import Op
from rlconform.envs.spaces import ActionValue


def snapshot(value: Any) -> Any:
    """A deep copy that is independent of the original's storage (NumPy arrays, torch tensors,
    dicts, tuples, lists); objects that cannot be copied are kept by reference."""
    try:
        return copy.deepcopy(value)
    except Exception:
        return value


@dataclass
class CallView:
    """A call's outputs in family-neutral form, one entry per sub-env.

    ``final_obs`` holds the observation a family's recipe uses as next observation for sub-envs
    whose episode ended on this call, when the family delivers it out of band (Gymnasium
    SAME_STEP ``final_obs``, SB3 ``terminal_observation``); ``None`` where it does not.
    """

    kind: Literal["reset", "step"]
    obs: list[Any]
    rewards: list[float] | None = None
    terminated: list[bool] | None = None
    truncated: list[bool] | None = None
    infos: list[dict[str, Any]] | None = None
    final_obs: list[Any] | None = None
    final_infos: list[dict[str, Any] | None] | None = None
    #: sub-envs this call concerned (a partial reset touches only the masked ones)
    touched: list[bool] | None = None
    #: observations / final observations / rewards in the env's own units, where the system
    #: transforms them and documents the inverse (SB3 ``get_original_obs``/``unnormalize_obs``,
    #: the published running statistics of Gymnasium's normalizers); None: as returned
    env_obs: list[Any] | None = None
    env_final_obs: list[Any] | None = None
    env_rewards: list[float] | None = None

    def obs_in_env_units(self) -> list[Any]:
        return self.env_obs if self.env_obs is not None else self.obs

    def final_obs_in_env_units(self) -> list[Any] | None:
        return self.env_final_obs if self.env_final_obs is not None else self.final_obs

    def rewards_in_env_units(self) -> list[float] | None:
        return self.env_rewards if self.env_rewards is not None else self.rewards


@dataclass
class CallRecord:
    """One library call made by the driver."""

    position: int
    op: Op
    #: the call was not in the plan: the family's documented recipe requires it here
    #: (a reset after an episode end for a single env, a masked reset in DISABLED mode)
    implied: bool
    source: str
    args_live: tuple[Any, ...] = ()
    args_snapshot: tuple[Any, ...] = ()
    result_live: Any = None
    result_snapshot: Any = None
    error_type: str | None = None
    error_message: str | None = None
    seconds: float = 0.0
    #: time.monotonic_ns() at the start and end of the call
    start_ns: int = 0
    end_ns: int = 0
    view: CallView | None = None
    #: family-specific observations made right after the call (normalizer statistics, ...)
    extra: dict[str, Any] = field(default_factory=dict)
    #: 1-based index of this call among step calls (0 for resets)
    agent_step: int = 0

    @property
    def failed(self) -> bool:
        return self.error_type is not None

    def describe(self) -> str:
        label = f"call {self.position}"
        if self.agent_step:
            label += f" (agent step {self.agent_step})"
        return f"{label}: {self.source}"


SlotKind = Literal["transition", "reset_step"]


@dataclass
class Slot:
    """One (sub-env, agent step) cell as a family's documented recipe interprets it.

    ``transition`` cells are what a correct training loop stores; ``reset_step`` cells are the
    steps a next-step autoreset spends on resetting, which a correct loop must skip.
    """

    env: int
    call: int
    agent_step: int
    kind: SlotKind
    obs: Any
    action: ActionValue | None
    reward: float | None
    next_obs: Any
    terminated: bool | None
    truncated: bool | None
    info: dict[str, Any] | None = None
