"""Isaac Lab's RL-library wrappers around the reference DirectRLEnv, in the families whose API they
implement, so that those families' specs apply to them unchanged.

* ``isaaclab.Sb3VecEnvWrapper`` (family ``sb3.VecEnv``): ``isaaclab_rl.sb3.Sb3VecEnvWrapper``, an
  SB3 ``VecEnv``. Its ``step_wait`` (isaaclab 3.0.0, ``isaaclab_rl/sb3.py:245-270`` and
  ``_process_extras`` 398-419) reports a done env's terminal observation as
  ``infos[i]["terminal_observation"]`` and a time-out as ``infos[i]["TimeLimit.truncated"]``, SB3's
  own recipe. The terminal observation is ``extras["final_obs"]`` only when the env computes it
  (``cfg.compute_final_obs``); otherwise the wrapper puts the returned, post-reset row there.
* ``isaaclab.IsaacLabTorchRLWrapper`` (family ``torchrl.EnvBase``): ``isaaclab_rl.torchrl``'s own
  ``EnvBase``; the ``"next"`` observation of a done row is ``extras["final_obs"]``, NaN without it
  (``isaaclab_rl/torchrl/vecenv_wrapper.py:177-192``).
* ``isaaclab.torchrl.IsaacLabWrapper`` (family ``torchrl.EnvBase``): TorchRL's
  ``torchrl.envs.libs.isaac_lab.IsaacLabWrapper`` (a ``GymWrapper``) with ``device="cpu"`` (its
  default is ``cuda:0``) and ``native_autoreset=True`` (without it a DirectRLEnv is not treated as
  batched and ``step_and_maybe_reset`` raises "Partial resets are not handled at this level.").

Every wrapper is built around :class:`rlconform.libraries.isaaclab.reference_env.IsaacLabReferenceEnv`
(the wrappers' ``check_env_type`` requires ``env.unwrapped`` to be a ``DirectRLEnv``), so each
sub-env's call log is the ground truth. The sub-envs receive torch tensors (rows of the batch
``DirectRLEnv.step`` received): the systems are declared torch-native on the env's device.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from rlconform.core.system import EnvFn, System, SystemTable
from rlconform.libraries.isaaclab.direct_family import CAPABILITIES
from rlconform.specs.families import SB3_VECENV, TORCHRL_ENVBASE

#: this module's systems, read by the catalog (rlconform.core.catalog)
SYSTEMS = SystemTable()

DEVICE = "cpu"
#: Sb3VecEnvWrapper without compute_final_obs: the terminal observation is the next episode's first
_SB3_NO_FINAL_OBS = (
    "documented Isaac Lab behaviour: with DirectRLEnvCfg.compute_final_obs=False (its default) "
    "Sb3VecEnvWrapper._process_extras puts the returned, already reset observation row into "
    "infos[i]['terminal_observation'] (isaaclab_rl/sb3.py:412-417 in isaaclab 3.0.0: "
    "`obs[idx]` when extras has no 'final_obs')"
)
#: Isaac Lab has no per-env infos: what SB3's infos specs and model expect cannot be there
_SB3_NO_ENV_INFOS = (
    "Isaac Lab design: DirectRLEnv's task hooks have no per-env info channel (step returns one batch-level "
    "extras dict, direct_rl_env.py:468), so the sub-envs' own infos never reach the caller: "
    "Sb3VecEnvWrapper builds each infos[i] from scratch (isaaclab_rl/sb3.py:399) and never sets reset_infos "
    "(SB3's initial [{}] * n, stable_baselines3/common/vec_env/base_vec_env.py:69)"
)
#: TorchRL's IsaacLabWrapper with native_autoreset: NaN terminal observations, documented
TORCHRL_LIB_NAN = (
    'documented TorchRL behaviour: with native_autoreset=True \'the terminal "next" observation remains '
    "unavailable and is marked with NaN' (torchrl/envs/libs/isaac_lab.py:63-68, torchrl 0.14.1), even when "
    "the env computes extras['final_obs']: step_and_maybe_reset NaN-fills the done rows "
    "(torchrl/envs/common.py:4149-4153 -> _native_autoreset_set_invalid_next_observation, 3919-3943) and "
    "VecGymEnvTransform._step returns at once under native_autoreset (torchrl/envs/transforms/_misc.py:458-459)"
)
#: IsaacLabTorchRLWrapper without compute_final_obs: NaN rows, by design
_TORCHRL_NO_FINAL_OBS = (
    "documented Isaac Lab behaviour: with DirectRLEnvCfg.compute_final_obs=False IsaacLabTorchRLWrapper "
    "NaN-fills the ('next', 'policy') row of a done env (isaaclab_rl/torchrl/vecenv_wrapper.py:186-192 in "
    "isaaclab 3.0.0), TorchRL's auto-reset convention"
)


def _reference(env_fns: Sequence[EnvFn], compute_final_obs: bool) -> Any:
    from rlconform.libraries.isaaclab.reference_env import make_isaaclab_reference_env

    return make_isaaclab_reference_env(env_fns, device=DEVICE, compute_final_obs=compute_final_obs)


def sb3_wrapper(env_fns: Sequence[EnvFn], *, compute_final_obs: bool = True) -> Any:
    from isaaclab_rl.sb3 import Sb3VecEnvWrapper

    return Sb3VecEnvWrapper(_reference(env_fns, compute_final_obs))


def isaaclab_torchrl_wrapper(env_fns: Sequence[EnvFn], *, compute_final_obs: bool = True) -> Any:
    from isaaclab_rl.torchrl import IsaacLabTorchRLWrapper

    return IsaacLabTorchRLWrapper(_reference(env_fns, compute_final_obs))


def torchrl_isaaclab_wrapper(env_fns: Sequence[EnvFn], *, compute_final_obs: bool = True) -> Any:
    from torchrl.envs.libs.isaac_lab import IsaacLabWrapper

    return IsaacLabWrapper(_reference(env_fns, compute_final_obs), device=DEVICE, native_autoreset=True)


def _register(
    id: str,
    family: str,
    title: str,
    build: Any,
    source: str,
    requires: tuple[str, ...],
    **extra: Any,
) -> None:
    SYSTEMS.add(
        System(
            id=id,
            family=family,
            title=title,
            build=build,
            source=source,
            requires=("isaaclab", "torch", *requires),
            capabilities=CAPABILITIES,
            torch_native=DEVICE,
            **extra,
        )
    )


def _reference_source(compute_final_obs: bool) -> str:
    return f"make_isaaclab_reference_env(env_fns, device={DEVICE!r}, compute_final_obs={compute_final_obs!r})"


for _cfo, _suffix in ((True, ""), (False, ".no_final_obs")):
    _register(
        f"isaaclab.Sb3VecEnvWrapper{_suffix}",
        SB3_VECENV,
        f"Sb3VecEnvWrapper(DirectRLEnv(compute_final_obs={_cfo}))",
        functools.partial(sb3_wrapper, compute_final_obs=_cfo),
        f"Sb3VecEnvWrapper({_reference_source(_cfo)})",
        ("stable-baselines3",),
        known_violations=(
            ("infos.aligned", _SB3_NO_ENV_INFOS),
            *(() if _cfo else (("terminal.final_obs", _SB3_NO_FINAL_OBS), ("transitions.exact", _SB3_NO_FINAL_OBS))),
        ),
        description="Isaac Lab's SB3 VecEnv wrapper around the reference DirectRLEnv",
    )
for _cfo, _suffix in ((True, ""), (False, ".no_final_obs")):
    _register(
        f"isaaclab.IsaacLabTorchRLWrapper{_suffix}",
        TORCHRL_ENVBASE,
        f"IsaacLabTorchRLWrapper(DirectRLEnv(compute_final_obs={_cfo}))",
        functools.partial(isaaclab_torchrl_wrapper, compute_final_obs=_cfo),
        f"IsaacLabTorchRLWrapper({_reference_source(_cfo)})",
        ("torchrl", "tensordict"),
        known_violations=()
        if _cfo
        else (
            ("terminal.final_obs", _TORCHRL_NO_FINAL_OBS),
            ("transitions.exact", _TORCHRL_NO_FINAL_OBS),
            ("dtype.observations", _TORCHRL_NO_FINAL_OBS),
        ),
        description="Isaac Lab's own TorchRL EnvBase around the reference DirectRLEnv",
    )
_register(
    "isaaclab.torchrl.IsaacLabWrapper",
    TORCHRL_ENVBASE,
    "torchrl IsaacLabWrapper(DirectRLEnv(compute_final_obs=True), device='cpu', native_autoreset=True)",
    torchrl_isaaclab_wrapper,
    f"IsaacLabWrapper({_reference_source(True)}, device={DEVICE!r}, native_autoreset=True)",
    ("torchrl", "tensordict"),
    known_violations=(
        ("terminal.final_obs", TORCHRL_LIB_NAN),
        ("transitions.exact", TORCHRL_LIB_NAN),
        ("dtype.observations", TORCHRL_LIB_NAN),
    ),
    description="TorchRL's IsaacLabWrapper (a GymWrapper) around the reference DirectRLEnv",
)
