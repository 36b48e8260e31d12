"""Family ``rsl_rl.Runner``: what an RSL-RL runner stores and computes from rlconform's torch env.

A user's factory ``make(env: rsl_rl.env.VecEnv) -> rsl_rl.runners.OnPolicyRunner`` is built as an
Isaac Lab user builds one (``OnPolicyRunner(env, train_cfg, log_dir=None, device=...)``) around
rlconform's decodable env in RSL-RL's VecEnv protocol
(:mod:`~rlconform.libraries.rsl_rl.stamp_env`); the runner's own ``learn`` collects one rollout,
which is read at ``alg.update`` (:mod:`~rlconform.libraries.rsl_rl.runner_run`) and compared with
the env's log (:mod:`~rlconform.libraries.rsl_rl.learner_specs`).

The bundled systems are :mod:`~rlconform.libraries.rsl_rl.runner_systems`. Nothing here imports
torch or RSL-RL.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TextIO

from rlconform.core.family import FactoryShape
from rlconform.core.reproducer import ReproducerParts, case_lines, write
from rlconform.core.system import Capabilities, System
from rlconform.core.user import BadInput
from rlconform.envs.whole_run import WholeRunFamily
from rlconform.specs.families import RSL_RL_RUNNER

if TYPE_CHECKING:
    from hypothesis.strategies import SearchStrategy

    from rlconform.core.spec import Spec
    from rlconform.libraries.rsl_rl.runner_run import RunnerCase, RunnerRun

CAPS = Capabilities(
    min_envs=1,
    max_envs=4,
    notes=("rlconform's decodable torch env in RSL-RL's VecEnv protocol: 5 float32 observation columns, 2 actions",),
)


def runner_importable() -> str | None:
    """Why ``rsl_rl.runners`` cannot be imported here (None: it can). rsl-rl-lib installed without
    its requirements (``--no-deps``) lacks GitPython, which its runner's logger imports."""
    try:
        import rsl_rl.runners  # noqa: F401
    except ImportError as exc:
        return f"rsl_rl.runners cannot be imported: {type(exc).__name__}: {exc}"
    return None


EXACT = "learner.exact_targets"


def runner_reproducer(system: System, spec: Spec, case: RunnerCase) -> str:
    about = (
        f"{system.title}: one learn() iteration over rlconform's torch env in RSL-RL's VecEnv protocol\n"
        f"({case.num_envs} sub-envs, time limit {case.max_episode_length}), its storage read at alg.update."
    )
    return write(ReproducerParts(system, spec, case_lines(case), RunnerFamily.api, about))


class RunnerFamily(WholeRunFamily):
    """Family ``rsl_rl.Runner`` (``--api rsl_rl.Runner``)."""

    name = RSL_RL_RUNNER
    api = "rsl_rl.Runner"
    factory_signature = "(env: rsl_rl.env.VecEnv) -> rsl_rl.runners.OnPolicyRunner"
    factory_argument = "env"
    libraries = ("rsl-rl-lib", "torch", "tensordict")
    claimed_classes = ("rsl_rl.runners.on_policy_runner.OnPolicyRunner",)
    # no ``takes``: a parameter annotated ``VecEnv`` names SB3's as often as RSL-RL's, so only the
    # return annotation tells a runner factory from an SB3 algorithm factory
    factory_shape = FactoryShape(returns=claimed_classes, return_names=("OnPolicyRunner",))
    required_attributes = ("learn", "alg")
    findings = {("rsl_rl.Runner.PPO*", EXACT): "R1"}

    def run_case(self, system: System, case: Any, *, with_model: bool) -> RunnerRun:
        from rlconform.libraries.rsl_rl.runner_run import run_runner_case

        return run_runner_case(system, case)

    def cases(self, system: System, scenario: str) -> SearchStrategy[Any]:
        from hypothesis import strategies as st

        from rlconform.libraries.rsl_rl.runner_run import RunnerCase

        return st.builds(
            RunnerCase,
            num_envs=st.integers(system.capabilities.min_envs, system.capabilities.max_envs),
            max_episode_length=st.integers(2, 12),
            term_a=st.integers(0, 9),
            term_b=st.integers(0, 9),
            seed=st.integers(0, 999),
        )

    def boundary_cases(self, system: System, scenario: str) -> list[Any]:
        """Three sub-envs whose first episodes end within two steps: sub-env 0 terminates at its first
        step, sub-envs 1 and 2 time out at their second, so every rollout of two steps or more holds
        both kinds of end."""
        from rlconform.libraries.rsl_rl.runner_run import RunnerCase

        return [RunnerCase(3, 2, 7, 3, 0)] if scenario == "standard" else []

    def reproducer(self, system: System, spec: Spec, case: Any, run: Any) -> str:
        return runner_reproducer(system, spec, case)

    def print_run(self, run: Any, case: Any, stream: TextIO) -> None:
        print(f"system: {run.system.id} ({run.system.title}), {case}", file=stream)
        for name in ("build_error", "learn_error", "read_error"):
            if getattr(run, name):
                print(f"{name.replace('_', ' ')}: {getattr(run, name)}", file=stream)
        facts = run.storage
        if facts is not None:
            print(
                f"storage: {facts.class_name} of {facts.algorithm}, {facts.returns.shape[0]} steps x "
                f"{facts.returns.shape[1]} sub-envs, gamma={facts.gamma:g}, lambda={facts.lam:g}",
                file=stream,
            )

    def check_factory(self, signature: inspect.Signature) -> None:
        signature.bind(object())

    def probe_build(self, system: System) -> Any:
        import contextlib
        import io

        from rlconform.libraries.rsl_rl.stamp_env import StampScript, make_stamp_vec_env

        with contextlib.redirect_stdout(io.StringIO()):  # RSL-RL prints the actor and critic it builds
            return system.build(make_stamp_vec_env(StampScript(2, 4)))  # type: ignore[arg-type]  # takes the env

    def user_system(self, fn: Callable[..., Any], reference: str, **options: Any) -> System:
        problem = runner_importable()
        if problem is not None:
            raise BadInput(
                f"--api rsl_rl.Runner needs RSL-RL's runner importable here: {problem} (pip install rsl-rl-lib "
                "GitPython; scripts/install-isaaclab builds an environment with both)"
            )
        return self.user_system_of(
            reference,
            title=f"{reference}(env) (your RSL-RL runner)",
            build=fn,
            capabilities=CAPS,
            description="an RSL-RL runner: what its collection stores and the returns it computes, against the env log",
        )


FAMILY = RunnerFamily()
