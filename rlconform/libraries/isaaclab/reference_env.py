"""A torch-native reference env that runs through Isaac Lab's REAL ``DirectRLEnv.step``/``reset``.

Why: Isaac Lab's RL contract is a vectorized, torch-native ``gym.Env`` (``DirectRLEnv``) whose
step/reset logic (same-step autoreset, ``extras["final_obs"]`` only with ``cfg.compute_final_obs``,
persistent output buffers, ``action.to(self.device)``) lives in the base class. Testing a copy of
that logic would test the copy; this env subclasses ``isaaclab.envs.DirectRLEnv`` and leaves
``step``, ``reset``, ``_reset_envs_from_buffer``, ``_reset_idx``, ``_compute_observations``,
``_configure_gym_env_spaces`` and ``close`` unmodified. Only the simulator is missing:
``DirectRLEnv.__init__`` (a ``SimulationContext`` singleton, a USD stage, an ``InteractiveScene``,
physics) is skipped and replaced by a stand-in sim and scene that record calls and do nothing.

What the task hooks do: each sub-env ``i`` is one NumPy reference env
(:func:`rlconform.envs.reference_env.make_reference_env`, built from the factory the runner
hands over, TimeLimit included), so every observation row decodes to (env, episode, step, salt)
and every step and reset lands in that sub-env's call log, the ground truth of the run.

* ``_pre_physics_step(actions)`` logs the batch exactly as received (:class:`BatchActionReceipt`:
  type, dtype, device, shape, ``data_ptr``), then steps every sub-env with its row (a torch tensor
  on the env's device, handed on unchanged, so the sub-env's own receipt says what it was).
* ``_get_dones`` returns the scripted (terminated, truncated) of that step as the
  ``(terminated, time_outs)`` pair; ``_get_rewards`` the scripted rewards as float32.
* ``_get_observations`` returns ``{"policy": tensor}``: the sub-envs' current observations stacked
  (float32, on the device). Called before ``_reset_idx`` it is the terminal observation.
* ``_reset_idx(env_ids)`` runs the real base implementation, then resets those sub-envs. The seed
  of ``reset(seed=s)`` reaches them through ``seed`` (which the real ``reset`` calls before
  ``_reset_idx``): sub-env ``i`` gets ``s + i``; autoresets reset unseeded.

Pinned internals (isaaclab 3.0.0, ``isaaclab/envs/direct_rl_env.py``): the attributes the real
code touches, set here in place of ``__init__``/``_init_sim`` (lines 203-220):
``cfg`` (a real ``DirectRLEnvCfg``: decimation, sim.dt, sim.render_interval, compute_final_obs,
action/observation noise models, events, episode_length_s, num_rerenders_on_reset,
observation_space/action_space/state_space), ``sim`` (device, is_rendering, has_gui, step,
forward, render, consume_reset_request, get_setting, stop, clear_instance), ``scene`` (num_envs,
write_data_to_sim, update, reset), ``_physics_handles_decimation``, ``_sim_step_counter``,
``common_step_counter``, ``episode_length_buf``, ``reset_terminated``, ``reset_time_outs``,
``reset_buf``, ``extras``, ``render_enabled``, ``has_rtx_sensors``, ``video_recorders``,
``render_mode``, ``_window``, ``_is_closed``. Another isaaclab release may read attributes this
env does not set: :func:`check_isaaclab` refuses any release but :data:`SUPPORTED_ISAACLAB`.
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch

from rlconform.libraries.isaaclab.probe import ActionReceipt, receipt_of
from rlconform.libraries.isaaclab.warp_init import init_warp_quietly

#: the isaaclab release whose DirectRLEnv internals this env replicates
SUPPORTED_ISAACLAB = "3.0.0"
#: DirectRLEnv members the env relies on running unmodified
_REQUIRED_MEMBERS = (
    "step",
    "reset",
    "seed",
    "close",
    "_reset_envs_from_buffer",
    "_reset_idx",
    "_compute_observations",
    "_configure_gym_env_spaces",
)


def check_isaaclab() -> None:
    """Raise a clear error unless the installed isaaclab is the supported release."""
    try:
        version = importlib.metadata.version("isaaclab")
    except importlib.metadata.PackageNotFoundError:
        raise ImportError(f"isaaclab is not installed; rlconform supports isaaclab=={SUPPORTED_ISAACLAB}") from None
    if version != SUPPORTED_ISAACLAB:
        raise RuntimeError(
            f"rlconform's Isaac Lab reference env replicates DirectRLEnv internals of isaaclab=={SUPPORTED_ISAACLAB}; "
            f"isaaclab {version} is installed"
        )
    init_warp_quietly()  # before Isaac Lab's own wp.init(): no C-level line per worker without a GPU
    from isaaclab.envs import DirectRLEnv

    missing = [name for name in _REQUIRED_MEMBERS if not hasattr(DirectRLEnv, name)]
    if missing:
        raise RuntimeError(f"isaaclab {version}: DirectRLEnv lacks {missing}, which the reference env relies on")


#: the action batch as ``_pre_physics_step`` received it (after ``DirectRLEnv.step``'s
#: ``action.to(self.device)``); the same record the contract monitor's probe keeps
BatchActionReceipt = ActionReceipt


class FakeSim:
    """Stand-in for ``isaaclab.sim.SimulationContext``: records calls, simulates nothing."""

    def __init__(self, device: str) -> None:
        self.device = device
        self.is_rendering = False
        self.has_gui = False
        self.visualizers: list[Any] = []
        self.calls: list[str] = []

    def step(self, render: bool = False) -> None:
        self.calls.append("sim.step")

    def forward(self) -> None:
        self.calls.append("sim.forward")

    def render(self, **kwargs: Any) -> None:
        self.calls.append("sim.render")

    def consume_reset_request(self) -> bool:
        return False

    def get_setting(self, key: str) -> Any:
        return False

    def stop(self) -> None:
        self.calls.append("sim.stop")

    def clear_instance(self) -> None:
        self.calls.append("sim.clear_instance")


class FakeScene:
    def __init__(self, num_envs: int, sim: FakeSim) -> None:
        self.num_envs = num_envs
        self._sim = sim

    def write_data_to_sim(self) -> None:
        self._sim.calls.append("scene.write_data_to_sim")

    def update(self, dt: float) -> None:
        self._sim.calls.append("scene.update")

    def reset(self, env_ids: Any) -> None:
        self._sim.calls.append("scene.reset")


def install_direct_rl_env_state(env: Any, cfg: Any) -> None:
    """What ``DirectRLEnv.__init__`` would have set and the real step/reset read, with the stand-in
    simulator and scene (``direct_rl_env.py:203-220`` in 3.0.0), then the real
    ``_configure_gym_env_spaces`` (spaces and ``env.actions``). ``cfg`` is the env's
    ``DirectRLEnvCfg`` with ``scene.num_envs`` and ``sim.device`` set."""
    env.cfg = cfg
    env.render_mode = None
    env.sim = FakeSim(str(torch.device(cfg.sim.device)))
    env.scene = FakeScene(cfg.scene.num_envs, env.sim)
    env._physics_handles_decimation = False
    env._window = None
    env.video_recorders = []
    env.has_rtx_sensors = False
    env.extras = {}
    env._sim_step_counter = 0
    env.render_enabled = True
    env.common_step_counter = 0
    env.episode_length_buf = torch.zeros(env.num_envs, device=env.device, dtype=torch.long)
    env.reset_terminated = torch.zeros(env.num_envs, device=env.device, dtype=torch.bool)
    env.reset_time_outs = torch.zeros_like(env.reset_terminated)
    env.reset_buf = torch.zeros(env.num_envs, dtype=torch.bool, device=env.sim.device)
    env._configure_gym_env_spaces()


check_isaaclab()

from isaaclab.envs import DirectRLEnv, DirectRLEnvCfg  # noqa: E402
from isaaclab.scene import InteractiveSceneCfg  # noqa: E402
from isaaclab.sim import SimulationCfg  # noqa: E402
from isaaclab.utils import configclass  # noqa: E402


@configclass
class ReferenceEnvCfg(DirectRLEnvCfg):  # type: ignore[misc]
    """step_dt = dt * decimation = 1.0, so ``max_episode_length == episode_length_s``."""

    decimation: int = 2
    episode_length_s: float = 1e6
    observation_space: Any = 5
    action_space: Any = 2
    state_space: Any = 0
    sim: SimulationCfg = SimulationCfg(dt=0.5, render_interval=2, device="cpu")
    scene: InteractiveSceneCfg = InteractiveSceneCfg(num_envs=1, env_spacing=1.0)


class IsaacLabReferenceEnv(DirectRLEnv):  # type: ignore[misc]
    """Reference sub-envs behind Isaac Lab's real DirectRLEnv step/reset; see the module."""

    def __init__(self, env_fns: Sequence[Callable[[], Any]], *, device: str = "cpu", compute_final_obs: bool = True):
        # DirectRLEnv.__init__ is deliberately not called (no simulator); see the module docstring
        self._is_closed = True
        self.sub_envs = [fn() for fn in env_fns]
        if not self.sub_envs:
            raise ValueError("at least one sub-env factory is needed")
        first = self.sub_envs[0]
        obs_space, act_space = first.observation_space, first.action_space
        if type(obs_space).__name__ != "Box" or type(act_space).__name__ != "Box":
            raise ValueError(f"Box observations and actions only, got {obs_space} and {act_space}")
        cfg = ReferenceEnvCfg()
        cfg.scene.num_envs = len(self.sub_envs)
        cfg.sim.device = device
        cfg.compute_final_obs = compute_final_obs
        cfg.observation_space = obs_space
        cfg.action_space = act_space
        limit = getattr(first, "_max_episode_steps", None)  # Gymnasium's TimeLimit, if the script sets one
        if limit is not None:
            cfg.episode_length_s = float(limit)
        install_direct_rl_env_state(self, cfg)
        # task state
        self.action_log: list[BatchActionReceipt] = []
        self._current = [np.zeros(obs_space.shape, dtype=obs_space.dtype) for _ in self.sub_envs]
        self._rewards = [0.0] * self.num_envs
        self._terminated = [False] * self.num_envs
        self._truncated = [False] * self.num_envs
        self._pending_seed: int | None = None
        self._is_closed = False

    # ------------------------------------------------------------ hooks the real code calls
    def seed(self, seed: int = -1) -> int:  # type: ignore[override]
        """The real ``reset(seed)`` calls this before ``_reset_idx``: the sub-envs get the seed."""
        self._pending_seed = None if seed is None or seed == -1 else int(seed)
        return int(DirectRLEnv.seed(seed))

    def _pre_physics_step(self, actions: Any) -> None:
        self.action_log.append(receipt_of(actions))
        if tuple(actions.shape)[:1] != (self.num_envs,):
            raise ValueError(f"actions of shape {tuple(actions.shape)} for {self.num_envs} envs")
        self.actions = actions
        for i, env in enumerate(self.sub_envs):
            obs, reward, terminated, truncated, _ = env.step(actions[i])
            self._current[i] = obs
            self._rewards[i] = float(reward)
            self._terminated[i] = bool(terminated)
            self._truncated[i] = bool(truncated)

    def _apply_action(self) -> None:
        pass

    def _get_observations(self) -> dict[str, Any]:
        return {"policy": torch.as_tensor(np.stack(self._current), device=self.device)}

    def _get_rewards(self) -> Any:
        return torch.tensor(self._rewards, dtype=torch.float32, device=self.device)

    def _get_dones(self) -> tuple[Any, Any]:
        terminated = torch.tensor(self._terminated, dtype=torch.bool, device=self.device)
        time_outs = torch.tensor(self._truncated, dtype=torch.bool, device=self.device)
        return terminated, time_outs

    def _reset_idx(self, env_ids: Any) -> None:
        super()._reset_idx(env_ids)  # the real one: scene.reset, noise models, episode_length_buf
        seed, self._pending_seed = self._pending_seed, None
        for i in torch.as_tensor(env_ids).tolist():
            obs, _ = self.sub_envs[i].reset(seed=None if seed is None else seed + i)
            self._current[i] = obs
            self._terminated[i] = self._truncated[i] = False

    def close(self) -> None:
        was_closed = self._is_closed
        super().close()
        if not was_closed:
            for env in self.sub_envs:
                env.close()


class NumpyActionRoundTrip(IsaacLabReferenceEnv):
    """Planted bug: ``step`` takes the action through NumPy and back (a host copy) before the real
    ``DirectRLEnv.step`` gets it; dtype and values survive, the caller's storage does not."""

    def step(self, action: Any) -> Any:
        host = np.array(action.detach().cpu().numpy())
        return super().step(torch.from_numpy(host))


class Float64Rewards(IsaacLabReferenceEnv):
    """Planted bug: the task computes rewards in float64 (Isaac Lab tasks return float32)."""

    def _get_rewards(self) -> Any:
        return super()._get_rewards().to(torch.float64)


VARIANTS: dict[str, type[IsaacLabReferenceEnv]] = {
    "reference": IsaacLabReferenceEnv,
    "numpy_action_round_trip": NumpyActionRoundTrip,
    "float64_rewards": Float64Rewards,
}


def make_isaaclab_reference_env(
    env_fns: Sequence[Callable[[], Any]],
    *,
    device: str = "cpu",
    compute_final_obs: bool = True,
    variant: str = "reference",
) -> IsaacLabReferenceEnv:
    """One DirectRLEnv over ``len(env_fns)`` reference sub-envs, on ``device``."""
    return VARIANTS[variant](env_fns, device=device, compute_final_obs=compute_final_obs)
