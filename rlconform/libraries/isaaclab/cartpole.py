"""The REAL Isaac Lab Cartpole tasks on the CPU: Newton (MJWarp) physics, no Isaac Sim, no GUI.

Factories with the signature ``(num_envs, device) -> env`` (:func:`make_cartpole_direct`,
:func:`make_cartpole_manager`) and the general :func:`make_cartpole`. Each returns what
``gym.make(task, cfg=cfg)`` returns; its ``.unwrapped`` is the task's ``DirectRLEnv``
(``Isaac-Cartpole-Direct``) or ``ManagerBasedRLEnv`` (``Isaac-Cartpole``), which every
``isaaclab_rl`` wrapper and TorchRL's ``IsaacLabWrapper`` accept.

Recipe (isaaclab 3.0.0, from ``isaaclab/source/isaaclab_rl/test/test_wrappers.py``):
``parse_env_cfg(task, device=..., num_envs=...)``, ``cfg.sim.physics = NewtonCfg(solver_cfg=
MJWarpSolverCfg())``, then ``gym.make`` inside ``launch_simulation(cfg, {"headless": True,
"visualizer": ["none"]})``. Before ``isaaclab`` is first imported the factory sets
``ISAACSIM_ASSET_ROOT`` (to :func:`~rlconform.libraries.isaaclab.assets.prepare_assets`' folder,
unless set: the USD assets are not available offline) and ``WARP_CACHE_PATH``
(``~/.cache/rlconform/warp`` unless set: Warp compiles the MJWarp kernels once, about a minute on
two cores, then loads them from there).

Lifecycle, as observed with isaaclab 3.0.0 on CPU:

* ``launch_simulation`` starts only the launchers the config names; ``NewtonCfg`` names none
  (only Isaac Sim PhysX, Kit visualizers and OVRTX rendering do), so with Newton and no
  visualizer the context just writes the visualizer settings and nothing is closed on exit. The
  env is built inside the context and keeps working after it is left: the factory returns it
  with the context closed, and no hook is needed.
* ``SimulationContext`` is a process-wide singleton: building a second env while one is open
  raises ``RuntimeError`` (``DirectRLEnv``/``ManagerBasedEnv`` refuse an existing instance).
  ``env.close()`` calls ``sim.clear_instance()``, after which another env (same task or the
  other one) can be built in the same process. Close each env before making the next.
* ``episode_steps=n`` sets ``cfg.episode_length_s = n * (cfg.sim.dt * cfg.decimation)`` (less a
  few ulps where the product would round up: :func:`episode_length_s`) so that
  ``max_episode_length == n``: both tasks time out (truncated, ``reset_time_outs``) on the n-th
  step of every episode (``episode_length_buf >= max_episode_length``), unless the pole or cart
  terminates the episode earlier. ``None`` keeps the task's 5 s (300 steps at 120 Hz / 2).
* ``gym.make`` wraps the env in ``OrderEnforcing``: ``step`` before the first ``reset`` raises
  ``gymnasium.error.ResetNeeded`` (the wrappers of ``isaaclab_rl`` reset first or read
  ``.unwrapped``).
* ``compute_final_obs`` (default True here; Isaac Lab's default is False) makes the env write the
  pre-reset observations to ``extras["final_obs"]`` on steps with an autoreset.
"""

from __future__ import annotations

import math
import os
import pathlib
import sys
from typing import Any

import gymnasium as gym

from rlconform.libraries.isaaclab.assets import CARTPOLE_USD, prepare_assets
from rlconform.libraries.isaaclab.warp_init import init_warp_quietly

#: the registered Isaac Lab task ids
DIRECT_TASK = "Isaac-Cartpole-Direct"
MANAGER_TASK = "Isaac-Cartpole"
TASKS = (DIRECT_TASK, MANAGER_TASK)
#: Warp's kernel cache when $WARP_CACHE_PATH is unset
DEFAULT_WARP_CACHE = pathlib.Path("~/.cache/rlconform/warp")
#: ``launch_simulation`` arguments: no Kit, no window, no visualizer
LAUNCHER_ARGS: dict[str, Any] = {"headless": True, "visualizer": ["none"]}


def prepare_environment() -> pathlib.Path:
    """Set ``ISAACSIM_ASSET_ROOT`` and ``WARP_CACHE_PATH`` (unless set); return the asset root.

    Both are read once, when ``isaaclab.utils.assets`` and Warp are imported: call this first.
    Raises ``RuntimeError`` when isaaclab was already imported with an asset root lacking the
    Cartpole robot (the task would fail later with a less clear message).
    """
    os.environ.setdefault("WARP_CACHE_PATH", str(DEFAULT_WARP_CACHE.expanduser()))
    if not os.environ.get("ISAACSIM_ASSET_ROOT"):
        os.environ["ISAACSIM_ASSET_ROOT"] = str(prepare_assets())
    root = pathlib.Path(os.environ["ISAACSIM_ASSET_ROOT"])
    assets = sys.modules.get("isaaclab.utils.assets")
    if assets is not None:
        root = pathlib.Path(assets.NUCLEUS_ASSET_ROOT_DIR)
    if not (root / CARTPOLE_USD).is_file():
        raise RuntimeError(
            f"no {CARTPOLE_USD} under the Isaac Lab asset root {root} (ISAACSIM_ASSET_ROOT): call "
            "rlconform.libraries.isaaclab.assets.prepare_assets(root) for it, before isaaclab is imported"
        )
    return root


def episode_length_s(episode_steps: int, step_dt: float) -> float:
    """``episode_steps * step_dt``, nudged down where needed so that the env's
    ``max_episode_length = ceil(episode_length_s / step_dt)`` is exactly ``episode_steps``.

    The plain product rounds up for some n (n = 125 with the Cartpole's step_dt = 2/120 gives
    ``ceil(...) == 126``); the nudge is a few ulps (< 1e-12 s for n < 100000).
    """
    length = episode_steps * step_dt
    while math.ceil(length / step_dt) > episode_steps:
        length = math.nextafter(length, 0.0)
    return length


def make_cartpole(
    task: str,
    num_envs: int,
    device: str,
    *,
    compute_final_obs: bool = True,
    episode_steps: int | None = None,
    seed: int | None = 42,
) -> gym.Env[Any, Any]:
    """Build the real ``task`` (:data:`DIRECT_TASK` or :data:`MANAGER_TASK`) with Newton physics.

    Close the returned env before building another one in the same process (module docstring).
    """
    if task not in TASKS:
        raise ValueError(f"unknown Cartpole task {task!r}: expected one of {TASKS}")
    if episode_steps is not None and episode_steps < 1:
        raise ValueError(f"episode_steps must be positive, got {episode_steps}")
    prepare_environment()
    init_warp_quietly()  # before Isaac Lab's own wp.init() (after WARP_CACHE_PATH is set)
    import isaaclab_tasks  # noqa: F401  (registers the tasks)
    from isaaclab.app import launch_simulation
    from isaaclab.sim import SimulationContext
    from isaaclab_newton.physics import MJWarpSolverCfg, NewtonCfg
    from isaaclab_tasks.utils.parse_cfg import parse_env_cfg

    if SimulationContext.instance() is not None:
        # the envs' own errors differ (DirectRLEnv: "Simulation context already exists";
        # ManagerBasedEnv: AttributeError on builtins.ISAAC_LAUNCHED_FROM_TERMINAL outside Kit)
        raise RuntimeError(
            f"cannot build {task}: an Isaac Lab env is already open in this process "
            "(one SimulationContext per process): close it first"
        )
    cfg = parse_env_cfg(task, device=device, num_envs=num_envs)
    cfg.sim.physics = NewtonCfg(solver_cfg=MJWarpSolverCfg())
    cfg.seed = seed
    cfg.compute_final_obs = compute_final_obs
    if episode_steps is not None:
        cfg.episode_length_s = episode_length_s(episode_steps, cfg.sim.dt * cfg.decimation)
    # a dict copy: launch_simulation writes its normalized arguments back into it
    with launch_simulation(cfg, dict(LAUNCHER_ARGS)):
        env: gym.Env[Any, Any] = gym.make(task, cfg=cfg)
    if episode_steps is not None:
        length = env.unwrapped.max_episode_length  # type: ignore[attr-defined]
        if length != episode_steps:
            env.close()
            raise RuntimeError(f"episode_steps={episode_steps} gave max_episode_length={length} (rounding?)")
    return env


def make_cartpole_direct(num_envs: int, device: str) -> gym.Env[Any, Any]:
    """``Isaac-Cartpole-Direct`` (a ``DirectRLEnv``) with the :func:`make_cartpole` defaults."""
    return make_cartpole(DIRECT_TASK, num_envs, device)


def make_cartpole_manager(num_envs: int, device: str) -> gym.Env[Any, Any]:
    """``Isaac-Cartpole`` (a ``ManagerBasedRLEnv``) with the :func:`make_cartpole` defaults."""
    return make_cartpole(MANAGER_TASK, num_envs, device)
