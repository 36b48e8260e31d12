"""Replaying one ``isaaclab.torch`` case outside the search, for reproducers."""

from __future__ import annotations

from rlconform.libraries.isaaclab.session import TorchCase


def replay(
    system_id: str, case: TorchCase, spec_id: str, *, num_envs: int | None = None, device: str | None = None
) -> list[str]:
    """The violations of ``spec_id`` when ``case`` runs on the system ``system_id``: a bundled one,
    or a user's ``user:MODULE:CALLABLE`` built with ``num_envs`` sub-envs on ``device``."""
    from rlconform.core.system import get_system
    from rlconform.core.user import ISAACLAB_API, user_system
    from rlconform.libraries.isaaclab.torch_family import execute

    if system_id.startswith("user:"):
        system = user_system(system_id.removeprefix("user:"), ISAACLAB_API, num_envs=num_envs, device=device)
    else:
        system = get_system(system_id)
    run = execute(system, case)
    if run.build_error is not None:
        return [f"build error: {run.build_error}"]
    return [v.render() for v in run.violations if v.spec == spec_id]
