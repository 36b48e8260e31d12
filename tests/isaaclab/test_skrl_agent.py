"""``--api skrl.Agent`` (issue 38): what skrl's PPO stores and computes from rlconform's env through
skrl's own Isaac Lab wrapper.

skrl 2.1.1's PPO as Isaac Lab's skrl configs build it (``time_limit_bootstrap: False``) carries its
GAE across every time-out into the next episode (FINDINGS K1): it fails ``learner.returns`` with
every variant (a 3-step rollout, lambda 1, preprocessors, a reward shaper) while storing every row
right. With ``time_limit_bootstrap=True`` it bootstraps a time-out from the next episode's first
observation, which skrl's Isaac Lab wrapper hands it (FINDINGS I4): ``learner.storage`` fails, its
GAE is right. The controls are forks: one whose GAE ends at time-outs too passes both, its missing
bootstrap "known" in ``learner.exact_targets`` citing skrl's config; one that also bootstraps from
``extras["final_obs"]`` passes all three. Each planted bug on
the fork fails exactly its specs. Runs in ``.venv-isaaclab`` (skrl 2.1.1).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

pytest.importorskip("skrl.agents.torch", reason="skrl is not installed")

from rlconform.core.system import get_system
from rlconform.libraries.skrl import agent_systems
from rlconform.specs.learner import EXACT, RETURNS, STORAGE

SPECS = (STORAGE, RETURNS, EXACT)
API = "skrl.Agent"
#: the conftest fixture: per learner spec, (status, known, message) of a bundled system
Statuses = Callable[[str], dict[str, tuple[str, bool, str]]]


def test_a_fork_that_bootstraps_from_the_terminal_observation_meets_every_learner_spec(
    learner_statuses: Statuses,
) -> None:
    """The control of all three specs: the fix of K1 and of I4 a user writes."""
    found = learner_statuses("reference.skrl.Agent.ExactPPO")
    assert {spec_id: status for spec_id, (status, _k, _m) in found.items()} == dict.fromkeys(SPECS, "pass"), found


def test_the_fork_that_ends_its_gae_at_time_outs_passes_and_its_missing_bootstrap_is_known(
    learner_statuses: Statuses,
) -> None:
    found = learner_statuses("reference.skrl.Agent.ForkedPPO")
    assert found[STORAGE][0] == "pass" and found[RETURNS][0] == "pass", found
    status, known, message = found[EXACT]
    assert status == "fail" and known and "not bootstrapped instead of from V(terminal observation)" in message


@pytest.mark.parametrize(
    "suffix", [suffix for suffix, _what, cfg in agent_systems.VARIANTS if not cfg.get("time_limit_bootstrap")]
)
def test_skrl_ppo_as_isaac_lab_configures_it_carries_its_gae_across_time_outs(
    suffix: str, learner_statuses: Statuses
) -> None:
    found = learner_statuses(f"skrl.Agent.PPO{suffix}")
    assert found[STORAGE][0] == "pass", found[STORAGE]
    status, known, message = found[RETURNS]
    assert status == "fail" and not known, found[RETURNS]
    assert "GAE carried across time-outs into the next episode" in message, message


def test_skrl_a2c_carries_its_gae_across_time_outs_too(learner_statuses: Statuses) -> None:
    found = learner_statuses("skrl.Agent.A2C")
    assert found[STORAGE][0] == "pass", found[STORAGE]
    assert found[RETURNS][0] == "fail" and "across time-outs into the next episode" in found[RETURNS][2]


def test_skrl_ppo_with_time_limit_bootstrap_bootstraps_from_the_next_episode(learner_statuses: Statuses) -> None:
    found = learner_statuses("skrl.Agent.PPO.time_limit_bootstrap")
    assert found[RETURNS][0] == "pass", found[RETURNS]
    status, _known, message = found[STORAGE]
    assert status == "fail" and "gamma * V(the next episode's first observation)" in message, message


@pytest.mark.parametrize("defect", sorted(agent_systems.PLANTS))
def test_each_planted_bug_fails_exactly_its_specs(defect: str, learner_statuses: Statuses) -> None:
    system_id = f"planted.skrl.Agent.{''.join(p.title() for p in defect.split('_'))}"
    found = learner_statuses(system_id)
    failed = {spec_id for spec_id, (status, known, _m) in found.items() if status == "fail" and not known}
    assert failed == set(get_system(system_id).plants), found


def test_the_findings_rows_name_the_bundled_failures() -> None:
    from rlconform.libraries.skrl.agent_family import FAMILY

    assert FAMILY.findings_row("skrl.Agent.PPO", RETURNS) == "K1"
    assert FAMILY.findings_row("skrl.Agent.PPO.lambda_1", RETURNS) == "K1"
    assert FAMILY.findings_row("skrl.Agent.PPO.time_limit_bootstrap", STORAGE) == "I4"
    assert FAMILY.findings_row("skrl.Agent.A2C", RETURNS) == "K1"
    assert FAMILY.findings_row("skrl.Agent.PPO.isaaclab.Cartpole", RETURNS) == "K1"
    assert FAMILY.findings_row("skrl.Agent.PPO.time_limit_bootstrap.isaaclab.Cartpole-Direct", STORAGE) == "I4"


def test_over_isaac_labs_reference_direct_rl_env_the_gae_crosses_time_outs(learner_statuses: Statuses) -> None:
    """skrl's wrapper around a real DirectRLEnv subclass (the bundled reference env): the memory
    holds the env's steps, K1 as over rlconform's protocol env."""
    pytest.importorskip("isaaclab", reason="Isaac Lab is not installed")
    found = learner_statuses("skrl.Agent.PPO.isaaclab")
    assert found[STORAGE][0] == "pass", found[STORAGE]
    assert found[RETURNS][0] == "fail" and "across time-outs into the next episode" in found[RETURNS][2]


@pytest.mark.slow  # about 20 s each: a physics simulation built and stepped per example
@pytest.mark.parametrize(
    ("system_id", "storage", "returns"),
    [
        # the manager-based task, skrl's PPO as Isaac Lab's configs build it: the memory holds the
        # env's steps, the GAE crosses time-outs (K1; also the main job's skrl.Agent.PPO.isaaclab.Cartpole-Direct)
        ("skrl.Agent.PPO.isaaclab.Cartpole", "pass", "across time-outs into the next episode"),
        # the direct task with time_limit_bootstrap: the time-outs bootstrapped from the next
        # episode's first observation (I4, on the real task)
        (
            "skrl.Agent.PPO.time_limit_bootstrap.isaaclab.Cartpole-Direct",
            "the next episode's first observation",
            "pass",
        ),
    ],
)
def test_over_the_real_cartpole_tasks_skrl_shows_k1_and_i4(
    system_id: str, storage: str, returns: str, learner_statuses: Statuses
) -> None:
    pytest.importorskip("isaaclab", reason="Isaac Lab is not installed")
    found = learner_statuses(system_id)
    for spec_id, expected in ((STORAGE, storage), (RETURNS, returns)):
        status, known, message = found[spec_id]
        if expected == "pass":
            assert status == "pass", found[spec_id]
        else:
            assert status == "fail" and not known and expected in message, found[spec_id]


@pytest.mark.slow
def test_every_front_end_checks_an_agent(every_front_end: Callable[[str], None]) -> None:
    """The CLI (with every report format and the reproducers), the plugin and
    ``parametrize_with_checks`` on a correct agent factory and a buggy one."""
    every_front_end(API)


@pytest.mark.skipif(
    not __import__("torch").cuda.is_available(), reason="no CUDA device: the learners' CUDA path is not exercised"
)
@pytest.mark.parametrize("system_id", ["skrl.Agent.PPO.cuda", "skrl.Agent.PPO.isaaclab.cuda"])
def test_on_cuda_the_agent_stores_what_it_does_on_the_cpu(system_id: str, learner_statuses: Statuses) -> None:
    found = learner_statuses(system_id)
    cpu = learner_statuses(system_id.removesuffix(".cuda"))
    assert {k: v[:2] for k, v in found.items()} == {k: v[:2] for k, v in cpu.items()}, (found, cpu)
