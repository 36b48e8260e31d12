"""One product at every ``--api`` (issue 34), seen from every front end at once.

For each ``--api`` a user module holds a correct sample factory (``good_*``) and one with a planted
bug (``bad_*``, bundled where one exists), and the same story must hold at every ``--api``:

(a) the CLI refuses either factory given to a wrong ``--api`` with one line naming its own (exit
    status 2), and checks the buggy one under its own ``--api``, writing ``--json``, ``--junit``,
    ``--markdown``, ``--html`` and ``--reproducers``;
(b) each (system, spec) shows one status in the JSON, the text the CLI prints (progress, the
    per-spec list, the listing of failures), JUnit, Markdown and HTML;
(c) the pytest plugin gives the CLI's statuses for the same factory (the same profile and seed);
(d) ``parametrize_with_checks`` collects an item per (factory, spec), the family's options given
    by ``options=`` where the family declares any, and the correct factory's items pass;
(e) the failure's reproducer imports only ``rlconform.replay`` (the user's module, NumPy, torch and
    the standard library aside) and fails under pytest.

Every process is started once for the module (two at a time): one ``rlconform check`` and one
``pytest --rlconform-check`` per ``--api``, one pytest run of the ``parametrize_with_checks`` module
of every ``--api``, one pytest run of every reproducer; the refusals run ``rlconform check``'s
``main`` in this process.
Each check is limited to two specs (one the planted bug fails) under the ``fast`` profile and the
session's pinned ``RLCONFORM_SEED``. An ``--api`` whose library is not installed is skipped with the
reason; the torch tier of ``--api isaaclab`` needs torch only (a user's torch-batched env).
"""

from __future__ import annotations

import ast
import contextlib
import importlib.util
import io
import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("gymnasium")

#: the user module: one correct and one buggy factory per --api, as users write them
MODULE = "every_api"
SOURCE = """
from __future__ import annotations

from typing import TYPE_CHECKING

import gymnasium

if TYPE_CHECKING:  # annotated as users annotate: the names are never imported at run time
    from stable_baselines3.common.base_class import BaseAlgorithm
    from stable_baselines3.common.vec_env import VecEnv
    from rsl_rl.env import VecEnv as RslRlVecEnv
    from rsl_rl.runners import OnPolicyRunner
    from skrl.agents.torch import Agent
    from skrl.envs.wrappers.torch import Wrapper as SkrlWrapper
    from torchrl.data import ReplayBuffer


# gymnasium.vector
def good_vectorizer(env_fns, **kwargs):
    return gymnasium.vector.SyncVectorEnv(env_fns, autoreset_mode=gymnasium.vector.AutoresetMode.SAME_STEP)


def bad_vectorizer(env_fns, **kwargs):
    from rlconform.libraries.gymnasium.planted import WrongFinalObs

    return WrongFinalObs(env_fns, "SameStep")


# gymnasium.Wrapper
def good_wrapper(env: gymnasium.Env) -> gymnasium.Env:
    from rlconform.libraries.gymnasium.sample_wrappers import step_counter

    return step_counter(env)


def bad_wrapper(env: gymnasium.Env) -> gymnasium.Env:
    from rlconform.libraries.gymnasium.sample_wrappers import terminating_limit

    return terminating_limit(env)


# gymnasium.VectorEnv (and its single-env twin)
def good_ready_made(num_envs):
    from rlconform.libraries.gymnasium.native_samples import walk

    return walk(num_envs)


def bad_ready_made(num_envs):
    from rlconform.libraries.gymnasium.native_samples import ResetStepReward

    return ResetStepReward(num_envs)


def single_walk():
    from rlconform.libraries.gymnasium.native_samples import single_walk

    return single_walk()


# gymnasium.Env
def good_env():
    from rlconform.libraries.envauthor.sample_envs import counter

    return counter()


def bad_env():
    from rlconform.libraries.envauthor.sample_envs import reused_buffer

    return reused_buffer()


# sb3.VecEnv
def good_vec_env(env_fns) -> VecEnv:
    from stable_baselines3.common.vec_env import DummyVecEnv

    return DummyVecEnv(env_fns)


def bad_vec_env(env_fns) -> VecEnv:
    from rlconform.libraries.sb3.planted import NoTerminalObservation

    return NoTerminalObservation(env_fns)


# sb3.Algorithm
def _dqn(env, **kwargs):
    from stable_baselines3 import DQN

    options = dict(buffer_size=24, learning_starts=10**6, train_freq=1, policy_kwargs={"net_arch": [8]}, device="cpu")
    return DQN("MlpPolicy", env, **options, **kwargs)


def good_algorithm(env: VecEnv) -> BaseAlgorithm:
    return _dqn(env)


def bad_algorithm(env: VecEnv) -> BaseAlgorithm:
    from rlconform.libraries.sb3.algorithm_buffers import TimeoutDroppedBuffer

    return _dqn(env, replay_buffer_class=TimeoutDroppedBuffer)


# torchrl.EnvBase
def good_torchrl_env(env_fn):
    from torchrl.envs import GymWrapper

    return GymWrapper(env_fn())


def bad_torchrl_env(env_fn):
    from torchrl.envs import GymWrapper, Transform, TransformedEnv

    class ShiftReward(Transform):
        def _step(self, tensordict, next_tensordict):
            next_tensordict.set("reward", next_tensordict.get("reward") + 1.0)
            return next_tensordict

    return TransformedEnv(GymWrapper(env_fn()), ShiftReward())


# torchrl.ValueEstimator
def good_estimator(value_network):
    from torchrl.objectives.value import GAE

    return GAE(gamma=0.95, lmbda=0.9, value_network=value_network)


def bad_estimator(value_network):
    from rlconform.libraries.torchrl.value_torch import PlainGAE

    return PlainGAE(gamma=0.9, lmbda=0.8, value_network=value_network, defect="bootstraps_terminations")


# torchrl.ReplayBuffer
def good_replay_buffer() -> ReplayBuffer:
    from torchrl.data import ListStorage, ReplayBuffer

    return ReplayBuffer(storage=ListStorage(500), batch_size=6)


def bad_replay_buffer() -> ReplayBuffer:
    from torchrl.data import LazyTensorStorage, TensorDictReplayBuffer

    from rlconform.libraries.torchrl.replay_torch import PlainMultiStep

    return TensorDictReplayBuffer(
        storage=LazyTensorStorage(500, ndim=2), transform=PlainMultiStep(3, 0.9, defect="first_step_flags")
    )


# isaaclab (the torch tier: torch only)
def good_torch_batched(num_envs, device):
    from rlconform.libraries.isaaclab.sample_user_envs import walker

    return walker(num_envs, device)


def bad_torch_batched(num_envs, device):
    from rlconform.libraries.isaaclab.sample_user_envs import walker_time_out_as_termination

    return walker_time_out_as_termination(num_envs, device)


# rsl_rl.Runner (the Isaac Lab environment has RSL-RL)
def good_runner(env: RslRlVecEnv) -> OnPolicyRunner:
    from rlconform.libraries.rsl_rl.runner_planted import ppo

    return ppo(env)


def bad_runner(env: RslRlVecEnv) -> OnPolicyRunner:
    from rlconform.libraries.rsl_rl.runner_planted import ppo_post_step_obs

    return ppo_post_step_obs(env)


# skrl.Agent (the Isaac Lab environment has skrl): a fork of skrl's PPO whose GAE ends at time-outs
def good_agent(env: SkrlWrapper) -> Agent:
    from rlconform.libraries.skrl.agent_planted import forked_ppo

    return forked_ppo(env)


def bad_agent(env: SkrlWrapper) -> Agent:
    from rlconform.libraries.skrl.agent_planted import forked_ppo_post_step_obs

    return forked_ppo_post_step_obs(env)
"""


@dataclass(frozen=True)
class Sample:
    """The samples of one ``--api``, what they are checked against, and how."""

    api: str
    #: the factories' names in MODULE without their good_/bad_ prefix
    name: str
    #: the spec the buggy factory fails, then one it passes (or one that does not apply to it)
    specs: tuple[str, str]
    #: an --api the samples are refused by
    wrong: str
    #: the libraries building a sample needs (top-level import names)
    modules: tuple[str, ...] = ()
    #: the family's options, as parametrize_with_checks takes them (name -> value)
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def good(self) -> str:
        return f"{MODULE}:good_{self.name}"

    @property
    def bad(self) -> str:
        return f"{MODULE}:bad_{self.name}"

    def flags(self, prefix: str = "") -> list[str]:
        """The options as a front end's flags: ``--num-envs 4``, ``--rlconform-num-envs 4``."""
        flags = []
        for name, value in self.options.items():
            for one in value if isinstance(value, list) else [value]:
                flags += [f"--{prefix}{name.replace('_', '-')}", str(one)]
        return flags

    def installed(self) -> bool:
        return all(importlib.util.find_spec(module) is not None for module in self.modules)

    def require(self) -> None:
        """Skip, naming the library, an --api whose samples cannot be built here."""
        for module in self.modules:
            pytest.importorskip(module, reason=f"--api {self.api}'s samples need {module}")


SAMPLES = [
    Sample("gymnasium.vector", "vectorizer", ("terminal.final_obs", "flags.terminated"), "gymnasium.VectorEnv"),
    Sample("gymnasium.Wrapper", "wrapper", ("flags.terminated", "flags.truncated"), "gymnasium.vector"),
    Sample(
        "gymnasium.VectorEnv",
        "ready_made",
        ("vector.autoreset_mode", "vector.api_shape"),
        "gymnasium.vector",
        options={"single_env": f"{MODULE}:single_walk"},
    ),
    Sample(
        "gymnasium.Env",
        "env",
        ("env.no_aliasing", "env.api_shape"),
        "gymnasium.Wrapper",
        options={"stacks": ["gymnasium.SyncVectorEnv.*"]},
    ),
    Sample(
        "sb3.VecEnv", "vec_env", ("terminal.final_obs", "flags.terminated"), "gymnasium.Env", ("stable_baselines3",)
    ),
    Sample(
        "sb3.Algorithm",
        "algorithm",
        ("algorithm.buffer_dones", "algorithm.buffer_next_obs"),
        "sb3.VecEnv",
        ("stable_baselines3",),
    ),
    Sample("torchrl.EnvBase", "torchrl_env", ("transitions.exact", "flags.terminated"), "gymnasium.Env", ("torchrl",)),
    Sample(
        "torchrl.ValueEstimator",
        "estimator",
        ("estimator.advantage", "estimator.no_cross_env"),
        "torchrl.EnvBase",
        ("torchrl",),
    ),
    Sample(
        "torchrl.ReplayBuffer",
        "replay_buffer",
        ("replay.bootstrap_targets", "replay.rows_are_transitions"),
        "gymnasium.vector",
        ("torchrl",),
    ),
    # the torch tier: a user's torch-batched env, without Isaac Lab
    Sample(
        "isaaclab",
        "torch_batched",
        ("isaaclab.time_outs", "isaaclab.api"),
        "gymnasium.VectorEnv",
        ("torch",),
        options={"num_envs": 4, "device": "cpu"},
    ),
    # RSL-RL's runner imports GitPython (its logger): installed in the Isaac Lab environment
    Sample("rsl_rl.Runner", "runner", ("learner.storage", "learner.returns"), "sb3.Algorithm", ("rsl_rl", "git")),
    Sample("skrl.Agent", "agent", ("learner.storage", "learner.returns"), "rsl_rl.Runner", ("skrl",)),
]
#: RLCONFORM_EVERY_API=api[,api...]: the --apis this run takes (tests/isaaclab runs rsl_rl.Runner's in
#: the Isaac Lab environment, the only one with RSL-RL); default every one
ONLY = [api for api in os.environ.get("RLCONFORM_EVERY_API", "").split(",") if api]
PARAMS = [pytest.param(sample, id=sample.api) for sample in SAMPLES if not ONLY or sample.api in ONLY]


def test_every_api_has_samples() -> None:
    from rlconform.core.catalog import current
    from rlconform.core.user import user_apis

    assert {sample.api for sample in SAMPLES} == set(user_apis())
    # the options given are the ones each family declares, under the names the front ends render
    declared = {api: {option.name for option in options} for api, options in _library_options(current())}
    for sample in SAMPLES:
        assert set(sample.options) <= declared.get(sample.api, set()), sample


def _library_options(catalog: Any) -> Iterator[tuple[str, Any]]:
    for library in catalog.libraries:
        yield from library.options.items()


# ----------------------------------------------------------------------------- (a) a wrong --api


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The user's folder: MODULE.py, where every process of this module runs."""
    path = tmp_path_factory.mktemp("every_api")
    (path / f"{MODULE}.py").write_text(SOURCE)
    return path


def _suggested(line: str) -> set[str]:
    """The --apis a refusal's "did you mean" names."""
    assert "did you mean " in line, line
    named = line.split("did you mean ", 1)[1].split("?", 1)[0]
    return {part.removeprefix("--api ").strip() for part in named.split(" or ")}


#: the --api a sample is also told, for want of an annotation that says which (tests/core/test_wrong_api.py)
ALSO_SUGGESTED = {"gymnasium.vector": {"sb3.VecEnv"}}


@pytest.mark.parametrize("factory", ["good", "bad"])
@pytest.mark.parametrize("sample", PARAMS)
def test_a_wrong_api_is_refused_in_one_line_naming_the_right_one(
    sample: Sample, factory: str, folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``rlconform check`` (its ``main``, in this process: nothing of the factory is checked) exits
    with status 2 and one line on stderr that names the sample's own --api."""
    sample.require()
    from rlconform.cli import EXIT_BAD_INPUT, main

    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.delitem(sys.modules, MODULE, raising=False)
    target = sample.good if factory == "good" else sample.bad
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(["check", target, "--api", sample.wrong, "--spec", "*"])
    lines = err.getvalue().strip().splitlines()
    assert status == EXIT_BAD_INPUT, out.getvalue() + err.getvalue()
    assert len(lines) == 1 and lines[0].startswith("rlconform: error: "), err.getvalue()
    assert f"--api {sample.wrong}" in lines[0] or f"family {sample.wrong} expects" in lines[0], lines[0]
    assert _suggested(lines[0]) - ALSO_SUGGESTED.get(sample.api, set()) == {sample.api}, lines[0]
    assert "Traceback" not in err.getvalue() and out.getvalue() == ""


# ------------------------------------------------------------------- the processes, run once


@dataclass
class Runs:
    """The processes of this module, started once, two at a time; each test waits for its own."""

    folder: Path
    pool: ThreadPoolExecutor
    futures: dict[tuple[str, str], Future[subprocess.CompletedProcess[str]]] = field(default_factory=dict)

    def get(self, kind: str, api: str) -> subprocess.CompletedProcess[str]:
        return self.futures[(kind, api)].result()

    def out(self, api: str) -> Path:
        return self.folder / "out" / api


def _check_command(sample: Sample, out: Path) -> list[str]:
    command = ["-m", "rlconform.cli", "check", sample.bad, "--api", sample.api, "--profile", "fast"]
    command += [arg for spec in sample.specs for arg in ("--spec", spec)] + sample.flags()
    command += ["--json", f"{out}/check.json", "--junit", f"{out}/check.xml", "--markdown", f"{out}/check.md"]
    return [*command, "--html", f"{out}/check.html", "--reproducers", f"{out}/reproducers"]


def _plugin_command(sample: Sample, out: Path) -> list[str]:
    command = ["-m", "pytest", "-q", "-p", "no:cacheprovider", "--rlconform-api", sample.api]
    command += ["--rlconform-check", sample.bad, "--rlconform-profile", "fast"]
    command += [arg for spec in sample.specs for arg in ("--rlconform-specs", spec)] + sample.flags("rlconform-")
    # only the plugin's own items: not the parametrize_with_checks module, nor a reproducer written by now
    return [*command, "--rlconform-json", f"{out}/plugin.json", "--ignore=testing", "--ignore=out"]


#: a test module parametrized with each installed --api's samples, options given by ``options=``: the
#: correct sample's items run, the buggy one's are collected only (the CLI and the plugin check it)
COLLECTED = """
import pytest

from rlconform.testing import parametrize_with_checks

{tests}
"""
COLLECTED_TEST = """

@parametrize_with_checks({factories!r}, api={api!r}, specs={specs!r}, options={options!r})
def test_{name}(rlconform_check):
    if ":bad_" in rlconform_check.id:
        pytest.skip("collected only")
    rlconform_check()
"""


@pytest.fixture(scope="module")
def runs(folder: Path, run_python: Callable[..., subprocess.CompletedProcess[str]]) -> Iterator[Runs]:
    installed = [sample for sample in SAMPLES if sample.installed() and (not ONLY or sample.api in ONLY)]
    tests = "".join(
        COLLECTED_TEST.format(factories=[s.good, s.bad], api=s.api, specs=list(s.specs), options=s.options, name=s.name)
        for s in installed
    )
    (folder / "testing").mkdir()
    (folder / "testing" / "test_collected.py").write_text(COLLECTED.format(tests=tests))
    with ThreadPoolExecutor(max_workers=2) as pool:
        found = Runs(folder, pool)
        # the slowest first: the CLI and the plugin of an --api side by side
        for sample in installed:
            out = found.out(sample.api)
            out.mkdir(parents=True)
            found.futures[("check", sample.api)] = pool.submit(run_python, *_check_command(sample, out), cwd=folder)
            found.futures[("plugin", sample.api)] = pool.submit(run_python, *_plugin_command(sample, out), cwd=folder)
        testing = ["-m", "pytest", "-q", "-p", "no:cacheprovider", "--rlconform-profile", "fast", "-rs"]
        testing += ["--junitxml=testing.xml", "testing/test_collected.py"]
        found.futures[("testing", "")] = pool.submit(run_python, *testing, cwd=folder)
        yield found
        for future in found.futures.values():
            future.cancel()


# --------------------------------------------------- (a) checked under its own --api, (b) one status


def _checked(sample: Sample, runs: Runs) -> tuple[subprocess.CompletedProcess[str], Path]:
    sample.require()
    result = runs.get("check", sample.api)
    assert result.returncode == 1, result.stdout[-3000:] + result.stderr[-3000:]  # the planted bug fails
    return result, runs.out(sample.api)


def _json(path: Path) -> dict[tuple[str, str], str]:
    return {(r["system"], r["spec"]): r["status"] for r in json.loads(path.read_text())["results"]}


def _progress(stdout: str) -> dict[tuple[str, str], str]:
    """The lines printed as each spec finishes: ``[1/2] SYSTEM :: SPEC: STATUS (...)``."""
    found = re.findall(r"^  \[\d+/\d+\] (\S+) :: (\S+): (\w+) \(", stdout, re.MULTILINE)
    return {(system, spec): status for system, spec, status in found}


def _per_spec(stdout: str, system: str) -> dict[tuple[str, str], str]:
    """check's per-spec list: one line per spec, its label first."""
    found = re.findall(r"^  ([A-Z_]+)\s+(\S+): ", stdout, re.MULTILINE)
    return {(system, spec): label.lower() for label, spec in found}


def _listed(text: str) -> dict[tuple[str, str], str]:
    """The heads of the listing of failures: ``FAIL [impact] SYSTEM :: SPEC``."""
    found = re.findall(r"^(\S+) \[[^\]]+\] (\S+) :: (\S+)$", text, re.MULTILINE)
    return {(system, spec): label.lower() for label, system, spec in found}


def _junit(path: Path) -> dict[tuple[str, str], str]:
    """Each testcase's status: the ``type`` of its failure, error or skipped element; pass if none."""
    shown = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        outcome = next((child for child in case if child.tag in ("failure", "error", "skipped")), None)
        shown[(case.attrib["classname"], case.attrib["name"])] = "pass" if outcome is None else outcome.attrib["type"]
    return shown


def _markdown(path: Path, system: str) -> dict[tuple[str, str], str]:
    """The status column of the one-system list."""
    rows = re.findall(r"^\| \d+ \| `([^`]+)` \| (\S+(?: \S+)?) \| ", path.read_text(), re.MULTILINE)
    return {(system, spec): word.strip("*").replace(" ", "_") for spec, word in rows}


def _html(path: Path, system: str) -> dict[tuple[str, str], str]:
    """The class (s-STATUS) of each spec's cell in the one-system list."""
    rows = re.findall(r'<th scope="row"><a href="#[^"]*">([^<]+)</a></th><td class="s-(\w+)">', path.read_text())
    return {(system, spec): status for spec, status in rows}


@pytest.mark.slow
@pytest.mark.parametrize("sample", PARAMS)
def test_the_cli_checks_it_under_its_own_api_and_every_report_shows_one_status(sample: Sample, runs: Runs) -> None:
    result, out = _checked(sample, runs)
    system = f"user:{sample.bad}"
    statuses = _json(out / "check.json")
    assert set(statuses) == {(system, spec) for spec in sample.specs}, statuses
    failing, other = sample.specs
    assert statuses[(system, failing)] == "fail", statuses
    assert statuses[(system, other)] in ("pass", "not_applicable"), statuses
    shown = {
        "progress": _progress(result.stdout),
        "per-spec list": _per_spec(result.stdout, system),
        "junit": _junit(out / "check.xml"),
        "markdown": _markdown(out / "check.md", system),
        "html": _html(out / "check.html", system),
    }
    for name, found in shown.items():
        assert found == statuses, (name, found, statuses)
    failed = {key: status for key, status in statuses.items() if status == "fail"}
    assert _listed(result.stdout) == failed, result.stdout
    # the reproducer is named in the listing instead of printed
    assert "reproducers written to " in result.stdout


@pytest.mark.slow
@pytest.mark.parametrize("sample", PARAMS)
def test_the_cli_writes_nothing_on_stderr_for_a_check(sample: Sample, runs: Runs) -> None:
    """stderr is for bad input (one line): a check that ran, failing or not, writes nothing there.
    (Under ``python -m rlconform.cli`` an sb3.Algorithm check printed a runpy RuntimeWarning per
    SubprocVecEnv worker: the fork server preloaded rlconform.cli itself; it now preloads what the
    CLI imports, rlconform.core.forkserver.main_modules.)"""
    result, _ = _checked(sample, runs)
    assert result.stderr == "", result.stderr


# ------------------------------------------------------------------------ (c) the pytest plugin


@pytest.mark.slow
@pytest.mark.parametrize("sample", PARAMS)
def test_the_plugin_gives_the_clis_statuses(sample: Sample, runs: Runs) -> None:
    _checked(sample, runs)
    plugin = runs.get("plugin", sample.api)
    assert plugin.returncode == 1, plugin.stdout[-3000:] + plugin.stderr[-3000:]
    assert _json(runs.out(sample.api) / "plugin.json") == _json(runs.out(sample.api) / "check.json")
    assert f"FAILED rlconform::user:{sample.bad}-{sample.specs[0]}" in plugin.stdout, plugin.stdout[-3000:]


# -------------------------------------------------------------------- (d) parametrize_with_checks


@pytest.mark.slow
@pytest.mark.parametrize("sample", PARAMS)
def test_parametrize_with_checks_collects_it_with_the_familys_options(sample: Sample, runs: Runs) -> None:
    """An item per (factory, spec), the family's options given by ``options=``; the correct
    sample's items pass (or are skipped as not applicable, with the reason)."""
    sample.require()
    testing = runs.get("testing", "")
    report = runs.folder / "testing.xml"
    assert report.exists(), testing.stdout[-3000:] + testing.stderr[-3000:]
    items = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        name = case.attrib["name"]
        if name.startswith(f"test_{sample.name}["):
            outcome = next((child for child in case if child.tag in ("failure", "error", "skipped")), None)
            message = "" if outcome is None else outcome.attrib.get("message", "")
            items[name.split("[", 1)[1].removesuffix("]")] = ("passed" if outcome is None else outcome.tag, message)
    expected = {f"user:{factory}-{spec}" for factory in (sample.good, sample.bad) for spec in sample.specs}
    assert set(items) == expected, testing.stdout[-3000:]
    for item, (outcome, message) in items.items():
        if ":bad_" in item:
            assert (outcome, message) == ("skipped", "collected only"), (item, outcome, message)
        else:
            assert outcome == "passed" or (outcome == "skipped" and "not applicable" in message), (item, message)


# --------------------------------------------------------------------------- (e) the reproducer


def _imported(source: str) -> set[str]:
    """The modules a source imports at its top level."""
    body = ast.parse(source).body
    plain = {alias.name for node in body if isinstance(node, ast.Import) for alias in node.names}
    return plain | {f"{'.' * node.level}{node.module}" for node in body if isinstance(node, ast.ImportFrom)}


@pytest.fixture(scope="module")
def reproduced(runs: Runs, run_python: Callable[..., subprocess.CompletedProcess[str]]) -> dict[str, str]:
    """Every reproducer written, run once under pytest: its file name -> its outcome."""
    for future in [f for (kind, _), f in runs.futures.items() if kind == "check"]:
        future.result()
    written = sorted(runs.folder.glob("out/*/reproducers/test_*.py"))
    if not written:
        return {}
    report = runs.folder / "reproducers.xml"
    command = ["-m", "pytest", "-q", "-p", "no:cacheprovider", "--import-mode=importlib", "-o", "junit_family=xunit1"]
    done = run_python(*command, f"--junitxml={report}", *map(str, written), cwd=runs.folder)
    assert report.exists(), done.stdout[-3000:] + done.stderr[-3000:]
    outcomes = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        kinds = {child.tag for child in case}
        outcome = "failed" if "failure" in kinds else "error" if "error" in kinds else "passed"
        outcomes[Path(case.attrib["file"]).name] = outcome
    return outcomes


@pytest.mark.slow
@pytest.mark.parametrize("sample", PARAMS)
def test_the_reproducer_imports_only_rlconform_replay_and_fails_under_pytest(
    sample: Sample, runs: Runs, reproduced: dict[str, str]
) -> None:
    _, out = _checked(sample, runs)
    (path,) = (out / "reproducers").glob("test_*.py")
    source = path.read_text()
    modules = _imported(source)
    assert {module for module in modules if module.startswith("rlconform")} == {"rlconform.replay"}, source
    others = {module.split(".")[0] for module in modules} - {"rlconform", MODULE, "numpy", "torch"}
    assert others <= set(sys.stdlib_module_names), source
    assert MODULE in modules, source  # the user's factory, imported by its name
    assert reproduced.get(path.name) == "failed", (reproduced, source)
