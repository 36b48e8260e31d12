"""The contract monitor: every reset and step of an Isaac Lab env, checked in torch as it happens.

Why a tap: the monitor replaces ``reset`` and ``step`` on the *unwrapped* env instance, so the
checks see the env's own outputs whoever drives it: rlconform directly, or any wrapper (SB3,
RSL-RL, skrl, TorchRL) whose calls end in the env. The clones it keeps of each step's outputs are
the truth a wrapper's outputs are compared with (:mod:`rlconform.libraries.isaaclab.wrappers`).

What holds for any env following ``DirectRLEnv``'s contract (isaaclab 3.0.0), checked with a few
tensor operations per call whatever the number of sub-envs, and one host synchronisation per call
to learn which checks failed:

* ``isaaclab.api``: ``reset`` returns ``(obs, extras)``, ``step`` ``(obs, reward, terminated,
  time_outs, extras)``, ``obs`` a dict with a ``"policy"`` tensor and ``extras`` a dict.
* ``isaaclab.outputs_on_device``: those tensors are on ``env.device`` with the documented dtypes
  (observation space's, reward float32, flags bool) and batch shapes.
* ``isaaclab.actions_on_device``: the task gets the action as a torch tensor on the device with
  the action space's dtype and shape, the caller's own storage when it already was one, and on
  CUDA without a host synchronisation on the way (:mod:`rlconform.libraries.isaaclab.probe`).
* ``isaaclab.time_limit``: no episode runs past ``env.max_episode_length`` steps without ending
  (a task may truncate earlier for its own reasons; the reference env's exact model checks the
  step it times out at).
* ``isaaclab.time_outs``: an episode that ends when its ``episode_length_buf`` reaches
  ``max_episode_length`` is reported in ``time_outs`` (terminated too where it also terminated):
  Isaac Lab's time-out rule is ``episode_length_buf >= max_episode_length``, computed apart from
  the termination. A task that times out one step earlier (``max_episode_length - 1``, as some
  contributed tasks do) is not judged there: a termination one step before the limit may be real.
* ``isaaclab.autoreset``: a sub-env that ends is reset in the same step (its
  ``episode_length_buf`` is 0 after the step), one that does not end keeps counting, and the
  observation returned for an ending sub-env was computed after its reset, not before
  (:mod:`~rlconform.libraries.isaaclab.order`: read from the task hooks, so any env with
  ``_reset_idx`` and ``_get_observations`` is judged, decodable or not; where they do not show
  it, :mod:`~rlconform.libraries.isaaclab.order_probe` replays the example, see
  :func:`rlconform.libraries.isaaclab.torch_run.judge_order`).
* ``isaaclab.reward_before_reset``: the reward returned for an ending sub-env was computed (by
  ``_get_rewards``) before its reset, from the state its last step reached.
* ``isaaclab.final_obs``: a step in which some sub-env ends returns its terminal observation in
  ``extras["final_obs"]["policy"]``, written in that step (not left from an earlier one) and
  computed before the sub-env's reset, not after it (read from the task hooks, as for
  ``isaaclab.autoreset``).
* ``isaaclab.returned_data_stable``: what a call returned does not change afterwards (a caller
  that stores the tensors without cloning keeps what it was given).

An exact model (the reference envs': :class:`rlconform.libraries.isaaclab.batch_env.BatchStampModel`)
adds its own findings with the same mechanism.
"""

from __future__ import annotations

import contextlib
import inspect
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

import torch

from rlconform.libraries.isaaclab.findings import Finding, hits
from rlconform.libraries.isaaclab.order import StepOrder
from rlconform.libraries.isaaclab.probe import ActionProbe, ActionReceipt

API = "isaaclab.api"
OUTPUTS = "isaaclab.outputs_on_device"
ACTIONS = "isaaclab.actions_on_device"
TIME_LIMIT = "isaaclab.time_limit"
TIME_OUTS = "isaaclab.time_outs"
AUTORESET = "isaaclab.autoreset"
REWARD_ORDER = "isaaclab.reward_before_reset"
FINAL_OBS = "isaaclab.final_obs"
STABLE = "isaaclab.returned_data_stable"
#: the checks the monitor itself makes, in report order
MONITOR_SPECS = (API, OUTPUTS, ACTIONS, TIME_LIMIT, TIME_OUTS, AUTORESET, REWARD_ORDER, FINAL_OBS, STABLE)
REWARD_DTYPE = torch.float32
FLAG_DTYPE = torch.bool
#: findings kept per spec (the count of all of them is kept too)
KEEP = 3


class ExactModel(Protocol):
    """The checks only a decodable reference env allows. Each returns candidate findings whose
    masks the monitor reads together with its own (one host sync per call)."""

    def reset_findings(self, obs: torch.Tensor, seed: int | None) -> list[Finding]: ...

    def step_findings(
        self,
        prev_obs: torch.Tensor,
        actions: torch.Tensor,
        obs: torch.Tensor,
        reward: torch.Tensor,
        terminated: torch.Tensor,
        time_outs: torch.Tensor,
        final_obs: torch.Tensor | None,
    ) -> list[Finding]: ...


@dataclass(frozen=True)
class Violation:
    """One broken spec at one call, with the sub-envs that broke it."""

    spec: str
    call: int
    source: str
    message: str
    envs: tuple[int, ...] = ()
    count: int = 0

    def render(self) -> str:
        where = ""
        if self.envs:
            more = f" and {self.count - len(self.envs)} more" if self.count > len(self.envs) else ""
            where = f" (sub-envs {', '.join(map(str, self.envs))}{more})"
        return f"call {self.call} {self.source}: {self.message}{where}"


@dataclass
class StepTruth:
    """Clones of what the env returned in its last step: the truth wrappers are compared with."""

    obs: torch.Tensor
    reward: torch.Tensor
    terminated: torch.Tensor
    time_outs: torch.Tensor
    #: ``extras["final_obs"]["policy"]`` when the env wrote it in this step
    final_obs: torch.Tensor | None
    done: torch.Tensor
    receipts: list[ActionReceipt] = field(default_factory=list)


def same_device(a: Any, b: torch.device) -> bool:
    """``cuda`` and ``cuda:0`` name the same device when 0 is the current one."""
    try:
        dev = torch.device(a)
    except (TypeError, RuntimeError):
        return False
    if dev.type != b.type:
        return False
    if dev.type != "cuda":
        return True
    current = torch.cuda.current_device() if torch.cuda.is_available() else 0
    return (dev.index if dev.index is not None else current) == (b.index if b.index is not None else current)


def tensor_problem(name: str, value: Any, device: torch.device, dtype: Any, shape: tuple[int, ...]) -> str | None:
    """Why ``value`` is not a tensor on ``device`` of ``dtype`` and ``shape`` (None when it is)."""
    if not isinstance(value, torch.Tensor):
        cls = type(value)
        return f"{name} is a {cls.__module__}.{cls.__qualname__}; documented: a torch.Tensor on {device}"
    if not same_device(value.device, device):
        return f"{name} is on {value.device}; the env's device is {device}"
    if dtype is not None and value.dtype != dtype:
        return f"{name} has dtype {value.dtype}; documented: {dtype}"
    if tuple(value.shape) != shape:
        return f"{name} has shape {tuple(value.shape)}; documented: {shape}"
    return None


def torch_dtype(space: Any) -> torch.dtype | None:
    dtype = getattr(space, "dtype", None)
    if dtype is None:
        return None
    return getattr(torch, str(dtype), None)


class ContractMonitor:
    """Taps ``env.unwrapped``'s reset/step and checks every call; see the module docstring."""

    def __init__(self, env: Any, *, model: ExactModel | None = None) -> None:
        u = getattr(env, "unwrapped", env)
        self.env = env
        self.unwrapped = u
        self.model = model
        self.num_envs = int(u.num_envs)
        self.device = torch.device(u.device)
        cfg = getattr(u, "cfg", None)
        # DirectRLEnv's switch; an env following the contract without a cfg promises terminal
        # observations like one with compute_final_obs=True (a missing one fails either way, with
        # its own message)
        declared = getattr(cfg, "compute_final_obs", None)
        self.has_final_obs_switch = declared is not None
        self.compute_final_obs = bool(declared) if declared is not None else True
        self.action_noise = getattr(cfg, "action_noise_model", None) is not None
        limit = getattr(u, "max_episode_length", None)
        self.max_episode_length = None if limit is None else int(limit)
        single_obs = getattr(u, "single_observation_space", None)
        obs_space = single_obs["policy"] if single_obs is not None and "policy" in single_obs.spaces else None
        self.obs_dtype = torch_dtype(obs_space)
        self.obs_shape = (self.num_envs, *obs_space.shape) if obs_space is not None else None
        act_space = getattr(u, "single_action_space", None)
        self.action_dtype = torch_dtype(act_space)
        self.action_shape = (self.num_envs, *act_space.shape) if act_space is not None else None
        self.on_cuda = self.device.type == "cuda"
        self._syncs: list[warnings.WarningMessage] = []
        self.probe = ActionProbe(u, sync_count=lambda: len(self._syncs))
        self.violations: list[Violation] = []
        self.counts: dict[str, int] = {}
        self.steps_checked = 0
        self.env_steps_checked = 0
        self.calls = 0
        self.episode_steps = torch.zeros(self.num_envs, dtype=torch.long, device=self.device)
        self.prev_obs: torch.Tensor | None = None
        self.last: StepTruth | None = None
        self._held: list[tuple[str, int, Any, torch.Tensor]] = []
        self._last_final: Any = None
        self.order = StepOrder(u, self.num_envs, self.device)
        self._orig_step = u.step
        self._orig_reset = u.reset
        u.step = self.step
        u.reset = self.reset
        self.notes: list[str] = []
        #: notes that concern one spec only
        self.spec_notes: dict[str, list[str]] = {}
        if self.probe.where is None:
            self.notes.append(
                "the env has neither _pre_physics_step nor action_manager.process_action: "
                "the actions the task receives were not seen"
            )
        if self.action_noise:
            self.notes.append("cfg.action_noise_model is set: the task gets a noisy copy, storage not compared")

    # ----------------------------------------------------------------------------- the taps
    def reset(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        source = f"env.reset({_call_args(args, kwargs)})"
        self.probe.take()
        self._check_held(source)
        result = self._orig_reset(*args, **kwargs)
        findings: list[Finding] = []
        bound = self._reset_arguments(args, kwargs)
        rows = self._rows(bound.get("env_ids"))
        if not (isinstance(result, tuple) and len(result) == 2):
            findings.append(Finding(API, f"returned {_shape_of(result)}; documented: (obs, extras)"))
            self._report(findings, source)
            return result
        obs = self._obs(result[0], result[1], findings)
        if obs is not None:
            if rows is None:
                self.episode_steps.zero_()
                self.prev_obs = obs.clone()
            else:
                self.episode_steps[rows] = 0
                if self.prev_obs is not None:
                    self.prev_obs[rows] = obs[rows]
            self._hold(source, {"obs['policy']": obs})
            if self.model is not None and rows is None:
                findings += self.model.reset_findings(self.prev_obs, bound.get("seed"))  # type: ignore[arg-type]
        self._report(findings, source)
        return result

    def step(self, action: Any) -> Any:
        self.calls += 1
        source = f"env.step(actions #{self.steps_checked + 1})"
        self.probe.take()
        self._check_held(source)
        length = getattr(self.unwrapped, "episode_length_buf", None)
        length_before = (
            length.detach().clone()
            if isinstance(length, torch.Tensor) and tuple(length.shape) == (self.num_envs,)
            else None
        )
        self.order.begin()
        try:
            with self._sync_watch():
                result = self._orig_step(action)
        finally:
            self.order.end()
        receipts = self.probe.take()
        findings: list[Finding] = []
        if not (isinstance(result, tuple) and len(result) == 5):
            findings.append(Finding(API, f"returned {_shape_of(result)}; documented: a 5-tuple"))
            self._report(findings, source)
            return result
        obs_dict, reward, terminated, time_outs, extras = result
        obs = self._obs(obs_dict, extras, findings)
        n = (self.num_envs,)
        for name, value, dtype in (
            ("reward", reward, REWARD_DTYPE),
            ("terminated", terminated, FLAG_DTYPE),
            ("time_outs", time_outs, FLAG_DTYPE),
        ):
            problem = tensor_problem(name, value, self.device, dtype, n)
            if problem:
                findings.append(Finding(OUTPUTS, problem))
        findings += self._check_actions(action, receipts)
        flags = (reward, terminated, time_outs)
        if obs is None or not all(isinstance(v, torch.Tensor) and tuple(v.shape) == n for v in flags):
            self._report(findings, source)  # nothing per sub-env can be read from this step
            return result
        term = terminated.to(self.device).bool().clone()
        trunc = time_outs.to(self.device).bool().clone()
        rew = reward.detach().clone()
        done = term | trunc
        self.episode_steps += 1
        if self.max_episode_length is not None:
            # only running past the limit: a task may truncate earlier for its own reasons
            findings.append(
                Finding(
                    TIME_LIMIT,
                    f"ran past max_episode_length={self.max_episode_length} steps without ending",
                    (self.episode_steps >= self.max_episode_length) & ~done,
                )
            )
            # the step each episode reached, by the env's own count where it keeps one
            reached = self.episode_steps if length_before is None else length_before.to(self.device) + 1
            findings.append(
                Finding(
                    TIME_OUTS,
                    f"ended when its episode_length_buf reached max_episode_length={self.max_episode_length}, "
                    "with time_outs False (terminated True): a time-out reported as a termination, which a "
                    "learner does not bootstrap (Isaac Lab's rule: time_outs = episode_length_buf >= "
                    "max_episode_length, set also where the episode terminates on that step)",
                    done & ~trunc & (reached >= self.max_episode_length),
                )
            )
        length = getattr(self.unwrapped, "episode_length_buf", None)
        if isinstance(length, torch.Tensor) and tuple(length.shape) == n:
            findings.append(
                Finding(AUTORESET, "ended, but its episode_length_buf is not 0 after the step", done & (length != 0))
            )
            findings.append(
                Finding(
                    AUTORESET,
                    "did not end, but its episode_length_buf is not the episode's step count",
                    ~done & (length != self.episode_steps),
                )
            )
        findings += self.order.findings(REWARD_ORDER, AUTORESET, rew, obs, done)
        final = self._final_obs(extras, done, findings)
        if final is not None:
            findings += self.order.final_obs_findings(FINAL_OBS, final, done)
        if self.model is not None and self.prev_obs is not None and isinstance(action, torch.Tensor):
            findings += self.model.step_findings(self.prev_obs, action.detach(), obs, rew, term, trunc, final)
        self.episode_steps[done] = 0
        self.prev_obs = obs.clone()
        self.last = StepTruth(obs.clone(), rew, term, trunc, final, done, receipts)
        self._hold(source, {"obs['policy']": obs, "reward": reward, "terminated": terminated, "time_outs": time_outs})
        self.steps_checked += 1
        self.env_steps_checked += self.num_envs
        self._report(findings, source)
        return result

    # --------------------------------------------------------------------------------- checks
    def _obs(self, obs_dict: Any, extras: Any, findings: list[Finding]) -> torch.Tensor | None:
        if not isinstance(extras, dict):
            findings.append(Finding(API, f"extras is a {type(extras).__name__}; documented: a dict"))
        if not isinstance(obs_dict, dict) or "policy" not in obs_dict:
            findings.append(Finding(API, f"observations are a {type(obs_dict).__name__}, not a dict with 'policy'"))
            return None
        obs = obs_dict["policy"]
        shape = self.obs_shape if self.obs_shape is not None else tuple(getattr(obs, "shape", ()))
        problem = tensor_problem("obs['policy']", obs, self.device, self.obs_dtype, shape)
        if problem:
            findings.append(Finding(OUTPUTS, problem))
        if not isinstance(obs, torch.Tensor) or tuple(obs.shape[:1]) != (self.num_envs,):
            return None
        return obs.detach()

    def _check_actions(self, action: Any, receipts: list[ActionReceipt]) -> list[Finding]:
        if self.probe.where is None:
            return []
        if len(receipts) != 1:
            return [Finding(ACTIONS, f"the task received {len(receipts)} action batches in one step")]
        got = receipts[0]
        where = f"{self.probe.where} received {got.describe()}"
        if got.type_name != "torch.Tensor":
            return [Finding(ACTIONS, f"{where}; expected a torch.Tensor")]
        problems = []
        if not same_device(got.device, self.device):
            problems.append(f"not on the env's device {self.device}")
        if self.action_dtype is not None and got.dtype != str(self.action_dtype):
            problems.append(f"the action space declares {self.action_dtype}")
        if self.action_shape is not None and got.shape != self.action_shape:
            problems.append(f"expected shape {self.action_shape}")
        if (
            not problems
            and not self.action_noise
            and isinstance(action, torch.Tensor)
            and action.dtype == self.action_dtype
            and same_device(action.device, self.device)
            and int(action.data_ptr()) != got.data_ptr
        ):
            problems.append(
                "a copy of the caller's tensor, which already was on the env's device with its dtype "
                "(action.to(device) would have handed on that storage: a host round trip?)"
            )
        if self.on_cuda and got.syncs_before:
            problems.append(f"{got.syncs_before} host synchronisation(s) before the task got the action")
        return [Finding(ACTIONS, f"{where}: {'; '.join(problems)}")] if problems else []

    def _final_obs(self, extras: Any, done: torch.Tensor, findings: list[Finding]) -> torch.Tensor | None:
        """``extras["final_obs"]["policy"]`` when written in this step; the findings on it."""
        entry = extras.get("final_obs") if isinstance(extras, dict) else None
        tensor = entry.get("policy") if isinstance(entry, dict) else None
        fresh = entry is not None and entry is not self._last_final
        if entry is not None:
            self._last_final = entry
        if not self.compute_final_obs:
            findings.append(
                Finding(
                    FINAL_OBS,
                    "ended, and the step returned no terminal observation (cfg.compute_final_obs is False: "
                    "the returned row is the next episode's first observation)",
                    done,
                )
            )
            return tensor.detach().clone() if fresh and isinstance(tensor, torch.Tensor) else None
        if tensor is None:
            detail = "" if self.has_final_obs_switch else " (the returned row is the next episode's first observation)"
            findings.append(Finding(FINAL_OBS, f"ended, and extras has no final_obs['policy']{detail}", done))
            return None
        if not fresh:
            findings.append(Finding(FINAL_OBS, "ended, and extras['final_obs'] is left from an earlier step", done))
            return None
        problem = tensor_problem(
            "extras['final_obs']['policy']", tensor, self.device, self.obs_dtype, self.obs_shape or ()
        )
        if problem:
            findings.append(Finding(OUTPUTS, problem))
            return None
        return tensor.detach().clone()

    def _hold(self, source: str, outputs: dict[str, Any]) -> None:
        """Keep what a call returned, and a clone of it, to see whether it changes later."""
        self._held = [
            (f"{name} returned by {source}", self.calls, value, value.detach().clone())
            for name, value in outputs.items()
            if isinstance(value, torch.Tensor)
        ]

    def _check_held(self, source: str) -> None:
        """Called before the next call runs; the check is made after it (see ``_report``)."""
        self._pending_held = self._held
        self._held = []

    def _held_findings(self) -> list[Finding]:
        changed = [
            what for what, _call, value, copy in getattr(self, "_pending_held", []) if not torch.equal(value, copy)
        ]
        self._pending_held = []
        if not changed:
            return []
        return [Finding(STABLE, f"{what} was rewritten in place by this call") for what in changed]

    @contextlib.contextmanager
    def _sync_watch(self) -> Iterator[None]:
        if not self.on_cuda:
            yield
            return
        previous = torch.cuda.get_sync_debug_mode()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            torch.cuda.set_sync_debug_mode("warn")
            self._syncs = caught
            try:
                yield
            finally:
                torch.cuda.set_sync_debug_mode(previous)
                self._syncs = []

    def _reset_arguments(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        """reset's arguments by name: DirectRLEnv's is ``reset(seed, options)``, ManagerBasedEnv's
        ``reset(env_ids, *, seed, options)`` (a partial reset)."""
        try:
            return dict(inspect.signature(self._orig_reset).bind(*args, **kwargs).arguments)
        except (TypeError, ValueError):
            return dict(kwargs)

    def _rows(self, ids: Any) -> torch.Tensor | None:
        if ids is None or isinstance(ids, slice):
            return None
        return torch.as_tensor(ids, device=self.device, dtype=torch.long)

    # ------------------------------------------------------------------------------- reporting
    def report(self, findings: list[Finding], source: str, *, call: int | None = None) -> None:
        """Record findings made outside the monitor (a wrapper's, compared with the last step; a
        replay's, at the ``call`` of the replay that showed it)."""
        self._report(findings, source, call=call)

    def _report(self, findings: list[Finding], source: str, *, call: int | None = None) -> None:
        for finding in hits(findings + self._held_findings()):  # one host sync
            self.counts[finding.spec] = self.counts.get(finding.spec, 0) + 1
            if self.counts[finding.spec] > KEEP:
                continue
            envs: tuple[int, ...] = ()
            count = 0
            if finding.bad is not None:
                idx = finding.bad.nonzero().flatten()
                count = int(idx.numel())
                envs = tuple(int(i) for i in idx[:5].tolist())
            at = self.calls if call is None else call
            self.violations.append(Violation(finding.spec, at, source, finding.message, envs, count))

    def detach(self) -> None:
        """Put the env's own reset/step and the tapped action method back."""
        for name in ("step", "reset"):
            self.unwrapped.__dict__.pop(name, None)
        self.probe.detach()
        self.order.detach()


def _shape_of(result: Any) -> str:
    if isinstance(result, tuple):
        return f"a {len(result)}-tuple"
    return f"a {type(result).__name__}"


def _call_args(args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
    parts = [repr(a) for a in args] + [f"{k}={v!r}" for k, v in kwargs.items()]
    return ", ".join(parts)
