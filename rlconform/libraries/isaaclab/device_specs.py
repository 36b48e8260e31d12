"""Isaac Lab (family ``isaaclab``): actions and outputs stay torch tensors on the env's device.

Why: Isaac Lab envs run batched on a GPU. ``DirectRLEnv.step`` moves the action with
``action.to(self.device)`` and casts nothing, so an action that went through NumPy reaches the task
as a host copy (or, on CUDA, costs a device round trip each step) and one of another dtype reaches
the task unconverted. Training code reads the outputs in place on the device and documents their
dtypes (reward float32, flags bool); a float64 reward or an output on the host is an implicit
conversion or transfer in every consumer.

What is read: the action batches the reference env logged in ``_pre_physics_step`` (recorded per
call by the adapter, :mod:`rlconform.libraries.isaaclab.direct_family`, with the caller's tensor), and each
call's returned tensors (their snapshot: dtype, device and shape do not change in place).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from rlconform.core.spec import Checker, Outcome, spec
from rlconform.libraries.isaaclab.direct_family import ACTIONS_KEY
from rlconform.libraries.isaaclab.monitor import same_device, tensor_problem, torch_dtype
from rlconform.libraries.isaaclab.torch_specs import outcome
from rlconform.specs.families import ISAACLAB_DIRECT, ISAACLAB_TORCH

#: the vectorized family checks the same statements with its contract monitor
#: (rlconform.libraries.isaaclab.monitor); its runs are TorchRuns
TORCH_FAMILY = ISAACLAB_TORCH
FAMILIES = frozenset({ISAACLAB_DIRECT, TORCH_FAMILY})

if TYPE_CHECKING:
    from rlconform.envs.driver import Run

ACTIONS_SPEC = "isaaclab.actions_on_device"
OUTPUTS_SPEC = "isaaclab.outputs_on_device"
#: the dtypes DirectRLEnv documents for its step outputs
REWARD_DTYPE = torch.float32
FLAG_DTYPE = torch.bool


@spec(
    ACTIONS_SPEC,
    impact="api-contract",
    statement=(
        "Every action reaches the env's _pre_physics_step as a torch.Tensor on env.device with the action space's "
        "dtype and shape (num_envs, action_dim), and, when the caller's tensor already was one, as that very "
        "storage: no NumPy or host round trip (and on CUDA no host synchronisation before the task gets it; "
        "family isaaclab (the torch tier) also reads action_manager.process_action of a manager-based env)."
    ),
    rationale=(
        "DirectRLEnv.step only does action.to(self.device): it neither casts nor validates. An action taken "
        "through NumPy by a wrapper costs a host copy (a GPU sync on CUDA) every step, and a cast on the way "
        "reaches the task unconverted."
    ),
    families=FAMILIES,
    needs=("usable",),
)
def actions_on_device(run: Run) -> Outcome:
    if getattr(run, "family", None) == TORCH_FAMILY:
        return _torch_outcome(ACTIONS_SPEC, run)

    ck = Checker(ACTIONS_SPEC)
    device = str(run.semantics.get("device"))
    env_device = torch.device(device)
    space = run.semantics.get("single_action_space")
    dtype = f"torch.{space.dtype}" if space is not None else None
    shape = (run.case.num_envs, *space.shape) if space is not None else None
    for call in run.calls:
        if call.failed or call.view is None or call.view.kind != "step":
            continue
        entry: dict[str, Any] = call.extra.get(ACTIONS_KEY) or {}
        received = entry.get("received", [])
        where = {"agent_step": call.agent_step}
        if not ck.expect(len(received) == 1, f"the env logged {len(received)} action batches for one step", **where):
            continue
        got = received[0]
        problems = []
        if got.type_name != "torch.Tensor":
            problems.append(f"a {got.type_name}, expected a torch.Tensor")
        else:
            if not same_device(got.device, env_device):
                problems.append(f"on {got.device}, the env's device is {device}")
            if dtype is not None and got.dtype != dtype:
                problems.append(f"of dtype {got.dtype}, the action space declares {dtype}")
            if shape is not None and got.shape != shape:
                problems.append(f"of shape {got.shape}, expected {shape}")
            caller = entry.get("caller")
            if (
                not problems
                and caller is not None
                and caller["dtype"] == got.dtype
                and same_device(caller["device"], env_device)
                and caller["data_ptr"] != got.data_ptr
            ):
                problems.append(
                    "a copy: the caller's tensor was already on the env's device with its dtype, so "
                    "DirectRLEnv.step's action.to(device) would have handed on that storage (a host round trip?)"
                )
        ck.expect(not problems, lambda: f"_pre_physics_step received {got.describe()}: " + "; ".join(problems), **where)
    return ck.done()


@spec(
    OUTPUTS_SPEC,
    impact="api-contract",
    statement=(
        "reset and step return torch tensors on env.device: obs['policy'] (and extras['final_obs']['policy']) of "
        "the observation space's dtype and shape (num_envs, *obs_shape), reward float32 and terminated/time_outs "
        "bool of shape (num_envs,)."
    ),
    rationale=(
        "Isaac Lab's learning libraries consume the outputs on the device as they are: a float64 reward or an "
        "output on the host is converted or transferred implicitly in every consumer, every step."
    ),
    families=FAMILIES,
    needs=("usable",),
)
def outputs_on_device(run: Run) -> Outcome:
    if getattr(run, "family", None) == TORCH_FAMILY:
        return _torch_outcome(OUTPUTS_SPEC, run)
    ck = Checker(OUTPUTS_SPEC)
    device = torch.device(str(run.semantics.get("device")))
    space = run.semantics.get("single_observation_space")
    n = run.case.num_envs
    obs_dtype = torch_dtype(space)
    obs_shape = (n, *space.shape) if space is not None else (n,)
    for call in run.calls:
        if call.failed or call.view is None:
            continue
        result = call.result_snapshot
        outputs: list[tuple[str, Any, torch.dtype | None, tuple[int, ...]]] = [
            ("obs['policy']", result[0]["policy"], obs_dtype, obs_shape)
        ]
        if call.view.kind == "step":
            outputs += [
                ("reward", result[1], REWARD_DTYPE, (n,)),
                ("terminated", result[2], FLAG_DTYPE, (n,)),
                ("time_outs", result[3], FLAG_DTYPE, (n,)),
            ]
            final = result[4].get("final_obs")
            if isinstance(final, dict) and "policy" in final:
                outputs.append(("extras['final_obs']['policy']", final["policy"], obs_dtype, obs_shape))
        for name, value, dtype, shape in outputs:
            problem = tensor_problem(name, value, device, dtype, shape)
            ck.expect(
                problem is None, f"{call.source}: {problem}", agent_step=call.agent_step or None, call=call.position
            )
    return ck.done()


def _torch_outcome(spec_id: str, run: Any) -> Outcome:
    return outcome(spec_id, run)
