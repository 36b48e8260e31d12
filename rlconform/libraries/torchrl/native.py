"""Torch-native envs through TorchRL's GymWrapper: which action object reaches the env.

Why: ``GymLikeEnv._step`` (torchrl 0.14.1) passes ``td["action"]`` to the env's ``step`` as is when
``convert_actions_to_numpy=False`` and ``action_spec.to_numpy(action)`` otherwise (the documented
default, "moved to CPU before being passed to the env step function"). Both settings are systems
here, around the torch-backed reference env (:mod:`rlconform.envs.torch_reference_env`),
driven by the ``torchrl.EnvBase`` family of :mod:`rlconform.libraries.torchrl.env_family`; the spec
``torchrl.actions_reach_env_natively`` reads the actions the env logged.

Also here, the spec's planted bug (a wrapper that takes the action through NumPy and back) and its
control: the same stack without the defect, with ``categorical_action_encoding=True`` so that a
``Discrete`` action is an index, not TorchRL's one-hot encoding.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from rlconform.core.system import Capabilities, EnvFn, System, SystemTable
from rlconform.libraries.torchrl.env_family import NAME
from rlconform.libraries.torchrl.native_specs import SPEC_ID

if TYPE_CHECKING:
    from rlconform.envs.torch_reference_env import TorchReferenceEnv

#: this module's systems, read by the catalog (rlconform.core.catalog)
SYSTEMS = SystemTable()

DEVICE = "cpu"
_REQUIRES = ("torchrl", "tensordict", "gymnasium", "torch")
#: the restrictions of torchrl_env's GymWrapper systems (its ``_capabilities`` is private):
#: GymWrapper one-hot encodes Discrete observations and rejects Tuples of mixed leaves; one env
_CAPS = Capabilities(
    obs_kinds=frozenset({"box", "multidiscrete", "multibinary", "dict"}),
    composite_box_leaves_only=True,
    partial_reset=False,
    max_envs=1,
    notes=(
        "Discrete and Tuple observations are left out, as for torchrl.GymWrapper (one-hot encoded, mixed leaves)",
        f"the env is the torch-backed reference env on {DEVICE!r}: torch tensors out, actions logged as received",
    ),
)
_NUMPY_DEFAULT = (
    "documented default: GymWrapper(convert_actions_to_numpy=True) converts every action with "
    "action_spec.to_numpy and moves it to CPU before env.step (GymWrapper docstring: 'Set this to False if the "
    "environment is evaluated on GPU, such as IsaacLab'); a torch-native env receives numpy.ndarray (int for Discrete)"
)


def _torch_env(env_fn: EnvFn) -> TorchReferenceEnv:
    from rlconform.envs.torch_reference_env import TorchReferenceEnv, declared_torch_device

    env = TorchReferenceEnv(env_fn(), DEVICE)
    assert declared_torch_device(env) == DEVICE
    return env


def gym_wrapper(env_fns: Sequence[EnvFn], **kwargs: Any) -> Any:
    """``GymWrapper(TorchReferenceEnv(env_fns[0]()), **kwargs)``."""
    from torchrl.envs import GymWrapper

    return GymWrapper(_torch_env(env_fns[0]), **kwargs)


def _numpy_actions(env_fns: Sequence[EnvFn]) -> Any:
    return gym_wrapper(env_fns)


def _tensor_actions(env_fns: Sequence[EnvFn]) -> Any:
    return gym_wrapper(env_fns, convert_actions_to_numpy=False)


def correct(env_fns: Sequence[EnvFn]) -> Any:
    """The control: tensors passed as they are, Discrete actions as indices."""
    return gym_wrapper(env_fns, convert_actions_to_numpy=False, categorical_action_encoding=True)


def numpy_round_trip(env_fns: Sequence[EnvFn]) -> Any:
    from torchrl.envs import GymWrapper

    from rlconform.libraries.torchrl.planted_native import NumpyRoundTrip

    env = _torch_env(env_fns[0])
    wrapped = NumpyRoundTrip(env)
    wrapped.metadata = env.metadata
    return GymWrapper(wrapped, convert_actions_to_numpy=False, categorical_action_encoding=True)


_SOURCE = "GymWrapper(TorchReferenceEnv(env_fns[0](), {device!r}){kwargs})"


def _system(id: str, title: str, build: Any, source: str, kind: Any = "library", **extra: Any) -> None:
    SYSTEMS.add(
        System(
            id=id,
            family=NAME,
            title=title,
            build=build,
            source=source,
            requires=_REQUIRES,
            kind=kind,
            capabilities=_CAPS,
            torch_native=DEVICE,
            **extra,
        )
    )


_system(
    "torchrl.GymWrapper.TorchNative",
    "GymWrapper(torch-native env)",
    _numpy_actions,
    _SOURCE.format(device=DEVICE, kwargs=""),
    known_violations=((SPEC_ID, _NUMPY_DEFAULT),),
    description="a torch-native env in GymWrapper with TorchRL's default convert_actions_to_numpy=True",
)
_system(
    "torchrl.GymWrapper.TorchNative.tensor_actions",
    "GymWrapper(torch-native env, convert_actions_to_numpy=False)",
    _tensor_actions,
    _SOURCE.format(device=DEVICE, kwargs=", convert_actions_to_numpy=False"),
    description="a torch-native env in GymWrapper that passes action tensors on as they are",
)
_system(
    "planted.torchrl.TorchNative.NumpyRoundTrip",
    # the first line of NumpyRoundTrip's docstring (planted_native.py needs Gymnasium to import)
    "planted bug: Planted bug: takes each action through NumPy and back before the torch-native env gets it,",
    numpy_round_trip,
    "torchrl_native.numpy_round_trip(env_fns)",
    kind="planted",
    plants=(SPEC_ID,),
    description="a wrapper that converts actions to NumPy (float64) and back",
)
_system(
    "torchrl.GymWrapper.TorchNative.categorical",
    "GymWrapper(torch-native env, convert_actions_to_numpy=False, categorical_action_encoding=True)",
    correct,
    "torchrl_native.correct(env_fns)",
    description="the configuration in which TorchRL hands a torch-native env its actions natively: the "
    "control of " + SPEC_ID + " (and the planted bug's stack without the round trip)",
)
