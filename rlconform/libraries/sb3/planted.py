"""Planted bugs of the SB3 VecEnv family: the reference model with one deliberate defect each."""

from __future__ import annotations

from typing import Any

from rlconform.core.system import Capabilities, SystemTable
from rlconform.libraries.gymnasium.planting import plant
from rlconform.libraries.sb3.model import ModelVecEnv
from rlconform.specs.families import SB3_VECENV

#: this module's systems, read by the catalog (rlconform.core.catalog)
SYSTEMS = SystemTable()


class NoTerminalObservation(ModelVecEnv):
    """SB3 VecEnv that forgets ``terminal_observation``."""

    def step(self, actions: Any) -> Any:
        obs, rewards, dones, infos = super().step(actions)
        for info in infos:
            info.pop("terminal_observation", None)
        return obs, rewards, dones, infos


class TimeoutFlagInverted(ModelVecEnv):
    """SB3 VecEnv whose ``TimeLimit.truncated`` reports termination instead of truncation."""

    def step(self, actions: Any) -> Any:
        obs, rewards, dones, infos = super().step(actions)
        for info, done in zip(infos, dones, strict=True):
            info["TimeLimit.truncated"] = bool(done) and not info["TimeLimit.truncated"]
        return obs, rewards, dones, infos


def _register() -> None:
    plant(
        "sb3_no_terminal_observation",
        lambda fns: NoTerminalObservation(list(fns)),
        ("terminal.final_obs",),
        NoTerminalObservation.__doc__ or "",
        family=SB3_VECENV,
        capabilities=Capabilities(partial_reset=False),
        table=SYSTEMS,
    )
    plant(
        "sb3_timeout_flag_inverted",
        lambda fns: TimeoutFlagInverted(list(fns)),
        ("flags.truncated",),
        TimeoutFlagInverted.__doc__ or "",
        family=SB3_VECENV,
        capabilities=Capabilities(partial_reset=False),
        table=SYSTEMS,
    )


_register()

#: the exact specs each planted bug fails (tests/specs/test_specificity.py)
_MODEL = "model.outputs_match"
_EXACT = "transitions.exact"
MUST_FAIL: dict[str, frozenset[str]] = {
    f"planted.{name}": frozenset(specs)
    for name, specs in {
        "sb3_no_terminal_observation": ("terminal.final_obs", _EXACT, _MODEL),
        # termination reported as truncation and back: both flags are wrong
        "sb3_timeout_flag_inverted": ("flags.truncated", "flags.terminated", _EXACT, _MODEL),
    }.items()
}
