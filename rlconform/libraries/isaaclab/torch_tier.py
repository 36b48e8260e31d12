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

from rlconform.core.family import FactoryShape
from rlconform.core.reproducer import ReproducerParts, case_lines, write
from rlconform.core.system import System
from rlconform.envs.whole_run import WholeRunFamily
from rlconform.libraries.isaaclab.options import TORCH_TIER_OPTIONS
from rlconform.libraries.isaaclab.user import isaaclab_installed, reference_system, torch_system
from rlconform.specs.families import ISAACLAB_TORCH

if TYPE_CHECKING:
    from hypothesis.strategies import SearchStrategy

    from rlconform.core.spec import Spec
    from rlconform.libraries.isaaclab.torch_run import TorchCase, TorchRun


def reproducer(system: System, spec: Spec, case: TorchCase) -> str:
    from rlconform.libraries.isaaclab import wrappers as wr
    from rlconform.libraries.isaaclab.torch_specs import target_of

    target = target_of(system)
    through = f" through {wr.driver_for(target.wrapper).title}" if target.wrapper else ""
    about = (
        f"{system.title}: {target.num_envs} sub-envs on {target.device}{through}, reset with seed {case.seed},\n"
        f"stepped {case.steps} times with {case.pattern} torch actions (generator seed {case.action_seed})\n"
        "under rlconform's contract monitor."
    )
    options = {"num_envs": target.num_envs, "device": target.device}
    return write(ReproducerParts(system, spec, case_lines(case), TorchTierFamily.api, about, options))


class TorchTierFamily(WholeRunFamily):
    """Family ``isaaclab.torch`` (``--api isaaclab``): a ``(num_envs, device)`` factory driven
    with torch actions under the contract monitor."""

    name = ISAACLAB_TORCH
    api = "isaaclab"
    factory_signature = "(num_envs: int, device: str) -> env following DirectRLEnv's step/reset contract"
    # a wrapper the tier drives may be TorchRL's, which logs a line per env it builds
    quiet_loggers = ("torchrl",)
    options = TORCH_TIER_OPTIONS
    libraries = ("torch", "isaaclab")
    uses_accelerator = True
    # DirectRLEnv's contract is duck-typed: a torch-batched env subclasses nothing in common, so
    # the family claims no class (claimed_classes stays empty); a factory annotated as returning
    # one of Isaac Lab's env classes is one of its factories all the same
    factory_shape = FactoryShape(
        returns=("isaaclab.envs.direct_rl_env.DirectRLEnv", "isaaclab.envs.manager_based_rl_env.ManagerBasedRLEnv")
    )
    factory_argument = "num_envs"
    required_attributes = ("reset", "step", "num_envs", "device")
    #: the Isaac Lab wrappers' defects the tier's bundled systems show (FINDINGS.md), on CPU and CUDA
    findings = {
        ("isaaclab.torch.rsl_rl*", "isaaclab.wrapper.flags"): "I3",
        ("isaaclab.torch.skrl*", "isaaclab.wrapper.terminal_obs"): "I4",
    }

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
        return reproducer(system, spec, case)

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
