"""``--api sb3.Algorithm``, on-policy (issue 27, part 1): what PPO and A2C store in their rollout
buffer, against the env logs and a float64 reference GAE over the model's own value function.

The planted rollout buffers (and the VecEnv wrapper that drops the time-out flag) fail exactly
their specs in tests/sb3/test_algorithm_buffers.py (every planted system of the family); here: the
messages, the innocent buffers, SB3's own PPO and A2C over each VecEnv, the point the rollout is
read at (before any gradient step), and a user's PPO factory from the CLI.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("stable_baselines3")

from rlconform.core.runner import RunCache
from rlconform.core.search import check_spec
from rlconform.core.spec import all_specs, get_spec
from rlconform.core.system import get_system
from rlconform.core.user import probe, user_system
from rlconform.envs.calllog import MemorySink
from rlconform.envs.script import EnvScript, EpisodePlan
from rlconform.envs.spaces import BoxAction, DiscreteAction
from rlconform.libraries.sb3.algorithm_case import AlgorithmCase
from rlconform.libraries.sb3.algorithm_family import make_on_policy
from rlconform.libraries.sb3.algorithm_harness import AlgorithmRun, build_vec_env, run_algorithm_case
from rlconform.libraries.sb3.algorithm_planted import ROLLOUT_INNOCENT
from rlconform.libraries.sb3.algorithm_rollouts import RolloutCollected, reading_callback
from rlconform.specs.families import SB3_ALGORITHM

SPECS = [s for s in all_specs() if SB3_ALGORITHM in s.families]
ROLLOUT_SPECS = {
    "algorithm.rollout_transitions",
    "algorithm.rollout_episode_starts",
    "algorithm.rollout_rewards",
    "algorithm.rollout_returns",
}
#: terminations and time-outs (a TimeLimit of 4 and the env's own ends) at different steps per sub-env
MIXED = (EpisodePlan(2, "terminated"), EpisodePlan(5, "never"), EpisodePlan(3, "truncated"), EpisodePlan(1))


def _verdicts(system_id: str) -> dict[str, object]:
    system = get_system(system_id)
    cache = RunCache()
    return {spec.id: check_spec(system, spec, "ci", cache=cache) for spec in SPECS}


def test_the_family_has_its_four_on_policy_specs() -> None:
    assert {s.id for s in SPECS if s.id.startswith("algorithm.rollout_")} == ROLLOUT_SPECS
    assert all(s.impact == "training-data" for s in SPECS if s.id in ROLLOUT_SPECS)


@pytest.mark.parametrize(
    "system_id",
    ["sb3.PPO.DummyVecEnv", "sb3.A2C.DummyVecEnv", "sb3.PPO.VecNormalize", "sb3.A2C.VecNormalize.unclipped"],
)
def test_sb3_on_policy_rollouts_equal_the_reference(system_id: str) -> None:
    """PPO (gae_lambda 0.95) and A2C (1.0), Discrete and Box actions, over DummyVecEnv and
    VecNormalize (default clip_obs=10 too: the policy values every observation clipped alike):
    SB3's collect_rollouts and RolloutBuffer are exact; the replay-buffer specs do not apply."""
    verdicts = _verdicts(system_id)
    for spec_id in ROLLOUT_SPECS:
        assert verdicts[spec_id].status == "pass", verdicts[spec_id].message  # type: ignore[attr-defined]
    others = {k: v.status for k, v in verdicts.items() if k not in ROLLOUT_SPECS}  # type: ignore[attr-defined]
    assert set(others.values()) == {"not_applicable"}, others
    assert "RolloutBuffer is checked by algorithm.rollout_" in verdicts["algorithm.buffer_dones"].message  # type: ignore[attr-defined]


@pytest.mark.parametrize("name", sorted(ROLLOUT_INNOCENT))
def test_innocent_rollout_buffer_passes(name: str) -> None:
    verdicts = _verdicts(f"reference.sb3_algorithm.{name}")
    statuses = {k: v.status for k, v in verdicts.items() if k in ROLLOUT_SPECS}  # type: ignore[attr-defined]
    assert set(statuses.values()) == {"pass"}, {k: v.message for k, v in verdicts.items()}  # type: ignore[attr-defined]


def _mixed_run(system_id: str) -> AlgorithmRun:
    script = EnvScript(action=DiscreteAction(3), episodes=MIXED, env_stride=1, max_episode_steps=4)
    return run_algorithm_case(get_system(system_id), AlgorithmCase(script, 3, 1, "DummyVecEnv"))


def test_the_reference_bootstraps_time_outs_and_the_case_has_both_ends() -> None:
    """The mixed case truncates (a TimeLimit, the env itself) and terminates in every sub-env, the
    reference adds gamma * V(final observation) exactly at the time-outs, and SB3 stored the same."""
    run = _mixed_run("sb3.PPO.DummyVecEnv")
    assert run.rollout is not None and run.reference is not None, (run.learn_error, run.rollout_error)
    assert run.rollout.rows == 12 and run.rollout.n_envs == 3
    ref, truth = run.reference, run.truth
    assert truth is not None
    timeouts = terminations = 0
    for e in range(3):
        for t, true in enumerate(truth.envs[e].transitions[:12]):
            bonus = ref.rewards[t, e] - ref.plain_rewards[t, e]
            if true.truncated and not true.terminated:
                timeouts += 1
                assert bonus == pytest.approx(0.99 * ref.v_next[t, e]) and bonus != 0
            else:
                terminations += int(true.terminated)
                assert bonus == 0
    assert timeouts >= 3 and terminations >= 3
    np.testing.assert_allclose(run.rollout.rewards, ref.rewards, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(run.rollout.returns, ref.returns, rtol=1e-5, atol=1e-4)


def test_the_rollout_is_read_before_any_gradient_step() -> None:
    """The callback reads the buffer at on_rollout_end (returns and advantages computed) and stops
    learn there: no train(), the policy is the one that collected."""
    script = EnvScript(action=BoxAction(2), episodes=MIXED, max_episode_steps=4)
    model = make_on_policy("PPO", build_vec_env(AlgorithmCase(script, 2, 1), [MemorySink(), MemorySink()]))
    before = [p.detach().clone() for p in model.policy.parameters()]
    sink: dict[str, object] = {}
    with pytest.raises(RolloutCollected):
        model.learn(total_timesteps=model.n_steps * 2, callback=reading_callback(model, sink))
    assert model._n_updates == 0
    assert all(bool((a == b).all()) for a, b in zip(before, model.policy.parameters(), strict=True))
    facts = sink["facts"]
    assert np.any(facts.advantages != 0)  # type: ignore[attr-defined]


def test_a_missing_time_out_bootstrap_is_named_by_row() -> None:
    verdicts = _verdicts("planted.sb3_algorithm.timeout_bootstrap_dropped")
    message = verdicts["algorithm.rollout_rewards"].message  # type: ignore[attr-defined]
    assert verdicts["algorithm.rollout_rewards"].status == "fail"  # type: ignore[attr-defined]
    assert "sub-env" in message and "buffer row" in message and "a time-out" in message
    assert "(the time-out was not bootstrapped)" in message and "gamma * V(final observation" in message


def test_ignored_episode_starts_are_named_by_row() -> None:
    run = _mixed_run("planted.sb3_algorithm.episode_starts_ignored")
    from rlconform.libraries.sb3.algorithm_rollout_specs import algorithm_rollout_episode_starts

    outcome = algorithm_rollout_episode_starts(run)
    assert outcome.violations, "the planted buffer drops every start flag after the first row"
    first = outcome.violations[0].message
    assert "buffer row" in first and "episode_starts 0; expected 1 (the episode's first observation)" in first
    assert {v.env for v in outcome.violations} == {0, 1, 2}


def _write_factories(folder: Path) -> None:
    (folder / "my_ppo.py").write_text(
        """
from stable_baselines3 import PPO
from rlconform.libraries.sb3.algorithm_buffers import CrossEpisodeGAEBuffer

OPTIONS = dict(n_steps=10, batch_size=10, policy_kwargs={"net_arch": [8]}, device="cpu", seed=1)

def good(env):
    return PPO("MlpPolicy", env, **OPTIONS)

def gae_across_episodes(env):
    return PPO("MlpPolicy", env, rollout_buffer_class=CrossEpisodeGAEBuffer, **OPTIONS)
"""
    )


def test_a_user_ppo_factory_is_probed_for_the_spaces_it_takes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _write_factories(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    probed = probe(user_system("my_ppo:good", "sb3.Algorithm"))
    assert probed.capabilities.action_kinds == frozenset({"discrete", "box"})
    assert probed.capabilities.obs_kinds == frozenset({"box"})


@pytest.mark.slow
def test_the_cli_checks_a_user_ppo(
    tmp_path: Path, rlconform_cli: Callable[..., subprocess.CompletedProcess[str]]
) -> None:
    _write_factories(tmp_path)
    good = rlconform_cli("check", "my_ppo:good", "--api", "sb3.Algorithm", timeout=900)
    assert good.returncode == 0, good.stdout + good.stderr
    assert "algorithm.rollout_returns" in good.stdout
    bad = rlconform_cli("check", "my_ppo:gae_across_episodes", "--api", "sb3.Algorithm", timeout=900)
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "algorithm.rollout_returns" in bad.stdout and "buffer row" in bad.stdout


@pytest.mark.slow
def test_subproc_vec_env_ppo_rollouts_equal_the_reference() -> None:
    verdicts = _verdicts("sb3.PPO.SubprocVecEnv")
    for spec_id in ROLLOUT_SPECS:
        assert verdicts[spec_id].status == "pass", verdicts[spec_id].message  # type: ignore[attr-defined]


RECURRENT = """
import numpy as np
from sb3_contrib import RecurrentPPO
from sb3_contrib.common.recurrent.buffers import RecurrentRolloutBuffer


def make(env):
    return RecurrentPPO("MlpLstmPolicy", env, n_steps=12, batch_size=12)


class CrossEpisodeBuffer(RecurrentRolloutBuffer):
    # planted: GAE's trace and bootstrap run on across episode ends
    def compute_returns_and_advantage(self, last_values, dones):
        self.episode_starts = np.zeros_like(self.episode_starts)
        super().compute_returns_and_advantage(last_values, np.zeros_like(dones))


def make_cross_episode(env):
    model = make(env)
    model.rollout_buffer.__class__ = CrossEpisodeBuffer
    return model
"""


def test_a_recurrent_policy_is_probed_by_acting_and_valued_from_its_stored_lstm_states(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """sb3-contrib's MlpLstmPolicy builds over a Dict observation and fails only when it acts: the
    probe makes it act, so the cases draw Box observations only (the stack refusing the kind, not a
    FAIL). Its V of an observation needs the episode's LSTM state: the reference reads the critic
    states the RecurrentRolloutBuffer stored, and RecurrentPPO passes every rollout spec; a GAE
    that runs across episode ends fails."""
    pytest.importorskip("sb3_contrib")
    (tmp_path / "my_recurrent.py").write_text(RECURRENT)
    monkeypatch.syspath_prepend(str(tmp_path))
    system = probe(user_system("my_recurrent:make", "sb3.Algorithm"))
    assert system.capabilities.obs_kinds == frozenset({"box"})
    rollout_specs = [spec for spec in all_specs() if spec.id.startswith("algorithm.rollout_")]
    cache = RunCache()
    for spec in rollout_specs:
        verdict = check_spec(system, spec, "ci", cache=cache)
        assert verdict.status == "pass", (spec.id, verdict.message)
    planted = probe(user_system("my_recurrent:make_cross_episode", "sb3.Algorithm"))
    returns = check_spec(planted, get_spec("algorithm.rollout_returns"), "ci")
    assert returns.status == "fail" and "advantage" in returns.message, returns.message
