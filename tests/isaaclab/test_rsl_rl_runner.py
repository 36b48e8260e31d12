"""``--api rsl_rl.Runner`` (issue 38): what RSL-RL's runner stores and computes from rlconform's env.

RSL-RL's own PPO, and its innocent variants (other horizons, lambda 1, observation normalization,
per-mini-batch advantages), pass ``learner.storage`` and ``learner.returns``; its time-out
bootstrap from V(s_t) is "known" in ``learner.exact_targets``, citing RSL-RL's source, with its bias
measured. Each planted bug (a fork's GAE or storage, a wrapper's time-out flags) fails exactly its
specs. The CLI, the plugin and ``parametrize_with_checks`` are shown by
``tests/frontends/test_every_api.py`` for this ``--api`` (run here: RSL-RL is in this environment only).
Runs in ``.venv-isaaclab`` (rsl-rl-lib and GitPython).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("rsl_rl.runners", reason="RSL-RL's runner (rsl-rl-lib with GitPython) is not installed")

from rlconform.core.search import check_spec
from rlconform.core.spec import get_spec
from rlconform.core.system import get_system
from rlconform.libraries.rsl_rl import runner_systems
from rlconform.specs.learner import EXACT, RETURNS, STORAGE

SPECS = (STORAGE, RETURNS, EXACT)
PROFILE = "ci"
ROOT = Path(__file__).resolve().parents[2]


def _statuses(system_id: str) -> dict[str, tuple[str, bool, str]]:
    system = get_system(system_id)
    found = {}
    for spec_id in SPECS:
        verdict = check_spec(system, get_spec(spec_id), PROFILE)
        found[spec_id] = (verdict.status, verdict.known is not None, verdict.message)
    return found


@pytest.mark.parametrize("suffix", [suffix for suffix, _what, _cfg in runner_systems.VARIANTS])
def test_rsl_rl_ppo_and_its_innocent_variants_pass_and_the_bootstrap_is_known(suffix: str) -> None:
    found = _statuses(f"rsl_rl.Runner.PPO{suffix}")
    assert found[STORAGE][0] == "pass", found[STORAGE]
    assert found[RETURNS][0] == "pass", found[RETURNS]
    status, known, message = found[EXACT]
    assert status == "fail" and known, found[EXACT]
    assert "bootstrapped from V(s_t) instead of from V(terminal observation): bias mean" in message, message


@pytest.mark.parametrize("defect", sorted(runner_systems.PLANTS))
def test_each_planted_bug_fails_exactly_its_specs(defect: str) -> None:
    system_id = f"planted.rsl_rl.Runner.{''.join(p.title() for p in defect.split('_'))}"
    found = _statuses(system_id)
    failed = {spec_id for spec_id, (status, known, _m) in found.items() if status == "fail" and not known}
    assert failed == set(get_system(system_id).plants), found


def test_messages_say_what_the_storage_and_returns_got_wrong() -> None:
    bootstrapped = _statuses("planted.rsl_rl.Runner.TimeOutsForTerminations")[STORAGE][2]
    assert "a termination bootstrapped as a time-out" in bootstrapped, bootstrapped
    across = _statuses("planted.rsl_rl.Runner.GaeAcrossEpisodes")[RETURNS][2]
    assert "GAE carried across episode ends" in across, across
    mixed = _statuses("planted.rsl_rl.Runner.GaeAcrossEnvs")[RETURNS][2]
    assert "laid end to end" in mixed, mixed
    post = _statuses("planted.rsl_rl.Runner.PostStepObs")[STORAGE][2]
    assert "but the step started from" in post, post


def test_through_isaac_labs_wrapper_a_termination_on_the_time_limit_is_bootstrapped() -> None:
    """FINDINGS I3 reaches the storage: RslRlVecEnvWrapper hands a sub-env that terminated on its
    time limit on as a time-out, and RSL-RL's PPO bootstraps it."""
    pytest.importorskip("isaaclab_rl", reason="Isaac Lab is not installed")
    from rlconform.libraries.rsl_rl.runner_family import FAMILY

    found = _statuses("rsl_rl.Runner.PPO.isaaclab")
    assert found[RETURNS][0] == "pass", found[RETURNS]
    status, known, message = found[STORAGE]
    assert status == "fail" and not known and "a termination bootstrapped as a time-out" in message, message
    assert FAMILY.findings_row("rsl_rl.Runner.PPO.isaaclab", STORAGE) == "I3"
    assert FAMILY.findings_row("rsl_rl.Runner.PPO.isaaclab", EXACT) == "I3"


@pytest.mark.slow
def test_every_front_end_checks_a_runner() -> None:
    """The CLI (with every report format and the reproducers), the plugin and
    ``parametrize_with_checks`` on a correct runner factory and a buggy one."""
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "tests/frontends/test_every_api.py"],
        cwd=ROOT,
        env={**os.environ, "RLCONFORM_EVERY_API": "rsl_rl.Runner"},
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "skipped" not in done.stdout.splitlines()[-1], done.stdout[-2000:]
