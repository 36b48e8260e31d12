"""Written reproducers import what they use, and nothing else (issue 25).

A family's reproducer template imports every name a case of its kind may need (every space and op
class of :mod:`rlconform.replay`, NumPy for action reprs, ``functools``, ``contextlib``); a user
keeping the file in a linted test suite got about 9 unused imports each.
:func:`rlconform.core.reproducer.only_used_imports` cuts them to what the script reads. The
reproducers of planted bugs of several families are checked with ruff's unused-import and
redefinition rules, and each still reproduces its failure when run.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from rlconform.core.reproducer import only_used_imports

RUFF = Path(sys.executable).parent / "ruff"


def test_unused_names_are_cut_and_a_used_import_keeps_no_stale_noqa() -> None:
    source = textwrap.dedent('''\
        """doc"""
        import contextlib
        import functools

        import numpy as np  # noqa: F401  (reprs of actions may use it)

        from mymod import make
        from rlconform.replay import (
            BadStep, BoxAction, BoxObs, Case, DictObs, DiscreteAction, DiscreteObs, EnvScript, EpisodePlan,
            MultiBinaryObs, MultiDiscreteAction, MultiDiscreteObs, Reset, Step, TupleObs, replay,
        )

        script = EnvScript(obs=BoxObs())
        case = Case(script, num_envs=2, ops=(Reset(seed=1), Step(np.array([1]))))
        ''')
    assert only_used_imports(source) == textwrap.dedent('''\
        """doc"""

        import numpy as np

        from mymod import make
        from rlconform.replay import BoxObs, Case, EnvScript, Reset, Step

        script = EnvScript(obs=BoxObs())
        case = Case(script, num_envs=2, ops=(Reset(seed=1), Step(np.array([1]))))
        ''').replace("from mymod import make\n", "")


def test_a_long_import_is_wrapped_and_an_unparsable_script_is_left_as_it_is() -> None:
    names = [f"Name{i:02d}" for i in range(20)]
    source = f"from rlconform.replay import {', '.join(names)}, Unused\n\nx = [{', '.join(names)}]\n"
    cut = only_used_imports(source)
    statement = cut.split("\n\n", 1)[0]
    assert statement.startswith("from rlconform.replay import (\n") and "Unused" not in statement
    assert max(map(len, statement.splitlines())) <= 100
    compile(cut, "<cut>", "exec")
    assert cut.split("\n\n", 1)[1] == source.split("\n\n", 1)[1]
    broken = "import os\nx = <object at 0x1>\n"
    assert only_used_imports(broken) == broken


def _installed(*modules: str) -> bool:
    return all(importlib.util.find_spec(module) is not None for module in modules)


#: planted bugs of several families, each with a spec it must fail (MUST_FAIL): the reproducer of
#: a call sequence (Gymnasium vector, SB3, TorchRL), of a scenario's own case (a TorchRL replay
#: buffer) and of an env-author case, in both of its forms (a pytest regression test, a script)
PLANTED = [
    pytest.param("planted.shifted_reward", "transitions.exact", (), id="gymnasium.vector"),
    pytest.param("planted.rewarding_autoreset", "reset_step.neutral", (), id="gymnasium.Wrapper"),
    pytest.param("planted.sb3_no_terminal_observation", "terminal.final_obs", ("stable_baselines3",), id="sb3.VecEnv"),
    pytest.param(
        "planted.torchrl_reuses_obs_buffer", "aliasing.torchrl_returned_data", ("torchrl",), id="torchrl.EnvBase"
    ),
    pytest.param(
        "planted.torchrl.SliceBuffer.IgnoresEpisodeEnds",
        "replay.slices_within_episode",
        ("torchrl",),
        id="torchrl.ReplayBuffer",
    ),
    pytest.param("planted.user_env.reused_buffer", "env.no_aliasing", (), id="gymnasium.Env"),
]


@pytest.fixture(scope="module")
def reproducers(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The reproducer of each planted bug's failure, written to a file of its own."""
    from rlconform.core.catalog import current
    from rlconform.core.search import check_spec
    from rlconform.core.spec import get_spec
    from rlconform.core.system import get_system

    folder = tmp_path_factory.mktemp("reproducers")
    written = {}
    for param in PLANTED:
        system_id, spec_id, modules = param.values
        if not _installed(*modules):
            continue
        assert spec_id in current().must_fail()[system_id]
        verdict = check_spec(get_system(system_id), get_spec(spec_id), "fast")
        assert verdict.status == "fail" and verdict.reproducer, (system_id, verdict.status, verdict.message)
        path = folder / f"repro_{param.id.replace('.', '_')}.py"
        path.write_text(verdict.reproducer)
        written[param.id] = path
    return written


@pytest.mark.slow
@pytest.mark.skipif(not RUFF.exists() and shutil.which("ruff") is None, reason="ruff is not installed")
def test_reproducers_have_no_unused_import(reproducers: dict[str, Path]) -> None:
    ruff = str(RUFF) if RUFF.exists() else "ruff"
    files = [str(path) for path in reproducers.values()]
    assert len(files) >= 3, reproducers
    command = [ruff, "check", "--isolated", "--no-cache", "--select", "F401,F811,F821", *files]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.slow
@pytest.mark.parametrize("system_id, spec_id, modules", PLANTED)
def test_each_reproducer_still_reproduces(
    reproducers: dict[str, Path], system_id: str, spec_id: str, modules: tuple[str, ...], request: pytest.FixtureRequest
) -> None:
    """Run as a script: exit status 1 while the violation remains."""
    if not _installed(*modules):
        pytest.skip(f"{', '.join(modules)} not installed")
    path = reproducers[request.node.callspec.id]
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path.cwd()), os.environ.get("PYTHONPATH", "")])}
    result = subprocess.run(
        [sys.executable, str(path)], cwd=path.parent, env=environment, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 1, path.read_text() + result.stdout + result.stderr
