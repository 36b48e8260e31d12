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
from typing import Any

import torch

from rlconform.core.family import refused
from rlconform.envs.learner_run import (
    Collected,
    LearnerCase,
    LearnerRun,
    StorageFacts,
    learner_refusal,
    seeded_case,
)
from rlconform.envs.torch_stamp import make_stamp_vec_env
from rlconform.libraries.isaaclab.learner_envs import recorded_env
from rlconform.specs.families import RSL_RL_RUNNER

#: where RSL-RL documents its time-out bootstrap (learner.exact_targets is "known" for its PPO)
RSL_RL_BOOTSTRAP = (
    "rsl-rl-lib 5.5.1 algorithms/ppo.py:155-160 (process_env_step: rewards += gamma * values * time_outs, "
    "the value of the step's own observation V(s_t) standing in for V(terminal observation))"
)


#: the packages whose code raising on purpose inside ``learn`` is RSL-RL refusing the env (Isaac
#: Lab's wrapper and env are not: what reaches them comes from the runner)
RSL_RL_PACKAGES = ("rsl_rl",)


def _f64(t: torch.Tensor) -> torch.Tensor:
    return t.detach().to("cpu", torch.float64)


def _critic_values(alg: Any, rows: torch.Tensor, device: Any) -> torch.Tensor:
    """V(rows) by the algorithm's critic (the "policy" group only; [n] float64)."""
    from tensordict import TensorDict

    obs = TensorDict({"policy": rows.to(device)}, batch_size=[rows.shape[0]], device=device)
    with torch.inference_mode():
        return _f64(alg.critic(obs)).reshape(-1)


def read_storage(runner: Any, env: Any, log: Any) -> StorageFacts:
    """What the runner's storage holds now, with the critic's values of the logged terminal
    observations and of the env's current observation (``env``: what the runner steps)."""
    alg = runner.alg
    st = alg.storage
    steps = int(st.num_transitions_per_env)
    obs = st.observations["policy"] if "policy" in st.observations.keys() else None  # noqa: SIM118 (a TensorDict)
    if obs is None:
        raise ValueError("the storage holds no 'policy' observation group")
    device = next(alg.critic.parameters()).device
    reached = log.stacked("reached")[-steps:]
    flat = reached.reshape(-1, reached.shape[-1])
    return StorageFacts(
        class_name=type(st).__name__,
        algorithm=type(alg).__name__,
        gamma=float(alg.gamma),
        lam=float(alg.lam),
        bootstrap="value_of_step",
        documented=RSL_RL_BOOTSTRAP,
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


def run_runner_case(system: Any, case: LearnerCase, device: str = "cpu") -> LearnerRun:
    """Build ``system``'s runner over the case's env, run one ``learn`` iteration up to its update,
    and read the storage. With the system's ``env`` option the env is an Isaac Lab env
    (:mod:`rlconform.libraries.isaaclab.learner_envs`) through Isaac Lab's own ``RslRlVecEnvWrapper``."""
    run = LearnerRun(case, RSL_RL_RUNNER, system=system)
    kind = dict(system.options).get("env")
    with seeded_case(case.seed):
        if kind is None:
            env = make_stamp_vec_env(case.script(), device)
            run.log = env.log
            _build_and_collect(system, env, run)
            return run
        from isaaclab_rl.rsl_rl import RslRlVecEnvWrapper

        recorded = recorded_env(kind, case, device)
        run.log = recorded.recorder.log
        try:
            # seeded again: the env's construction drew from the generators
            torch.manual_seed(case.seed)
            _build_and_collect(system, RslRlVecEnvWrapper(recorded.env), run)
        finally:
            recorded.close()
    return run


def _library_part(runner: Any, env: Any, run: LearnerRun) -> None:
    """RSL-RL's own PPO (a subclass of it too) is built like ``rsl_rl.Runner.PPO``; made of RSL-RL's
    classes only where the runner, its algorithm and its storage are RSL-RL's own, over the env
    rlconform handed it."""
    from rsl_rl.algorithms import PPO
    from rsl_rl.runners import OnPolicyRunner
    from rsl_rl.storage import RolloutStorage

    alg = getattr(runner, "alg", None)
    if isinstance(alg, PPO):
        run.library_system = "rsl_rl.Runner.PPO"
        run.library_only = (
            type(runner) is OnPolicyRunner
            and type(alg) is PPO
            and type(getattr(alg, "storage", None)) is RolloutStorage
            and getattr(runner, "env", None) is env
        )


def _build_and_collect(system: Any, env: Any, run: LearnerRun) -> None:
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
    _library_part(runner, env, run)
    sink: dict[str, Any] = {}

    def reader(*args: Any, **kwargs: Any) -> Any:
        try:
            sink["facts"] = read_storage(runner, env, run.log)
        except Exception as exc:
            sink["error"] = f"{type(exc).__name__}: {exc}"
        raise Collected

    alg.update = reader
    try:
        with contextlib.redirect_stdout(quiet):
            learn(runner)
    except Collected:
        pass
    except Exception as exc:
        refusal = learn_refusal(exc, run, alg)
        if refusal is not None:
            run.build_error = refused(f"runner.learn (one iteration) {refusal}")
        else:
            run.learn_error = f"{type(exc).__name__}: {exc}"
    finally:
        vars(alg).pop("update", None)
    run.storage = sink.get("facts")
    run.read_error = sink.get("error")
    if run.storage is None and run.build_error is None and run.learn_error is None and run.read_error is None:
        run.learn_error = "learn(num_learning_iterations=1) returned without calling alg.update"


def learn(runner: Any) -> None:
    """``runner.learn`` for one iteration: the frame below which :func:`learn_refusal` reads whose
    code raised."""
    runner.learn(num_learning_iterations=1)


def learn_refusal(exc: BaseException, run: LearnerRun, alg: Any) -> str | None:
    """Why the ``learn`` that raised ``exc`` is RSL-RL refusing rlconform's env (its NaN check,
    say), or None: a failure of the system (the rule of
    :func:`~rlconform.envs.learner_run.learner_refusal`; stored: a step in the algorithm's storage)."""
    stored = int(getattr(getattr(alg, "storage", None), "step", 0) or 0) > 0
    return learner_refusal(exc, learn.__code__, RSL_RL_PACKAGES, run, stored=stored)
