"""``--api isaaclab`` on a user's own torch-batched env, with or without Isaac Lab installed.

The checks of the torch tier need torch only (issue 25: a torch-batched env was refused unless
Isaac Lab was installed, naming an extra that installs nothing). The sample envs
(:mod:`rlconform.libraries.isaaclab.sample_user_envs`) follow DirectRLEnv's step/reset contract
without subclassing anything from Isaac Lab: the correct one and the innocent variants pass every
spec of the tier, and each planted bug fails exactly its spec: a time-out reported as a
termination, a stale pre-reset observation, a reward computed after the reset, a terminal
observation read after the reset.
Runs in the main venv (no Isaac Lab) and in ``.venv-isaaclab``.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys

import pytest

pytest.importorskip("torch", reason="torch not installed: --api isaaclab checks torch-batched envs")
pytest.importorskip("gymnasium", reason="gymnasium not installed: the sample envs declare Gymnasium spaces")

from rlconform.core.search import check_spec
from rlconform.core.session import Session
from rlconform.core.spec import all_specs, get_spec
from rlconform.core.system import System
from rlconform.core.user import BadInput
from rlconform.libraries.isaaclab import monitor as mon
from rlconform.libraries.isaaclab import torch_specs, user
from rlconform.libraries.isaaclab.torch_specs import MODEL_SPECS, NAME

MODULE = "rlconform.libraries.isaaclab.sample_user_envs"
MONITOR = list(mon.MONITOR_SPECS)
PROFILE = "fast"

#: factory -> the monitor specs it fails (every other one passes)
EXPECTED = {
    "walker": set(),
    "walker_terminal_at_limit": set(),  # innocent: terminates on the step its time limit hits, both flags set
    "walker_no_final_obs": {mon.FINAL_OBS},
    "walker_time_out_as_termination": {mon.TIME_OUTS},
    "walker_stale_reset_obs": {mon.AUTORESET},
    "walker_reward_after_reset": {mon.REWARD_ORDER},
    # issue 25: passed before (presence and freshness only were checked)
    "walker_final_obs_after_reset": {mon.FINAL_OBS},
    # issue 38: Isaac Gym style envs (no DirectRLEnv hook names), judged by the replay
    "gym_style_walker": set(),
    "gym_style_walker_numpy_rng": set(),  # innocent: the reset draws from a NumPy generator the env holds
    "gym_style_walker_fixed_reset": set(),  # innocent: its observations' order cannot be judged (below)
    "gym_style_walker_noisy_steps": set(),  # innocent: nothing can be judged (below)
    "gym_style_walker_stale_reset_obs": {mon.AUTORESET},
    "gym_style_walker_deferred_reset": {mon.AUTORESET},
    "gym_style_walker_reward_after_reset": {mon.REWARD_ORDER},
}
#: factory -> the monitor specs it cannot exercise (said so, never a pass)
NOT_EXERCISED = {
    "gym_style_walker_fixed_reset": {mon.AUTORESET},
    "gym_style_walker_noisy_steps": {mon.AUTORESET, mon.REWARD_ORDER},
}


def _system(factory: str) -> System:
    return Session().checked_user_system(f"{MODULE}:{factory}", "isaaclab", options={"num_envs": 8, "device": "cpu"})


def test_the_tier_loads_with_torch_alone() -> None:
    ids = {s.id for s in all_specs() if NAME in s.families}
    assert {*MONITOR, *MODEL_SPECS} <= ids


@pytest.mark.parametrize("factory", sorted(EXPECTED))
def test_a_user_env_fails_exactly_its_planted_bug(factory: str) -> None:
    system = _system(factory)
    statuses = {spec_id: check_spec(system, get_spec(spec_id), PROFILE) for spec_id in MONITOR}
    failed = {spec_id for spec_id, v in statuses.items() if v.status == "fail"}
    assert failed == EXPECTED[factory], {k: v.message for k, v in statuses.items() if v.status != "pass"}
    unexercised = {spec_id for spec_id, v in statuses.items() if v.status == "not_exercised"}
    assert unexercised == NOT_EXERCISED.get(factory, set()), {k: v.message for k, v in statuses.items()}
    assert all(v.status in ("pass", "fail", "not_exercised") for v in statuses.values())
    for spec_id in failed:  # the message names the sub-envs and the step
        assert "sub-envs" in statuses[spec_id].message and "env.step" in statuses[spec_id].message


def test_messages_say_what_went_wrong() -> None:
    time_out = check_spec(_system("walker_time_out_as_termination"), get_spec(mon.TIME_OUTS), PROFILE)
    assert "max_episode_length=9" in time_out.message and "time_outs False" in time_out.message
    stale = check_spec(_system("walker_stale_reset_obs"), get_spec(mon.AUTORESET), PROFILE)
    assert "before _reset_idx" in stale.message
    reward = check_spec(_system("walker_reward_after_reset"), get_spec(mon.REWARD_ORDER), PROFILE)
    assert "after _reset_idx" in reward.message
    final = check_spec(_system("walker_final_obs_after_reset"), get_spec(mon.FINAL_OBS), PROFILE)
    assert "computed after _reset_idx" in final.message and "next episode's first observation" in final.message


def test_without_the_task_hooks_the_replay_names_what_it_saw() -> None:
    """Issue 38: an env without DirectRLEnv's hook names was "not judged" on the order of an ending
    step, and passed. The replay with another random state for the reset judges it."""
    stale = check_spec(_system("gym_style_walker_deferred_reset"), get_spec(mon.AUTORESET), PROFILE)
    assert "of a replay" in stale.message and "read before the reset" in stale.message, stale.message
    reward = check_spec(_system("gym_style_walker_reward_after_reset"), get_spec(mon.REWARD_ORDER), PROFILE)
    assert "another random state for its reset" in reward.message, reward.message
    passed = check_spec(_system("gym_style_walker"), get_spec(mon.REWARD_ORDER), PROFILE)
    assert re.search(r"judged by replaying the example with another random state: [1-9]", passed.message)
    noisy = check_spec(_system("gym_style_walker_noisy_steps"), get_spec(mon.REWARD_ORDER), PROFILE)
    assert "its steps draw from them" in noisy.message, noisy.message
    fixed = check_spec(_system("gym_style_walker_fixed_reset"), get_spec(mon.AUTORESET), PROFILE)
    assert "its reset draws nothing they show" in fixed.message, fixed.message


def test_the_replay_puts_the_process_random_state_back() -> None:
    import random

    import numpy as np
    import torch

    from rlconform.libraries.isaaclab import order_probe
    from rlconform.libraries.isaaclab.sample_user_envs import gym_style_walker
    from rlconform.libraries.isaaclab.torch_run import TorchCase, actions

    torch.manual_seed(11)
    np.random.seed(11)
    random.seed(11)
    expected = (torch.rand(3), np.random.rand(3), random.random())
    torch.manual_seed(11)
    np.random.seed(11)
    random.seed(11)
    env = gym_style_walker(4, "cpu")
    verdict = order_probe.judge(env, TorchCase(1, 2, 30, "push"), {"reward": "r", "obs": "o", "final": "f"}, actions)
    assert verdict.judged.get("o", 0) > 0, verdict
    assert torch.equal(torch.rand(3), expected[0]) and np.array_equal(np.random.rand(3), expected[1])
    assert random.random() == expected[2]


def test_without_isaaclab_the_exact_specs_say_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch_specs, "isaaclab_installed", lambda: False)
    verdict = check_spec(_system("walker"), get_spec(MODEL_SPECS[0]), PROFILE)
    assert verdict.status == "not_applicable"
    assert "scripts/install-isaaclab" in verdict.message and "extra" not in verdict.message


def test_without_isaaclab_no_reference_env_is_added(monkeypatch: pytest.MonkeyPatch) -> None:
    from rlconform.libraries.isaaclab import torch_tier
    from rlconform.libraries.isaaclab.torch_tier import FAMILY

    monkeypatch.setattr(torch_tier, "isaaclab_installed", lambda: False)
    assert FAMILY.companions(_system("walker")) == []


def test_without_torch_the_refusal_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "torch" else real(name, *a))
    with pytest.raises(BadInput, match="pip install torch"):
        user.torch_system(lambda n, d: None, "m:f", num_envs=2, device="cpu")


@pytest.mark.slow
def test_cli_checks_a_torch_batched_env() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "rlconform.cli", "check", f"{MODULE}:walker_reward_after_reset", "--api", "isaaclab"],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    assert "FAIL" in done.stdout and mon.REWARD_ORDER in done.stdout
    assert "needs isaaclab installed" not in done.stdout + done.stderr
