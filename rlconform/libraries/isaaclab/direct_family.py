"""Family ``isaaclab``: Isaac Lab's DirectRLEnv contract, torch-native and vectorized.

The contract (isaaclab 3.0.0, ``isaaclab/envs/direct_rl_env.py``):

* ``step(action)``: ``action`` is a ``torch.Tensor`` of shape ``(num_envs, action_dim)`` (the env
  moves it with ``action.to(self.device)``, no dtype cast); returns ``(obs, reward, terminated,
  time_outs, extras)`` with ``obs = {"policy": tensor (num_envs, *obs_shape)}``, reward float32
  and both flags bool of shape ``(num_envs,)``, all on ``env.device``.
* same-step autoreset: a sub-env that ends is reset inside the step; the returned observation
  row is the next episode's first. The terminal observation is in ``extras["final_obs"]["policy"]``
  only with ``cfg.compute_final_obs`` (default False), written for every row on each step in
  which some env ended and left in ``extras`` (stale) afterwards.
* ``reset(seed=None)`` resets every sub-env and returns ``(obs, extras)``; there is no partial
  reset in the API.
* the returned tensors are the env's own buffers, reused in place: ``terminated``/``time_outs``
  are the same tensor objects every step and ``extras`` is the env's persistent dict.

The recipe (per sub-env): a transition from the previous observation row with the step's
reward and flags; the next observation of an ending step is that row of
``extras["final_obs"]["policy"]`` when that step wrote it, else the returned row (what a loop
that ignores the missing key stores: the next episode's first observation).

Recording: the runner deep-copies every result right after the call (``result_snapshot``), which
is what the views read, so in-place reuse cannot rewrite a recorded output. Reuse is recorded
separately: :meth:`IsaacLabFamily.observe` stores each output's storage pointer
(``record.extra["isaaclab_storage"]``) and the actions the env logged for that call.
"""

from __future__ import annotations

import functools
import importlib.util
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from rlconform.core.system import Capabilities, EnvFn, System, SystemTable
from rlconform.envs.driver import Contract, ReferenceEnvFamily
from rlconform.envs.plan import BadStep, Op, Reset, Step
from rlconform.envs.same_step import same_step_slots
from rlconform.envs.trace import CallRecord, CallView, Slot
from rlconform.specs.families import ISAACLAB_DIRECT

#: this module's systems, read by the catalog (rlconform.core.catalog)
SYSTEMS = SystemTable()

NAME = ISAACLAB_DIRECT
DEVICE = "cpu"
#: record.extra keys written by :meth:`IsaacLabFamily.observe`
ACTIONS_KEY = "isaaclab_actions"
STORAGE_KEY = "isaaclab_storage"
OUTPUT_NAMES = ("obs", "reward", "terminated", "time_outs")


def _ptr(value: Any) -> int | None:
    data_ptr = getattr(value, "data_ptr", None)
    return int(data_ptr()) if callable(data_ptr) else None


def _rows(value: Any, num_envs: int) -> list[Any]:
    """One NumPy copy per sub-env from a batched tensor (a copy: never a view of a buffer)."""
    array = np.array(value.detach().cpu().numpy(), copy=True)
    if array.shape[:1] != (num_envs,):
        raise ValueError(f"a batch of shape {array.shape} for {num_envs} sub-envs")
    return [array[i] for i in range(num_envs)]


def _policy(obs: Any) -> Any:
    if not isinstance(obs, dict) or "policy" not in obs:
        raise ValueError(f"observations are a {type(obs).__name__}, not a dict with a 'policy' entry")
    return obs["policy"]


def _view_reset(num_envs: int, result: Any) -> CallView:
    obs, _extras = result
    return CallView(kind="reset", obs=_rows(_policy(obs), num_envs), touched=[True] * num_envs)


def _view_step(num_envs: int, result: Any) -> CallView:
    obs, reward, terminated, time_outs, extras = result
    final = extras.get("final_obs") if isinstance(extras, dict) else None
    return CallView(
        kind="step",
        obs=_rows(_policy(obs), num_envs),
        rewards=[float(r) for r in _rows(reward, num_envs)],
        terminated=[bool(f) for f in _rows(terminated, num_envs)],
        truncated=[bool(f) for f in _rows(time_outs, num_envs)],
        final_obs=None if final is None else _rows(_policy(final), num_envs),
        touched=[True] * num_envs,
    )


class IsaacLabFamily(ReferenceEnvFamily):
    name = NAME
    libraries: ClassVar[tuple[str, ...]] = ("gymnasium", "torch", "isaaclab")
    uses_accelerator = True
    contract = Contract(
        reward_dtype="float32",
        reward_precision="float32",
        step_arity=5,
        separate_flags=True,
        vectorized=True,
        # DirectRLEnv returns torch tensors on its device, not NumPy arrays
        array_namespace="torch",
        dtypes_checked_by=(
            "the env returns torch tensors on its device (reward float32, flags bool): "
            "isaaclab.outputs_on_device checks them"
        ),
    )

    def describe_semantics(self, obj: Any) -> dict[str, Any]:
        single_obs = getattr(obj, "single_observation_space", None)
        mode = (getattr(obj, "metadata", None) or {}).get("autoreset_mode")
        cfg = getattr(obj, "cfg", None)
        return {
            "num_envs": getattr(obj, "num_envs", None),
            "device": str(getattr(obj, "device", None)),
            "autoreset_mode": str(getattr(mode, "value", mode)),
            "compute_final_obs": getattr(cfg, "compute_final_obs", None),
            "single_observation_space": single_obs["policy"] if single_obs is not None else None,
            "single_action_space": getattr(obj, "single_action_space", None),
        }

    def object_problems(self, semantics: dict[str, Any], num_envs: int) -> list[str]:
        problems = []
        if semantics.get("num_envs") != num_envs:
            problems.append(f"num_envs is {semantics.get('num_envs')!r} for {num_envs} sub-envs")
        if semantics.get("autoreset_mode") != "SameStep":
            problems.append(f"metadata['autoreset_mode'] is {semantics.get('autoreset_mode')}; documented: SameStep")
        for name in ("single_observation_space", "single_action_space"):
            if semantics.get(name) is None:
                problems.append(f"no {name} (policy group) attribute")
        return problems

    def api_problems(self, call: CallRecord, num_envs: int) -> list[str]:
        # the snapshot: DirectRLEnv.close() clears the obs dict it returned last (it is env.obs_buf)
        result = call.result_snapshot
        expected = 2 if isinstance(call.op, Reset) else 5
        if not isinstance(result, tuple) or len(result) != expected:
            return [f"returned a {type(result).__name__}; documented: a {expected}-tuple"]
        problems = []
        if not isinstance(result[0], dict) or "policy" not in result[0]:
            problems.append("observations are not a dict with a 'policy' entry")
        if not isinstance(result[-1], dict):
            problems.append(f"extras is a {type(result[-1]).__name__}; documented: a dict")
        return problems

    # ---------------------------------------------------------------------------------- driving
    def execute(self, driver: Any, obj: Any, op: Op) -> None:
        if isinstance(op, Reset):
            if op.mask is not None:
                raise ValueError("DirectRLEnv.reset has no partial reset; the system's capabilities exclude it")
            driver.call(
                op,
                f"env.reset(seed={op.seed!r})",
                lambda seed: obj.reset(seed=seed),
                (op.seed,),
                view=functools.partial(_view_reset, driver.num_envs),
                obj=obj,
            )
            return
        assert isinstance(op, (Step, BadStep))
        self.call_step(driver, obj, op)

    def view_step(self, num_envs: int, result: Any) -> CallView:
        """The step's outputs per sub-env (a wrapper with its own step signature overrides it)."""
        return _view_step(num_envs, result)

    def call_step(self, driver: Any, obj: Any, op: Step | BadStep) -> None:
        """``obj.step`` with the batch as a torch tensor on the env's device."""
        import torch

        batch = driver.batch(op.actions)
        actions = torch.as_tensor(batch, device=obj.device)
        driver.call(
            op,
            f"env.step(torch.tensor({batch.tolist()!r}, dtype=torch.{batch.dtype}, device={str(obj.device)!r}))",
            obj.step,
            (actions,),
            view=functools.partial(self.view_step, driver.num_envs),
            obj=obj,
        )

    def begin(self, driver: Any, obj: Any) -> None:
        # observe() has no driver: the env's action log position travels on the env object
        obj.__dict__.setdefault("_rlconform_log_seen", 0)

    def observe(self, obj: Any, record: CallRecord) -> None:
        """Right after a call: the actions the env logged during it (with the caller's storage
        pointer) and the storage pointers of what it returned (buffer reuse)."""
        log = getattr(obj, "action_log", None)
        if log is not None:
            seen = obj.__dict__.get("_rlconform_log_seen", 0)
            caller = record.args_live[0] if record.args_live and not isinstance(record.op, Reset) else None
            record.extra[ACTIONS_KEY] = {
                "received": list(log[seen:]),
                "caller": None
                if caller is None
                else {"dtype": str(caller.dtype), "device": str(caller.device), "data_ptr": _ptr(caller)},
            }
            obj.__dict__["_rlconform_log_seen"] = len(log)
        result = record.result_live
        if isinstance(result, tuple) and result and isinstance(result[0], dict):
            outputs = dict(zip(OUTPUT_NAMES, (result[0].get("policy"), *result[1:-1]), strict=False))
            record.extra[STORAGE_KEY] = {name: _ptr(value) for name, value in outputs.items()}
            record.extra[STORAGE_KEY]["extras_id"] = id(result[-1])

    # ----------------------------------------------------------------------------------- recipe
    def recipe(self, calls: list[CallRecord], num_envs: int, semantics: dict[str, Any]) -> list[Slot]:
        return same_step_slots(calls, num_envs)


FAMILY = IsaacLabFamily()


def reused_buffers(calls: list[CallRecord]) -> dict[str, int]:
    """For each output, how many step calls returned the very storage an earlier step returned
    (DirectRLEnv reuses ``terminated``/``time_outs`` in place and returns its ``extras`` dict)."""
    seen: dict[str, set[int]] = {}
    reused: dict[str, int] = {}
    for record in calls:
        if record.failed or record.view is None or record.view.kind != "step":
            continue
        for name, ptr in record.extra.get(STORAGE_KEY, {}).items():
            if ptr is None:
                continue
            if ptr in seen.setdefault(name, set()):
                reused[name] = reused.get(name, 0) + 1
            seen[name].add(ptr)
    return reused


# ------------------------------------------------------------------------------------- systems

_REQUIRES = ("isaaclab", "torch")
#: the import the reproducers of every system over the reference env need
#: what the reference env over DirectRLEnv offers; the wrappers' systems share it
CAPABILITIES = Capabilities(
    obs_kinds=frozenset({"box"}),
    box_dtypes=frozenset({"float32"}),
    action_kinds=frozenset({"box"}),
    partial_reset=False,
    notes=(
        "Box float32 observations and Box actions: the DirectRLEnv 'policy' tensor and its action space",
        "no partial resets: DirectRLEnv.reset resets every sub-env",
        "the reference sub-envs run through the real DirectRLEnv step/reset with the simulator stubbed out",
    ),
)
_NO_FINAL_OBS = (
    "documented Isaac Lab behaviour: DirectRLEnvCfg.compute_final_obs defaults to False, and then a step in which "
    "an env ends returns only the post-reset observation; extras has no 'final_obs' (direct_rl_env.py:675-676)"
)


def make(
    env_fns: Sequence[EnvFn], *, device: str = DEVICE, compute_final_obs: bool = True, variant: str = "reference"
) -> Any:
    """The Isaac Lab reference env (real DirectRLEnv step/reset) over ``env_fns``."""
    from rlconform.libraries.isaaclab.reference_env import make_isaaclab_reference_env

    return make_isaaclab_reference_env(env_fns, device=device, compute_final_obs=compute_final_obs, variant=variant)


def _system(id: str, title: str, kwargs: dict[str, Any], **extra: Any) -> None:
    args = "".join(f", {key}={value!r}" for key, value in kwargs.items())
    SYSTEMS.add(
        System(
            id=id,
            family=NAME,
            title=title,
            build=functools.partial(make, **kwargs),
            source=f"make_isaaclab_reference_env(env_fns{args})",
            requires=_REQUIRES,
            capabilities=CAPABILITIES,
            torch_native=kwargs.get("device", DEVICE),
            **extra,
        )
    )


_system(
    "isaaclab.DirectRLEnv",
    "DirectRLEnv(compute_final_obs=True)",
    {"compute_final_obs": True},
    description="reference sub-envs through Isaac Lab's real DirectRLEnv step/reset, terminal observations on",
)
_system(
    "isaaclab.DirectRLEnv.no_final_obs",
    "DirectRLEnv(compute_final_obs=False)",
    {"compute_final_obs": False},
    known_violations=(("terminal.final_obs", _NO_FINAL_OBS), ("transitions.exact", _NO_FINAL_OBS)),
    description="DirectRLEnv with Isaac Lab's default compute_final_obs=False",
)
# the planted bugs of the isaaclab.* specs, registered (like those specs) only where isaaclab is
# installed: elsewhere they could neither run nor be caught
if importlib.util.find_spec("isaaclab") is not None:
    _system(
        "planted.isaaclab.NumpyActionRoundTrip",
        "planted bug: DirectRLEnv whose step takes actions through NumPy and back",
        {"variant": "numpy_action_round_trip"},
        kind="planted",
        plants=("isaaclab.actions_on_device",),
        description="a host copy of every action before the real DirectRLEnv.step",
    )
    _system(
        "planted.isaaclab.Float64Rewards",
        "planted bug: DirectRLEnv task returning float64 rewards",
        {"variant": "float64_rewards"},
        kind="planted",
        plants=("isaaclab.outputs_on_device",),
        description="a task whose _get_rewards returns float64",
    )
