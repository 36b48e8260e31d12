"""Version-aware adapters: each Gymnasium release is read by its own documented recipe.

The compatibility matrix runs the same specs against Gymnasium 0.29.1 to 1.4.0; a verdict must
mean the same on each. Here the older releases are imported for real (each installed by pip from
its constraints file into a folder of its own, put first on PYTHONPATH of a subprocess, as
scripts/matrix.py does), and on each the release-sensitive specs are shown to pass on the
library's vector env and to catch a planted bug of their kind.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from rlconform.libraries.gymnasium.releases import GymRelease

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("version", "modes", "final_key", "enum", "mask", "wrappers"),
    [
        ("0.29.1", ("SameStep",), "final_observation", False, False, False),
        ("1.0.0", ("NextStep",), "final_obs", False, False, True),
        ("1.1.1", ("NextStep", "SameStep", "Disabled"), "final_obs", True, True, True),
        ("1.4.0", ("NextStep", "SameStep", "Disabled"), "final_obs", True, True, True),
    ],
)
def test_release_semantics(version, modes, final_key, enum, mask, wrappers):
    release = GymRelease(version)
    assert release.modes == modes
    assert release.final_obs_key == final_key
    assert release.has_autoreset_mode is enum
    assert release.reset_mask is mask
    assert release.vector_wrappers is wrappers
    for mode in ("NextStep", "SameStep", "Disabled"):
        reason = release.mode_unavailable(mode)
        assert (reason is None) is (mode in modes)
        if reason:
            assert version in reason and mode in reason


#: run in a subprocess that imports the release under test: each (system, spec) and its verdict
CHECK = textwrap.dedent(
    """
    import json, sys
    import gymnasium
    from rlconform.core.search import check_spec
    from rlconform.core.spec import get_spec
    from rlconform.core.system import get_system
    out = {"gymnasium": gymnasium.__version__, "verdicts": {}, "skips": {}}
    for system_id, spec_id in json.loads(sys.argv[1]):
        v = check_spec(get_system(system_id), get_spec(spec_id), "ci")
        out["verdicts"][f"{system_id} {spec_id}"] = [v.status, v.message.splitlines()[0] if v.message else ""]
    for system_id in json.loads(sys.argv[2]):
        out["skips"][system_id] = get_system(system_id).skip_reason()
    print(json.dumps(out))
    """
)


def _in_release(script, env: str, checks: list[tuple[str, str]], skips: list[str]) -> dict:
    release = script.environments()[env]
    folder = script.overlay(env, release, ROOT / ".matrix")
    run_env = dict(os.environ, PYTHONPATH=str(folder))
    result = subprocess.run(
        [sys.executable, "-c", CHECK, json.dumps(checks), json.dumps(skips)],
        cwd=ROOT,
        env=run_env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    out = json.loads(result.stdout.strip().splitlines()[-1])
    assert out["gymnasium"] == release
    return out


def _assert_verdicts(out: dict, expected: dict[tuple[str, str], str]) -> None:
    wrong = {
        key: out["verdicts"][f"{key[0]} {key[1]}"]
        for key, status in expected.items()
        if out["verdicts"][f"{key[0]} {key[1]}"][0] != status
    }
    assert not wrong, wrong


@pytest.mark.slow
def test_gymnasium_0_29_same_step_read_through_final_observation(matrix_script):
    expected = {
        ("gymnasium.SyncVectorEnv.SameStep", "transitions.exact"): "pass",
        ("gymnasium.SyncVectorEnv.SameStep", "terminal.final_obs"): "pass",
        ("gymnasium.SyncVectorEnv.SameStep", "model.outputs_match"): "pass",
        ("gymnasium.SyncVectorEnv.SameStep", "api.shape"): "pass",
        ("gymnasium.Env.make", "transitions.exact"): "pass",
        ("planted.wrong_final_obs", "terminal.final_obs"): "fail",
        ("planted.shifted_reward", "transitions.exact"): "fail",
        ("planted.extra_info_key", "model.outputs_match"): "fail",
        ("planted.no_info_masks", "api.shape"): "fail",
    }
    skips = ["gymnasium.SyncVectorEnv.NextStep", "gymnasium.AsyncVectorEnv.Disabled", "gymnasium.Env.Autoreset"]
    skips += ["gymnasium.RecordEpisodeStatistics.SyncVectorEnv.SameStep", "torchrl.GymWrapper.SyncVectorEnv"]
    out = _in_release(matrix_script, "gymnasium-0.29.1", list(expected), skips)
    _assert_verdicts(out, expected)
    reasons = out["skips"]
    assert reasons["gymnasium.SyncVectorEnv.NextStep"].startswith("gymnasium 0.29.1 has no NextStep autoreset mode")
    assert reasons["gymnasium.AsyncVectorEnv.Disabled"].startswith("gymnasium 0.29.1 has no Disabled")
    assert "next-step Autoreset wrapper" in reasons["gymnasium.Env.Autoreset"]
    assert "gymnasium.wrappers.vector" in reasons["gymnasium.RecordEpisodeStatistics.SyncVectorEnv.SameStep"]
    assert "Disabled" in reasons["torchrl.GymWrapper.SyncVectorEnv"]


@pytest.mark.slow
def test_gymnasium_1_0_next_step_without_autoreset_mode(matrix_script):
    expected = {
        ("gymnasium.SyncVectorEnv.NextStep", "transitions.exact"): "pass",
        ("gymnasium.SyncVectorEnv.NextStep", "reset_step.neutral"): "pass",
        ("gymnasium.SyncVectorEnv.NextStep", "model.outputs_match"): "pass",
        ("gymnasium.SyncVectorEnv.NextStep", "api.shape"): "pass",
        ("gymnasium.Env.Autoreset", "transitions.exact"): "pass",
        ("planted.rewarding_reset_step", "reset_step.neutral"): "fail",
        ("planted.stale_first_obs", "continuity.fresh_first_obs"): "fail",
        ("planted.extra_info_key", "model.outputs_match"): "fail",
        # TorchRL 0.14.1 declares no gymnasium bound but implements its gym registration for
        # gymnasium <1.0.0 and >=1.1.0 only: nothing TorchRL wraps can be built on 1.0.x
        ("torchrl.GymWrapper", "transitions.exact"): "error",
        ("torchrl.Collector.GymWrapper", "collector.frame_accounting"): "error",
    }
    skips = ["gymnasium.SyncVectorEnv.SameStep", "gymnasium.SyncVectorEnv.Disabled", "gymnasium.Env.Autoreset"]
    out = _in_release(matrix_script, "gymnasium-1.0.0", list(expected), skips)
    _assert_verdicts(out, expected)
    for pair in ("torchrl.GymWrapper transitions.exact", "torchrl.Collector.GymWrapper collector.frame_accounting"):
        message = out["verdicts"][pair][1]
        assert "could not be built for any example: ImportError" in message, message
        assert "gym backend gymnasium with version=1.0.0" in message, message
    assert out["skips"]["gymnasium.SyncVectorEnv.SameStep"].startswith("gymnasium 1.0.0 has no SameStep")
    assert out["skips"]["gymnasium.Env.Autoreset"] is None
