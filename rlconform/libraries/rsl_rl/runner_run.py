"""One check of an RSL-RL runner: its own collection over rlconform's env, read before its update.

Why read at ``alg.update``: ``OnPolicyRunner.learn`` (rsl-rl-lib 5.5.1, ``runners/on_policy_runner.py``)
steps the env ``num_steps_per_env`` times, handing each step to ``alg.process_env_step`` (which
stores it, with ``rewards += gamma * values * time_outs``: ``algorithms/ppo.py:155-160``), calls
``alg.compute_returns(obs)`` and then ``alg.update()``. At ``update``'s entry the storage holds the
rollout, its returns and its advantages, and the critic is still the one that collected it. The
run replaces ``update`` on the algorithm instance with a reader that keeps a copy of the storage
and stops ``learn`` (:class:`Collected`); no gradient step is taken. The runner's own collection code
runs, never a re-implementation of it.

The reader also evaluates the critic on the terminal observations the env logged (the rows the
ended episodes reached) and on the observation ``compute_returns`` bootstrapped the rollout's end
from: the exact time-out bootstrap needs V(terminal observation), which RSL-RL does not compute.
"""

from __future__ import annotations

import contextlib
import io
from dataclasses import dataclass, field
from typing import Any

import torch

from rlconform.envs.whole_run import WholeRunRecord
from rlconform.libraries.rsl_rl.stamp_env import StampScript, StepLog, make_stamp_vec_env
from rlconform.specs.families import RSL_RL_RUNNER


class Collected(Exception):
    """Raised by the storage reader at ``alg.update``: the rollout is read, ``learn`` stops."""


@dataclass(frozen=True)
class RunnerCase:
    """What one example draws: the env's size, time limit, termination pattern and seed."""

    num_envs: int
    max_episode_length: int
    term_a: int = 7
    term_b: int = 3
    seed: int = 0

    def script(self) -> StampScript:
        return StampScript(self.num_envs, self.max_episode_length, self.term_a, self.term_b, self.seed)


@dataclass
class StorageFacts:
    """The runner's storage at ``update`` (``[steps, num_envs]`` float64 unless said)."""

    class_name: str
    algorithm: str
    gamma: float
    lam: float
    #: the advantages are standardized per mini-batch in ``update`` (stored raw) rather than over
    #: the rollout in ``compute_returns``
    per_mini_batch_advantages: bool
    observations: torch.Tensor  # [steps, num_envs, obs_dim] float32, the "policy" group
    actions: torch.Tensor  # [steps, num_envs, num_actions] float32
    rewards: torch.Tensor
    dones: torch.Tensor  # bool
    values: torch.Tensor
    returns: torch.Tensor
    advantages: torch.Tensor
    #: V(terminal observation) per logged step, ``[steps, num_envs]``; V(observation after the
    #: rollout's last step), ``[num_envs]``
    v_reached: torch.Tensor
    v_last: torch.Tensor


@dataclass
class RunnerRun(WholeRunRecord):
    """The outcome of one :class:`RunnerCase`."""

    case: RunnerCase
    family: str = RSL_RL_RUNNER
    build_error: str | None = None
    learn_error: str | None = None
    read_error: str | None = None
    storage: StorageFacts | None = None
    log: StepLog = field(default_factory=StepLog)
    #: the system the case ran on (set by the family's ``run_case``)
    system: Any = None

    @property
    def usable(self) -> bool:
        return self.build_error is None


def _f64(t: torch.Tensor) -> torch.Tensor:
    return t.detach().to("cpu", torch.float64)


def _critic_values(alg: Any, rows: torch.Tensor, device: Any) -> torch.Tensor:
    """V(rows) by the algorithm's critic (the "policy" group only; [n] float64)."""
    from tensordict import TensorDict

    obs = TensorDict({"policy": rows.to(device)}, batch_size=[rows.shape[0]], device=device)
    with torch.inference_mode():
        return _f64(alg.critic(obs)).reshape(-1)


def read_storage(runner: Any, env: Any) -> StorageFacts:
    """What the runner's storage holds now, with the critic's values of the logged terminal
    observations and of the env's current observation."""
    alg = runner.alg
    st = alg.storage
    steps = int(st.num_transitions_per_env)
    obs = st.observations["policy"] if "policy" in st.observations.keys() else None  # noqa: SIM118 (a TensorDict)
    if obs is None:
        raise ValueError("the storage holds no 'policy' observation group")
    device = next(alg.critic.parameters()).device
    reached = env.log.stacked("reached")[-steps:]
    flat = reached.reshape(-1, reached.shape[-1])
    return StorageFacts(
        class_name=type(st).__name__,
        algorithm=type(alg).__name__,
        gamma=float(alg.gamma),
        lam=float(alg.lam),
        per_mini_batch_advantages=bool(getattr(alg, "normalize_advantage_per_mini_batch", False)),
        observations=obs.detach().to("cpu").clone(),
        actions=st.actions.detach().to("cpu").float().clone(),
        rewards=_f64(st.rewards).reshape(steps, -1),
        dones=st.dones.detach().to("cpu").reshape(steps, -1).bool(),
        values=_f64(st.values).reshape(steps, -1),
        returns=_f64(st.returns).reshape(steps, -1),
        advantages=_f64(st.advantages).reshape(steps, -1),
        v_reached=_critic_values(alg, flat, device).reshape(steps, -1),
        v_last=_critic_values(alg, env.get_observations()["policy"], device),
    )


def run_runner_case(system: Any, case: RunnerCase, device: str = "cpu") -> RunnerRun:
    """Build ``system``'s runner over the case's env, run one ``learn`` iteration up to its update,
    and read the storage."""
    run = RunnerRun(case, system=system)
    env = make_stamp_vec_env(case.script(), device)
    run.log = env.log
    # the networks' initial weights and the policy's action noise are drawn from torch's generator:
    # seeded from the case, in a fork of it, so that a replay sees the same run and the caller's
    # random state is left as it was
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(case.seed)
        _build_and_collect(system, env, run)
    return run


def _build_and_collect(system: Any, env: Any, run: RunnerRun) -> None:
    quiet = io.StringIO()
    try:
        with contextlib.redirect_stdout(quiet):  # RSL-RL prints the actor and critic it builds
            runner = system.build(env)
    except Exception as exc:
        run.build_error = f"{type(exc).__name__}: {exc}"
        return
    alg = getattr(runner, "alg", None)
    if alg is None or not callable(getattr(alg, "update", None)):
        run.build_error = f"{type(runner).__name__} has no alg.update to read the storage at"
        return
    sink: dict[str, Any] = {}

    def reader(*args: Any, **kwargs: Any) -> Any:
        try:
            sink["facts"] = read_storage(runner, env)
        except Exception as exc:
            sink["error"] = f"{type(exc).__name__}: {exc}"
        raise Collected

    alg.update = reader
    try:
        with contextlib.redirect_stdout(quiet):
            runner.learn(num_learning_iterations=1)
    except Collected:
        pass
    except Exception as exc:
        run.learn_error = f"{type(exc).__name__}: {exc}"
    finally:
        vars(alg).pop("update", None)
    run.storage = sink.get("facts")
    run.read_error = sink.get("error")
    if run.storage is None and run.learn_error is None and run.read_error is None:
        run.learn_error = "learn(num_learning_iterations=1) returned without calling alg.update"
