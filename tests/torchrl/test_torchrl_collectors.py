"""TorchRL collectors: every collector spec catches its planted bug and passes on the model, and
the verdicts on TorchRL's own collectors (FINDINGS.md, "TorchRL 0.14.1 — collectors and replay
buffers") are pinned on concrete cases, so that a TorchRL release that changes one fails here.

Multi-process collectors start worker processes (seconds each): they are exercised on a few
concrete cases rather than by a search.
"""

from __future__ import annotations

import io

import pytest

pytest.importorskip("torchrl")

from rlconform.core.profiles import Profile
from rlconform.core.search import check_spec
from rlconform.core.spec import Violation, get_spec
from rlconform.core.system import get_system
from rlconform.envs.plan import Reset
from rlconform.envs.script import EnvScript, EpisodePlan
from rlconform.libraries.torchrl.collectors import CollectorCase
from rlconform.replay import replay

SMALL = Profile("torchrl-collectors", 6, 3, True, "a few derandomized examples", 20, 5, 20.0)
SPECS = ("collector.frame_accounting", "collector.transitions", "collector.policy_updates")
#: episodes that end every way, one of them by truncation only
SCRIPT = EnvScript(episodes=(EpisodePlan(2, "truncated"), EpisodePlan(3, "terminated"), EpisodePlan(1, "both")))


def case(num_envs: int = 1, per_batch: int = 4, total: int = 8, **kwargs: object) -> CollectorCase:
    return CollectorCase(SCRIPT, num_envs, (Reset(),), frames_per_batch=per_batch, total_frames=total, **kwargs)  # type: ignore[arg-type]


def violations(system_id: str, spec_id: str, concrete: CollectorCase) -> list[Violation]:
    return replay(system_id, concrete, spec_id, out=io.StringIO())


@pytest.mark.parametrize(
    ("system_id", "spec_id"),
    [
        ("planted.torchrl.Collector.DropsLastFrame", "collector.frame_accounting"),
        ("planted.torchrl.Collector.RecordsResetStep", "collector.transitions"),
        ("planted.torchrl.Collector.StaleCopy", "collector.policy_updates"),
    ],
)
def test_spec_catches_its_planted_bug(system_id: str, spec_id: str) -> None:
    verdict = check_spec(get_system(system_id), get_spec(spec_id), SMALL)
    assert verdict.status == "fail", verdict.message
    out = io.StringIO()
    assert replay(system_id, verdict.case, spec_id, out=out), out.getvalue()


def test_model_passes_every_collector_spec() -> None:
    system = get_system("reference.torchrl.Collector")
    for spec_id in SPECS:
        verdict = check_spec(system, get_spec(spec_id), SMALL)
        assert verdict.status == "pass", f"{spec_id}: {verdict.status}: {verdict.message}"


def test_model_refuses_what_it_cannot_deliver_and_the_spec_accepts_that() -> None:
    assert not violations("reference.torchrl.Collector", "collector.frame_accounting", case(per_batch=4, total=10))


# ------------------------------------------------------------------------------- TorchRL 0.14.1


def test_finding_collector_rounds_total_frames_up() -> None:
    found = violations("torchrl.Collector.GymWrapper", "collector.frame_accounting", case(per_batch=4, total=10))
    assert any("delivered 12 frames" in v.message for v in found), found


def test_finding_collector_rounds_frames_per_batch_up_to_the_envs() -> None:
    found = violations("torchrl.Collector.SerialEnv", "collector.frame_accounting", case(2, per_batch=3, total=6))
    assert any("holds 4 frames" in v.message for v in found), found


@pytest.mark.parametrize("system_id", ["torchrl.Collector.GymWrapper", "torchrl.Collector.SerialEnv"])
def test_control_collector_transitions_are_real(system_id: str) -> None:
    num_envs = 2 if system_id.endswith("SerialEnv") else 1
    assert not violations(
        system_id, "collector.transitions", case(num_envs, per_batch=2 * num_envs, total=12 * num_envs)
    )


@pytest.mark.parametrize("policy", ["handle", "detaching"])
@pytest.mark.parametrize("device_casts", [False, True])
def test_control_single_process_collector_uses_the_policy_as_given(policy: str, device_casts: bool) -> None:
    concrete = case(per_batch=2, total=8, policy=policy, device_casts=device_casts)
    assert not violations("torchrl.Collector.GymWrapper", "collector.policy_updates", concrete)


@pytest.mark.slow  # multi-process collectors start worker processes
def test_control_multi_process_collectors() -> None:
    # an unpicklable policy is refused at construction with a clear error; a detaching one is
    # sent to the workers by pickling (its __deepcopy__ is not used) and follows the update
    for system_id in ("torchrl.MultiSyncCollector.GymWrapper", "torchrl.MultiAsyncCollector.GymWrapper"):
        for policy in ("handle", "detaching"):
            concrete = case(2, per_batch=2, total=10, policy=policy)
            assert not violations(system_id, "collector.policy_updates", concrete), (system_id, policy)
