"""One check of a skrl agent: its own trainer loop over rlconform's env, through skrl's Isaac Lab
wrapper, read before its first gradient step.

Why here: skrl's ``SequentialTrainer`` (skrl 2.1.1, ``trainers/torch/base.py``) steps the wrapped env,
hands each transition to ``agent.record_transition`` (which adds ``discount_factor *
V(next_observations) * truncated`` to the reward where ``time_limit_bootstrap`` is set:
``agents/torch/ppo/ppo.py:276-286``) and, every ``rollouts`` steps, calls ``agent.update``, which
computes the returns and advantages (``compute_gae``), stores the values and returns through its
value preprocessor (``self._value_preprocessor(values, train=True)``, an identity unless
``value_preprocessor`` is set: lines 355-357) and then samples the memory for its gradient steps.
The run records what the agent hands its value preprocessor with ``train=True`` (the raw values,
then the raw returns, whatever scaler follows) and stops at the memory's first ``sample``: no
gradient step is taken. A fork of the agent with its own ``compute_gae`` is read the same way. The env is rlconform's decodable env in
Isaac Lab's ``DirectRLEnv`` protocol (:class:`rlconform.envs.torch_stamp.StampDirectEnv`), wrapped
by ``skrl.envs.wrappers.torch.wrap_env(env, wrapper="isaaclab")`` as an Isaac Lab user's script
wraps a task; the factory receives the wrapped env.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
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
from rlconform.envs.torch_stamp import DirectEnvRecorder, StampDirectEnv
from rlconform.libraries.isaaclab.learner_envs import recorded_env
from rlconform.specs.families import SKRL_AGENT

#: an env whose steps are logged, and which gives the observation a rollout ended on
LoggedEnv = StampDirectEnv | DirectEnvRecorder

#: the packages whose code raising on purpose inside ``train`` is skrl refusing the env
SKRL_PACKAGES = ("skrl",)

#: where skrl documents its time-out switch (learner.exact_targets is "known" for an agent without it)
SKRL_NO_BOOTSTRAP = (
    "skrl 2.1.1 agents/torch/ppo/ppo_cfg.py:122 (time_limit_bootstrap: False, 'Whether to bootstrap at timeout "
    "termination (episode truncation)'): a time-out is not bootstrapped"
)


@contextlib.contextmanager
def quiet_skrl() -> Iterator[None]:
    """skrl logs a line per wrapper built and env closed at INFO (its logger is set to DEBUG when
    skrl is imported): kept at WARNING while rlconform drives it."""
    logger = logging.getLogger("skrl")
    level = logger.level
    logger.setLevel(logging.WARNING)
    try:
        yield
    finally:
        logger.setLevel(level)


def wrapped_env(case: LearnerCase, device: str = "cpu") -> tuple[StampDirectEnv, Any]:
    """rlconform's env and skrl's Isaac Lab wrapper around it."""
    from skrl.envs.wrappers.torch import wrap_env

    env = StampDirectEnv(case.script(), device)
    with quiet_skrl():
        return env, wrap_env(env, wrapper="isaaclab")


def _f64(t: Any) -> torch.Tensor:
    return t.detach().to("cpu", torch.float64)


def _values(agent: Any, rows: torch.Tensor) -> torch.Tensor:
    """V(rows) by the agent's value model, through its own observation and value preprocessors."""
    with torch.no_grad():
        inputs = {"observations": agent._observation_preprocessor(rows.to(agent.device)), "states": None}
        values, _ = agent.value.act(inputs, role="value")
        values = agent._value_preprocessor(values, inverse=True)
    return _f64(values).reshape(-1)


def critic_values(agent: Any, env: LoggedEnv) -> tuple[torch.Tensor, torch.Tensor]:
    """V(terminal observation) of every logged step of the rollout ``[steps, num_envs]``, and V(the
    observation the rollout's end bootstraps from) ``[num_envs]``."""
    steps = int(agent.memory.memory_size)
    reached = env.log.stacked("reached")[-steps:]
    v_reached = _values(agent, reached.reshape(-1, reached.shape[-1])).reshape(steps, -1)
    return v_reached, _values(agent, env.get_observations()["policy"])


def read_memory(
    agent: Any, env: LoggedEnv, handed: dict[str, Any], critic: tuple[torch.Tensor, torch.Tensor]
) -> StorageFacts:
    """What the agent's memory holds now, with the raw values and returns it handed its value
    preprocessor, and the critic's values (:func:`critic_values`)."""
    memory = agent.memory
    cfg = agent.cfg
    steps = int(memory.memory_size)

    def tensor(name: str) -> Any:
        return memory.get_tensor_by_name(name).detach().to("cpu")

    bootstrap = "terminal" if bool(getattr(cfg, "time_limit_bootstrap", False)) else "none"
    shaper = getattr(cfg, "rewards_shaper", None)
    shaped = None
    if shaper is not None:
        rewards = env.log.stacked("rewards")[-steps:].to(torch.float64).reshape(steps, -1, 1)
        shaped = shaper(rewards, 0, 1).reshape(steps, -1)
    terminated = tensor("terminated").reshape(steps, -1).bool()
    truncated = tensor("truncated").reshape(steps, -1).bool()
    return StorageFacts(
        class_name=type(memory).__name__,
        algorithm=type(agent).__name__,
        gamma=float(cfg.discount_factor),
        lam=float(cfg.gae_lambda),
        bootstrap=bootstrap,  # type: ignore[arg-type]
        documented=SKRL_NO_BOOTSTRAP if bootstrap == "none" else None,
        observations=tensor("observations").float().clone(),
        actions=tensor("actions").float().clone(),
        rewards=_f64(tensor("rewards")).reshape(steps, -1),
        dones=terminated | truncated,
        values=_f64(handed["values"]).reshape(steps, -1),
        returns=_f64(handed["returns"]).reshape(steps, -1),
        advantages=_f64(tensor("advantages")).reshape(steps, -1),
        v_reached=critic[0],
        v_last=critic[1],
        terminated=terminated,
        truncated=truncated,
        shaped_rewards=shaped,
    )


def run_agent_case(system: Any, case: LearnerCase, device: str = "cpu") -> LearnerRun:
    """Build ``system``'s agent over the case's wrapped env, train it for one rollout up to its
    first gradient step, and read the memory. With the system's ``env`` option the env is an Isaac
    Lab env (:mod:`rlconform.libraries.isaaclab.learner_envs`), wrapped by skrl's Isaac Lab wrapper
    the same way."""
    run = LearnerRun(case, SKRL_AGENT, system=system)
    kind = dict(system.options).get("env")
    with seeded_case(case.seed), quiet_skrl():
        if kind is None:
            env, wrapped = wrapped_env(case, device)
            run.log = env.log
            _build_and_train(system, env, wrapped, run)
            return run
        from skrl.envs.wrappers.torch import wrap_env

        recorded = recorded_env(kind, case, device)
        run.log = recorded.recorder.log
        try:
            # seeded again: the env's construction drew from the generators
            torch.manual_seed(case.seed)
            _build_and_train(system, recorded.recorder, wrap_env(recorded.env, wrapper="isaaclab"), run)
        finally:
            recorded.close()
    return run


def _library_part(agent: Any, run: LearnerRun) -> None:
    """skrl's own PPO or A2C (a subclass of one too) is built like ``skrl.Agent.PPO`` or
    ``skrl.Agent.A2C``; made of skrl's classes only where the agent and its memory are skrl's own."""
    from skrl.agents.torch.a2c import A2C
    from skrl.agents.torch.ppo import PPO
    from skrl.memories.torch import RandomMemory

    for cls, system_id in ((PPO, "skrl.Agent.PPO"), (A2C, "skrl.Agent.A2C")):
        if isinstance(agent, cls):
            bootstrap = bool(getattr(agent.cfg, "time_limit_bootstrap", False))
            has_bootstrap_system = cls is PPO
            run.library_system = system_id + (".time_limit_bootstrap" if bootstrap and has_bootstrap_system else "")
            run.library_only = type(agent) is cls and type(getattr(agent, "memory", None)) is RandomMemory
            return


def _build_and_train(system: Any, env: LoggedEnv, wrapped: Any, run: LearnerRun) -> None:
    from skrl.trainers.torch import SequentialTrainer

    try:
        agent = system.build(wrapped)
    except Exception as exc:
        run.build_error = f"{type(exc).__name__}: {exc}"
        return
    _library_part(agent, run)
    rollouts = getattr(getattr(agent, "cfg", None), "rollouts", None)
    memory = getattr(agent, "memory", None)
    scaler = getattr(agent, "_value_preprocessor", None)
    if not isinstance(rollouts, int) or memory is None or not callable(scaler):
        run.build_error = (
            f"{type(agent).__name__} is not an on-policy agent rlconform reads (cfg.rollouts, a memory and a value "
            "preprocessor, as skrl's PPO has)"
        )
        return
    handed: list[torch.Tensor] = []
    sink: dict[str, Any] = {}

    def value_preprocessor(values: Any, *args: Any, **kwargs: Any) -> Any:
        if kwargs.get("train"):
            if not handed:
                # the critic's values of the terminal observations and of the rollout's end, with
                # the scaler as the update found it (these calls train it)
                sink["critic"] = critic_values(agent, env)
            handed.append(values.detach().clone())
        return scaler(values, *args, **kwargs)

    def sample(*args: Any, **kwargs: Any) -> Any:
        try:
            if len(handed) < 2:
                raise ValueError(
                    f"{type(agent).__name__}.update did not hand its values and returns to its value preprocessor "
                    "(train=True) before sampling its memory"
                )
            sink["facts"] = read_memory(agent, env, {"values": handed[-2], "returns": handed[-1]}, sink["critic"])
        except Exception as exc:
            sink["error"] = f"{type(exc).__name__}: {exc}"
        raise Collected

    memory.sample = sample
    agent._value_preprocessor = value_preprocessor
    try:
        trainer = SequentialTrainer(
            env=wrapped,
            agents=agent,
            cfg={
                "timesteps": rollouts,
                "headless": True,
                "disable_progressbar": True,
                # the env is rlconform's: no close registered at the interpreter's exit
                "close_environment_at_exit": False,
            },
        )
        train(trainer)
    except Collected:
        pass
    except Exception as exc:
        refusal = train_refusal(exc, run, memory)
        if refusal is not None:
            run.build_error = refused(f"trainer.train (one rollout) {refusal}")
        else:
            run.learn_error = f"{type(exc).__name__}: {exc}"
    finally:
        agent._value_preprocessor = scaler
        vars(memory).pop("sample", None)
    run.storage = sink.get("facts")
    run.read_error = sink.get("error")
    if run.storage is None and run.build_error is None and run.learn_error is None and run.read_error is None:
        run.learn_error = f"training for {rollouts} timesteps (cfg.rollouts) never sampled the memory for an update"


def train(trainer: Any) -> None:
    """``trainer.train()``: the frame below which :func:`train_refusal` reads whose code raised."""
    trainer.train()


def train_refusal(exc: BaseException, run: LearnerRun, memory: Any) -> str | None:
    """Why the ``train`` that raised ``exc`` is skrl refusing rlconform's env, or None: a failure of
    the system (the rule of :func:`~rlconform.envs.learner_run.learner_refusal`: its trainer, agent,
    memory and wrapper are skrl's, the env's own frames are not; stored: a step in the memory)."""
    stored = int(getattr(memory, "memory_index", 0) or 0) > 0 or bool(getattr(memory, "filled", False))
    return learner_refusal(exc, train.__code__, SKRL_PACKAGES, run, stored=stored)
