"""A user's Isaac Lab env as an ``isaaclab.torch`` system: ``rlconform check MODULE:FN --api isaaclab``.

The factory is ``(num_envs: int, device: str) -> env``; the env follows ``DirectRLEnv``'s
step/reset contract (subclassing it is not required). It is driven with torch actions on its
device and checked for what holds for any such env (the contract monitor's specs), which needs
torch only; beside it, where Isaac Lab is installed, the bundled reference env runs on the same
device through the same DirectRLEnv code the user's env inherits, with the exact checks only
decodable observations allow (without Isaac Lab those specs say what to install:
``scripts/install-isaaclab``, since Isaac Lab's PyPI metadata asks for Python 3.12 and a CUDA torch
and no pip extra can install it beside a CPU torch).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from typing import Any

from rlconform.core.system import Capabilities, System, get_system
from rlconform.core.user import BadInput

API = "isaaclab"
SIGNATURE = "(num_envs: int, device: str) -> env following DirectRLEnv's step/reset contract"
DEFAULT_NUM_ENVS = 16
#: the bundled reference system checked beside a user's env, per device type
REFERENCE = {"cpu": "isaaclab.torch.DirectRLEnv", "cuda": "isaaclab.torch.DirectRLEnv.cuda"}


def resolve_device(device: str | None) -> str:
    """``auto`` (or None): ``cuda`` when torch sees a CUDA device, else ``cpu``."""
    import torch

    if device in (None, "auto"):
        return "cuda" if torch.cuda.is_available() else "cpu"
    try:
        return str(torch.device(device))
    except (RuntimeError, TypeError):
        raise BadInput(f"--device {device!r} is not a torch device") from None


def isaaclab_installed() -> bool:
    return importlib.util.find_spec("isaaclab") is not None


def torch_system(fn: Callable[..., Any], reference: str, *, num_envs: int | None, device: str | None) -> System:
    # the checks are torch only: a torch-batched env following DirectRLEnv's contract needs no Isaac Lab
    if importlib.util.find_spec("torch") is None:
        raise BadInput(
            "--api isaaclab needs torch installed (pip install torch): the env's outputs are checked in torch"
        )
    from rlconform.libraries.isaaclab.torch_run import Target
    from rlconform.libraries.isaaclab.torch_specs import NAME, TARGETS

    n = DEFAULT_NUM_ENVS if num_envs is None else int(num_envs)
    if n < 1:
        raise BadInput(f"--num-envs must be at least 1, got {n}")
    dev = resolve_device(device)
    system_id = f"user:{reference}"
    TARGETS[system_id] = Target(fn, n, dev)
    return System(
        id=system_id,
        family=NAME,
        title=f"{reference}({n}, {dev!r}) (your Isaac Lab env)",
        build=lambda env_fns: fn(n, dev),
        source=reference,
        kind="user",
        capabilities=Capabilities(partial_reset=False),
        description=f"a user's Isaac Lab env, {n} sub-envs on {dev}, checked vectorized in torch",
        # one simulation per process and a costly build: the small example budget
        costly=True,
    )


def reference_system(device: str) -> System:
    return get_system(REFERENCE["cuda" if device.startswith("cuda") else "cpu"])
