"""The part of a learner family that does not depend on the learner's library: its cases, their
edge case, the reproducer and what a replay prints (families ``rsl_rl.Runner`` and ``skrl.Agent``).

A subclass says how its learner is built around rlconform's torch env and read
(:meth:`~rlconform.envs.whole_run.WholeRunFamily.run_case`), and what a user's factory looks like.
Nothing here imports torch.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar, TextIO

from rlconform.core.reproducer import ReproducerParts, case_lines, write
from rlconform.core.system import Capabilities, System
from rlconform.core.user import BadInput
from rlconform.envs.learner_run import LearnerCase
from rlconform.envs.whole_run import WholeRunFamily

if TYPE_CHECKING:
    from hypothesis.strategies import SearchStrategy

    from rlconform.core.spec import Spec

#: what every learner family's cases draw
CAPS = Capabilities(
    min_envs=1,
    max_envs=4,
    notes=("rlconform's decodable torch env (rlconform.envs.torch_stamp): 5 float32 observation columns, 2 actions",),
)


def device_of(system: System) -> str:
    """The device a learner system's env and learner run on (its ``device`` option; the CPU)."""
    return str(dict(system.options).get("device", "cpu"))


class LearnerFamily(WholeRunFamily):
    """Cases, reproducer and replay output shared by the learner families."""

    #: what a reproducer says the case does, after the system's title
    drives = "one rollout of its own collection over rlconform's torch env"
    #: a user's learner, as its system's title names it ("RSL-RL runner")
    learner: ClassVar[str] = "learner"
    #: what its check reads, for its system's description
    reads: ClassVar[str] = "what it stores and the returns it computes"
    #: what to install where :meth:`importable` says the library cannot be imported
    install: ClassVar[str] = ""

    def importable(self) -> str | None:
        """Why the learner's library cannot be imported here (None: it can)."""
        return None

    def user_system(self, fn: Callable[..., Any], reference: str, **options: Any) -> System:
        problem = self.importable()
        if problem is not None:
            raise BadInput(f"--api {self.api} needs {problem} ({self.install})")
        return self.user_system_of(
            reference,
            title=f"{reference}(env) (your {self.learner})",
            build=fn,
            capabilities=CAPS,
            description=f"a {self.learner}: {self.reads}, against the env log",
        )

    def cases(self, system: System, scenario: str) -> SearchStrategy[Any]:
        from hypothesis import strategies as st

        return st.builds(
            LearnerCase,
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
        return [LearnerCase(3, 2, 7, 3, 0)] if scenario == "standard" else []

    def library_systems(self, run: Any) -> list[str]:
        """The bundled system whose algorithm class the user's learner is (read by the run)."""
        found = getattr(run, "library_system", None)
        return [found] if found else []

    def built_from_library_classes(self, run: Any) -> bool:
        return bool(getattr(run, "library_only", False))

    def reproducer(self, system: System, spec: Spec, case: Any, run: Any) -> str:
        about = (
            f"{system.title}: {self.drives}\n"
            f"({case.num_envs} sub-envs, time limit {case.max_episode_length}), read before its first update."
        )
        return write(ReproducerParts(system, spec, case_lines(case), self.api, about))

    def print_run(self, run: Any, case: Any, stream: TextIO) -> None:
        print(f"system: {run.system.id} ({run.system.title}), {case}", file=stream)
        for name in ("build_error", "learn_error", "read_error"):
            if getattr(run, name):
                print(f"{name.replace('_', ' ')}: {getattr(run, name)}", file=stream)
        facts = run.storage
        if facts is not None:
            print(
                f"storage: {facts.class_name} of {facts.algorithm}, {facts.returns.shape[0]} steps x "
                f"{facts.returns.shape[1]} sub-envs, gamma={facts.gamma:g}, lambda={facts.lam:g}, "
                f"time-outs bootstrapped: {facts.bootstrap}",
                file=stream,
            )
