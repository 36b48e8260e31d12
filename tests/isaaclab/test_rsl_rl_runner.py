"""``--api rsl_rl.Runner`` (issue 38): what RSL-RL's runner stores and computes from rlconform's env.

RSL-RL's own PPO, and its innocent variants (other horizons, lambda 1, observation normalization,
per-mini-batch advantages), pass ``learner.storage`` and ``learner.returns``; its time-out
bootstrap from V(s_t) is "known" in ``learner.exact_targets``, citing RSL-RL's source, with its bias
measured. Each planted bug (a fork's GAE or storage, a wrapper's time-out flags) fails exactly its
specs. The CLI, the plugin and ``parametrize_with_checks`` are shown by
``tests/frontends/test_every_api.py`` for this ``--api`` (run here: RSL-RL is in this environment only).
Runs in ``.venv-isaaclab`` (rsl-rl-lib and GitPython).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

pytest.importorskip("rsl_rl.runners", reason="RSL-RL's runner (rsl-rl-lib with GitPython) is not installed")

from rlconform.core.system import get_system
from rlconform.libraries.rsl_rl import runner_systems
from rlconform.specs.learner import EXACT, RETURNS, STORAGE

SPECS = (STORAGE, RETURNS, EXACT)
API = "rsl_rl.Runner"
#: the conftest fixture: per learner spec, (status, known, message) of a bundled system
Statuses = Callable[[str], dict[str, tuple[str, bool, str]]]


@pytest.mark.parametrize("suffix", [suffix for suffix, _what, _cfg in runner_systems.VARIANTS])
def test_rsl_rl_ppo_and_its_innocent_variants_pass_and_the_bootstrap_is_known(
    suffix: str, learner_statuses: Statuses
) -> None:
    found = learner_statuses(f"rsl_rl.Runner.PPO{suffix}")
    assert found[STORAGE][0] == "pass", found[STORAGE]
    assert found[RETURNS][0] == "pass", found[RETURNS]
    status, known, message = found[EXACT]
    assert status == "fail" and known, found[EXACT]
    assert "bootstrapped from V(s_t) instead of from V(terminal observation): bias mean" in message, message


@pytest.mark.parametrize("defect", sorted(runner_systems.PLANTS))
def test_each_planted_bug_fails_exactly_its_specs(defect: str, learner_statuses: Statuses) -> None:
    system_id = f"planted.rsl_rl.Runner.{''.join(p.title() for p in defect.split('_'))}"
    found = learner_statuses(system_id)
    failed = {spec_id for spec_id, (status, known, _m) in found.items() if status == "fail" and not known}
    assert failed == set(get_system(system_id).plants), found


def test_messages_say_what_the_storage_and_returns_got_wrong(learner_statuses: Statuses) -> None:
    bootstrapped = learner_statuses("planted.rsl_rl.Runner.TimeOutsForTerminations")[STORAGE][2]
    assert "a termination bootstrapped as a time-out" in bootstrapped, bootstrapped
    across = learner_statuses("planted.rsl_rl.Runner.GaeAcrossEpisodes")[RETURNS][2]
    assert "GAE carried across episode ends" in across, across
    mixed = learner_statuses("planted.rsl_rl.Runner.GaeAcrossEnvs")[RETURNS][2]
    assert "laid end to end" in mixed, mixed
    post = learner_statuses("planted.rsl_rl.Runner.PostStepObs")[STORAGE][2]
    assert "but the step started from" in post, post


def test_through_isaac_labs_wrapper_a_termination_on_the_time_limit_is_bootstrapped(learner_statuses: Statuses) -> None:
    """FINDINGS I3 reaches the storage: RslRlVecEnvWrapper hands a sub-env that terminated on its
    time limit on as a time-out, and RSL-RL's PPO bootstraps it."""
    pytest.importorskip("isaaclab_rl", reason="Isaac Lab is not installed")
    from rlconform.libraries.rsl_rl.runner_family import FAMILY

    found = learner_statuses("rsl_rl.Runner.PPO.isaaclab")
    assert found[RETURNS][0] == "pass", found[RETURNS]
    status, known, message = found[STORAGE]
    assert status == "fail" and not known and "a termination bootstrapped as a time-out" in message, message
    assert FAMILY.findings_row("rsl_rl.Runner.PPO.isaaclab", STORAGE) == "I3"
    assert FAMILY.findings_row("rsl_rl.Runner.PPO.isaaclab", EXACT) == "I3"


@pytest.mark.slow  # about 20 s: a physics simulation built and stepped per example
def test_over_the_real_cartpole_task_rsl_rl_stores_its_steps_and_the_bootstrap_is_known(
    learner_statuses: Statuses,
) -> None:
    """RSL-RL's PPO through RslRlVecEnvWrapper around the real Isaac-Cartpole-Direct (Newton physics):
    the storage holds the env's steps, the returns are GAE over its episodes, and the time-out
    bootstrap from V(s_t) is R1's known approximation, measured on the real task. (The
    manager-based task is the bundled system rsl_rl.Runner.PPO.isaaclab.Cartpole, run by the main
    job.)"""
    pytest.importorskip("isaaclab", reason="Isaac Lab is not installed")
    from rlconform.libraries.rsl_rl.runner_family import FAMILY

    found = learner_statuses("rsl_rl.Runner.PPO.isaaclab.Cartpole-Direct")
    assert found[STORAGE][0] == "pass", found[STORAGE]
    assert found[RETURNS][0] == "pass", found[RETURNS]
    status, known, message = found[EXACT]
    assert status == "fail" and known and "bias mean" in message, found[EXACT]
    assert FAMILY.findings_row("rsl_rl.Runner.PPO.isaaclab.Cartpole-Direct", EXACT) == "R1"
    assert FAMILY.findings_row("rsl_rl.Runner.PPO.isaaclab.Cartpole-Direct", STORAGE) == "I3"


@pytest.mark.slow
def test_every_front_end_checks_a_runner(every_front_end: Callable[[str], None]) -> None:
    """The CLI (with every report format and the reproducers), the plugin and
    ``parametrize_with_checks`` on a correct runner factory and a buggy one."""
    every_front_end(API)


CUDA = pytest.mark.skipif(
    not __import__("torch").cuda.is_available(), reason="no CUDA device: the learners' CUDA path is not exercised"
)


def test_the_cuda_systems_say_why_they_do_not_run_here() -> None:
    import torch

    reason = get_system("rsl_rl.Runner.PPO.cuda").availability()  # type: ignore[misc]
    if torch.cuda.is_available():
        assert reason is None
    else:
        assert reason is not None and "no CUDA device" in reason


@CUDA
@pytest.mark.parametrize("system_id", ["rsl_rl.Runner.PPO.cuda", "rsl_rl.Runner.PPO.isaaclab.cuda"])
def test_on_cuda_the_runner_stores_what_it_does_on_the_cpu(system_id: str, learner_statuses: Statuses) -> None:
    found = learner_statuses(system_id)
    cpu = learner_statuses(system_id.removesuffix(".cuda"))
    assert {k: v[:2] for k, v in found.items()} == {k: v[:2] for k, v in cpu.items()}, (found, cpu)
