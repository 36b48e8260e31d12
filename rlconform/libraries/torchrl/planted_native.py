"""The planted bug of ``torchrl.actions_reach_env_natively`` (its systems are in
:mod:`rlconform.libraries.torchrl.native`): a Gymnasium wrapper, so it lives apart from the
system table, which must load without Gymnasium."""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np


class NumpyRoundTrip(gymnasium.Wrapper[Any, Any, Any, Any]):
    """Planted bug: takes each action through NumPy and back before the torch-native env gets it,
    casting on the way (``np.asarray(action, dtype=np.float64)``, as a normalising helper does) and
    landing on the CPU whatever the env's device."""

    def step(self, action: Any) -> Any:
        import torch

        array = np.asarray(action.detach().cpu().numpy(), dtype=np.float64)
        return self.env.step(torch.from_numpy(array))
