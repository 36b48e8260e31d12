"""Repo-level test configuration: Hypothesis profiles for the suite's own tests.

rlconform's searches use rlconform.core.profiles (selected with RLCONFORM_PROFILE); tests that use
@given directly use the Hypothesis profile selected with HYPOTHESIS_PROFILE (default: ci, which is
derandomized so that every run checks the same examples). Searches under rlconform's fast profile
use a pinned RLCONFORM_SEED, printed in the header.
"""

import importlib.util
import os
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from types import ModuleType

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    derandomize=True,
    database=None,
    deadline=None,
    max_examples=60,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile("fast", max_examples=20, deadline=None)
settings.register_profile("thorough", max_examples=500, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
os.environ.setdefault("RLCONFORM_PROFILE", "ci")
# Tests that ask rlconform for a verdict under a non-derandomized profile (fast) search with the
# session seed, fresh each session unless RLCONFORM_SEED is set: pinned here, so that those verdicts
# are the same on every run and in every xdist worker (each worker imports this file and inherits
# the controller's environment). Tests of the seed itself remove it from their subprocess.
os.environ.setdefault("RLCONFORM_SEED", "20261122")

if importlib.util.find_spec("isaaclab") is not None:
    # Isaac Lab reads its asset root (and Warp its kernel cache) once, when first imported: the
    # offline Cartpole assets must be in place before any test module imports isaaclab
    from rlconform.libraries.isaaclab.cartpole import prepare_environment

    prepare_environment()


def load_script(name: str) -> ModuleType:
    """scripts/NAME.py as a module (the scripts are not part of the package)."""
    path = Path(__file__).resolve().parent / "scripts" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"rlconform_{name}_script", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def matrix_script() -> ModuleType:
    """scripts/matrix.py as a module."""
    return load_script("matrix")


@pytest.fixture(scope="session")
def corpus_script() -> ModuleType:
    """scripts/corpus.py as a module."""
    return load_script("corpus")


#: a user's vectorizer as the front-end tests write it (``--api gymnasium.vector``): ``make``, correct
#: (SAME_STEP, so that a terminal observation is there to lose), and ``broken``, which loses the true
#: terminal observation (fails terminal.final_obs only on a step where an episode ends)
VECTORIZER = '''
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
'''


@pytest.fixture(scope="session")
def vectorizer_source() -> str:
    """The source of a user's vectorizer module (``make`` correct, ``broken`` loses final_obs)."""
    return VECTORIZER


@pytest.fixture
def user_module(tmp_path: Path) -> Callable[[str, str], Path]:
    """``user_module(name, source)`` writes a user's module ``NAME.py`` into ``tmp_path`` (the
    folder :func:`rlconform_cli` runs in by default) and returns its path."""

    def write(name: str, source: str, folder: Path = tmp_path) -> Path:
        path = folder / f"{name}.py"
        path.write_text(source)
        return path

    return write


#: what ``env=`` of :func:`rlconform_cli` and :func:`user_python` takes: a variable set, or removed (None)
Environment = Mapping[str, "str | None"]


def run_user_python(
    args: tuple[str, ...], cwd: Path, env: Environment | None = None, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    """``python ARGS`` in ``cwd`` as a user runs it there: ``cwd`` (where their modules are) first on
    PYTHONPATH, then the PYTHONPATH of this session; ``env`` sets (or, with None, removes) variables."""
    environment = dict(os.environ)
    for name, value in (env or {}).items():
        if value is None:
            environment.pop(name, None)
        else:
            environment[name] = value
    environment["PYTHONPATH"] = os.pathsep.join(filter(None, [str(cwd), environment.get("PYTHONPATH")]))
    command = [sys.executable, *args]
    return subprocess.run(command, cwd=cwd, env=environment, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="session")
def run_python() -> Callable[..., subprocess.CompletedProcess[str]]:
    """``run_python(*args, cwd=FOLDER, env=None, timeout=600)``: ``python ARGS`` with the modules of
    ``cwd`` importable (for a module- or session-scoped folder; :func:`user_python` for ``tmp_path``)."""

    def run(
        *args: str, cwd: Path, env: Environment | None = None, timeout: float = 600
    ) -> subprocess.CompletedProcess[str]:
        return run_user_python(args, cwd, env, timeout)

    return run


@pytest.fixture
def rlconform_cli(tmp_path: Path) -> Callable[..., subprocess.CompletedProcess[str]]:
    """``rlconform_cli(*args, cwd=tmp_path, env=None, timeout=600)``: ``python -m rlconform.cli ARGS``
    run as a user runs ``rlconform`` in the folder holding their module (:func:`user_module`)."""

    def run(
        *args: str, cwd: Path = tmp_path, env: Environment | None = None, timeout: float = 600
    ) -> subprocess.CompletedProcess[str]:
        return run_user_python(("-m", "rlconform.cli", *args), cwd, env, timeout)

    return run


@pytest.fixture
def user_python(tmp_path: Path) -> Callable[..., subprocess.CompletedProcess[str]]:
    """``user_python(*args, cwd=tmp_path, env=None, timeout=600)``: ``python ARGS`` (a reproducer
    script, ``-m pytest``) with the user's modules of ``cwd`` importable, as :func:`rlconform_cli`."""

    def run(
        *args: str, cwd: Path = tmp_path, env: Environment | None = None, timeout: float = 600
    ) -> subprocess.CompletedProcess[str]:
        return run_user_python(args, cwd, env, timeout)

    return run


def pytest_report_header() -> str:
    return f"rlconform searches under the fast profile: RLCONFORM_SEED={os.environ['RLCONFORM_SEED']}"
