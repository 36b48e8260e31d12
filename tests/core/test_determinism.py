"""The same check gives the same JSON on every run, from any folder, whatever else was imported.

Hypothesis mixes numbers and strings read from the source of every local module in sys.modules
into generation ("local constants"), so a derandomized search used to draw other examples once a
test module imported the user's package: the same ``ci`` check counted other facts, found its
failure after another number of examples, and wrote ``.hypothesis/constants/`` into every folder
it ran from. These tests run one planted-bug user factory (a same-step vector env that loses the
true terminal observation, so ``terminal.final_obs`` fails only on cases where an episode ends)
through the CLI from an empty folder and through ``rlconform.testing`` in a project whose test
module imports a package full of constants, with and without ``-n 2``, and compare the results.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("gymnasium")

from hypothesis import settings
from hypothesis.internal.conjecture import providers

from rlconform.core.hypothesis_isolation import without_local_constants
from rlconform.core.runner import RunCache
from rlconform.core.search import Verdict, check_spec
from rlconform.core.spec import all_specs
from rlconform.core.system import all_systems

REPO = Path(__file__).resolve().parents[2]

SPECS = ("terminal.final_obs", "flags.terminated")

PROJECT_TEST = f"""
import mylib
from rlconform.testing import parametrize_with_checks


def test_uses_the_package():
    assert mylib.tables.SIZES


@parametrize_with_checks(["vecfactory:broken"], api="gymnasium.vector", specs={list(SPECS)!r})
def test_rlconform(rlconform_check):
    rlconform_check()
"""


def constants_module(variant: int) -> str:
    """A module of about 900 distinct constants (under Hypothesis' limit of 1,024 per module), in
    the ranges rlconform draws from: integers (seeds) and small floats (Box observations, rewards);
    small floats are the ones that changed the examples a search drew."""
    rows = [
        f"    ({1000 * variant + 101 + 71 * i}, {i / (3.0 + variant)!r}, 'cfg{variant}_{i}')," for i in range(1, 301)
    ]
    return "SIZES = [\n" + "\n".join(rows) + "\n]\n"


def timeless(document: dict[str, Any]) -> dict[str, Any]:
    """What must be the same on every run: everything in the results but the time they took (in
    the order of its system and spec: the CLI lists specs in registry order, pytest in the order
    the test file named them)."""
    results = [{k: v for k, v in r.items() if k != "seconds"} for r in document["results"]]
    return {
        "profile": document["profile"],
        "specs": sorted(document["specs"], key=lambda s: s["id"]),
        "systems": document["systems"],
        "results": sorted(results, key=lambda r: (r["system"], r["spec"])),
        "summary": document["summary"],
    }


def verdict_facts(verdict: Verdict) -> dict[str, Any]:
    facts = dict(vars(verdict))
    facts.pop("seconds")
    facts["case"] = repr(facts["case"])
    return facts


def cli_check(cwd: Path, json_path: Path, pythonpath: list[Path], hash_seed: str) -> dict[str, Any]:
    env = {**os.environ, "RLCONFORM_PROFILE": "ci", "PYTHONHASHSEED": hash_seed}
    env.pop("RLCONFORM_SEED", None)
    env["PYTHONPATH"] = os.pathsep.join(str(p) for p in [REPO, *pythonpath])
    result = subprocess.run(
        [sys.executable, "-m", "rlconform.cli", "check", "vecfactory:broken", "--api", "gymnasium.vector"]
        + [arg for spec in SPECS for arg in ("--spec", spec)]
        + ["--profile", "ci", "--json", str(json_path)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 1, result.stdout + result.stderr  # the planted bug fails
    document: dict[str, Any] = json.loads(json_path.read_text())
    return document


@pytest.mark.slow  # the CLI and pytest (with xdist) in subprocesses
def test_cli_pytest_and_xdist_give_the_same_results_from_any_folder(
    pytester: pytest.Pytester,
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    vectorizer_source: str,
) -> None:
    pytest.importorskip("xdist")
    monkeypatch.setenv("RLCONFORM_PROFILE", "ci")
    monkeypatch.delenv("RLCONFORM_SEED", raising=False)
    project = pytester.path
    # the conftest's vectorizer: broken loses the true terminal observation (seen only where an episode ends)
    pytester.makepyfile(vecfactory=vectorizer_source, test_project=PROJECT_TEST)
    package = project / "mylib"
    package.mkdir()
    (package / "__init__.py").write_text("from mylib import tables, settings\n")
    (package / "tables.py").write_text(constants_module(0))
    (package / "settings.py").write_text(constants_module(1))

    # the CLI from an empty folder, with the factory found through PYTHONPATH
    empty = tmp_path_factory.mktemp("empty")
    factory_only = tmp_path_factory.mktemp("factory")
    (factory_only / "vecfactory.py").write_text(vectorizer_source)
    alone = cli_check(empty, tmp_path_factory.mktemp("out") / "alone.json", [factory_only], hash_seed="0")
    left_in_empty = sorted(p.name for p in empty.iterdir())

    # the CLI from the project folder (its cwd on sys.path, as python -m puts it), under another
    # hash seed
    in_project = cli_check(project, project / "cli.json", [project], hash_seed="1")

    # rlconform.testing in the project's own test module, which imports mylib, in one process
    # and in two xdist workers
    single = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:xdist", "--rlconform-json", "one.json")
    single.assert_outcomes(passed=2, failed=1)
    parallel = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2", "--rlconform-json", "two.json")
    parallel.assert_outcomes(passed=2, failed=1)

    documents = {
        "cli, empty folder": alone,
        "cli, project folder": in_project,
        "pytest": json.loads((project / "one.json").read_text()),
        "pytest -n 2": json.loads((project / "two.json").read_text()),
    }
    statuses = sorted((r["spec"], r["status"]) for r in alone["results"])
    assert statuses == [("flags.terminated", "pass"), ("terminal.final_obs", "fail")]
    reference = timeless(alone)
    for name, document in documents.items():
        assert timeless(document) == reference, f"{name} differs from the CLI run in an empty folder"
    # and the searches leave no .hypothesis/ (constants cache) behind in either folder
    assert left_in_empty == [], "rlconform wrote into the folder it ran from"
    assert not (project / ".hypothesis").exists(), "rlconform's searches wrote .hypothesis/ into the project"


def _system_and_spec(system_id: str, spec_id: str) -> tuple[Any, Any]:
    system = next(s for s in all_systems() if s.id == system_id)
    spec = next(s for s in all_specs() if s.id == spec_id)
    return system, spec


def test_a_search_ignores_modules_imported_since_the_last_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the planted bug shows only when a sub-env's episode is truncated (not terminated): how many
    # examples the search needs to find it depends on the examples drawn
    system, spec = _system_and_spec("planted.forgets_truncated_reset", "transitions.exact")
    before = check_spec(system, spec, "ci", cache=RunCache())
    name = f"rlconform_determinism_constants_{tmp_path.name}"
    (tmp_path / f"{name}.py").write_text(constants_module(2))
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.import_module(name)
    after = check_spec(system, spec, "ci", cache=RunCache())
    assert before.status == "fail"
    assert verdict_facts(after) == verdict_facts(before)


def test_a_user_profile_does_not_change_the_examples_of_a_search() -> None:
    system, spec = _system_and_spec("gymnasium.SyncVectorEnv.NextStep", "flags.truncated")
    ours = check_spec(system, spec, "ci", cache=RunCache())
    # a conftest may load a profile for the project's own @given tests; with this backend a
    # derandomized search inheriting it drew fresh random examples on every call
    settings.register_profile("rlconform-test-user-profile", backend="hypothesis-urandom", max_examples=7)
    settings.load_profile("rlconform-test-user-profile")
    try:
        under_user_profile = [check_spec(system, spec, "ci", cache=RunCache()) for _ in range(2)]
    finally:
        settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
    assert [verdict_facts(v) for v in under_user_profile] == [verdict_facts(ours)] * 2


def test_the_users_own_tests_keep_their_local_constants(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """rlconform switches local constants off for its own searches only: a module the user imports
    afterwards still feeds their own @given tests."""
    system, spec = _system_and_spec("gymnasium.SyncVectorEnv.NextStep", "flags.truncated")
    with without_local_constants():
        assert len(providers._get_local_constants()) == 0
    check_spec(system, spec, "ci", cache=RunCache())
    name = f"rlconform_determinism_user_{tmp_path.name}"
    (tmp_path / f"{name}.py").write_text("MAGIC = 987_654_321\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.import_module(name)
    assert 987_654_321 in providers._get_local_constants().set_for_type("integer")


def test_derandomized_profiles_bound_shrinking_by_examples_not_by_the_clock() -> None:
    """A shrink cut by wall-clock time stops at another candidate on a loaded machine: another
    minimal case, message and reproducer. Derandomized profiles keep only Hypothesis' own limit."""
    from hypothesis.internal.conjecture import engine

    from rlconform.core.profiles import PROFILES

    derandomized = [p for p in PROFILES.values() if p.derandomize]
    assert {p.name for p in derandomized} >= {"ci", "matrix"}
    for profile in derandomized:
        assert profile.shrink_seconds >= engine.MAX_SHRINKING_SECONDS, profile.name
        assert profile.shrink_examples > 0 and profile.shrink_examples_out_of_process > 0
