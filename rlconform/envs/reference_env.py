"""The NumPy reference environment (Gymnasium API) that every Gymnasium and SB3 system is driven with.

Every observation decodes to (sub-env index, episode, step, salt); the reward depends on the step
and on the action; episodes end by termination, truncation or both as the script says; a seeded
reset makes the following episodes a pure function of the seed. Every call is logged exactly as
received (the action object's type, dtype, shape and value; every reset's seed and options; any
step on an episode that had already ended).
"""

from __future__ import annotations

import time
from typing import Any

import gymnasium
import numpy as np

from rlconform.envs.calllog import (
    ActionReceipt,
    LogSink,
    MemorySink,
    RejectedRecord,
    ResetRecord,
    StepRecord,
    describe_action,
)
from rlconform.envs.script import EnvScript, EpisodePlan, reward_for
from rlconform.envs.spaces import observation
from rlconform.envs.stamp import MAX_STEPS, STAMP_INFO_KEY, Stamp

REGISTERED_ID = "rlconform/Reference-v0"
END_INFO_KEY = "rlconform_end"


def stamp_info(stamp: Stamp) -> np.ndarray:
    """The info entry every call carries, so infos can be matched to their sub-env and step."""
    return np.asarray([stamp.env, stamp.episode, stamp.step, stamp.salt], dtype=np.int64)


class ReferenceEnv(gymnasium.Env[Any, Any]):
    """A scripted env whose outputs say where they came from; see the module docstring."""

    metadata: dict[str, Any] = {"render_modes": []}

    def __init__(self, script: EnvScript, index: int = 0, sink: LogSink | None = None) -> None:
        self.script = script
        self.index = index
        self.sink: LogSink = sink if sink is not None else MemorySink()
        self.observation_space = script.obs.build()
        self.action_space = script.action.build()
        self._seq = 0
        self._episode = 0
        self._epoch_seed: int | None = None
        self._episode_in_epoch = -1
        self._step = 0
        self._ended = False
        self._plan: EpisodePlan | None = None
        self._salt = 0

    # ---------------------------------------------------------------------------- gymnasium API
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        super().reset(seed=seed)
        if seed is not None:
            self._epoch_seed = int(seed)
            self._episode_in_epoch = 0
        else:
            self._episode_in_epoch += 1
        self._episode += 1
        self._step = 0
        self._ended = False
        self._plan = self.script.plan_for(self.index, self._epoch_seed, self._episode_in_epoch)
        self._salt = self.script.salt_for(self._epoch_seed, self._episode_in_epoch)
        stamp = self._stamp()
        seq = self._next_seq()
        self._log(
            ResetRecord(
                seq=seq,
                seed=None if seed is None else int(seed),
                options=None if options is None else repr(options),
                episode=self._episode,
                salt=self._salt,
                plan=self._plan,
                stamp=stamp,
                t_ns=time.monotonic_ns(),
            )
        )
        return observation(self.script.obs, stamp, seq), {STAMP_INFO_KEY: stamp_info(stamp)}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        receipt = self._receipt(action)
        if self._plan is None:
            self._log(RejectedRecord(self._next_seq(), "step", "step before the first reset", time.monotonic_ns()))
            raise gymnasium.error.ResetNeeded("rlconform ReferenceEnv: step() called before reset()")
        if self._step + 1 >= MAX_STEPS:
            raise RuntimeError(f"rlconform ReferenceEnv: episode longer than {MAX_STEPS - 1} steps")
        after_end = self._ended
        self._step += 1
        terminated, truncated = self._plan.flags_at(self._step)
        self._ended = self._ended or terminated or truncated
        reward = reward_for(self._step, receipt.code, self._salt)
        stamp = self._stamp()
        seq = self._next_seq()
        self._log(
            StepRecord(
                seq=seq,
                action=receipt,
                episode=self._episode,
                step_after=self._step,
                reward=reward,
                terminated=terminated,
                truncated=truncated,
                after_end=after_end,
                stamp=stamp,
                t_ns=time.monotonic_ns(),
            )
        )
        info: dict[str, Any] = {STAMP_INFO_KEY: stamp_info(stamp)}
        if terminated or truncated:
            info[END_INFO_KEY] = "both" if terminated and truncated else ("terminated" if terminated else "truncated")
        return observation(self.script.obs, stamp, seq), reward, terminated, truncated, info

    def close(self) -> None:
        close = getattr(self.sink, "close", None)
        if callable(close):
            close()
        super().close()

    # ------------------------------------------------------------------------------- internals
    def _stamp(self) -> Stamp:
        return Stamp(self.index, self._episode, self._step, self._salt)

    def _next_seq(self) -> int:
        self._seq += 1
        return self._seq

    def _log(self, record: ResetRecord | StepRecord | RejectedRecord) -> None:
        self.sink.write(record)

    def _receipt(self, action: Any) -> ActionReceipt:
        type_name, dtype, shape, device = describe_action(action)
        spec = self.script.action
        try:
            value = spec.canonical(_to_numpy(action))
            code = spec.code(_to_numpy(action))
        except Exception:  # an action of the wrong structure: log what can be logged
            value, code = None, 0
        try:
            in_space = bool(self.action_space.contains(action))
        except Exception:
            in_space = False
        return ActionReceipt(type_name, dtype, shape, value, code, device, in_space)


def _to_numpy(action: Any) -> Any:
    """NumPy view of an action that may be a torch tensor, without importing torch."""
    if hasattr(action, "detach") and hasattr(action, "cpu"):
        return action.detach().cpu().numpy()
    return action


def make_reference_env(script: EnvScript, index: int, sink: LogSink | None = None) -> gymnasium.Env[Any, Any]:
    """The reference env, wrapped in Gymnasium's ``TimeLimit`` when the script sets one."""
    env: gymnasium.Env[Any, Any] = ReferenceEnv(script, index=index, sink=sink)
    if script.max_episode_steps is not None:
        from gymnasium.wrappers import TimeLimit

        env = TimeLimit(env, max_episode_steps=script.max_episode_steps)
    return env


def register_reference_env() -> str:
    """Register the reference env with Gymnasium (idempotent) and return its id."""
    if REGISTERED_ID not in gymnasium.registry:
        gymnasium.register(REGISTERED_ID, entry_point="rlconform.envs.reference_env:ReferenceEnv")
    return REGISTERED_ID
