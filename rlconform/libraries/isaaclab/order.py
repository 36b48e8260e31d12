"""The order of a step's task hooks: was an ending sub-env's reward computed, its returned
observation read, and its terminal observation read, before or after its reset?

Why: ``DirectRLEnv.step`` (isaaclab 3.0.0, direct_rl_env.py:420-466) computes the dones, then the
rewards (``_get_rewards``) from the state the step reached, then resets the sub-envs that ended
(``_reset_idx``), then the observations (``_compute_observations`` -> ``_get_observations``) of
the state each sub-env is now in. A task (or a hand-written env following the same contract)
that reorders them returns, for every sub-env that ended, a reward computed from the next
episode's first state, or the observation from before the reset as the next episode's first.
Neither shows in the types or shapes, and a user's env has no decodable observations: what shows
it is which hook produced the values the step returned, and whether the sub-env's reset had
already happened then.

The tap replaces the hooks on the env instance (the class is untouched) while a step runs and
records, per call, a clone of what the hook returned and which sub-envs had been reset before
it. After the step, :meth:`StepOrder.findings` compares the returned reward and observation with
them, vectorized (one bool mask per check). A value that equals what a hook computed before the
reset is never blamed, whatever a later hook computed, so a reward or observation the reset does
not change passes; an env without the hooks is not judged (a note says so).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from rlconform.libraries.isaaclab.findings import Finding

RESET = "_reset_idx"
REWARD_HOOKS = ("_get_rewards",)
OBS_HOOKS = ("_get_observations", "_compute_observations")
_PREFIX = "_rlconform_order_untapped_"


@dataclass
class _Event:
    #: sub-envs reset (by ``_reset_idx``) in this step before the hook ran
    reset_before: torch.Tensor
    value: torch.Tensor


def _policy(value: Any) -> Any:
    return value.get("policy") if isinstance(value, dict) else value


class StepOrder:
    """Records the task hooks of each step; see the module docstring."""

    def __init__(self, env: Any, num_envs: int, device: torch.device) -> None:
        self.env = env
        self.num_envs = num_envs
        self.device = device
        self.recording = False
        self.reset_mask = torch.zeros(num_envs, dtype=torch.bool, device=device)
        self.rewards: list[_Event] = []
        self.observations: list[_Event] = []
        self.has_reset = self._tap(RESET, self._on_reset)
        self.has_rewards = any([self._tap(name, self._on_reward) for name in REWARD_HOOKS])
        self.has_observations = any([self._tap(name, self._on_obs) for name in OBS_HOOKS])
        #: per spec, how many ending sub-envs the hooks judged and how many they could not (no
        #: hook recorded a value, or the sub-env was not reset within its ending step): device
        #: tensors, read once after a run (:meth:`tally`) so that a step costs no host sync
        self.judged: dict[str, torch.Tensor] = {}
        self.blind: dict[str, torch.Tensor] = {}

    # ------------------------------------------------------------------------------- the taps
    def _tap(self, name: str, record: Callable[[tuple[Any, ...], Any], None]) -> bool:
        original = vars(self.env).get(_PREFIX + name) or getattr(self.env, name, None)
        if not callable(original):
            return False
        vars(self.env)[_PREFIX + name] = original

        def tapped(*args: Any, **kwargs: Any) -> Any:
            result = original(*args, **kwargs)
            if self.recording:
                record(args, result)
            return result

        setattr(self.env, name, tapped)
        return True

    def _on_reset(self, args: tuple[Any, ...], result: Any) -> None:
        if not args or args[0] is None:
            self.reset_mask.fill_(True)
            return
        ids = torch.as_tensor(args[0], device=self.device).long().flatten()
        self.reset_mask[ids] = True

    def _on_reward(self, args: tuple[Any, ...], result: Any) -> None:
        if isinstance(result, torch.Tensor) and tuple(result.shape) == (self.num_envs,):
            self.rewards.append(_Event(self.reset_mask.clone(), result.detach().clone()))

    def _on_obs(self, args: tuple[Any, ...], result: Any) -> None:
        rows = _policy(result)
        if isinstance(rows, torch.Tensor) and tuple(rows.shape[:1]) == (self.num_envs,):
            self.observations.append(_Event(self.reset_mask.clone(), rows.detach().clone()))

    def begin(self) -> None:
        """Called before the env's step runs."""
        self.reset_mask.zero_()
        self.rewards = []
        self.observations = []
        self.recording = True

    def end(self) -> None:
        self.recording = False

    def detach(self) -> None:
        for key in [k for k in vars(self.env) if k.startswith(_PREFIX)]:
            vars(self.env).pop(key)
            vars(self.env).pop(key.removeprefix(_PREFIX), None)

    # ------------------------------------------------------------------------------ the checks
    def findings(
        self, reward_spec: str, obs_spec: str, reward: torch.Tensor, obs: torch.Tensor, done: torch.Tensor
    ) -> list[Finding]:
        """The sub-envs that ended whose returned reward was computed only after their reset, and
        those whose returned observation was read only before it."""
        found: list[Finding] = []
        ended = done & self.reset_mask
        self._count(reward_spec, done, bool(self.rewards) and tuple(reward.shape) == (self.num_envs,))
        self._count(obs_spec, done, bool(self.observations) and obs.dtype != torch.bool)
        if self.rewards and tuple(reward.shape) == (self.num_envs,):
            after, before = self._matches(self.rewards, lambda v: reward == v)
            found.append(
                Finding(
                    reward_spec,
                    "ended, and the reward returned for its last step is the one _get_rewards computed after "
                    "_reset_idx reset it (from the next episode's first state); DirectRLEnv computes rewards "
                    "before the reset",
                    ended & after & ~before,
                )
            )
        if self.observations and obs.dtype != torch.bool:
            flat = obs.reshape(self.num_envs, -1)

            def same(v: torch.Tensor) -> torch.Tensor:
                if tuple(v.shape) != tuple(obs.shape):
                    return torch.zeros(self.num_envs, dtype=torch.bool, device=self.device)
                return (flat == v.reshape(self.num_envs, -1)).all(dim=1)

            after, before = self._matches(self.observations, same)
            found.append(
                Finding(
                    obs_spec,
                    "ended and was reset, but the observation returned for the next episode's start is the one "
                    "computed before _reset_idx reset it (the ended episode's last state): a stale pre-reset "
                    "observation; DirectRLEnv computes the observations after the reset",
                    ended & before & ~after,
                )
            )
        return found

    def final_obs_findings(self, spec: str, final: torch.Tensor, done: torch.Tensor) -> list[Finding]:
        """The sub-envs that ended whose terminal observation (``extras["final_obs"]``) is one the
        observation hook computed only after their reset: the next episode's first observation
        given as the ended episode's last. DirectRLEnv computes it before ``_reset_idx``; a value
        that equals one computed before the reset (a terminal state the reset does not change) is
        never blamed."""
        judged = bool(self.observations) and final.dtype != torch.bool and tuple(final.shape[:1]) == (self.num_envs,)
        self._count(spec, done, judged)
        if not judged:
            return []
        flat = final.reshape(self.num_envs, -1)

        def same(v: torch.Tensor) -> torch.Tensor:
            if tuple(v.shape) != tuple(final.shape):
                return torch.zeros(self.num_envs, dtype=torch.bool, device=self.device)
            return (flat == v.reshape(self.num_envs, -1)).all(dim=1)

        after, before = self._matches(self.observations, same)
        return [
            Finding(
                spec,
                "ended, and the terminal observation in extras['final_obs'] is the one computed after _reset_idx "
                "reset it (the next episode's first observation), not the state its last step reached; "
                "DirectRLEnv computes it before the reset",
                done & self.reset_mask & after & ~before,
            )
        ]

    def _count(self, spec: str, done: torch.Tensor, recorded: bool) -> None:
        """Tally the ending sub-envs whose order the hooks saw (a value recorded, and the sub-env
        reset within the step) and those they did not."""
        seen = done & self.reset_mask if recorded else torch.zeros_like(done)
        if spec not in self.judged:  # allocated once per run, added to in place on the device
            self.judged[spec] = torch.zeros((), dtype=torch.long, device=self.device)
            self.blind[spec] = torch.zeros((), dtype=torch.long, device=self.device)
        self.judged[spec] += seen.sum()
        self.blind[spec] += (done & ~seen).sum()

    def tally(self) -> dict[str, tuple[int, int]]:
        """Per spec: (ending sub-envs the hooks judged, ending sub-envs they could not), read with
        one host sync."""
        specs = sorted(self.judged)
        if not specs:
            return {}
        values = torch.stack([torch.stack((self.judged[s], self.blind[s])) for s in specs]).tolist()
        return {s: (int(j), int(b)) for s, (j, b) in zip(specs, values, strict=True)}

    def _matches(
        self, events: list[_Event], equal: Callable[[torch.Tensor], torch.Tensor]
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Per sub-env: the returned value equals one computed after its reset; one computed before."""
        after = torch.zeros(self.num_envs, dtype=torch.bool, device=self.device)
        before = torch.zeros_like(after)
        for event in events:
            eq = equal(event.value)
            after |= eq & event.reset_before
            before |= eq & ~event.reset_before
        return after, before
