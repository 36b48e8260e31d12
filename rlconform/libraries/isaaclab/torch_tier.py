"""Family ``isaaclab.torch``: Isaac Lab envs and wrappers checked vectorized, in torch, at scale.

This module holds the family object only; it imports neither torch nor isaaclab, so that
``--api isaaclab`` without torch installed says so in one line. The run
(:mod:`~rlconform.libraries.isaaclab.torch_run`) and the specs
(:mod:`~rlconform.libraries.isaaclab.torch_specs`) need torch only: a user's torch-batched env that
follows DirectRLEnv's contract is checked without Isaac Lab. The bundled systems
(:mod:`~rlconform.libraries.isaaclab.bundled`: the reference env subclasses DirectRLEnv) load only
where isaaclab is importable.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rlconform.core.system import System
from rlconform.envs.whole_run import WholeRunFamily
from rlconform.libraries.isaaclab.user import isaaclab_installed, reference_system, torch_system
from rlconform.specs.families import ISAACLAB_TORCH

if TYPE_CHECKING:
    from hypothesis.strategies import SearchStrategy

    from rlconform.core.spec import Spec
    from rlconform.libraries.isaaclab.torch_run import TorchCase, TorchRun


def reproducer(system: System, spec_id: str, case: TorchCase) -> str:
    from rlconform.libraries.isaaclab import wrappers as wr
    from rlconform.libraries.isaaclab.torch_specs import target_of

    target = target_of(system)
    through = f" through {wr.driver_for(target.wrapper).title}" if target.wrapper else ""
    build = (
        f", family={TorchTierFamily.api!r}, num_envs={target.num_envs}, device={target.device!r}"
        if system.kind == "user"
        else ""
    )
    return f'''"""rlconform reproducer: {system.id} violates {spec_id}.

{system.title}: {target.num_envs} sub-envs on {target.device}{through}, reset with seed {case.seed},
stepped {case.steps} times with {case.pattern} torch actions (generator seed {case.action_seed})
under rlconform's contract monitor.
"""
from rlconform.replay import TorchCase, replay

case = {case!r}

if __name__ == "__main__":
    violations = replay({system.id!r}, case, {spec_id!r}{build})
    raise SystemExit(1 if violations else 0)
'''


class TorchTierFamily(WholeRunFamily):
    """Family ``isaaclab.torch`` (``--api isaaclab``): a ``(num_envs, device)`` factory driven
    with torch actions under the contract monitor."""

    name = ISAACLAB_TORCH
    api = "isaaclab"
    factory_signature = "(num_envs: int, device: str) -> env following DirectRLEnv's step/reset contract"
    # a wrapper the tier drives may be TorchRL's, which logs a line per env it builds
    quiet_loggers = ("torchrl",)
    user_options = ("num_envs", "device")
    libraries = ("torch", "isaaclab")
    uses_accelerator = True
    # DirectRLEnv's contract is duck-typed: a torch-batched env subclasses nothing in common, so
    # the family claims no class (claimed_classes stays empty)
    required_attributes = ("reset", "step", "num_envs", "device")

    def run_case(self, system: System, case: Any, *, with_model: bool) -> TorchRun:
        from rlconform.libraries.isaaclab.torch_run import drive
        from rlconform.libraries.isaaclab.torch_specs import target_of

        run = drive(target_of(system), case)
        run.system = system
        return run

    def cases(self, system: System, scenario: str) -> SearchStrategy[TorchCase]:
        from hypothesis import strategies as st

        from rlconform.libraries.isaaclab.torch_run import PATTERNS, TorchCase

        return st.builds(
            TorchCase,
            seed=st.integers(0, 2**16),
            action_seed=st.integers(0, 2**16),
            steps=st.integers(1, 40),
            pattern=st.sampled_from(PATTERNS),
        )

    def reproducer(self, system: System, spec: Spec, case: Any, run: Any) -> str:
        return reproducer(system, spec.id, case)

    def check_factory(self, signature: inspect.Signature) -> None:
        signature.bind(1, "cpu")

    def user_system(self, fn: Callable[..., Any], reference: str, **options: Any) -> System:
        return torch_system(fn, reference, num_envs=options.get("num_envs"), device=options.get("device"))

    def companions(self, system: System) -> list[System]:
        """Beside a user's env: the reference env on the same device, through the same DirectRLEnv
        code, with the exact checks only decodable observations allow. It subclasses Isaac Lab's
        DirectRLEnv: without Isaac Lab there is none, and the user's row says so
        (:func:`~rlconform.libraries.isaaclab.user.without_isaaclab`)."""
        from rlconform.libraries.isaaclab.torch_specs import target_of

        if not isaaclab_installed():
            return []
        return [reference_system(target_of(system).device)]


FAMILY = TorchTierFamily()
