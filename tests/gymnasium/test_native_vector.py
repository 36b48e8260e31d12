"""``--api gymnasium.VectorEnv``: a ready-made, natively vectorized env, checked black-box (issue 26).

Before, such an env fit no ``--api``: as ``gymnasium.vector`` it was handed env factories it
ignored, as ``gymnasium.Env`` it was accepted as one env. Its specs (``vector.*``) compare the env
with itself, with what it declares and with its single env; the planted bugs of
``rlconform.libraries.gymnasium.native_samples`` fail them (tests/specs/test_specificity.py), and
the correct and unusual envs below pass them.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from rlconform.core.runner import RunCache
from rlconform.core.search import check_spec
from rlconform.core.spec import all_specs
from rlconform.core.system import get_system
from rlconform.core.user import BadInput, probe, user_system
from rlconform.specs.families import NATIVE_VECTOR

SPECS = [s for s in all_specs() if NATIVE_VECTOR in s.families]
SAMPLES = "rlconform.libraries.gymnasium.native_samples"


def _verdicts(reference: str, **options: str) -> dict[str, Any]:
    system = probe(user_system(reference, "gymnasium.VectorEnv", **options))
    cache = RunCache()
    return {spec.id: check_spec(system, spec, "ci", cache=cache) for spec in SPECS}


def _statuses(reference: str, **options: str) -> dict[str, str]:
    return {spec: verdict.status for spec, verdict in _verdicts(reference, **options).items()}


@pytest.mark.parametrize(
    ("reference", "options"),
    [
        (f"{SAMPLES}:walk", {"single_env": f"{SAMPLES}:single_walk"}),
        (f"{SAMPLES}:walk_same_step", {"single_env": f"{SAMPLES}:single_walk"}),
        (f"{SAMPLES}:walk_disabled", {"single_env": f"{SAMPLES}:single_walk"}),
        (f"{SAMPLES}:walk_same_step", {}),
        (f"{SAMPLES}:float64_walk", {}),
        (f"{SAMPLES}:checked_actions", {}),
        # a curriculum: a second reset(seed=s) of one instance is not the first run (issue 36)
        (f"{SAMPLES}:curriculum_walk", {}),
    ],
)
def test_a_correct_or_unusual_vector_env_gets_no_failure(reference: str, options: dict[str, str]) -> None:
    statuses = _statuses(reference, **options)
    assert set(statuses.values()) <= {"pass", "not_applicable"}, statuses
    if options:
        assert statuses["vector.single_env_match"] == "pass"


def test_gymnasium_cartpole_vector_env_draws_every_start_from_one_generator() -> None:
    """CartPoleVectorEnv seeds one generator for all sub-envs (issue 35): under the default seed+i
    scheme its sub-envs are not the single env seeded seed+i. That is a seeding convention, told
    apart from wrong data without the single env (sub-env i of seed s + 1 is not sub-env i + 1 of
    seed s): a seeding note saying to declare --seeding shared, never a training-data FAIL;
    declared shared, as its user would, the single env is not applicable either."""
    system = get_system("gymnasium.make_vec.CartPole.vector_entry_point")
    if system.skip_reason():
        pytest.skip(system.skip_reason() or "")
    cache = RunCache()
    assert {spec.id: check_spec(system, spec, "ci", cache=cache).status for spec in SPECS}[
        "vector.single_env_match"
    ] == ("not_applicable")
    system = probe(
        user_system(f"{SAMPLES}:cartpole_vector", "gymnasium.VectorEnv", single_env=f"{SAMPLES}:cartpole_single")
    )
    cache = RunCache()
    verdicts = {spec.id: check_spec(system, spec, "ci", cache=cache) for spec in SPECS}
    match = verdicts["vector.single_env_match"]
    assert match.status == "not_applicable", match.message
    assert "seeding note" in match.message and "--seeding shared" in match.message
    assert "--seeding shared" in verdicts["vector.seeding"].message
    assert {v.status for v in verdicts.values()} <= {"pass", "not_applicable"}


def test_without_the_single_env_the_verdicts_say_what_was_left_out() -> None:
    system = probe(user_system(f"{SAMPLES}:walk", "gymnasium.VectorEnv"))
    cache = RunCache()
    verdicts = {spec.id: check_spec(system, spec, "ci", cache=cache) for spec in SPECS}
    assert "left out" in verdicts["vector.single_env_match"].message
    assert verdicts["vector.seeding"].status == "pass"
    assert "without --single-env" in verdicts["vector.seeding"].message


def test_episodes_that_outlast_a_case_are_driven_past_their_end(monkeypatch: pytest.MonkeyPatch) -> None:
    """A vector env whose episodes (150 steps, truncated only) outlast every case's own steps is
    driven one step past the first episode end (issue 36): its autoreset mode is checked, not "not
    exercised"; the same env with no time to find an end says why it was not (planted
    ``long_reset_step_reward``, found only past the end, is in tests/specs/test_specificity.py)."""
    from rlconform.libraries.gymnasium import native_vector

    verdicts = _verdicts(f"{SAMPLES}:long_walk")
    assert verdicts["vector.autoreset_mode"].status == "pass", verdicts["vector.autoreset_mode"].message
    assert {v.status for v in verdicts.values()} <= {"pass", "not_applicable"}
    monkeypatch.setenv("RLCONFORM_EPISODE_SECONDS", "0")
    monkeypatch.setattr(native_vector, "_NO_END", {})
    mode = _verdicts(f"{SAMPLES}:long_walk")["vector.autoreset_mode"]
    assert mode.status == "not_exercised", mode.message
    assert "no episode ended within 0 s of random actions (0 steps)" in mode.message
    assert "RLCONFORM_EPISODE_SECONDS sets how long to wait for one" in mode.message


def test_make_vec_max_episode_steps_is_the_limit_checked_not_the_stale_spec() -> None:
    """``gymnasium.make_vec(id, max_episode_steps=10)`` truncates at 10 but leaves
    ``spec.max_episode_steps`` at 500 (FINDINGS G10): vector.time_limit checks 10 and says so (a
    time-out reported as a termination behind such a spec fails: planted
    ``stale_spec_timeout_terminates``)."""
    verdicts = _verdicts(f"{SAMPLES}:cartpole_sync_short", single_env=f"{SAMPLES}:cartpole_single_short")
    limit = verdicts["vector.time_limit"]
    assert limit.status == "pass", limit.message
    assert "checked against 10" in limit.message and "G10" in limit.message
    assert {v.status for v in verdicts.values()} <= {"pass", "not_applicable"}


def test_wrong_factories_are_refused_with_the_api_they_fit() -> None:
    with pytest.raises(BadInput, match=r"did you mean --api gymnasium.vector or --api sb3.VecEnv\?"):
        user_system(f"{SAMPLES}:from_env_fns", "gymnasium.VectorEnv")
    with pytest.raises(BadInput, match="did you mean"):
        probe(user_system(f"{SAMPLES}:single_walk_of", "gymnasium.VectorEnv"))
    with pytest.raises(BadInput, match="--seeding 'sometimes'"):
        user_system(f"{SAMPLES}:walk", "gymnasium.VectorEnv", seeding="sometimes")
    with pytest.raises(BadInput, match="has no attribute"):
        user_system(f"{SAMPLES}:walk", "gymnasium.VectorEnv", single_env=f"{SAMPLES}:no_such_env")


@pytest.mark.slow
def test_the_cli_checks_a_ready_made_vector_env_in_three_lines(tmp_path: Path) -> None:
    executable = str(Path(sys.executable).with_name("rlconform"))
    base = [executable, "check", f"{SAMPLES}:walk", "--api", "gymnasium.VectorEnv"]
    good = subprocess.run(
        [*base, "--single-env", f"{SAMPLES}:single_walk"], capture_output=True, text=True, timeout=600, cwd=tmp_path
    )
    assert good.returncode == 0, good.stdout + good.stderr
    assert "autoreset mode NextStep (metadata)" in good.stdout
    bad = subprocess.run(
        [executable, "check", f"{SAMPLES}:timeout_terminates", "--api", "gymnasium.VectorEnv"],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
    )
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "a time-out reported as a termination" in bad.stdout


def test_parametrize_with_checks_takes_the_family_options(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_mine=f"""
from rlconform.testing import parametrize_with_checks

@parametrize_with_checks(
    ["{SAMPLES}:walk"],
    api="gymnasium.VectorEnv",
    options={{"single_env": "{SAMPLES}:single_walk"}},
    specs=["vector.single_env_match", "vector.autoreset_mode"],
)
def test_conformance(rlconform_check):
    rlconform_check()
"""
    )
    result = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)
