"""The ``rlconform`` command, run the way a user runs it: a process in a directory holding their module.

Exit codes are the contract: 0 when every applicable spec passes, 1 when one does not, 2 for input
that cannot be used (with a one-line reason on stderr, never a traceback).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("gymnasium")

MYVEC = '''
import gymnasium


def make(env_fns, **kwargs):
    return gymnasium.vector.SyncVectorEnv(env_fns, autoreset_mode=gymnasium.vector.AutoresetMode.SAME_STEP)


class DropFinalObs(gymnasium.vector.VectorWrapper):
    """Loses the true terminal observation."""

    def step(self, actions):
        obs, rewards, terminated, truncated, infos = self.env.step(actions)
        infos = {k: v for k, v in infos.items() if k not in ("final_obs", "_final_obs")}
        return obs, rewards, terminated, truncated, infos


def broken(env_fns, **kwargs):
    return DropFinalObs(make(env_fns))


def no_arguments():
    return None
'''

SPECS = ("--spec", "terminal.final_obs", "--spec", "flags.*")


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    (tmp_path / "myvec.py").write_text(MYVEC)
    return tmp_path


def run(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "RLCONFORM_PROFILE": "ci"}
    env.pop("RLCONFORM_SEED", None)
    return subprocess.run(
        [sys.executable, "-m", "rlconform.cli", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_check_passing_system_exits_0(workdir: Path) -> None:
    result = run(workdir, "check", "myvec:make", "--api", "gymnasium.vector", "--profile", "ci", *SPECS)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "profile: ci" in result.stdout
    for spec_id in ("terminal.final_obs", "flags.terminated", "flags.truncated"):
        assert re.search(rf"^\s*PASS\s+{re.escape(spec_id)}:", result.stdout, re.MULTILINE), result.stdout
    assert result.stderr == ""


def test_check_broken_system_exits_1_with_reproducer(workdir: Path) -> None:
    result = run(workdir, "check", "myvec:broken", "--api", "gymnasium.vector", "--profile", "ci", *SPECS)
    assert result.returncode == 1, result.stdout + result.stderr
    assert re.search(r"^\s*FAIL\s+terminal\.final_obs: env \d", result.stdout, re.MULTILINE), result.stdout
    assert "rlconform reproducer: user:myvec:broken violates terminal.final_obs." in result.stdout
    assert re.search(r"^\s*PASS\s+flags\.terminated:", result.stdout, re.MULTILINE), result.stdout


@pytest.mark.parametrize(
    ("target", "family", "reason"),
    [
        pytest.param("nosuchmodule_xyz:make", "gymnasium.vector", "module 'nosuchmodule_xyz' not found", id="module"),
        pytest.param("myvec:nosuch", "gymnasium.vector", "module 'myvec' has no attribute 'nosuch'", id="callable"),
        pytest.param("myvec", "gymnasium.vector", "expected MODULE:CALLABLE, got 'myvec'", id="no-colon"),
        pytest.param(
            "myvec:no_arguments",
            "gymnasium.vector",
            "myvec:no_arguments has signature (); family gymnasium.vector expects (env_fns:",
            id="signature",
        ),
        pytest.param("myvec:make", "gym.Vector", "unknown API family 'gym.Vector'; known: gymnasium.Env,", id="family"),
    ],
)
def test_check_bad_input_exits_2_with_one_line_reason(workdir: Path, target: str, family: str, reason: str) -> None:
    result = run(workdir, "check", target, "--api", family, "--spec", "flags.terminated")
    assert result.returncode == 2, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"rlconform: error: {reason}")
    assert "Traceback" not in result.stdout


def test_check_json_lists_every_spec_with_status_message_and_reproducer(workdir: Path) -> None:
    result = run(
        workdir, "check", "myvec:broken", "--api", "gymnasium.vector", "--profile", "ci", *SPECS, "--json", "out.json"
    )
    assert result.returncode == 1, result.stdout + result.stderr
    document = json.loads((workdir / "out.json").read_text())
    assert document["schema"] == "rlconform/results"
    assert document["profile"]["name"] == "ci"
    assert [s["id"] for s in document["systems"]] == ["user:myvec:broken"]
    results = document["results"]
    assert [r["spec"] for r in results] == ["terminal.final_obs", "flags.terminated", "flags.truncated"]
    for entry in results:
        assert {"spec", "status", "message", "reproducer"} <= set(entry)
        assert entry["system"] == "user:myvec:broken"
        assert entry["message"]
    assert [r["status"] for r in results] == ["fail", "pass", "pass"]
    assert [r["reproducer"] is None for r in results] == [False, True, True]
    assert document["summary"] == {"fail": 1, "pass": 2}

    # the reproducer is a standalone script: it replays the minimal case and exits 1 while the bug remains
    (workdir / "repro.py").write_text(results[0]["reproducer"])
    replay = subprocess.run([sys.executable, "repro.py"], cwd=workdir, capture_output=True, text=True, timeout=120)
    assert replay.returncode == 1, replay.stdout + replay.stderr
    # ... and needs no Hypothesis: with hypothesis unimportable it shows the same violation
    no_hypothesis = (
        "import runpy, sys; sys.modules['hypothesis'] = None; runpy.run_path('repro.py', run_name='__main__')"
    )
    blocked = subprocess.run(
        [sys.executable, "-c", no_hypothesis], cwd=workdir, capture_output=True, text=True, timeout=120
    )
    assert blocked.returncode == 1, blocked.stdout + blocked.stderr
    assert "ImportError" not in blocked.stderr
    assert results[0]["message"].splitlines()[0] in blocked.stdout + blocked.stderr


def test_list_names_systems_and_specs(workdir: Path) -> None:
    result = run(workdir, "list")
    assert result.returncode == 0, result.stderr
    assert "gymnasium.SyncVectorEnv.SameStep" in result.stdout
    assert "transitions.exact" in result.stdout


MYTORCHRL = '''
from torchrl.envs import GymWrapper, SerialEnv, Transform, TransformedEnv


def serial(env_fn):
    return SerialEnv(2, lambda: GymWrapper(env_fn()))


class ShiftReward(Transform):
    """Adds 1 to every reward: the transitions no longer carry the env's rewards."""

    def _step(self, tensordict, next_tensordict):
        next_tensordict.set("reward", next_tensordict.get("reward") + 1.0)
        return next_tensordict


def broken(env_fn):
    return TransformedEnv(GymWrapper(env_fn()), ShiftReward())
'''
TORCHRL_SPECS = ("--spec", "transitions.exact", "--spec", "flags.*")


def test_check_torchrl_factory_exits_0_and_a_broken_one_exits_1(tmp_path: Path) -> None:
    """Family torchrl.EnvBase: the factory gets one env_fn and picks the number of sub-envs."""
    pytest.importorskip("torchrl")
    (tmp_path / "mytorchrl.py").write_text(MYTORCHRL)
    good = run(tmp_path, "check", "mytorchrl:serial", "--api", "torchrl.EnvBase", "--profile", "ci", *TORCHRL_SPECS)
    assert good.returncode == 0, good.stdout + good.stderr
    assert re.search(r"^\s*PASS\s+transitions\.exact:", good.stdout, re.MULTILINE), good.stdout
    bad = run(tmp_path, "check", "mytorchrl:broken", "--api", "torchrl.EnvBase", "--profile", "ci", *TORCHRL_SPECS)
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert re.search(r"^\s*FAIL\s+transitions\.exact: env 0, agent step \d+: reward is", bad.stdout, re.MULTILINE)
    assert "rlconform reproducer: user:mytorchrl:broken violates transitions.exact." in bad.stdout


# ------------------------------------------------------------- choosing what runs: specs, stacks


def test_skip_spec_leaves_specs_out_and_says_which(workdir: Path) -> None:
    result = run(
        workdir,
        "check",
        "myvec:make",
        "--api",
        "gymnasium.vector",
        *SPECS,
        "--skip-spec",
        "flags.t*u*",
        "--json",
        "out.json",
    )
    assert result.returncode == 0, result.stdout + result.stderr
    skipped = "specs skipped by the user (--skip-spec), not run: flags.truncated"
    assert f"NOT RUN {skipped}" in result.stdout
    document = json.loads((workdir / "out.json").read_text())
    assert sorted(r["spec"] for r in document["results"]) == ["flags.terminated", "terminal.final_obs"]
    assert sorted(s["id"] for s in document["specs"]) == ["flags.terminated", "terminal.final_obs"]
    assert skipped in document["notes"]


def test_run_skip_spec(tmp_path: Path) -> None:
    result = run(
        tmp_path,
        "run",
        *("--system", "gymnasium.SyncVectorEnv.NextStep", "--spec", "flags.*", "--skip-spec", "flags.terminated"),
        *("--in-process", "--json", "out.json"),
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "NOT RUN specs skipped by the user (--skip-spec), not run: flags.terminated" in result.stdout
    document = json.loads((tmp_path / "out.json").read_text())
    assert [(r["system"], r["spec"]) for r in document["results"]] == [
        ("gymnasium.SyncVectorEnv.NextStep", "flags.truncated")
    ]


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        pytest.param(("--skip-spec", "nosuch.*"), "--skip-spec 'nosuch.*' matches no selected spec", id="no-match"),
        pytest.param(("--skip-spec", "*"), "--skip-spec leaves no spec to check", id="all"),
        pytest.param(("--stacks", "sb3.*"), "--stacks does not apply to --api gymnasium.vector", id="stacks"),
    ],
)
def test_bad_selection_exits_2(workdir: Path, args: tuple[str, ...], reason: str) -> None:
    result = run(workdir, "check", "myvec:make", "--api", "gymnasium.vector", *SPECS, *args)
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr.startswith(f"rlconform: error: {reason}"), result.stderr


ENV = "rlconform.libraries.envauthor.sample_envs"


def test_stacks_chooses_the_stacks_env_author_mode_runs(tmp_path: Path) -> None:
    result = run(
        tmp_path,
        *("check", f"{ENV}:counter", "--api", "gymnasium.Env", "--spec", "env.stack_equivalence"),
        *("--stacks", "gymnasium.SyncVectorEnv.*", "--stacks", "gymnasium.AsyncVectorEnv.NextStep", "--json", "o.json"),
    )
    assert result.returncode == 0, result.stdout + result.stderr
    (verdict,) = json.loads((tmp_path / "o.json").read_text())["results"]
    chosen = "gymnasium.SyncVectorEnv.NextStep, gymnasium.SyncVectorEnv.SameStep, gymnasium.SyncVectorEnv.Disabled"
    assert (
        f"the same transitions as the bare env through {chosen}, gymnasium.AsyncVectorEnv.NextStep"
        in (verdict["message"])
    )
    assert (
        "not chosen (--stacks), not run: gymnasium.AsyncVectorEnv.SameStep, gymnasium.AsyncVectorEnv.Disabled"
        in (verdict["message"])
    )


def test_stacks_left_out_are_named_in_a_failure_and_its_reproducer_runs_the_chosen_ones(tmp_path: Path) -> None:
    result = run(
        tmp_path,
        *("check", f"{ENV}:shared_state", "--api", "gymnasium.Env", "--spec", "env.stack_equivalence"),
        *("--stacks", "gymnasium.SyncVectorEnv.NextStep", "--json", "o.json"),
    )
    assert result.returncode == 1, result.stdout + result.stderr
    (verdict,) = json.loads((tmp_path / "o.json").read_text())["results"]
    assert verdict["status"] == "fail"
    assert verdict["message"].startswith("1 of 1 stacks that ran the env differ from the bare env: ")
    assert " | not chosen (--stacks), not run: gymnasium.SyncVectorEnv.SameStep, " in verdict["message"]
    assert "stacks=('gymnasium.SyncVectorEnv.NextStep',)" in verdict["reproducer"]
    (tmp_path / "repro.py").write_text(verdict["reproducer"])
    replay = subprocess.run([sys.executable, "repro.py"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert replay.returncode == 1, replay.stdout + replay.stderr


def test_stacks_matching_no_stack_is_bad_input(tmp_path: Path) -> None:
    result = run(tmp_path, "check", f"{ENV}:counter", "--api", "gymnasium.Env", "--stacks", "gymnasium.Sync*.Nope")
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr.startswith(
        "rlconform: error: --stacks 'gymnasium.Sync*.Nope' matches no stack; the stacks are: gymnasium.SyncVectorEnv"
    )
