"""Ground truth from the call logs, frame-stack decoding, and the watchdog for hanging systems."""

from __future__ import annotations

import time

import numpy as np
import pytest

pytest.importorskip("gymnasium")  # the reference envs are gymnasium.Envs

from rlconform.core.search import check_spec
from rlconform.core.spec import get_spec
from rlconform.core.system import Capabilities, System
from rlconform.envs.decode import decode_stacked
from rlconform.envs.plan import Case, Reset, Step
from rlconform.envs.reference_env import ReferenceEnv
from rlconform.envs.script import EnvScript, EpisodePlan
from rlconform.envs.spaces import BoxObs, Garbage
from rlconform.envs.stamp import Stamp
from rlconform.envs.truth import build_truth
from rlconform.libraries.gymnasium.vector_model import ModelVectorEnv


def _log(script: EnvScript, calls: list) -> list:
    env = ReferenceEnv(script)
    for call in calls:
        if call == "reset":
            env.reset()
        else:
            env.step(call)
    return env.sink.read()


def test_time_limit_truncates_in_the_ground_truth_and_can_coincide_with_termination():
    script = EnvScript(episodes=(EpisodePlan(2, "terminated"),), max_episode_steps=2)
    truth = build_truth(script, [_log(script, ["reset", 0, 0])])
    last = truth.envs[0].transitions[-1]
    assert (last.terminated, last.truncated) == (True, True)
    assert truth.envs[0].episodes[0].ended == "both"


def test_steps_after_the_end_and_discarding_resets_are_recorded():
    script = EnvScript(episodes=(EpisodePlan(1, "terminated"), EpisodePlan(5, "never")))
    truth = build_truth(script, [_log(script, ["reset", 0, 0, "reset", 0, "reset"])])
    env = truth.envs[0]
    assert [r.step_after for r in env.steps_after_end] == [2]
    assert len(env.discarding_resets) == 1  # episode 2 was cut after one step
    assert env.discarding_resets[0][1].episode == 2


def test_seeded_resets_make_episodes_reproducible():
    script = EnvScript(episodes=(EpisodePlan(2), EpisodePlan(3)), env_stride=1)
    a, b = ReferenceEnv(script, index=1), ReferenceEnv(script, index=1)
    obs_a, _ = a.reset(seed=7)
    obs_b, _ = b.reset(seed=7)
    assert np.array_equal(obs_a, obs_b)
    c = ReferenceEnv(script, index=1)
    obs_c, _ = c.reset(seed=8)
    assert not np.array_equal(obs_a, obs_c)  # the salt differs with the seed


def test_frame_stacks_must_hold_the_same_episode_or_zero_padding():
    spec = BoxObs(shape=(5,))
    frames = [spec.encode(Stamp(0, 2, s, 9)) for s in (1, 2, 3)]
    assert decode_stacked(spec, np.concatenate(frames), 3) == Stamp(0, 2, 3, 9)
    padded = np.concatenate([np.zeros(5, np.float32), np.zeros(5, np.float32), spec.encode(Stamp(0, 2, 0, 9))])
    assert decode_stacked(spec, padded, 3) == Stamp(0, 2, 0, 9)
    mixed = np.concatenate([spec.encode(Stamp(0, 1, 4, 3)), np.zeros(5, np.float32), spec.encode(Stamp(0, 2, 0, 9))])
    assert isinstance(decode_stacked(spec, mixed, 3), Garbage)
    stale = np.concatenate([np.zeros(5, np.float32), spec.encode(Stamp(0, 1, 4, 3)), spec.encode(Stamp(0, 2, 0, 9))])
    garbage = decode_stacked(spec, stale, 3)
    assert isinstance(garbage, Garbage) and "frame -1" in garbage.reason


class _HangsOnWrongBatch(ModelVectorEnv):
    def step(self, actions):  # type: ignore[no-untyped-def]
        if len(actions) != self.num_envs:
            time.sleep(3600)
        return super().step(actions)


def test_a_hanging_call_becomes_a_verdict(monkeypatch):
    monkeypatch.setenv("RLCONFORM_CALL_TIMEOUT", "0.5")
    system = System(
        id="test.hangs_on_wrong_batch",
        family="gymnasium.vector",
        title="hangs on a wrong-size batch",
        build=lambda env_fns: _HangsOnWrongBatch(list(env_fns), "SameStep"),
        source="_HangsOnWrongBatch(env_fns, 'SameStep')",
        kind="planted",
        capabilities=Capabilities(max_envs=2),
    )
    start = time.perf_counter()
    verdict = check_spec(system, get_spec("lifecycle.responsive"), "ci")
    assert verdict.status == "fail"
    assert "did not answer within 0.5 s" in verdict.message
    assert time.perf_counter() - start < 120


def test_a_run_of_a_case_is_deterministic():
    from rlconform.core.runner import execute
    from rlconform.core.system import get_system

    script = EnvScript(episodes=(EpisodePlan(2, "both"), EpisodePlan(1)), env_stride=1)
    case = Case(script, 2, (Reset(seed=3), *[Step((1, 0))] * 5))
    system = get_system("gymnasium.SyncVectorEnv.SameStep")
    first, second = execute(system, case), execute(system, case)
    assert [(s.env, s.reward, s.terminated) for s in first.slots] == [
        (s.env, s.reward, s.terminated) for s in second.slots
    ]
