"""A torch-vectorized reference env for Isaac Lab at scale, and its exact vectorized model.

Why: :class:`~rlconform.libraries.isaaclab.reference_env.IsaacLabReferenceEnv` steps one NumPy
reference env per sub-env, a Python loop that is fine for a handful of sub-envs and far too slow
for the 1024-4096 an Isaac Lab task runs. :class:`BatchStampEnv` keeps the same construction (a
subclass of ``isaaclab.envs.DirectRLEnv`` whose ``__init__`` is skipped, with the stand-in
:class:`~rlconform.libraries.isaaclab.reference_env.FakeSim` / ``FakeScene``) and leaves
DirectRLEnv's ``step``, ``reset``, ``_reset_envs_from_buffer``, ``_reset_idx`` (called through
``super()``), ``_compute_observations``, ``_configure_gym_env_spaces`` and ``close`` unmodified,
but its task hooks are a few tensor operations over all sub-envs: no Python loop over sub-envs.

The script (all float32, every value exactly representable):

* observation row of sub-env ``i``: ``[i, episode, step, echo, salt]``. ``episode`` counts the
  sub-env's episodes since the last full ``reset()`` (0-based); ``step`` is the number of steps
  taken in the episode (the real ``episode_length_buf``: 0 after a reset); ``echo`` is
  ``action[i, 0]`` of the step that produced the row (0.0 after a reset); ``salt`` is
  :func:`salt_of` ``(i, episode, seed)``: ``1 + (31*i + 17*episode + seed) % 1000`` where ``seed``
  is that of the latest ``reset(seed=...)``, 0 when the env was never reset with a seed.
* terminations: episode ``e`` of sub-env ``i`` terminates when ``step`` reaches
  :func:`term_len` ``= 1 + (7*i + 3*e) % (episode_steps + 3)``; lengths beyond the time limit mean
  the episode is truncated instead.
* time-outs: Isaac Lab's rule ``episode_length_buf >= max_episode_length`` with
  ``max_episode_length == episode_steps`` (``sim.dt * decimation == 1``, ``episode_length_s ==
  episode_steps``). A sub-env whose ``term_len == episode_steps`` is terminated AND timed out on
  the same step: both flags True, as in real Isaac Lab.
* reward: :func:`reward_of` ``= (i % 4) + step_after / 8`` (``step_after``: the step count the
  step reached, before any autoreset).

:class:`BatchStampModel` checks every ``reset``/``step`` exactly with the same closed forms, in
pure torch, and reports :class:`~rlconform.libraries.isaaclab.findings.Finding` s whose ``bad`` mask names
the offending sub-envs. The planted variants (:data:`VARIANTS`) show what it catches.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any

import torch

from rlconform.libraries.isaaclab.findings import Finding, hits
from rlconform.libraries.isaaclab.reference_env import (
    BatchActionReceipt,
    ReferenceEnvCfg,
    check_isaaclab,
    install_direct_rl_env_state,
    receipt_of,
)

check_isaaclab()

from isaaclab.envs import DirectRLEnv  # noqa: E402

OBS_DIM = 5
#: observation columns
ENV, EPISODE, STEP, ECHO, SALT = range(OBS_DIM)

RESET_SPEC = "isaaclab.reset"
TRANSITIONS_SPEC = "isaaclab.transitions"
AUTORESET_SPEC = "isaaclab.autoreset"
FLAGS_SPEC = "isaaclab.flags"
FINAL_OBS_SPEC = "isaaclab.final_obs"

#: how many action receipts ``action_log`` keeps (the oldest are dropped)
ACTION_LOG_LIMIT = 4096


# ------------------------------------------------------------------ the script, shared by env and model
def term_len(env_ids: torch.Tensor, episode: torch.Tensor, episode_steps: int) -> torch.Tensor:
    """Steps after which episode ``episode`` of sub-env ``env_ids`` terminates (int64)."""
    return 1 + torch.remainder(env_ids.long() * 7 + episode.long() * 3, episode_steps + 3)


def salt_of(env_ids: torch.Tensor, episode: torch.Tensor, seed: int | None) -> torch.Tensor:
    """float32 salt of (sub-env, episode) under ``seed``: 1..1000 when seeded, 0 when not."""
    if seed is None:
        return torch.zeros(env_ids.shape, dtype=torch.float32, device=env_ids.device)
    return (1 + torch.remainder(env_ids.long() * 31 + episode.long() * 17 + int(seed), 1000)).to(torch.float32)


def reward_of(env_ids: torch.Tensor, step_after: torch.Tensor) -> torch.Tensor:
    """float32 reward of a step that reached ``step_after``: exact (a dyadic fraction)."""
    return torch.remainder(env_ids.long(), 4).to(torch.float32) + step_after.to(torch.float32) / 8


# ------------------------------------------------------------------ the env
class BatchStampEnv(DirectRLEnv):  # type: ignore[misc]
    """Vectorized scripted sub-envs behind Isaac Lab's real DirectRLEnv step/reset; see the module."""

    def __init__(
        self,
        num_envs: int,
        device: str = "cpu",
        *,
        compute_final_obs: bool = True,
        episode_steps: int = 8,
        action_dim: int = 2,
    ) -> None:
        # DirectRLEnv.__init__ is deliberately not called (no simulator), as in IsaacLabReferenceEnv
        self._is_closed = True
        if num_envs < 1:
            raise ValueError("at least one sub-env is needed")
        if episode_steps < 1 or action_dim < 1:
            raise ValueError("episode_steps and action_dim must be positive")
        cfg = ReferenceEnvCfg()  # step_dt = sim.dt * decimation = 1.0
        cfg.scene.num_envs = num_envs
        cfg.sim.device = device
        cfg.compute_final_obs = compute_final_obs
        cfg.observation_space = OBS_DIM
        cfg.action_space = action_dim
        cfg.episode_length_s = float(episode_steps)  # max_episode_length == episode_steps
        install_direct_rl_env_state(self, cfg)
        if self.max_episode_length != episode_steps:  # pragma: no cover - a cfg change upstream
            raise RuntimeError(f"max_episode_length {self.max_episode_length} != episode_steps {episode_steps}")
        # task state, one entry per sub-env
        self.episode_steps = episode_steps
        self.action_dim = action_dim
        #: receipts of the action batches ``_pre_physics_step`` received (bounded), when ``log_actions``
        self.log_actions = True
        self.action_log: deque[BatchActionReceipt] = deque(maxlen=ACTION_LOG_LIMIT)
        self._env_ids = torch.arange(num_envs, device=self.device, dtype=torch.long)
        self._env_col = self._env_ids.to(torch.float32)
        self._episode = torch.zeros(num_envs, device=self.device, dtype=torch.long)
        self._echo = torch.zeros(num_envs, device=self.device, dtype=torch.float32)
        #: sub-envs done at the current step: their ``_reset_idx`` is an autoreset (episode + 1)
        self._autoreset = torch.zeros(num_envs, device=self.device, dtype=torch.bool)
        self._seed: int | None = None
        self._is_closed = False

    # ------------------------------------------------------------ hooks the real code calls
    def seed(self, seed: int = -1) -> int:  # type: ignore[override]
        """The real ``reset(seed)`` calls this before ``_reset_idx``: the salt follows the seed."""
        if seed is not None and seed != -1:
            self._seed = int(seed)
        return int(DirectRLEnv.seed(seed))

    def _task_actions(self, actions: torch.Tensor) -> torch.Tensor:
        """The actions the task applies (planted variants override)."""
        return actions

    def _pre_physics_step(self, actions: Any) -> None:
        if self.log_actions:
            self.action_log.append(receipt_of(actions))
        if tuple(actions.shape) != (self.num_envs, self.action_dim):
            raise ValueError(f"actions of shape {tuple(actions.shape)} for {self.num_envs} envs x {self.action_dim}")
        calls = self.sim.calls  # the stand-in sim's call record: keep it bounded at scale
        if len(calls) > 1024:
            del calls[:-256]
        self.actions = actions
        self._echo.copy_(self._task_actions(actions)[:, 0])
        self._autoreset.zero_()

    def _apply_action(self) -> None:
        pass

    def _time_outs(self) -> torch.Tensor:
        """Isaac Lab's time-out rule (Cartpole-Direct, ``mdp.time_out``)."""
        return self.episode_length_buf >= self.max_episode_length

    def _get_dones(self) -> tuple[torch.Tensor, torch.Tensor]:
        terminated = self.episode_length_buf == term_len(self._env_ids, self._episode, self.episode_steps)
        time_outs = self._time_outs()
        torch.logical_or(terminated, time_outs, out=self._autoreset)
        return terminated, time_outs

    def _get_rewards(self) -> torch.Tensor:
        return reward_of(self._env_ids, self.episode_length_buf)

    def _get_observations(self) -> dict[str, Any]:
        rows = torch.stack(
            (
                self._env_col,
                self._episode.to(torch.float32),
                self.episode_length_buf.to(torch.float32),
                self._echo,
                salt_of(self._env_ids, self._episode, self._seed),
            ),
            dim=1,
        )
        return {"policy": rows}

    def _reset_idx(self, env_ids: Any) -> None:
        super()._reset_idx(env_ids)  # the real one: scene.reset, noise models, episode_length_buf
        ids = torch.as_tensor(env_ids, device=self.device).long()
        chosen = torch.zeros(self.num_envs, dtype=torch.bool, device=self.device)
        chosen[ids] = True
        # an autoreset (done at this step) starts the next episode; any other reset (reset()) episode 0
        episode = torch.where(self._autoreset, self._episode + 1, torch.zeros_like(self._episode))
        self._episode = torch.where(chosen, episode, self._episode)
        self._echo.masked_fill_(chosen, 0.0)
        self._autoreset.masked_fill_(chosen, False)


class EarlyTimeOut(BatchStampEnv):
    """Planted bug: time-out one step early (``>= max_episode_length - 1``)."""

    def _time_outs(self) -> torch.Tensor:
        return self.episode_length_buf >= self.max_episode_length - 1


class StaleFinalObs(BatchStampEnv):
    """Planted bug: on a done step ``extras["final_obs"]`` holds the observation of one step
    earlier (the one the previous step returned), not the terminal one."""

    def _reset_envs_from_buffer(self) -> Any:
        earlier = {"policy": self.obs_buf["policy"].clone()}  # DirectRLEnvCfg has no state_space here
        reset_env_ids = super()._reset_envs_from_buffer()
        if self.cfg.compute_final_obs and reset_env_ids is not None and len(reset_env_ids) > 0:
            self.extras["final_obs"] = earlier
        return reset_env_ids


class RolledActions(BatchStampEnv):
    """Planted bug: the task applies the actions rolled by one sub-env (sub-env ``i`` gets row
    ``i - 1``). Invisible with one sub-env."""

    def _task_actions(self, actions: torch.Tensor) -> torch.Tensor:
        return torch.roll(actions, 1, 0)


class Float64Rewards(BatchStampEnv):
    """Planted bug: the task computes its rewards in float64 (Isaac Lab's are float32)."""

    def _get_rewards(self) -> torch.Tensor:
        return super()._get_rewards().to(torch.float64)


class NumpyActions(BatchStampEnv):
    """Planted bug: ``step`` takes the action through NumPy and back before the real
    ``DirectRLEnv.step`` (values and dtype survive; the storage, and on CUDA the device, do not)."""

    def step(self, action: Any) -> Any:
        return super().step(torch.from_numpy(action.detach().cpu().numpy().copy()))


class NoTimeLimit(BatchStampEnv):
    """Planted bug: the task never times out; episodes run past ``max_episode_length``."""

    def _time_outs(self) -> torch.Tensor:
        return torch.zeros_like(self.reset_time_outs)


class KeptEpisodeLength(BatchStampEnv):
    """Planted bug: an autoreset leaves ``episode_length_buf`` as it was (a task whose
    ``_reset_idx`` forgets the base class's bookkeeping)."""

    def _reset_idx(self, env_ids: Any) -> None:
        lengths = self.episode_length_buf.clone()
        super()._reset_idx(env_ids)
        self.episode_length_buf.copy_(torch.where(self.reset_buf, lengths, self.episode_length_buf))


class FourTuple(BatchStampEnv):
    """Planted bug: ``step`` returns ``(obs, reward, done, extras)``, Gym's old four-tuple."""

    def step(self, action: Any) -> Any:
        obs, reward, terminated, time_outs, extras = super().step(action)
        return obs, reward, terminated | time_outs, extras


class TimeOutAsTermination(BatchStampEnv):
    """Planted bug: the time-out is reported as a termination (``terminated=True``,
    ``time_outs=False`` at ``max_episode_length``)."""

    def _get_dones(self) -> tuple[torch.Tensor, torch.Tensor]:
        terminated, time_outs = super()._get_dones()
        return terminated | time_outs, torch.zeros_like(time_outs)


class RewardAfterReset(BatchStampEnv):
    """Planted bug: the rewards are recomputed after the ending sub-envs are reset, so an ending
    sub-env's last reward scores the next episode's first state."""

    def _reset_envs_from_buffer(self) -> Any:
        reset_env_ids = super()._reset_envs_from_buffer()
        if reset_env_ids is not None and len(reset_env_ids) > 0:
            self.reward_buf = self._get_rewards()
        return reset_env_ids


class StaleResetObs(BatchStampEnv):
    """Planted bug: an ending sub-env's returned row is its observation from before the reset
    (the ended episode's last), not the next episode's first."""

    def _reset_envs_from_buffer(self) -> Any:
        self._pre_reset = self._get_observations()["policy"].clone()
        return super()._reset_envs_from_buffer()

    def step(self, action: Any) -> Any:
        obs, reward, terminated, time_outs, extras = super().step(action)
        done = (terminated | time_outs).unsqueeze(1)
        obs["policy"] = torch.where(done, self._pre_reset, obs["policy"])
        return obs, reward, terminated, time_outs, extras


VARIANTS: dict[str, type[BatchStampEnv]] = {
    "reference": BatchStampEnv,
    "early_time_out": EarlyTimeOut,
    "stale_final_obs": StaleFinalObs,
    "rolled_actions": RolledActions,
    "float64_rewards": Float64Rewards,
    "numpy_actions": NumpyActions,
    "no_time_limit": NoTimeLimit,
    "kept_episode_length": KeptEpisodeLength,
    "four_tuple": FourTuple,
    "time_out_as_termination": TimeOutAsTermination,
    "reward_after_reset": RewardAfterReset,
    "stale_reset_obs": StaleResetObs,
}


def make_batch_stamp_env(num_envs: int, device: str = "cpu", **kw: Any) -> BatchStampEnv:
    """``num_envs`` scripted sub-envs on ``device``; ``variant=`` picks one of :data:`VARIANTS`,
    the other keywords go to :class:`BatchStampEnv`."""
    variant = kw.pop("variant", "reference")
    return VARIANTS[variant](num_envs, device, **kw)


# ------------------------------------------------------------------ the model
def _report(findings: list[Finding], spec: str, bad: torch.Tensor, what: str) -> None:
    """Append a candidate finding masked by ``bad``; no host sync here (see :func:`hits`)."""
    findings.append(Finding(spec, f"sub-env(s) {what}", bad))


def _shape_findings(num_envs: int, named: dict[str, tuple[str, torch.Tensor | None]]) -> list[Finding]:
    """Findings (no mask) for observation tensors not of shape (num_envs, 5)."""
    out = []
    for name, (spec, tensor) in named.items():
        if tensor is not None and tuple(tensor.shape) != (num_envs, OBS_DIM):
            out.append(Finding(spec, f"{name} has shape {tuple(tensor.shape)}, expected ({num_envs}, {OBS_DIM})"))
    return out


def _rows_differ(actual: torch.Tensor, expected: torch.Tensor, cols: slice) -> torch.Tensor:
    return (actual[:, cols] != expected[:, cols]).any(dim=1)


class BatchStampModel:
    """Exact model of :class:`BatchStampEnv` (correct variant), checked in pure torch.

    Feed it ``reset_findings`` after each ``reset`` and ``step_findings`` after each ``step`` with
    clones of the outputs (the env's buffers are reused in place). ``final_obs`` is
    ``extras["final_obs"]["policy"]`` when the env wrote it at THIS step, else None. The model
    reads the episode and step of each sub-env from ``prev_obs`` (the previous row, itself
    checked), and takes done-ness from the env's own flags (Isaac Lab resets where its flags say;
    wrong flags are reported under ``isaaclab.flags``).

    Specs, each reported at most once per call with the mask of offending sub-envs:

    * ``isaaclab.reset``: every row after ``reset(seed)`` is ``(i, 0, 0, 0, salt(i, 0))``.
    * ``isaaclab.transitions``: the reward is the scripted one; a not-done row that continues its
      episode has the step, echo (``actions[:, 0]``) and salt of the step; a done row of
      ``final_obs`` that is this step's terminal row by (env, episode, step) has its echo and salt.
    * ``isaaclab.autoreset``: a done row of ``obs`` is ``(i, episode + 1, 0, 0, new salt)``; a
      not-done row keeps (env, episode).
    * ``isaaclab.flags``: ``terminated`` exactly where ``step_after == term_len``; ``time_outs``
      exactly where ``step_after >= episode_steps``.
    * ``isaaclab.final_obs``: with ``compute_final_obs``, a step with any done sub-env must write
      ``final_obs`` and its done rows must be this step's terminal rows by (env, episode, step);
      ``final_obs`` written on a step with no done sub-env is reported too. Without
      ``compute_final_obs`` the env must not write ``final_obs`` (expected None), and the terminal
      observations of done sub-envs are lost: the model cannot check them and reports nothing
      for them (their flags, rewards and fresh rows are still checked).
    """

    def __init__(
        self, num_envs: int, *, episode_steps: int = 8, compute_final_obs: bool = True, device: str = "cpu"
    ) -> None:
        self.num_envs = num_envs
        self.episode_steps = episode_steps
        self.compute_final_obs = compute_final_obs
        self.device = torch.device(device)
        self.seed: int | None = None
        #: the env modelled, when known: its seed is the one it was given, by reset(seed=...) or by
        #: seed() (what SB3's and RSL-RL's wrappers call before an unseeded reset)
        self.env: BatchStampEnv | None = None
        self._env_ids = torch.arange(num_envs, device=self.device, dtype=torch.long)
        self._env_col = self._env_ids.to(torch.float32)

    @classmethod
    def for_env(cls, env: BatchStampEnv) -> BatchStampModel:
        """The model matching ``env``'s configuration (not its variant)."""
        model = cls(
            env.num_envs,
            episode_steps=env.episode_steps,
            compute_final_obs=bool(env.cfg.compute_final_obs),
            device=str(env.device),
        )
        model.env = env
        return model

    def _rows(self, episode: torch.Tensor, step: torch.Tensor, echo: torch.Tensor) -> torch.Tensor:
        return torch.stack(
            (
                self._env_col,
                episode.to(torch.float32),
                step.to(torch.float32),
                echo.to(torch.float32),
                salt_of(self._env_ids, episode, self.seed),
            ),
            dim=1,
        )

    def reset_findings(self, obs: torch.Tensor, seed: int | None) -> list[Finding]:
        """Candidate findings after a reset, their masks unread: :func:`hits` keeps those that hold,
        with one host sync, and the contract monitor reads them together with its own."""
        if self.env is not None:
            self.seed = self.env._seed
        elif seed is not None:
            self.seed = int(seed)
        findings = _shape_findings(self.num_envs, {"reset obs": (RESET_SPEC, obs)})
        if findings:
            return findings
        zeros = torch.zeros(self.num_envs, dtype=torch.long, device=self.device)
        expected = self._rows(zeros, zeros, zeros)
        _report(findings, RESET_SPEC, _rows_differ(obs, expected, slice(None)), "not (env, 0, 0, 0, salt) after reset")
        return findings

    def step_findings(
        self,
        prev_obs: torch.Tensor,
        actions: torch.Tensor,
        obs: torch.Tensor,
        reward: torch.Tensor,
        terminated: torch.Tensor,
        time_outs: torch.Tensor,
        final_obs: torch.Tensor | None,
    ) -> list[Finding]:
        """Candidate findings after a step, their masks unread (see :meth:`reset_findings`)."""
        findings = _shape_findings(
            self.num_envs,
            {
                "prev_obs": (TRANSITIONS_SPEC, prev_obs),
                "obs": (TRANSITIONS_SPEC, obs),
                "final_obs": (FINAL_OBS_SPEC, final_obs),
            },
        )
        if findings:
            return findings
        episode = prev_obs[:, EPISODE].long()
        step_after = prev_obs[:, STEP].long() + 1
        terminal = self._rows(episode, step_after, actions[:, 0])  # this step's terminal rows
        fresh = self._rows(episode + 1, torch.zeros_like(episode), torch.zeros_like(self._env_col))
        done = terminated.bool() | time_outs.bool()
        same_episode = ~_rows_differ(obs, terminal, slice(ENV, EPISODE + 1))

        # isaaclab.transitions
        bad = reward.to(torch.float32) != reward_of(self._env_ids, step_after)
        bad |= ~done & same_episode & _rows_differ(obs, terminal, slice(STEP, None))
        if final_obs is not None:
            is_terminal = ~_rows_differ(final_obs, terminal, slice(ENV, STEP + 1))
            bad |= done & is_terminal & _rows_differ(final_obs, terminal, slice(ECHO, None))
        _report(findings, TRANSITIONS_SPEC, bad, "with a wrong reward or transition row")

        # isaaclab.autoreset
        bad = (done & _rows_differ(obs, fresh, slice(None))) | (~done & ~same_episode)
        _report(findings, AUTORESET_SPEC, bad, "not autoreset to a fresh episode when done, or left their episode")

        # isaaclab.flags
        expected_terminated = step_after == term_len(self._env_ids, episode, self.episode_steps)
        expected_time_outs = step_after >= self.episode_steps
        bad = (terminated.bool() != expected_terminated) | (time_outs.bool() != expected_time_outs)
        _report(findings, FLAGS_SPEC, bad, "with wrong terminated/time_outs flags")

        # isaaclab.final_obs
        if self.compute_final_obs:
            if final_obs is None:
                bad = done
                what = "done without final_obs written at this step"
            else:
                is_terminal = ~_rows_differ(final_obs, terminal, slice(ENV, STEP + 1))
                bad = (done & ~is_terminal) | (~done.any() & torch.ones_like(done))
                what = "done with a final_obs row that is not this step's terminal row (or final_obs without a done)"
        else:
            bad = torch.full_like(done, final_obs is not None)
            what = "given a final_obs although the env does not compute final obs"
        _report(findings, FINAL_OBS_SPEC, bad, what)
        return findings


# ------------------------------------------------------------------ a driver
def run_with_model(
    env: BatchStampEnv,
    steps: int,
    *,
    seed: int | None = 3,
    generator: torch.Generator | None = None,
    model: BatchStampModel | None = None,
    on_step: Callable[[int, list[Finding]], None] | None = None,
) -> list[Finding]:
    """``reset(seed)`` then ``steps`` steps of uniform random actions in [-1, 1) (float32, from
    ``generator``), each output checked by ``model`` (default :meth:`BatchStampModel.for_env`).
    Returns all findings. ``final_obs`` counts as written at a step when ``extras["final_obs"]``
    is a different object than before the step (DirectRLEnv writes a fresh dict)."""
    model = model or BatchStampModel.for_env(env)
    generator = generator or torch.Generator().manual_seed(0)
    obs, extras = env.reset(seed=seed)
    findings = hits(model.reset_findings(obs["policy"].clone(), seed))
    prev = obs["policy"].clone()
    last_final = extras.get("final_obs")
    for t in range(steps):
        actions = (torch.rand((env.num_envs, env.action_dim), generator=generator) * 2 - 1).to(env.device)
        obs, reward, terminated, time_outs, extras = env.step(actions)
        written = extras.get("final_obs")
        final = written["policy"].clone() if written is not None and written is not last_final else None
        last_final = written
        current = obs["policy"].clone()
        found = hits(
            model.step_findings(prev, actions, current, reward.clone(), terminated.clone(), time_outs.clone(), final)
        )
        if on_step is not None:
            on_step(t, found)
        findings += found
        prev = current
    return findings
