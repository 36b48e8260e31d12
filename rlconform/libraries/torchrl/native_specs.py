"""Torch-native envs: the actions a torch-native env receives through a TorchRL wrapper.

Why: TorchRL's ``GymLikeEnv`` hands an env's ``step`` either a NumPy array (the default,
``convert_actions_to_numpy=True``) or the action tensor itself. A torch-native env (one that works
on a device, e.g. Isaac Lab) that receives NumPy pays a device-to-host copy and a conversion per
step and gets an object its own code does not expect; one that receives TorchRL's internal
encoding (a one-hot vector for ``Discrete``) indexes with the wrong thing.

Which envs are torch-native: those whose metadata says so (``TORCH_NATIVE`` and ``TORCH_DEVICE``
in :mod:`rlconform.envs.torch_reference_env`). A run carries the reference envs' call logs
but not the env objects, so a system that builds torch-native envs hands their declaration on
with ``System.torch_native`` (its device); the spec applies to those systems only.

What is checked, per action the env received (its call-log receipt): the type is ``torch.Tensor``,
the device is the one the env declares, and dtype and shape are the action space's. A NumPy round
trip that preserves all four (``torch.from_numpy(t.cpu().numpy())`` on a CPU env) leaves no trace
in the receipt: telling it apart would need the receipt to record storage identity.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rlconform.core.spec import Checker, Outcome, spec
from rlconform.specs.dtypes import expect_actions_received
from rlconform.specs.families import TORCHRL_ENVBASE

if TYPE_CHECKING:
    from rlconform.core.system import System
    from rlconform.envs.driver import Run

SPEC_ID = "torchrl.actions_reach_env_natively"


#: system id -> the device its torch-native envs declare (``metadata["torch_device"]``)
def declared_device(system: System) -> str | None:
    return system.torch_native


def _applies(system: System) -> str | None:
    if declared_device(system) is None:
        return "the system's envs do not declare themselves torch-native (metadata['torch_native'])"
    return None


def torch_dtype_name(space: Any) -> str:
    """The torch dtype matching a Gymnasium space's NumPy dtype, as ``str(torch.dtype)`` writes it."""
    return f"torch.{space.dtype}"


def action_problem(space: Any, receipt: Any, device: str) -> str | None:
    """Why the action the env received is not a tensor of the space on ``device`` (None: it is)."""
    got = receipt.describe()
    if receipt.type_name != "torch.Tensor":
        return f"the env received {got}; expected a torch.Tensor on {device} (the env declares itself torch-native)"
    if receipt.device != device:
        return f"the env received {got}; expected device {device}, the env's"
    if receipt.dtype != torch_dtype_name(space):
        return f"the env received {got}; the action space {space} declares {torch_dtype_name(space)}"
    if receipt.shape != tuple(space.shape):
        return f"the env received {got}; the action space {space} declares shape {tuple(space.shape)}"
    return None


@spec(
    SPEC_ID,
    impact="api-contract",
    statement=(
        "A torch-native env receives every action as a torch.Tensor on its own device, with its action space's "
        "dtype and shape: no NumPy round trip, no wrapper-internal encoding."
    ),
    rationale=(
        "A torch-native env (Isaac Lab and the like) runs on a device; an action that reaches it as NumPy has been "
        "copied to the host and converted each step, and one that arrives one-hot encoded or with another dtype "
        "is not an element of its action space."
    ),
    families=frozenset({TORCHRL_ENVBASE}),
    applies=_applies,
    needs=("usable",),
)
def actions_reach_env_natively(run: Run) -> Outcome:
    ck = Checker(SPEC_ID)
    device = declared_device(run.system)
    if device is None:
        return ck.not_applicable("the system's envs do not declare themselves torch-native")
    space = run.case.script.action.build()
    expect_actions_received(ck, run, lambda action: action_problem(space, action, device))
    return ck.done()
