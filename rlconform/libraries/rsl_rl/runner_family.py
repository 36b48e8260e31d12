"""Family ``rsl_rl.Runner``: what an RSL-RL runner stores and computes from rlconform's torch env.

A user's factory ``make(env: rsl_rl.env.VecEnv) -> rsl_rl.runners.OnPolicyRunner`` is built as an
Isaac Lab user builds one (``OnPolicyRunner(env, train_cfg, log_dir=None, device=...)``) around
rlconform's decodable env in RSL-RL's VecEnv protocol
(:mod:`rlconform.envs.torch_stamp`); the runner's own ``learn`` collects one rollout, which is read
at ``alg.update`` (:mod:`~rlconform.libraries.rsl_rl.runner_run`) and compared with the env's log
(:mod:`rlconform.specs.learner`).

The bundled systems are :mod:`~rlconform.libraries.rsl_rl.runner_systems`. Nothing here imports
torch or RSL-RL.
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any

from rlconform.core.family import FactoryShape
from rlconform.core.system import System
from rlconform.envs.learner_family import LearnerFamily, device_of
from rlconform.specs.families import RSL_RL_RUNNER

if TYPE_CHECKING:
    from rlconform.envs.learner_run import LearnerRun


def runner_importable() -> str | None:
    """Why ``rsl_rl.runners`` cannot be imported here (None: it can). rsl-rl-lib installed without
    its requirements (``--no-deps``) lacks GitPython, which its runner's logger imports."""
    try:
        import rsl_rl.runners  # noqa: F401
    except ImportError as exc:
        return f"rsl_rl.runners cannot be imported: {type(exc).__name__}: {exc}"
    return None


EXACT = "learner.exact_targets"


class RunnerFamily(LearnerFamily):
    """Family ``rsl_rl.Runner`` (``--api rsl_rl.Runner``)."""

    name = RSL_RL_RUNNER
    api = "rsl_rl.Runner"
    factory_signature = "(env: rsl_rl.env.VecEnv) -> rsl_rl.runners.OnPolicyRunner"
    factory_argument = "env"
    drives = "one learn() iteration over rlconform's torch env in RSL-RL's VecEnv protocol"
    learner = "RSL-RL runner"
    reads = "what its collection stores and the returns it computes"
    install = "pip install rsl-rl-lib GitPython; scripts/install-isaaclab builds an environment with both"
    libraries = ("rsl-rl-lib", "torch", "tensordict")
    claimed_classes = ("rsl_rl.runners.on_policy_runner.OnPolicyRunner",)
    # no ``takes``: a parameter annotated ``VecEnv`` names SB3's as often as RSL-RL's, so only the
    # return annotation tells a runner factory from an SB3 algorithm factory
    factory_shape = FactoryShape(returns=claimed_classes, return_names=("OnPolicyRunner",))
    required_attributes = ("learn", "alg")
    findings = {
        # Isaac Lab's wrapper hands a termination on the time limit on as a time-out (I3), and
        # RSL-RL bootstraps it: the storage and the targets show it (the reference env ends a
        # sub-env both ways on one step by its script; real Cartpole rarely does, and its targets
        # are R1's documented approximation)
        ("rsl_rl.Runner.PPO.isaaclab*", "learner.storage"): "I3",
        ("rsl_rl.Runner.PPO.isaaclab", EXACT): "I3",
        ("rsl_rl.Runner.PPO.isaaclab.cuda", EXACT): "I3",
        ("rsl_rl.Runner.PPO*", EXACT): "R1",
    }

    def run_case(self, system: System, case: Any, *, with_model: bool) -> LearnerRun:
        from rlconform.libraries.rsl_rl.runner_run import run_runner_case

        return run_runner_case(system, case, device_of(system))

    def check_factory(self, signature: inspect.Signature) -> None:
        signature.bind(object())

    def probe_build(self, system: System) -> Any:
        import contextlib
        import io

        from rlconform.envs.torch_stamp import StampScript, make_stamp_vec_env

        with contextlib.redirect_stdout(io.StringIO()):  # RSL-RL prints the actor and critic it builds
            return system.build(make_stamp_vec_env(StampScript(2, 4)))  # type: ignore[arg-type]  # takes the env

    def importable(self) -> str | None:
        problem = runner_importable()
        return None if problem is None else f"RSL-RL's runner importable here: {problem}"


FAMILY = RunnerFamily()
