"""The ``rlconform`` command, run the way a user runs it: a process in a directory holding their module.

Exit codes are the contract: 0 when every applicable spec passes, 1 when one does not, 2 for input
that cannot be used (with a one-line reason on stderr, never a traceback).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

pytest.importorskip("gymnasium")

pytestmark = pytest.mark.slow  # each test runs the CLI in a subprocess

#: added to the conftest's vectorizer (``vectorizer_source``: ``make`` correct, ``broken`` loses
#: final_obs) in the user's module myvec.py: a factory that takes no arguments
NO_ARGUMENTS = """

def no_arguments():
    return None
"""

SPECS = ("--spec", "terminal.final_obs", "--spec", "flags.*")


@pytest.fixture
def workdir(tmp_path: Path, user_module: Callable[[str, str], Path], vectorizer_source: str) -> Path:
    user_module("myvec", vectorizer_source + NO_ARGUMENTS)
    return tmp_path


#: ``run(cwd, *args)``: the CLI in ``cwd`` as a user runs it there
Run = Callable[..., subprocess.CompletedProcess[str]]
#: the user's environment: the default (ci) profile, no seed pinned by this test session
CI = {"RLCONFORM_PROFILE": "ci", "RLCONFORM_SEED": None}


@pytest.fixture
def run(rlconform_cli: Run) -> Run:
    def check(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
        return rlconform_cli(*args, cwd=cwd, env=CI, timeout=120)

    return check


def test_check_passing_system_exits_0(workdir: Path, run: Run) -> None:
    result = run(workdir, "check", "myvec:make", "--api", "gymnasium.vector", "--profile", "ci", *SPECS)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "profile: ci" in result.stdout
    for spec_id in ("terminal.final_obs", "flags.terminated", "flags.truncated"):
        assert re.search(rf"^\s*PASS\s+{re.escape(spec_id)}:", result.stdout, re.MULTILINE), result.stdout
    assert result.stderr == ""
    # the header names what matters to a Gymnasium vector env only: no Isaac Lab, no accelerator
    libraries = next(line for line in result.stdout.splitlines() if line.startswith("libraries: "))
    assert [entry.split()[0] for entry in libraries.removeprefix("libraries: ").split(", ")] == [
        "gymnasium",
        "numpy",
        "hypothesis",
        "pytest",
    ]
    assert "accelerator" not in result.stdout and "isaaclab" not in result.stdout
    # the summary is a sentence
    assert result.stdout.rstrip().splitlines()[-1] == "summary: 3 passed"


def _printed_reproducer(stdout: str) -> str:
    """The first reproducer of a check's listing: flush-left, between its heading and a blank line
    followed by the next entry or the summary."""
    after = stdout.split("exit status 1 while it fails)\n\n", 1)[1]
    return re.split(r"\n\n(?=summary: |FAIL |ERROR |NOT_EXERCISED )", after, maxsplit=1)[0]


def test_check_broken_system_exits_1_with_reproducer(workdir: Path, run: Run) -> None:
    result = run(workdir, "check", "myvec:broken", "--api", "gymnasium.vector", "--profile", "ci", *SPECS)
    assert result.returncode == 1, result.stdout + result.stderr
    assert re.search(r"^\s*FAIL\s+terminal\.final_obs: env \d", result.stdout, re.MULTILINE), result.stdout
    assert "rlconform reproducer: user:myvec:broken violates terminal.final_obs." in result.stdout
    assert re.search(r"^\s*PASS\s+flags\.terminated:", result.stdout, re.MULTILINE), result.stdout
    assert "summary: 2 passed, 1 failed" in result.stdout
    # printed flush-left: what is copied from the terminal runs as it is
    printed = _printed_reproducer(result.stdout)
    assert printed.startswith('"""rlconform reproducer: user:myvec:broken violates terminal.final_obs.')
    (workdir / "pasted.py").write_text(printed + "\n")
    pasted = subprocess.run([sys.executable, "pasted.py"], cwd=workdir, capture_output=True, text=True, timeout=120)
    assert pasted.returncode == 1, pasted.stdout + pasted.stderr
    assert "VIOLATION terminal.final_obs" in pasted.stdout


def test_expected_failure_is_not_counted_as_a_failure_and_prints_no_reproducer(workdir: Path, run: Run) -> None:
    (workdir / "expected.txt").write_text(
        "user:myvec:broken-terminal.final_obs  drops final_obs; fix in review (#42)\n"
    )
    result = run(
        workdir,
        *("check", "myvec:broken", "--api", "gymnasium.vector", *SPECS, "--expected-failures", "expected.txt"),
        *("--json", "expected.json"),
    )
    assert result.returncode == 0, result.stdout + result.stderr
    (entry,) = [r for r in json.loads((workdir / "expected.json").read_text())["results"] if r["expected"]]
    assert (entry["spec"], entry["status"], entry["outcome"]) == ("terminal.final_obs", "known", "fail")
    progress = next(line for line in result.stdout.splitlines() if line.startswith("[1/1] "))
    assert "fail" not in progress and "1 known" in progress, progress
    # an expected failure has the status known, in the per-spec list as in the listing and the JSON
    assert re.search(r"^\s*KNOWN\s+terminal\.final_obs:", result.stdout, re.MULTILINE), result.stdout
    assert re.search(r"^KNOWN \[[^\]]+\] \S+ :: terminal\.final_obs$", result.stdout, re.MULTILINE), result.stdout
    assert "expected by the project: drops final_obs; fix in review (#42)" in result.stdout
    assert "rlconform reproducer" not in result.stdout
    assert "summary: 2 passed, 1 expected failure" in result.stdout


def test_an_unlisted_failure_prints_a_pinned_line_to_paste_and_a_changed_failure_is_not_excused(
    workdir: Path, run: Run
) -> None:
    """Issue 25: with --expected-failures, every failure the file does not list gets a line to
    paste into it, pinned to the failure's signature; pasted, it excuses that failure, and a pin
    the failure no longer has excuses nothing (with a warning naming the signature it has now)."""
    (workdir / "expected.txt").write_text("# nothing expected yet\n")
    check = ("check", "myvec:broken", "--api", "gymnasium.vector", *SPECS, "--expected-failures", "expected.txt")
    first = run(workdir, *check, "--json", "first.json")
    assert first.returncode == 1, first.stdout + first.stderr
    signature = next(r for r in json.loads((workdir / "first.json").read_text())["results"] if r["status"] == "fail")[
        "signature"
    ]
    assert signature.startswith("terminal.final_obs#")
    line = f"user:myvec:broken-terminal.final_obs#{signature.rsplit('#', 1)[1]}  "
    assert "\nnot in expected.txt: to expect a failure, add its line there and say why\n" in first.stdout
    pasted = next(text.strip() for text in first.stdout.splitlines() if text.strip().startswith(line))
    (workdir / "expected.txt").write_text(pasted + "\n")
    second = run(workdir, *check)
    assert second.returncode == 0, second.stdout + second.stderr
    assert re.search(r"^\s*KNOWN\s+terminal\.final_obs:", second.stdout, re.MULTILINE), second.stdout
    assert "not in expected.txt" not in second.stdout and "warning" not in second.stderr
    (workdir / "expected.txt").write_text(pasted.replace(signature.rsplit("#", 1)[1], "00000000") + "\n")
    third = run(workdir, *check)
    assert third.returncode == 1, third.stdout + third.stderr
    assert re.search(r"^\s*FAIL\s+terminal\.final_obs:", third.stdout, re.MULTILINE), third.stdout
    assert f"failed with signature {signature}: it fails differently, so it is not excused" in third.stderr
    assert line in third.stdout  # the line to paste for the failure as it is now


PLANTED_VEC = """
from rlconform.libraries.gymnasium.planted import WrongFinalObs


def make(env_fns, **kwargs):
    return WrongFinalObs(env_fns, "SameStep")
"""

FIXED_VEC = """
from rlconform.libraries.gymnasium.vector_model import ModelVectorEnv


def make(env_fns, **kwargs):
    return ModelVectorEnv(env_fns, "SameStep")
"""


def test_reproducers_dir_writes_a_regression_test_that_fails_until_the_bug_is_fixed(tmp_path: Path, run: Run) -> None:
    """``--reproducers DIR`` writes one file per failure; for a user's factory it is a pytest
    test that imports the factory and makes plain reset/step calls around the reference envs:
    it fails on the planted bug (a final_obs that is the reset observation) and passes once the
    factory is fixed."""
    (tmp_path / "planted_vec.py").write_text(PLANTED_VEC)
    result = run(
        tmp_path, "check", "planted_vec:make", "--api", "gymnasium.vector", *SPECS, "--reproducers", "regressions"
    )
    assert result.returncode == 1, result.stdout + result.stderr
    written = sorted(path.name for path in (tmp_path / "regressions").iterdir())
    assert written == ["test_user_planted_vec_make__terminal_final_obs.py"]
    assert "reproducers written to regressions: 1 file(s)" in result.stdout
    # the listing names the file, one line, instead of printing the script (issue 25)
    path = os.path.join("regressions", written[0])
    assert f"    reproducer: {path} (run it with pytest: it fails while the bug is there)" in result.stdout
    assert "from planted_vec import make" not in result.stdout and "def test_" not in result.stdout
    test_file = (tmp_path / "regressions" / written[0]).read_text()
    assert "from planted_vec import make" in test_file
    ruff = Path(sys.executable).parent / "ruff"  # the dev extra's; tests/core/test_reproducer_imports.py too
    if ruff.exists():  # it imports only what it uses (issue 25)
        lint = [str(ruff), "check", "--isolated", "--no-cache", "--select", "F401,F811", "regressions"]
        linted = subprocess.run(lint, cwd=tmp_path, capture_output=True, text=True, timeout=120)
        assert linted.returncode == 0, linted.stdout + linted.stderr
    assert "make_reference_env" in test_file and "envs = make(env_fns)" in test_file
    assert re.search(r"^        envs\.step\(np\.array\(", test_file, re.MULTILINE), test_file

    def pytest_run() -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "regressions"]
        return subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=300)

    failing = pytest_run()
    assert failing.returncode == 1, failing.stdout + failing.stderr
    assert "1 failed" in failing.stdout and "terminal.final_obs" in failing.stdout
    (tmp_path / "planted_vec.py").write_text(FIXED_VEC)
    passing = pytest_run()
    assert passing.returncode == 0, passing.stdout + passing.stderr
    assert "1 passed" in passing.stdout


HYPOTHESIS_WARNS = """
import gymnasium
from hypothesis import HealthCheck

HealthCheck.all()  # deprecated: Hypothesis warns when the module is imported


def make(env_fns, **kwargs):
    HealthCheck.all()  # ... and each time the factory builds
    return gymnasium.vector.SyncVectorEnv(env_fns, autoreset_mode=gymnasium.vector.AutoresetMode.SAME_STEP)
"""


def test_no_hypothesis_warning_reaches_the_user(user_module: Callable[[str, str], Path], rlconform_cli: Run) -> None:
    user_module("warns", HYPOTHESIS_WARNS)
    env = {"RLCONFORM_PROFILE": "ci", "PYTHONWARNINGS": "always"}
    result = rlconform_cli("check", "warns:make", "--api", "gymnasium.vector", *SPECS, env=env, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "HypothesisDeprecationWarning" not in result.stdout + result.stderr
    assert "HealthCheck" not in result.stdout + result.stderr
    assert result.stderr == ""


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
        pytest.param(
            "myvec:make",
            "gym.Vector",
            "unknown API family 'gym.Vector' (did you mean 'gymnasium.vector'?); known: gymnasium.Env,",
            id="family",
        ),
    ],
)
def test_check_bad_input_exits_2_with_one_line_reason(
    workdir: Path, target: str, family: str, reason: str, run: Run
) -> None:
    result = run(workdir, "check", target, "--api", family, "--spec", "flags.terminated")
    assert result.returncode == 2, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"rlconform: error: {reason}")
    assert "Traceback" not in result.stdout


def test_check_json_lists_every_spec_with_status_message_and_reproducer(workdir: Path, run: Run) -> None:
    result = run(
        workdir, "check", "myvec:broken", "--api", "gymnasium.vector", "--profile", "ci", *SPECS, "--json", "out.json"
    )
    assert result.returncode == 1, result.stdout + result.stderr
    document = json.loads((workdir / "out.json").read_text())
    assert document["schema"] == "rlconform/results"
    assert document["profile"]["name"] == "ci"
    assert [s["id"] for s in document["systems"]] == ["user:myvec:broken"]
    results = document["results"]
    # one result per selected spec, in catalog order (the order of `rlconform list --specs`)
    assert [r["spec"] for r in results] == [s["id"] for s in sorted(document["specs"], key=lambda s: s["column"])]
    assert sorted(r["spec"] for r in results) == ["flags.terminated", "flags.truncated", "terminal.final_obs"]
    for entry in results:
        assert {"spec", "status", "message", "reproducer"} <= set(entry)
        assert entry["system"] == "user:myvec:broken"
        assert entry["message"]
    by_spec = {r["spec"]: r for r in results}
    assert {spec: r["status"] for spec, r in by_spec.items()} == {
        "terminal.final_obs": "fail",
        "flags.terminated": "pass",
        "flags.truncated": "pass",
    }
    assert [spec for spec, r in by_spec.items() if r["reproducer"] is not None] == ["terminal.final_obs"]
    assert document["summary"] == {"fail": 1, "pass": 2}
    failure = by_spec["terminal.final_obs"]

    # the reproducer is a standalone script: it replays the minimal case and exits 1 while the bug remains
    (workdir / "repro.py").write_text(failure["reproducer"])
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
    # the verdict's first line ends with how many more violations there are; the replay prints each
    first = re.sub(r" \(\+\d+ more\)$", "", failure["message"].splitlines()[0])
    assert first in blocked.stdout + blocked.stderr


def test_list_names_systems_and_specs(workdir: Path, run: Run) -> None:
    result = run(workdir, "list")
    assert result.returncode == 0, result.stderr
    assert "gymnasium.SyncVectorEnv.SameStep" in result.stdout
    assert "transitions.exact" in result.stdout


def test_list_filters_by_family_and_section(workdir: Path, run: Run) -> None:
    from rlconform.core.spec import all_specs
    from rlconform.core.system import all_systems

    systems = run(workdir, "list", "--family", "gymnasium.vector", "--systems")
    assert systems.returncode == 0, systems.stderr
    listed = [line.split()[0] for line in systems.stdout.splitlines() if not line.startswith("library ")]
    expected = [s.id for s in all_systems() if s.family == "gymnasium.vector" and s.kind != "planted"]
    assert listed == expected and "gymnasium.SyncVectorEnv.SameStep" in listed
    specs = run(workdir, "list", "--family", "gymnasium.vector", "--specs")
    assert specs.returncode == 0, specs.stderr
    listed = [line.split()[1] for line in specs.stdout.splitlines() if not line.startswith("library ")]
    assert listed == [s.id for s in all_specs() if "gymnasium.vector" in s.families]
    assert "terminal.final_obs" in listed and "env.determinism" not in listed
    # env-author mode (check --api gymnasium.Env) is the family gymnasium.Env: one name per family
    author = run(workdir, "list", "--family", "gymnasium.Env", "--specs")
    assert "env.determinism" in author.stdout and "terminal.final_obs" not in author.stdout
    unknown = run(workdir, "list", "--family", "gym.Vector")
    assert unknown.returncode == 2
    assert unknown.stderr.startswith("rlconform: error: unknown family 'gym.Vector'; known: ")


def test_version(workdir: Path, run: Run) -> None:
    from rlconform import __version__

    result = run(workdir, "--version")
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"rlconform {__version__}\n"


def test_check_help_describes_the_families_their_signatures_and_examples(workdir: Path, run: Run) -> None:
    from rlconform.cli import build_parser
    from rlconform.core.user import factory_signatures

    result = run(workdir, "check", "--help")
    assert result.returncode == 0, result.stderr
    text = result.stdout
    assert "Check your own env or vectorizer" in text and "Exit status: 0" in text
    for api, signature in factory_signatures().items():
        assert re.search(rf"^  {re.escape(api)} +{re.escape(signature)}$", text, re.MULTILINE), (api, text)
    examples = [line.strip() for line in text.split("examples:\n", 1)[1].splitlines() if line.startswith("  rlconform")]
    assert len(examples) >= 3
    parser = build_parser()
    for example in examples:
        parsed = parser.parse_args(shlex.split(example)[1:])
        assert parsed.command == "check" and parsed.api in factory_signatures()


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


def test_check_torchrl_factory_exits_0_and_a_broken_one_exits_1(tmp_path: Path, run: Run) -> None:
    """Family torchrl.EnvBase: the factory gets one env_fn and picks the number of sub-envs."""
    pytest.importorskip("torchrl")
    (tmp_path / "mytorchrl.py").write_text(MYTORCHRL)
    good = run(tmp_path, "check", "mytorchrl:serial", "--api", "torchrl.EnvBase", "--profile", "ci", *TORCHRL_SPECS)
    assert good.returncode == 0, good.stdout + good.stderr
    assert re.search(r"^\s*PASS\s+transitions\.exact:", good.stdout, re.MULTILINE), good.stdout
    # a TorchRL check names the torch stack and the accelerator
    assert re.search(r"^libraries: gymnasium .*, torch .*, torchrl .*, tensordict ", good.stdout, re.MULTILINE)
    assert re.search(r"^accelerator: ", good.stdout, re.MULTILINE) and "isaaclab" not in good.stdout
    bad = run(tmp_path, "check", "mytorchrl:broken", "--api", "torchrl.EnvBase", "--profile", "ci", *TORCHRL_SPECS)
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert re.search(r"^\s*FAIL\s+transitions\.exact: env 0, agent step \d+: reward is", bad.stdout, re.MULTILINE)
    assert "rlconform reproducer: user:mytorchrl:broken violates transitions.exact." in bad.stdout


# ------------------------------------------------------------- choosing what runs: specs, stacks


def test_skip_spec_leaves_specs_out_and_says_which(workdir: Path, run: Run) -> None:
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


def test_run_skip_spec(tmp_path: Path, run: Run) -> None:
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
def test_bad_selection_exits_2(workdir: Path, args: tuple[str, ...], reason: str, run: Run) -> None:
    result = run(workdir, "check", "myvec:make", "--api", "gymnasium.vector", *SPECS, *args)
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr.startswith(f"rlconform: error: {reason}"), result.stderr


ENV = "rlconform.libraries.envauthor.sample_envs"


def test_stacks_chooses_the_stacks_env_author_mode_runs(tmp_path: Path, run: Run) -> None:
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


def test_stacks_left_out_are_named_in_a_failure_and_its_reproducer_runs_the_chosen_ones(
    tmp_path: Path, run: Run
) -> None:
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


def test_stacks_matching_no_stack_is_bad_input(tmp_path: Path, run: Run) -> None:
    result = run(tmp_path, "check", f"{ENV}:counter", "--api", "gymnasium.Env", "--stacks", "gymnasium.Sync*.Nope")
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr.startswith(
        "rlconform: error: --stacks 'gymnasium.Sync*.Nope' matches no stack; the stacks are: gymnasium.SyncVectorEnv"
    )
