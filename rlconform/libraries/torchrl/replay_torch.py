"""The torch side of the ``torchrl.replay`` family's row checks: an n-step transform of
rlconform's own (correct, and with planted defects) and a planted replay buffer, all written as a
user would write them around TorchRL's classes.

Imported by :mod:`rlconform.libraries.torchrl.replay_family` only when a system is built (torch
at module level, as :mod:`rlconform.libraries.torchrl.value_torch`).
"""

from __future__ import annotations

from typing import Any

import torch
from tensordict import TensorDictBase
from torchrl.data import TensorDictReplayBuffer
from torchrl.envs.transforms import Transform

#: the flags a window's last step decides
FLAGS = ("done", "terminated", "truncated")


class PlainMultiStep(Transform):
    """An n-step transform for replay buffers, as a loop over each sub-env's frames.

    Like TorchRL's ``MultiStepTransform`` it is an inverse transform (run by ``rb.extend``) on
    data whose last dimension is time, and holds the last ``n_steps`` frames of each extend back
    until the next one. The row of step t covers the window t .. t+m-1, m = min(n_steps, the
    steps to the episode's end): ``("next", "reward")`` is sum_k gamma^k r_{t+k}, the next
    observation that of step t+m-1, ``steps_to_next_obs`` = m, and the done flags those of the
    window's last step (so a window that reaches a termination says so).

    ``defect`` plants a bug: ``"crosses_episode_ends"`` (the window always runs n_steps on, past
    an episode end), ``"first_step_flags"`` (the flags of step t, not of the window's end),
    ``"gamma_not_powered"`` (``steps_to_next_obs`` written as 1, so a consumer discounts the
    bootstrap by gamma where gamma^m is due).
    """

    def __init__(self, n_steps: int, gamma: float, defect: str = "") -> None:
        super().__init__()
        self.n_steps, self.gamma, self.defect = n_steps, gamma, defect
        self._held: TensorDictBase | None = None

    def _inv_call(self, tensordict: TensorDictBase) -> TensorDictBase | None:
        data = tensordict if self._held is None else torch.cat([self._held, tensordict], -1)
        self._held = data[..., -self.n_steps :].clone()
        length = data.shape[-1] - self.n_steps
        if length <= 0:
            return None
        flat = data.reshape(-1, data.shape[-1])
        rows = [self._rows(flat[i], length) for i in range(flat.shape[0])]
        return torch.stack(rows).reshape(*data.shape[:-1], length)

    def _rows(self, frames: TensorDictBase, length: int) -> TensorDictBase:
        out = frames[:length].clone()
        done = frames.get(("next", "done")).reshape(-1).tolist()
        rewards = frames.get(("next", "reward")).reshape(-1).tolist()
        reward = out.get(("next", "reward"))
        out.set(("next", "original_reward"), reward.clone())
        summed, next_obs = reward.clone(), out.get(("next", "observation")).clone()
        flags = {f: out.get(("next", f)).clone() for f in FLAGS if ("next", f) in out.keys(True)}
        steps = []
        for t in range(length):
            m, total = 0, 0.0
            while m < self.n_steps:
                total += self.gamma**m * rewards[t + m]
                m += 1
                if done[t + m - 1] and self.defect != "crosses_episode_ends":
                    break
            end = t + m - 1
            summed[t] = total
            next_obs[t] = frames.get(("next", "observation"))[end]
            if self.defect != "first_step_flags":
                for flag, values in flags.items():
                    values[t] = frames.get(("next", flag))[end]
            steps.append(1 if self.defect == "gamma_not_powered" else m)
        out.set(("next", "reward"), summed)
        out.set(("next", "observation"), next_obs)
        for flag, values in flags.items():
            out.set(("next", flag), values)
        out.set("steps_to_next_obs", torch.tensor(steps, dtype=torch.int64))
        return out

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        return tensordict


class MisalignedNextObs(TensorDictReplayBuffer):
    """Planted: a buffer that stores each sub-env's frames with the next observations of the
    sub-env before it (``roll`` along the sub-env dimension, a stacking bug)."""

    def extend(self, data: Any, *args: Any, **kwargs: Any) -> Any:
        if data.ndim == 2 and data.shape[0] > 1:
            data = data.clone()
            data.set(("next", "observation"), data.get(("next", "observation")).roll(1, 0))
        return super().extend(data, *args, **kwargs)
