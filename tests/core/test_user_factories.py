"""A user's factory is driven without false blame or adapter crashes (``rlconform check``).

Every factory here is built with the real libraries, the way a user writes one: Box-only action
wrappers, valid but non-default configurations of normalizing and stacking wrappers, factories
that raise, that ignore the envs they are given, or that hand TorchRL's env_fn to worker
processes.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rlconform.core.search import check_spec
from rlconform.core.spec import Outcome, Spec, get_spec
from rlconform.core.system import System
from rlconform.core.user import BadInput, factory_system, probe

gymnasium = pytest.importorskip("gymnasium")

PROFILE = "fast"


def checked(factory: Callable[..., Any], family: str) -> System:
    return probe(factory_system(factory, family))


def verdicts(system: System, *spec_ids: str) -> dict[str, Any]:
    return {spec_id: check_spec(system, get_spec(spec_id), PROFILE) for spec_id in spec_ids}


def statuses(found: dict[str, Any]) -> dict[str, str]:
    return {
        spec_id: v.status + (f": {v.message.splitlines()[0]}" if v.status != "pass" else "")
        for spec_id, v in found.items()
    }


# ------------------------------------------------------------------ 1. actions in the system's space


def rescaled_vector(env_fns: Sequence[Callable[[], Any]]) -> Any:
    from gymnasium.wrappers.vector import RescaleAction

    return RescaleAction(gymnasium.vector.SyncVectorEnv(list(env_fns)), -0.5, 0.5)


def clipped_vector(env_fns: Sequence[Callable[[], Any]]) -> Any:
    from gymnasium.wrappers.vector import ClipAction

    return ClipAction(gymnasium.vector.SyncVectorEnv(list(env_fns)))


def rescaled_sb3(env_fns: Sequence[Callable[[], Any]]) -> Any:
    from gymnasium.wrappers import RescaleAction
    from stable_baselines3.common.vec_env import DummyVecEnv

    return DummyVecEnv([lambda fn=fn: RescaleAction(fn(), -0.5, 0.5) for fn in env_fns])


ACTION_SPECS = ("dtype.actions_received", "transitions.exact", "model.outputs_match", "api.valid_calls_succeed")


@pytest.mark.parametrize(
    ("factory", "family"),
    [
        pytest.param(rescaled_vector, "gymnasium.vector", id="vector-RescaleAction"),
        pytest.param(clipped_vector, "gymnasium.vector", id="vector-ClipAction"),
        pytest.param(rescaled_sb3, "sb3.VecEnv", id="sb3-DummyVecEnv-RescaleAction"),
    ],
)
def test_box_only_action_wrapper_is_probed_for_the_kinds_it_accepts_and_not_blamed_for_the_range(
    factory: Callable[..., Any], family: str
) -> None:
    pytest.importorskip("stable_baselines3")
    system = checked(factory, family)  # used to be bad input: the probe built a Discrete-action env
    assert system.capabilities.action_kinds == frozenset({"box"})
    assert "box" in system.capabilities.obs_kinds
    note = system.capabilities.notes[-1]
    assert note.startswith("probed: exercised with") and "box actions" in note
    assert (
        "not exercised (refused by the factory, or an internal error): box observations with discrete actions: " in note
    )
    found = verdicts(system, *ACTION_SPECS)
    # ground truth: the env's own log; no model of a plain vector env judges a wrapped one
    assert all(v.status == "pass" for k, v in found.items() if k != "model.outputs_match"), statuses(found)
    assert found["model.outputs_match"].status in ("pass", "not_applicable"), statuses(found)


def test_actions_are_sent_inside_the_declared_box_and_reach_the_env_as_planned() -> None:
    from rlconform.envs.action_space import codec_in_space
    from rlconform.envs.spaces import BoxAction

    action = BoxAction(dims=2, dtype="float32")
    space = gymnasium.spaces.Box(-0.5, 0.5, (2,), np.float32)
    codec = codec_in_space(action, space)
    assert codec is not None
    sent = codec.batch([(1.0, -1.0), (0.0, 0.5)])
    assert sent.dtype == np.float32
    assert np.allclose(sent, [[0.5, -0.5], [0.0, 0.25]])
    assert all(space.contains(row) for row in sent)
    # the env's own space: sent as planned, by the reference encoding
    assert codec_in_space(action, action.build()) is None


# ------------------------------------------------ 2. valid wrapper configurations, internal errors


def vecnormalize(**kwargs: Any) -> Callable[..., Any]:
    def make(env_fns: Sequence[Callable[[], Any]]) -> Any:
        from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

        return VecNormalize(DummyVecEnv(list(env_fns)), **kwargs)

    make.__qualname__ = f"vecnormalize({kwargs})"
    return make


def frame_stack(env_fns: Sequence[Callable[[], Any]]) -> Any:
    from stable_baselines3.common.vec_env import DummyVecEnv, VecFrameStack

    return VecFrameStack(DummyVecEnv(list(env_fns)), n_stack=2)


def monitor_over_normalize(env_fns: Sequence[Callable[[], Any]]) -> Any:
    from stable_baselines3.common.vec_env import DummyVecEnv, VecMonitor, VecNormalize

    return VecMonitor(VecNormalize(DummyVecEnv(list(env_fns)), norm_reward=False))


def extract_dict_obs(env_fns: Sequence[Callable[[], Any]]) -> Any:
    from stable_baselines3.common.vec_env import DummyVecEnv, VecExtractDictObs

    return VecExtractDictObs(DummyVecEnv(list(env_fns)), "state")


def frozen_vector_normalizers(env_fns: Sequence[Callable[[], Any]]) -> Any:
    from gymnasium.wrappers.vector import NormalizeObservation, NormalizeReward

    envs = NormalizeReward(NormalizeObservation(gymnasium.vector.SyncVectorEnv(list(env_fns))), gamma=0.9)
    envs.update_running_mean = False
    envs.env.update_running_mean = False
    return envs


CONFIG_SPECS = ("flags.terminated", "statistics.normalizer", "model.outputs_match")


@pytest.mark.parametrize(
    ("factory", "family"),
    [
        pytest.param(vecnormalize(norm_obs=False), "sb3.VecEnv", id="VecNormalize-norm_obs-False"),
        pytest.param(vecnormalize(norm_reward=False), "sb3.VecEnv", id="VecNormalize-norm_reward-False"),
        pytest.param(vecnormalize(training=False), "sb3.VecEnv", id="VecNormalize-training-False"),
        pytest.param(frame_stack, "sb3.VecEnv", id="VecFrameStack-n_stack-2"),
        pytest.param(monitor_over_normalize, "sb3.VecEnv", id="VecMonitor-VecNormalize"),
        pytest.param(extract_dict_obs, "sb3.VecEnv", id="VecExtractDictObs"),
        pytest.param(frozen_vector_normalizers, "gymnasium.vector", id="vector-normalizers-frozen"),
    ],
)
def test_valid_wrapper_configuration_is_driven_without_adapter_crash_or_model_blame(
    factory: Callable[..., Any], family: str
) -> None:
    pytest.importorskip("stable_baselines3")
    system = checked(factory, family)
    found = verdicts(system, *CONFIG_SPECS)
    # frozen statistics leave statistics.normalizer nothing to count: not exercised, never a pass
    assert all(v.status not in ("fail", "error") for v in found.values()), statuses(found)


def test_extract_dict_obs_is_drawn_with_dict_observations_only() -> None:
    pytest.importorskip("stable_baselines3")
    system = checked(extract_dict_obs, "sb3.VecEnv")
    assert system.capabilities.obs_kinds == frozenset({"dict"})


def _raises_inside_rlconform(run: Any) -> Outcome:
    raise KeyError("a bug in a spec")


def test_an_exception_inside_rlconform_is_an_internal_error_with_its_traceback() -> None:
    pytest.importorskip("stable_baselines3")
    from rlconform.core.system import get_system
    from rlconform.core.verdict import INTERNAL_ERROR

    spec = Spec(
        "test.raises",
        "never holds",
        "tests the distinction",
        frozenset({"sb3.VecEnv"}),
        _raises_inside_rlconform,
        impact="robustness",
    )
    verdict = check_spec(get_system("sb3.DummyVecEnv"), spec, PROFILE)
    assert verdict.status == "error"
    assert verdict.internal_error
    first, *trace = verdict.message.splitlines()
    assert first == f"{INTERNAL_ERROR}: KeyError: 'a bug in a spec'"
    assert any("_raises_inside_rlconform" in line for line in trace)


def _never_builds(env_fns: Sequence[Callable[[], Any]]) -> Any:
    raise RuntimeError("no hardware attached")


def test_a_system_that_cannot_be_built_is_an_error_about_the_system_not_an_internal_one() -> None:
    system = factory_system(_never_builds, "gymnasium.vector")
    verdict = check_spec(system, get_spec("flags.terminated"), PROFILE)
    assert verdict.status == "error"
    assert not verdict.internal_error
    assert "no hardware attached" in verdict.message


# ---------------------------------------------------------- 3. a factory's traceback, TorchRL env_fn


def _helper_that_asserts() -> None:
    raise AssertionError  # a bare assert's exception, as gymnasium.make raised it


def raising_factory(env_fns: Sequence[Callable[[], Any]]) -> Any:
    _helper_that_asserts()


def test_a_factory_that_raises_is_bad_input_with_its_own_traceback() -> None:
    with pytest.raises(BadInput) as raised:
        checked(raising_factory, "gymnasium.vector")
    first, *rest = str(raised.value).splitlines()
    assert first.startswith("building ")
    assert "raised AssertionError: (no message) at " in first
    assert f"{__file__}:" in first and "_helper_that_asserts" in first and "raise AssertionError" in first
    assert rest and all(line.startswith("    ") for line in rest)
    assert any("raising_factory" in line for line in rest)


def registered_torchrl(env_fn: Callable[[], Any]) -> Any:
    from torchrl.envs import GymEnv

    env_id = "rlconform-tests/UserRegistered-v0"
    gymnasium.registry.pop(env_id, None)
    gymnasium.register(env_id, entry_point=env_fn)
    return GymEnv(env_id)


def registered_torchrl_num_envs(env_fn: Callable[[], Any]) -> Any:
    from torchrl.envs import GymEnv

    env_id = "rlconform-tests/UserRegisteredVector-v0"
    gymnasium.registry.pop(env_id, None)
    gymnasium.register(env_id, entry_point=env_fn)
    return GymEnv(env_id, num_envs=2)


def test_torchrl_factory_registering_env_fn_is_checked() -> None:
    pytest.importorskip("torchrl")
    # used to be refused with "raised AssertionError: ": gymnasium.make deep-copies the env spec,
    # whose entry point (rlconform's env_fn) refused to be copied
    system = checked(registered_torchrl, "torchrl.EnvBase")
    found = verdicts(system, "counts.env_steps")
    assert found["counts.env_steps"].status == "pass", statuses(found)


def test_torchrl_factory_handing_env_fn_to_worker_processes_is_bad_input_saying_why() -> None:
    """``GymEnv(id, num_envs=N)`` over an id registered with rlconform's env_fn starts an
    AsyncVectorEnv whose spawned workers each get a pickled env_fn: it is refused as bad input
    that says so (the probe saw sub-envs built twice) or with the error the workers died of, and
    the factory's own traceback, never the bare "raised AssertionError: " it was."""
    pytest.importorskip("torchrl")
    with pytest.raises(BadInput) as raised:
        checked(registered_torchrl_num_envs, "torchrl.EnvBase")
    first, *trace = str(raised.value).splitlines()
    assert "test_user_factories:registered_torchrl_num_envs" in first
    assert "builds its sub-envs in worker processes, each with its own copy of env_fn" in first or (
        " raised " in first and trace
    ), first
    assert first.rstrip() != "raised AssertionError:" and "AssertionError: " not in first


def renamed_torchrl(env_fn: Callable[[], Any]) -> Any:
    from torchrl.envs import GymWrapper, RenameTransform, TransformedEnv

    return TransformedEnv(GymWrapper(env_fn()), RenameTransform(["observation"], ["renamed"], create_copy=False))


def test_a_kind_that_crashes_rlconform_in_the_probe_is_left_out_and_named_an_internal_error() -> None:
    pytest.importorskip("torchrl")
    from rlconform.core.verdict import INTERNAL_ERROR

    system = checked(renamed_torchrl, "torchrl.EnvBase")
    if "dict" not in system.capabilities.obs_kinds:
        # the TorchRL adapter cannot yet read Dict observations under renamed keys: rlconform's
        # bug, so the kind is left out and named, never blamed on the factory
        note = system.capabilities.notes[-1]
        assert "dict observations with " in note and INTERNAL_ERROR in note, note
    found = verdicts(system, "transitions.exact")
    assert found["transitions.exact"].status == "pass", statuses(found)


@pytest.mark.slow  # runs the CLI in a subprocess
def test_bad_input_from_a_raising_factory_keeps_a_self_contained_first_line_on_the_command_line(
    user_module: Callable[[str, str], Path], rlconform_cli: Callable[..., subprocess.CompletedProcess[str]]
) -> None:
    user_module("userfac", "def make(env_fns):\n    assert not env_fns, 'expected no envs'\n")
    check = ("check", "userfac:make", "--api", "gymnasium.vector", "--spec", "flags.terminated")
    result = rlconform_cli(*check, timeout=300)
    assert result.returncode == 2, result.stdout + result.stderr
    first, *rest = result.stderr.strip().splitlines()
    assert first.startswith(
        "rlconform: error: building userfac:make as gymnasium.vector raised AssertionError: expected no envs at "
    )
    assert "userfac.py:2" in first
    assert rest and all(line.startswith("    ") for line in rest)


# -------------------------------------------------------------------------- 4. ignored env_fns


def own_vector_envs(env_fns: Sequence[Callable[[], Any]]) -> Any:
    return gymnasium.vector.SyncVectorEnv([lambda: gymnasium.make("CartPole-v1") for _ in env_fns])


def own_sb3_envs(env_fns: Sequence[Callable[[], Any]]) -> Any:
    from stable_baselines3.common.vec_env import DummyVecEnv

    return DummyVecEnv([lambda: gymnasium.make("CartPole-v1") for _ in env_fns])


def own_torchrl_env(env_fn: Callable[[], Any]) -> Any:
    from torchrl.envs import GymEnv

    return GymEnv("CartPole-v1")


@pytest.mark.parametrize(
    ("factory", "family", "given"),
    [
        pytest.param(own_vector_envs, "gymnasium.vector", "env_fns", id="vector"),
        pytest.param(own_sb3_envs, "sb3.VecEnv", "env_fns", id="sb3"),
        pytest.param(own_torchrl_env, "torchrl.EnvBase", "env_fn", id="torchrl"),
    ],
)
def test_a_factory_that_ignores_its_env_fns_is_bad_input(factory: Callable[..., Any], family: str, given: str) -> None:
    pytest.importorskip("stable_baselines3" if family == "sb3.VecEnv" else "gymnasium")
    if family == "torchrl.EnvBase":
        pytest.importorskip("torchrl")
    with pytest.raises(BadInput) as raised:
        checked(factory, family)
    assert f"ignored the {given} it was given (it built its own envs" in str(raised.value)
    assert f"must build its sub-envs by calling {given}" in str(raised.value)


# ------------------------------------------------------------------ calls a factory refuses by design


def normalized_observations(env_fns: Sequence[Callable[[], Any]], **kwargs: Any) -> Any:
    from gymnasium.wrappers.vector import NormalizeObservation

    return NormalizeObservation(gymnasium.vector.SyncVectorEnv(list(env_fns), **kwargs))


def test_a_factory_that_refuses_partial_resets_is_driven_without_them() -> None:
    """Gymnasium's NormalizeObservation documents that it refuses ``reset_mask``: the probe finds
    out, cases draw no partial reset, and the report says so (it was api.valid_calls_succeed FAIL)."""
    system = checked(normalized_observations, "gymnasium.vector")
    assert not system.capabilities.partial_reset
    note = next(n for n in system.capabilities.notes if "partial resets not exercised" in n)
    assert "NormalizeObservation does not support partial resets" in note
    found = verdicts(system, "api.valid_calls_succeed")
    assert statuses(found) == {"api.valid_calls_succeed": "pass"}


def test_a_factory_that_takes_partial_resets_keeps_them() -> None:
    system = checked(lambda env_fns, **kw: gymnasium.vector.SyncVectorEnv(list(env_fns), **kw), "gymnasium.vector")
    assert system.capabilities.partial_reset
    assert not any("partial resets" in n for n in system.capabilities.notes)


def test_one_sub_env_of_a_batch_of_scalar_boxes_is_an_element_of_its_space() -> None:
    """Gymnasium's NormalizeObservation over a Discrete-observation env declares Box((), float32):
    the batch is an array of shape (n,), and one sub-env's element of it is a NumPy scalar, which
    dtype.observations must read as the 0-d array it stands for (it was a FAIL)."""
    from gymnasium.wrappers.vector import NormalizeObservation

    from rlconform.specs.dtypes import conformance_problem

    envs = NormalizeObservation(gymnasium.vector.SyncVectorEnv([lambda: gymnasium.make("FrozenLake-v1")] * 2))
    obs, _ = envs.reset(seed=0)
    space = envs.single_observation_space
    assert space.shape == () and isinstance(obs[0], np.generic)
    assert conformance_problem(space, obs[0]) is None
    assert conformance_problem(space, np.float64(0.0)) == "dtype float64, the space declares float32"
    envs.close()
