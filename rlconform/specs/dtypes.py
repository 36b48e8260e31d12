"""Type and dtype fidelity: observations against the declared spaces, rewards and flags against
the family's documented dtypes, and the action object each env actually receives.

``dtype.rewards_flags`` reads a step's tuple against the dtypes the family documents. Where the
family's contract says each env declares its own dtypes (TorchRL, whose step returns TensorDicts),
it reads the ``("next", ...)`` reward and done leaves instead and compares each with the dtype and
shape the env's own ``reward_spec``/``done_spec`` declare (recorded in the run's semantics). It does
not apply where the contract names the family's own check of its outputs (Isaac Lab's torch
tensors on a device: ``isaaclab.outputs_on_device``). No branch here names a family: the facts are
fields of each family's :class:`~rlconform.envs.driver.Contract`."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from rlconform.core.spec import Checker, Outcome, spec
from rlconform.specs.families import TRANSITION_FAMILIES
from rlconform.specs.helpers import agent_step_of_call, call_of_records, contract_of

if TYPE_CHECKING:
    from rlconform.core.system import System
    from rlconform.envs.driver import Run


def conformance_problem(space: Any, value: Any) -> str | None:
    """Why ``value`` is not an element of ``space`` with the space's own type and dtype."""
    from gymnasium import spaces

    if isinstance(space, spaces.Dict):
        if not isinstance(value, dict):
            return f"a {type(value).__name__}, expected a dict"
        if set(value) != set(space.spaces):
            return f"keys {sorted(value)}, expected {sorted(space.spaces)}"
        for key, sub in space.spaces.items():
            problem = conformance_problem(sub, value[key])
            if problem:
                return f"[{key!r}]: {problem}"
        return None
    if isinstance(space, spaces.Tuple):
        if not isinstance(value, tuple):
            return f"a {type(value).__name__}, expected a tuple"
        if len(value) != len(space.spaces):
            return f"{len(value)} elements, expected {len(space.spaces)}"
        for i, sub in enumerate(space.spaces):
            problem = conformance_problem(sub, value[i])
            if problem:
                return f"[{i}]: {problem}"
        return None
    if isinstance(space, spaces.Discrete):
        if not isinstance(value, (int, np.integer)) or isinstance(value, (bool, np.bool_)):
            if isinstance(value, np.ndarray) and value.shape == () and np.issubdtype(value.dtype, np.integer):
                pass
            else:
                return f"{_type_of(value)}, expected an integer scalar"
    elif isinstance(space, (spaces.Box, spaces.MultiDiscrete, spaces.MultiBinary)):
        if space.shape == () and isinstance(value, np.generic):
            # one sub-env's element of a batch of shape (n,) is a NumPy scalar, not a 0-d array:
            # that is how indexing splits the batch, not something the system returned
            value = np.asarray(value)
        if not isinstance(value, np.ndarray):
            return f"{_type_of(value)}, expected numpy.ndarray"
        if value.dtype != space.dtype:
            return f"dtype {value.dtype}, the space declares {space.dtype}"
        if value.shape != space.shape:
            return f"shape {value.shape}, the space declares {space.shape}"
    try:
        inside = bool(space.contains(value))
    except Exception as exc:
        return f"space.contains raised {type(exc).__name__}: {exc}"
    return None if inside else f"{value!r} is outside {space}"


def _type_of(value: Any) -> str:
    cls = type(value)
    name = cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"
    dtype = getattr(value, "dtype", None)
    return f"a {name}" + (f" of dtype {dtype}" if dtype is not None else "")


@spec(
    "dtype.observations",
    impact="api-contract",
    statement="Every observation returned, terminal observations included, is an element of the declared observation space with its dtype and shape.",
    rationale=(
        "Networks and buffers are built from the declared space; an observation that silently changes dtype "
        "(float64 for float32, int for uint8) is upcast, copied or truncated downstream."
    ),
    families=TRANSITION_FAMILIES,
    needs=("usable",),
)
def observations(run: Run) -> Outcome:
    ck = Checker()
    space = run.semantics.get("single_observation_space")
    if space is None:
        return ck.not_applicable("the system declares no observation space")
    for call in run.calls:
        view = call.view
        if view is None:
            continue
        for env, obs in enumerate(view.obs):
            if view.touched is not None and not view.touched[env]:
                continue
            problem = conformance_problem(space, obs)
            ck.expect(
                problem is None, f"the observation returned by {call.source} is {problem}", env=env, call=call.position
            )
        for env, final in enumerate(view.final_obs or []):
            if final is None:
                continue
            problem = conformance_problem(space, final)
            ck.expect(
                problem is None,
                f"the final observation returned by {call.source} is {problem}",
                env=env,
                call=call.position,
            )
    return ck.done()


def _rewards_flags_applies(system: System) -> str | None:
    """A family whose outputs its own check reads (Isaac Lab's torch tensors on a device, say,
    checked with their device by ``isaaclab.outputs_on_device``) says so in its contract."""
    return contract_of(system).dtypes_checked_by


@spec(
    "dtype.rewards_flags",
    impact="api-contract",
    statement="Rewards and terminated/truncated flags have the family's documented types, dtypes and shapes.",
    rationale=(
        "Gymnasium vector envs document float64 rewards and bool flags; a float32 reward array loses precision "
        "and an integer flag array breaks boolean masking in training loops."
    ),
    families=TRANSITION_FAMILIES,
    applies=_rewards_flags_applies,
    needs=("usable",),
)
def rewards_flags(run: Run) -> Outcome:
    ck = Checker()
    contract = contract_of(run.system)
    if contract.dtypes == "declared":
        return _declared_rewards_flags(run, ck)
    n = run.case.num_envs
    for call in run.calls:
        if call.failed or call.view is None or call.view.kind != "step":
            continue
        result = call.result_live
        if not isinstance(result, tuple) or len(result) != contract.step_arity:
            continue
        reward = result[contract.reward_position]
        flags = [result[p] for p in contract.flag_positions]
        where = {"agent_step": call.agent_step}
        if contract.vectorized:
            ok = isinstance(reward, np.ndarray) and reward.shape == (n,) and reward.dtype.kind == "f"
            if ok and contract.reward_dtype is not None:
                ok = reward.dtype == np.dtype(contract.reward_dtype)
            ck.expect(
                ok,
                f"rewards are {_type_of(reward)} of shape {getattr(reward, 'shape', None)}; documented: numpy.ndarray "
                f"of dtype {contract.reward_dtype or 'float'} and shape ({n},)",
                **where,
            )
            for flag in flags:
                ck.expect(
                    isinstance(flag, np.ndarray) and flag.dtype == np.bool_ and flag.shape == (n,),
                    f"flags are {_type_of(flag)} of shape {getattr(flag, 'shape', None)}; documented: bool array of shape ({n},)",
                    **where,
                )
        else:
            ck.expect(
                isinstance(reward, (int, float, np.integer, np.floating)) and not isinstance(reward, (bool, np.bool_)),
                f"the reward is {_type_of(reward)}; documented: a real number (SupportsFloat)",
                **where,
            )
            for flag in flags:
                ck.expect(
                    isinstance(flag, (bool, np.bool_)),
                    f"a flag is {_type_of(flag)}; documented: bool",
                    **where,
                )
    return ck.done()


def _declared_rewards_flags(run: Run, ck: Checker) -> Outcome:
    """Each step's ``data["next", key]`` for every reward and done key, against the spec the env
    declares for it (TorchRL's ``reward_spec``/``done_spec``, read into ``leaf_specs``)."""
    specs: dict[str, dict[str, Any]] = run.semantics.get("leaf_specs", {})
    declared = {k: v for k, v in specs.items() if v.get("kind") in ("reward", "done")}
    if not declared:
        return ck.not_applicable("the env declares no reward or done spec")
    for call in run.calls:
        if call.failed or call.view is None or call.view.kind != "step":
            continue
        data = call.result_snapshot[0]
        for name, want in declared.items():
            value = data.get(("next", *name.split("/")), None)
            got = None if value is None else (str(value.dtype), tuple(value.shape))
            ck.expect(
                got == (want["dtype"], tuple(want["shape"])),
                f"next/{name} is "
                + ("missing" if got is None else f"{got[0]} of shape {got[1]}")
                + f"; the env's spec declares {want['dtype']} of shape {tuple(want['shape'])}",
                agent_step=call.agent_step,
            )
    return ck.done()


def _action_problem(space: Any, receipt: Any) -> str | None:
    from gymnasium import spaces

    if not receipt.in_space:
        return f"the env received {receipt.describe()}, which is outside {space}"
    if isinstance(space, spaces.Discrete):
        if receipt.shape not in (None, ()) or receipt.type_name.startswith("torch"):
            return f"the env received {receipt.describe()}; expected an integer scalar"
        return None
    if receipt.type_name != "numpy.ndarray":
        return f"the env received {receipt.describe()}; expected numpy.ndarray"
    if receipt.dtype != str(space.dtype):
        return f"the env received {receipt.describe()}; the action space declares dtype {space.dtype}"
    if receipt.shape != tuple(space.shape):
        return f"the env received {receipt.describe()}; the action space declares shape {space.shape}"
    return None


def _numpy_env(system: System) -> str | None:
    """A torch-native env wants torch tensors, which are not elements of a Gymnasium space:
    ``torchrl.actions_reach_env_natively`` checks what such an env receives instead."""
    if system.torch_native is not None:
        return "the env is torch-native: torchrl.actions_reach_env_natively checks the actions it receives"
    return None


@spec(
    "dtype.actions_received",
    impact="api-contract",
    statement="Each env receives its action as an element of its own action space, with the space's type, dtype and shape.",
    rationale=(
        "Vectorizers split and convert action batches; a Box action that arrives as float64 or a Discrete action "
        "that arrives as a 1-element array breaks envs that index or hash it."
    ),
    families=TRANSITION_FAMILIES,
    applies=_numpy_env,
    needs=("usable",),
)
def actions_received(run: Run) -> Outcome:
    ck = Checker()
    space = run.case.script.action.build()
    expect_actions_received(ck, run, lambda action: _action_problem(space, action))
    return ck.done()


def expect_actions_received(ck: Checker, run: Run, problem_of: Callable[[Any], str | None]) -> None:
    """Check every action an env logged receiving with ``problem_of`` (None: fine), placing each
    problem at the agent step whose call delivered it."""
    assert run.truth is not None
    placed = call_of_records(run)
    for env_truth in run.truth.envs:
        for record in env_truth.records:
            if type(record).__name__ != "StepRecord":
                continue
            problem = problem_of(record.action)  # type: ignore[union-attr]
            ck.expect(
                problem is None,
                problem or "",
                env=env_truth.env,
                agent_step=agent_step_of_call(run, placed.get((env_truth.env, record.seq), -1)),
            )
