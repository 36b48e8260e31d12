"""Family ``skrl.Agent``: what a skrl agent stores and computes from rlconform's torch env.

A user's factory ``make(env) -> skrl.agents.torch.Agent`` is handed rlconform's decodable env in
Isaac Lab's ``DirectRLEnv`` protocol (:class:`rlconform.envs.torch_stamp.StampDirectEnv`) through
skrl's Isaac Lab wrapper (``wrap_env(env, wrapper="isaaclab")``), as an Isaac Lab skrl script
builds its agent; skrl's ``SequentialTrainer`` trains it for one rollout, read before the first
gradient step (:mod:`~rlconform.libraries.skrl.agent_run`) and compared with the env's log
(:mod:`rlconform.specs.learner`). On-policy agents with skrl's PPO structure (``cfg.rollouts``, a
memory, a value preprocessor) are read; the bundled systems are
:mod:`~rlconform.libraries.skrl.agent_systems`. Nothing here imports torch or skrl.
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any

from rlconform.core.family import FactoryShape
from rlconform.core.system import System
from rlconform.envs.learner_family import LearnerFamily, device_of
from rlconform.envs.learner_run import LearnerCase
from rlconform.specs.families import SKRL_AGENT

if TYPE_CHECKING:
    from rlconform.envs.learner_run import LearnerRun


def skrl_importable() -> str | None:
    """Why skrl's torch agents and trainers cannot be imported here (None: they can)."""
    try:
        import skrl.agents.torch
        import skrl.trainers.torch  # noqa: F401
    except ImportError as exc:
        return f"skrl cannot be imported: {type(exc).__name__}: {exc}"
    return None


class AgentFamily(LearnerFamily):
    """Family ``skrl.Agent`` (``--api skrl.Agent``)."""

    name = SKRL_AGENT
    api = "skrl.Agent"
    factory_signature = "(env: skrl.envs.wrappers.torch.Wrapper) -> skrl.agents.torch.Agent"
    factory_argument = "env"
    drives = "one rollout of skrl's SequentialTrainer over rlconform's torch env through skrl's Isaac Lab wrapper"
    learner = "skrl agent"
    reads = "what its memory stores and the returns it computes"
    install = "pip install skrl; scripts/install-isaaclab builds an environment with it"
    libraries = ("skrl", "torch", "gymnasium")
    quiet_loggers = ("skrl",)
    claimed_classes = ("skrl.agents.torch.base.Agent",)
    factory_shape = FactoryShape(returns=claimed_classes, return_names=("Agent",))
    required_attributes = ("act", "record_transition")
    #: the FINDINGS rows of skrl's PPO over Isaac Lab's env contract
    findings = {
        ("skrl.Agent.PPO.time_limit_bootstrap*", "learner.storage"): "I4",
        ("skrl.Agent.PPO.time_limit_bootstrap*", "learner.returns"): "I4",
        ("skrl.Agent.PPO.time_limit_bootstrap*", "learner.exact_targets"): "I4",
        ("skrl.Agent.PPO*", "learner.returns"): "K1",
        ("skrl.Agent.PPO*", "learner.exact_targets"): "K1",
        ("skrl.Agent.A2C", "learner.returns"): "K1",
        ("skrl.Agent.A2C", "learner.exact_targets"): "K1",
    }

    def run_case(self, system: System, case: Any, *, with_model: bool) -> LearnerRun:
        from rlconform.libraries.skrl.agent_run import run_agent_case

        return run_agent_case(system, case, device_of(system))

    def check_factory(self, signature: inspect.Signature) -> None:
        signature.bind(object())

    def probe_build(self, system: System) -> Any:
        from rlconform.libraries.skrl.agent_run import quiet_skrl, wrapped_env

        _env, wrapped = wrapped_env(LearnerCase(2, 4))
        with quiet_skrl():
            return system.build(wrapped)  # type: ignore[arg-type]  # takes the env

    def close_probe(self, obj: Any) -> None:
        """An agent holds nothing to close (its env is rlconform's)."""

    def importable(self) -> str | None:
        problem = skrl_importable()
        return None if problem is None else f"skrl importable here: {problem}"


FAMILY = AgentFamily()
