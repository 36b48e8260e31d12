"""One reproducer at every ``--api`` (issue 34): a pytest test that imports only ``rlconform.replay``.

For a planted bug of every ``--api`` that has one bundled, the failing verdict's reproducer is
written to a file: it imports nothing of rlconform but :mod:`rlconform.replay` (NumPy, torch and the
standard library aside), fails under pytest and as a script (exit status 1), and the same file with
the planted bug's system replaced by a correct one of its family (its reference model, an innocent
variant, or a correct env) passes. Before, seven modules wrote nine templates, and six of them were
scripts with no test, some importing the internal module their case type lived in: a saved
reproducer broke when that module moved.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # pytest and python in subprocesses

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Planted:
    """A planted bug of one ``--api``, a spec its MUST_FAIL lists, and a correct system."""

    api: str
    system: str
    spec: str
    #: the correct system whose id replaces the planted bug's in its reproducer's replay calls
    control: str
    #: the libraries it needs (top-level import names)
    modules: tuple[str, ...] = ()
    #: what the replay of the control takes besides (a user's factory: its --api)
    given: str = ""
    #: a user's factory (``system`` and ``control`` are ``module:name``), checked with these options
    user_options: tuple[tuple[str, object], ...] | None = None


SAMPLE_TORCH_ENVS = "rlconform.libraries.isaaclab.sample_user_envs"

PLANTED = [
    Planted("gymnasium.vector", "planted.shifted_reward", "transitions.exact", "reference.gymnasium.vector.SameStep"),
    Planted(
        "gymnasium.Wrapper", "planted.rewarding_autoreset", "reset_step.neutral", "reference.gymnasium.Env.Autoreset"
    ),
    Planted(
        "gymnasium.VectorEnv",
        "planted.native_vector.reset_step_reward",
        "vector.autoreset_mode",
        "reference.native_vector.NextStep",
    ),
    # env-author mode bundles planted envs only: its control is a correct env, as a user's factory
    Planted(
        "gymnasium.Env",
        "planted.user_env.reused_buffer",
        "env.no_aliasing",
        "rlconform.libraries.envauthor.sample_envs:counter",
        given=", api='gymnasium.Env'",
    ),
    Planted(
        "sb3.VecEnv",
        "planted.sb3_no_terminal_observation",
        "terminal.final_obs",
        "reference.sb3.VecEnv",
        ("stable_baselines3",),
    ),
    Planted(
        "sb3.Algorithm",
        "planted.sb3_algorithm.reset_as_terminal",
        "algorithm.buffer_next_obs",
        "reference.sb3_algorithm.copying_buffer",
        ("stable_baselines3",),
    ),
    Planted(
        "torchrl.EnvBase",
        "planted.torchrl_reuses_obs_buffer",
        "aliasing.torchrl_returned_data",
        "torchrl.GymWrapper",
        ("torchrl",),
    ),
    Planted(
        "torchrl.Collector",
        "planted.torchrl.Collector.DropsLastFrame",
        "collector.frame_accounting",
        "reference.torchrl.Collector",
        ("torchrl",),
    ),
    Planted(
        "torchrl.ValueEstimator",
        "planted.torchrl.ValueEstimator.BootstrapsTerminations",
        "estimator.advantage",
        "reference.torchrl.ValueEstimator",
        ("torchrl",),
    ),
    Planted(
        "torchrl.ReplayBuffer",
        "planted.torchrl.SliceBuffer.IgnoresEpisodeEnds",
        "replay.slices_within_episode",
        "reference.torchrl.SliceBuffer",
        ("torchrl",),
    ),
    Planted(
        "isaaclab",
        "planted.isaaclab.torch.rolled_actions",
        "isaaclab.transitions",
        "isaaclab.torch.DirectRLEnv",
        ("isaaclab", "torch"),
    ),
    # the torch tier needs torch only: a user's torch-batched env is checked without Isaac Lab
    Planted(
        "isaaclab.user",
        f"{SAMPLE_TORCH_ENVS}:walker_time_out_as_termination",
        "isaaclab.time_outs",
        f"{SAMPLE_TORCH_ENVS}:walker",
        ("torch",),
        user_options=(("num_envs", 4), ("device", "cpu")),
    ),
]
PARAMS = [pytest.param(p, id=p.api) for p in PLANTED]


def _installed(planted: Planted) -> bool:
    return all(importlib.util.find_spec(module) is not None for module in planted.modules)


def _require(planted: Planted) -> None:
    """Skip, with the reason, a bug whose library is not installed here (Isaac Lab has its own venv)."""
    for module in planted.modules:
        pytest.importorskip(module, reason=f"{planted.api}'s planted bug needs {module}")


@dataclass(frozen=True)
class Written:
    failing: dict[str, Path]
    passing: dict[str, Path]


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Written:
    """Each planted bug's reproducer (of the failing verdict), and the same file replaying the
    correct system instead."""
    from rlconform.core.catalog import current
    from rlconform.core.search import check_spec
    from rlconform.core.spec import get_spec
    from rlconform.core.system import get_system
    from rlconform.core.user import probe, user_system

    failing_dir, passing_dir = tmp_path_factory.mktemp("failing"), tmp_path_factory.mktemp("passing")
    failing, passing = {}, {}
    must_fail = current().must_fail()
    for planted in PLANTED:
        if not _installed(planted):
            continue
        if planted.user_options is None:
            assert planted.spec in must_fail[planted.system], planted
            system = get_system(planted.system)
        else:
            system = probe(user_system(planted.system, planted.api.split(".")[0], **dict(planted.user_options)))
        verdict = check_spec(system, get_spec(planted.spec), "fast")
        assert verdict.status == "fail" and verdict.reproducer, (planted, verdict.status, verdict.message)
        stem = "test_" + planted.api.replace(".", "_")
        failing[planted.api] = failing_dir / f"{stem}.py"
        failing[planted.api].write_text(verdict.reproducer)
        if planted.user_options is None:
            call = f"replay({planted.system!r}, case, {planted.spec!r})"
            assert verdict.reproducer.count(call) == 2, verdict.reproducer
            control = f"replay({planted.control!r}, case, {planted.spec!r}{planted.given})"
        else:  # the factory is imported by its name, and replayed by it
            call, control = (reference.partition(":")[2] for reference in (planted.system, planted.control))
            assert verdict.reproducer.count(f"replay({call}, case, {planted.spec!r}, ") == 2, verdict.reproducer
        passing[planted.api] = passing_dir / f"{stem}.py"
        passing[planted.api].write_text(verdict.reproducer.replace(call, control))
    return Written(failing, passing)


def _environment() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}


def _pytest_outcomes(folder: Path) -> dict[str, str]:
    """Run pytest once on every reproducer in ``folder``: file stem -> "passed"/"failed"/"error"."""
    report = folder / "report.xml"
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--continue-on-collection-errors"]
    command += [f"--junitxml={report}", "."]
    done = subprocess.run(command, cwd=folder, env=_environment(), capture_output=True, text=True, timeout=600)
    assert report.exists(), done.stdout[-3000:] + done.stderr[-3000:]
    outcomes = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        stem = (case.get("classname") or "").split(".")[-1]
        kinds = {child.tag for child in case}
        outcomes[stem] = "failed" if "failure" in kinds else "error" if "error" in kinds else "passed"
    return outcomes


#: runs each reproducer as a script in one interpreter and prints its exit status
SCRIPTS = textwrap.dedent("""\
    import json, runpy, sys

    codes = {}
    for path in sys.argv[1:]:
        try:
            runpy.run_path(path, run_name="__main__")
            codes[path] = 0
        except SystemExit as exc:
            codes[path] = exc.code
    print("EXIT STATUSES " + json.dumps(codes))
""")


def _script_statuses(paths: list[Path]) -> dict[str, object]:
    command = [sys.executable, "-c", SCRIPTS, *map(str, paths)]
    done = subprocess.run(command, env=_environment(), capture_output=True, text=True, timeout=600)
    line = next((x for x in done.stdout.splitlines() if x.startswith("EXIT STATUSES ")), None)
    assert line is not None, done.stdout[-3000:] + done.stderr[-3000:]
    return dict(json.loads(line.removeprefix("EXIT STATUSES ")))


@pytest.fixture(scope="module")
def outcomes(written: Written) -> dict[str, dict[str, object]]:
    """What pytest and python made of every reproducer, run once for all of them."""
    folder = next(iter(written.failing.values())).parent
    return {
        "failing": _pytest_outcomes(folder),
        "passing": _pytest_outcomes(next(iter(written.passing.values())).parent),
        "script": _script_statuses(list(written.failing.values())),
    }


def test_every_api_with_a_planted_bug_is_covered() -> None:
    """A family that gets planted bugs gets a row here."""
    from rlconform.core.system import all_systems

    covered = {planted.system for planted in PLANTED}
    families = {system.family for system in all_systems() if system.kind == "planted"}
    by_family = {
        family: sorted(s.id for s in all_systems() if s.family == family and s.id in covered) for family in families
    }
    assert [family for family, rows in by_family.items() if not rows] == [], by_family


def _imported_modules(source: str) -> set[str]:
    tree = ast.parse(source)
    found = set()
    for node in tree.body:
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, source
            found.add(node.module or "")
    return found


@pytest.mark.parametrize("planted", PARAMS)
def test_the_reproducer_is_a_test_importing_only_rlconform_replay(planted: Planted, written: Written) -> None:
    _require(planted)
    source = written.failing[planted.api].read_text()
    modules = _imported_modules(source)
    rlconform = {module for module in modules if module.split(".")[0] == "rlconform"}
    factory = {planted.system.partition(":")[0]} if planted.user_options is not None else set()
    assert rlconform == {"rlconform.replay", *factory}, source
    others = {module.split(".")[0] for module in modules} - {"rlconform", "numpy", "torch"}
    assert others <= set(sys.stdlib_module_names), source
    tree = ast.parse(source)
    tests = [node.name for node in tree.body if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")]
    assert tests == ["test_" + planted.spec.replace(".", "_")], source
    assert 'if __name__ == "__main__":' in source


@pytest.mark.parametrize("planted", PARAMS)
def test_the_reproducer_fails_until_the_bug_is_gone(
    planted: Planted, written: Written, outcomes: dict[str, dict[str, object]]
) -> None:
    """Under pytest it fails on the planted bug and passes on the correct system; as a script it
    exits with status 1."""
    _require(planted)
    stem = written.failing[planted.api].stem
    assert outcomes["failing"].get(stem) == "failed", (outcomes, written.failing[planted.api].read_text())
    assert outcomes["script"].get(str(written.failing[planted.api])) == 1, outcomes["script"]
    assert outcomes["passing"].get(stem) == "passed", (outcomes, written.passing[planted.api].read_text())
