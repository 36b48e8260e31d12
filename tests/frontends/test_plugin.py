"""The pytest plugin, tested the way a downstream repository uses it (pytester).

Every test runs pytest in a fresh directory holding a user module, ``myvec.py``: a correct vector
env factory and one that loses the true terminal observation. Searches use the derandomized ``ci``
profile and a few specs, so that each run takes about a second.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

pytest.importorskip("gymnasium")

# The in-process runs import these; importing them here once keeps pytester's sys.modules snapshot
# from dropping them after every run, so that each run does not import them again (seconds each).
import rlconform.core.search
from rlconform.core.system import all_systems
from rlconform.reports.results import header_lines

all_systems()
# the report header imports torch (to name the accelerator): importing torch twice in one process
# (after pytester's snapshot dropped it) crashes the interpreter, so it is imported here, once
header_lines(rlconform.core.search.get_profile("ci"), None)

#: added to the conftest's vectorizer (``vectorizer_source``: ``make`` correct, ``broken`` loses
#: final_obs, the bug the plugin must report) in the user's module myvec.py
MYVEC = '''
import gymnasium


class Explodes(gymnasium.vector.SyncVectorEnv):
    """Every step raises: no search can check a transition."""

    def step(self, actions):
        raise RuntimeError("boom")


def explodes(env_fns, **kwargs):
    return Explodes(env_fns)


def with_statistics(env_fns, **kwargs):
    return gymnasium.wrappers.vector.RecordEpisodeStatistics(make(env_fns))


def statistics_for_box_observations(env_fns, **kwargs):
    """Keeps episode statistics for some envs only: its stack changes with the envs it is given."""
    envs = make(env_fns)
    if isinstance(envs.single_observation_space, gymnasium.spaces.Box):
        return gymnasium.wrappers.vector.RecordEpisodeStatistics(envs)
    return envs


def no_arguments():
    return None


def raises(env_fns, **kwargs):
    raise RuntimeError("this factory needs a GPU")


NOT_CALLABLE = 3
'''

PLAIN_TEST = """
def test_plain():
    assert 1 + 1 == 2
"""

CHECK = ("--rlconform-api", "gymnasium.vector", "--rlconform-check")


def specs(*patterns: str) -> list[str]:
    return [arg for pattern in patterns for arg in ("--rlconform-specs", pattern)]


def statuses(document: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(r["system"], r["spec"], r["status"]) for r in document["results"]]


@pytest.fixture
def downstream(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, vectorizer_source: str) -> pytest.Pytester:
    monkeypatch.setenv("RLCONFORM_PROFILE", "ci")
    monkeypatch.delenv("RLCONFORM_SEED", raising=False)
    pytester.makepyfile(myvec=vectorizer_source + MYVEC)
    return pytester


def test_correct_factory_passes_selected_specs(downstream: pytest.Pytester) -> None:
    result = downstream.runpytest(
        "-v", *CHECK, "myvec:make", *specs("transitions.exact", "terminal.final_obs", "flags.*")
    )
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(
        [
            "rlconform * on Python *",
            "profile: ci (*derandomized)",
            "rlconform: 1 system(s) x 4 spec(s), 4 applicable",
            # specs in catalog order (`rlconform list --specs`)
            "*rlconform::user:myvec:make-transitions.exact PASSED*",
            "*rlconform::user:myvec:make-terminal.final_obs PASSED*",
            "*rlconform::user:myvec:make-flags.terminated PASSED*",
            "*rlconform::user:myvec:make-flags.truncated PASSED*",
            "rlconform (ci profile): 4 passed",
        ]
    )


def test_broken_factory_fails_with_violation_and_reproducer(downstream: pytest.Pytester) -> None:
    result = downstream.runpytest(
        *CHECK, "myvec:broken", *specs("terminal.final_obs", "flags.terminated"), "--junitxml=junit.xml"
    )
    result.assert_outcomes(passed=1, failed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "*rlconform: user:myvec:broken :: terminal.final_obs*",
            "user:myvec:broken violates terminal.final_obs",
            "spec: The last transition of every episode that ended has the true terminal observation*",
            "violations (*):",
            "  - env *, agent step *: next_obs is *; expected * (the terminal observation)",
            "reproducer (save it as a .py file and run it*",
            '"""rlconform reproducer: user:myvec:broken violates terminal.final_obs.',
            # a pytest test the user can keep: the factory imported, plain calls, then the replay
            "from myvec import broken",
            "def test_terminal_final_obs() -> None:",
            "*envs = broken(env_fns)",
            "*violations = replay(broken, case, 'terminal.final_obs', api='gymnasium.vector')*",
            "rlconform (ci profile): 1 passed, 1 failed",
            "FAILED rlconform::user:myvec:broken-terminal.final_obs*",
        ]
    )
    # the failure is the violation and its reproducer, not a traceback through rlconform
    assert "Traceback" not in result.stdout.str()
    assert "def runtest" not in result.stdout.str()
    junit = (downstream.path / "junit.xml").read_text()
    assert '<property name="rlconform_status" value="fail"' in junit
    assert '<property name="rlconform_status" value="pass"' in junit
    assert '<property name="rlconform_message" value="env ' in junit


def test_keyword_and_marker_select_items(downstream: pytest.Pytester) -> None:
    downstream.makepyfile(test_plain=PLAIN_TEST)
    args = [
        *("--rlconform-systems", "gymnasium.SyncVectorEnv.SameStep"),
        *("--rlconform-systems", "gymnasium.SyncVectorEnv.NextStep"),
        *CHECK,
        "myvec:make",
        *specs("transitions.exact", "flags.terminated"),
    ]
    collected = downstream.runpytest("--collect-only", "-q", *args)
    # every process (every xdist worker) collects this list in this order: user systems, then
    # bundled systems in registry order, each with the specs in registry order
    assert [line for line in collected.outlines if "::" in line] == [
        "test_plain.py::test_plain",
        "rlconform::user:myvec:make-transitions.exact",
        "rlconform::user:myvec:make-flags.terminated",
        "rlconform::gymnasium.SyncVectorEnv.NextStep-transitions.exact",
        "rlconform::gymnasium.SyncVectorEnv.NextStep-flags.terminated",
        "rlconform::gymnasium.SyncVectorEnv.SameStep-transitions.exact",
        "rlconform::gymnasium.SyncVectorEnv.SameStep-flags.terminated",
    ]

    selected = downstream.runpytest("--collect-only", "-q", "-k", "SyncVectorEnv and transitions", *args)
    assert [line for line in selected.outlines if "::" in line] == [
        "rlconform::gymnasium.SyncVectorEnv.NextStep-transitions.exact",
        "rlconform::gymnasium.SyncVectorEnv.SameStep-transitions.exact",
    ]

    by_marker = downstream.runpytest("--collect-only", "-q", "-m", "not rlconform", *args)
    assert [line for line in by_marker.outlines if "::" in line] == ["test_plain.py::test_plain"]

    result = downstream.runpytest("-v", "-m", "rlconform", "-k", "SameStep and flags", *args)
    result.assert_outcomes(passed=1, deselected=6)
    result.stdout.fnmatch_lines(["*rlconform::gymnasium.SyncVectorEnv.SameStep-flags.terminated PASSED*"])


def test_search_that_checks_nothing_fails_with_its_message(downstream: pytest.Pytester) -> None:
    result = downstream.runpytest(*CHECK, "myvec:explodes", *specs("transitions.exact"))
    result.assert_outcomes(failed=1)
    # "not exercised" (or "error"): never a pass, and the message says why
    result.stdout.fnmatch_lines(["user:myvec:explodes :: transitions.exact *", "spec: The transitions extracted *"])
    assert "Traceback" not in result.stdout.str() or "RuntimeError: boom" in result.stdout.str()


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        pytest.param((*CHECK, "nosuchmodule_xyz:make"), "module 'nosuchmodule_xyz' not found", id="missing-module"),
        pytest.param((*CHECK, "myvec:nosuch"), "module 'myvec' has no attribute 'nosuch'", id="missing-callable"),
        pytest.param((*CHECK, "myvec:NOT_CALLABLE"), "myvec:NOT_CALLABLE is a int, not a callable", id="not-callable"),
        pytest.param(
            (*CHECK, "myvec:no_arguments"),
            "myvec:no_arguments has signature (); family gymnasium.vector expects (env_fns: *",
            id="wrong-signature",
        ),
        pytest.param(
            ("--rlconform-api", "gym.Vector", "--rlconform-check", "myvec:make"),
            "unknown API family 'gym.Vector' (did you mean 'gymnasium.vector'?); known: gymnasium.Env, gymnasium.VectorEnv, gymnasium.Wrapper, gymnasium.vector, isaaclab, rsl_rl.Runner, sb3.Algorithm, sb3.VecEnv, skrl.Agent, torchrl.EnvBase, torchrl.ReplayBuffer, torchrl.ValueEstimator",
            id="unknown-family",
        ),
        pytest.param(
            (*CHECK, "myvec:raises"),
            "building myvec:raises as gymnasium.vector raised RuntimeError: this factory needs a GPU at *myvec.py:*",
            id="factory-raises",
        ),
        pytest.param(("--rlconform-check", "myvec:make"), "--rlconform-check needs --rlconform-api*", id="no-family"),
        pytest.param((*CHECK, "myvec:make", "--rlconform-specs", "nosuch.*"), "no spec matches nosuch.*", id="no-spec"),
        pytest.param(("--rlconform-systems", "nosuch.*"), "no bundled system matches nosuch.*", id="no-system"),
        pytest.param(
            (*CHECK, "myvec:make", "--rlconform-profile", "nightly"), "unknown profile 'nightly'*", id="bad-profile"
        ),
        pytest.param(
            (*CHECK, "myvec:make", *specs("flags.*"), "--rlconform-skip-spec", "nosuch.*"),
            "--rlconform-skip-spec 'nosuch.*' matches no selected spec",
            id="skip-no-spec",
        ),
        pytest.param(
            (*CHECK, "myvec:make", *specs("flags.*"), "--rlconform-skip-spec", "flags.*"),
            "--rlconform-skip-spec leaves no spec to check (it matches all of flags.terminated, flags.truncated)",
            id="skip-every-spec",
        ),
    ],
)
def test_bad_input_is_a_usage_error(downstream: pytest.Pytester, args: tuple[str, ...], reason: str) -> None:
    result = downstream.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: rlconform: {reason}"])
    errors = [line for line in result.errlines if line.strip()]
    # one self-contained line; a factory that raised adds its traceback, indented under it
    assert errors and all(line.startswith("    ") for line in errors[1:]), errors
    assert len(errors) == 1 or "myvec:raises" in args, errors
    assert "Traceback" not in result.stdout.str() + result.stderr.str()


def test_not_applicable_spec_is_no_item_and_is_reported_once(downstream: pytest.Pytester) -> None:
    result = downstream.runpytest(
        "-rs", "--rlconform-systems", "gymnasium.Env.raw", *specs("seeding.seed_plus_i"), "--rlconform-json", "na.json"
    )
    # nothing to run: pytest says so (exit status 5), and the summary says why
    result.assert_outcomes()
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    result.stdout.fnmatch_lines(
        [
            "rlconform: 1 system(s) x 1 spec(s), 0 applicable",
            "rlconform (ci profile): 1 not applicable",
            "rlconform: not applicable, so not collected as test items:",
            "  gymnasium.Env.raw: seeding.seed_plus_i (applies to gymnasium.vector, sb3.VecEnv, not gymnasium.Wrapper)",
        ]
    )
    assert "SKIPPED" not in result.stdout.str()
    # the results document still lists the pair, with its reason
    document = json.loads((downstream.path / "na.json").read_text())
    assert statuses(document) == [("gymnasium.Env.raw", "seeding.seed_plus_i", "not_applicable")]
    assert document["results"][0]["message"] == "applies to gymnasium.vector, sb3.VecEnv, not gymnasium.Wrapper"


def test_check_adds_no_item_per_spec_of_another_family(downstream: pytest.Pytester) -> None:
    """A user's vector env checked with every spec: the env-author specs (family gymnasium.Env) are no
    items, and the summary counts them in one line instead of listing a skip each."""
    result = downstream.runpytest("-rs", *CHECK, "myvec:make", *specs("flags.*", "env.*"))
    result.assert_outcomes(passed=2)
    assert "SKIPPED" not in result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            "rlconform (ci profile): 2 passed, * not applicable",
            "rlconform: not applicable, so not collected as test items:",
            "  user:myvec:make: * specs of other families than gymnasium.vector",
        ]
    )


STACK_SPECS = specs("flags.terminated", "statistics.*", "reset_step.neutral")


def test_spec_that_cannot_apply_to_the_built_stack_is_no_item(downstream: pytest.Pytester) -> None:
    """Specs that apply only to some stacks (a reset step, episode statistics, a normalizer) are
    decided from what the probe's builds read, before any example: no skipped item for them."""
    result = downstream.runpytest("-rs", *CHECK, "myvec:make", *STACK_SPECS, "--rlconform-json", "na.json")
    result.assert_outcomes(passed=1)
    assert "SKIPPED" not in result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            "rlconform: 1 system(s) x 4 spec(s), 1 applicable",
            "rlconform (ci profile): 1 passed, 3 not applicable",
            "rlconform: not applicable, so not collected as test items:",
            "  user:myvec:make: statistics.episode (the system keeps no episode statistics); "
            "statistics.normalizer (the system has no running normalizer); "
            "reset_step.neutral (autoreset mode 'SameStep' has no reset step)",
        ]
    )
    document = json.loads((downstream.path / "na.json").read_text())
    assert sorted(statuses(document)) == [
        ("user:myvec:make", "flags.terminated", "pass"),
        ("user:myvec:make", "reset_step.neutral", "not_applicable"),
        ("user:myvec:make", "statistics.episode", "not_applicable"),
        ("user:myvec:make", "statistics.normalizer", "not_applicable"),
    ]


def test_spec_that_applies_to_the_built_stack_is_an_item(downstream: pytest.Pytester) -> None:
    """With RecordEpisodeStatistics in the stack, statistics.episode is checked (and finds G5 of
    FINDINGS.md: the wrapper zeroes every sub-env's statistics on a partial reset)."""
    result = downstream.runpytest("-v", *CHECK, "myvec:with_statistics", *STACK_SPECS)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*user:myvec:with_statistics-statistics.episode FAILED*",
            "*statistics.normalizer (the system has no running normalizer); reset_step.neutral*",
        ]
    )


def test_stack_that_changes_with_its_envs_is_decided_example_by_example(downstream: pytest.Pytester) -> None:
    """The probe's builds disagree (statistics for Box observations only): nothing is decided
    before the examples, and the spec is checked on the examples it applies to."""
    result = downstream.runpytest(
        "-rs",
        *CHECK,
        "myvec:statistics_for_box_observations",
        *specs("statistics.episode"),
        "--rlconform-json",
        "v.json",
    )
    outcomes = result.parseoutcomes()
    assert "skipped" not in outcomes
    assert outcomes.get("passed", 0) + outcomes.get("failed", 0) == 1
    document = json.loads((downstream.path / "v.json").read_text())
    # a failure there is RecordEpisodeStatistics' own (FINDINGS G5): "inherited" in every report
    assert [status for _, _, status in statuses(document)] in (["pass"], ["fail"], ["inherited"])


def test_documented_violation_is_an_xfail(downstream: pytest.Pytester) -> None:
    pytest.importorskip("stable_baselines3")
    result = downstream.runpytest(
        "-rx", "--rlconform-systems", "reference.sb3.VecNormalize", *specs("terminal.final_obs")
    )
    result.assert_outcomes(xfailed=1)
    result.stdout.fnmatch_lines(
        ["XFAIL rlconform::reference.sb3.VecNormalize-terminal.final_obs - known violation: SB3 documents *"]
    )


NOT_INSTALLED_CONFTEST = """
from rlconform import catalog
from rlconform.core.catalog import Catalog, Library, use
from rlconform.core.system import System, SystemTable

#: read by the catalog below, as it reads a library package's modules
SYSTEMS = SystemTable()
SYSTEMS.add(
    System(
        id="downstream.NotInstalled",
        family="gymnasium.vector",
        title="a system whose library is not installed",
        build=lambda env_fns: None,
        source="downstream.NotInstalled(env_fns)",
        requires=("rlconform-test-no-such-distribution",),
    )
)
use(Catalog((*catalog.LIBRARIES, Library("downstream", "a system of this test", ("conftest",))), catalog.SPEC_MODULES))
"""


@pytest.mark.slow  # pytest in a subprocess
def test_library_not_installed_is_an_explicit_skip(downstream: pytest.Pytester) -> None:
    # a subprocess: the registration must not leak into this process's system registry
    downstream.makeconftest(NOT_INSTALLED_CONFTEST)
    result = downstream.runpytest_subprocess(
        "-rs", "--rlconform-systems", "downstream.*", *specs("transitions.exact", "flags.terminated")
    )
    result.assert_outcomes(skipped=2)
    result.stdout.fnmatch_lines(
        [
            "rlconform (ci profile): 2 skipped",
            "SKIPPED [1] rlconform::downstream.NotInstalled-transitions.exact: "
            "not installed: rlconform-test-no-such-distribution",
            "SKIPPED [1] rlconform::downstream.NotInstalled-flags.terminated: "
            "not installed: rlconform-test-no-such-distribution",
        ]
    )


@pytest.mark.slow  # pytest in a subprocess
def test_inert_without_options(downstream: pytest.Pytester) -> None:
    # a fresh process, so that what the plugin imports is not hidden by what this process imported
    downstream.makepyfile(
        test_plain=PLAIN_TEST
        + """

def test_plugin_loaded_but_nothing_heavy_imported(pytestconfig):
    import sys

    assert pytestconfig.pluginmanager.hasplugin("rlconform")
    # --rlconform-json alone only readies a passive session, for rlconform.testing's tests
    session = pytestconfig.pluginmanager.get_plugin("rlconform.session")
    assert session is not None and session.passive and session.systems == []
    heavy = ("gymnasium", "torch", "stable_baselines3", "rlconform.core.search", "rlconform.core.system")
    assert [name for name in heavy if name in sys.modules] == []
"""
    )
    result = downstream.runpytest_subprocess("-v", "--rlconform-json", "unused.json")
    result.assert_outcomes(passed=2)
    assert "rlconform::" not in result.stdout.str()
    assert "profile: ci" not in result.stdout.str()
    assert not (downstream.path / "unused.json").exists()


def test_profile_from_ini_option(downstream: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RLCONFORM_PROFILE")
    downstream.makeini("[pytest]\nrlconform_profile = fast\n")
    result = downstream.runpytest("--collect-only", *CHECK, "myvec:make", *specs("flags.terminated"))
    result.stdout.fnmatch_lines(["profile: fast (*RLCONFORM_SEED=*"])
    # the command line wins over the ini file
    result = downstream.runpytest(
        "--collect-only", *CHECK, "myvec:make", *specs("flags.terminated"), "--rlconform-profile", "thorough"
    )
    result.stdout.fnmatch_lines(["profile: thorough (*"])


def test_profile_fixture(downstream: pytest.Pytester) -> None:
    downstream.makepyfile(
        test_profile="""
def test_profile(rlconform_profile):
    assert rlconform_profile.name == "thorough"
"""
    )
    downstream.runpytest("--rlconform-profile", "thorough").assert_outcomes(passed=1)


@pytest.mark.slow  # pytest in a subprocess
def test_json_document_is_the_same_with_and_without_xdist(downstream: pytest.Pytester) -> None:
    pytest.importorskip("xdist")
    args = [
        *CHECK,
        "myvec:make",
        *CHECK,
        "myvec:broken",
        *("--rlconform-systems", "gymnasium.Env.raw"),
        *specs("terminal.final_obs", "flags.terminated", "seeding.seed_plus_i"),
    ]
    single = downstream.runpytest("-p", "no:xdist", *args, "--rlconform-json", "single.json")
    single.assert_outcomes(passed=7, failed=1)
    single.stdout.fnmatch_lines(["rlconform: results written to *single.json"])
    parallel = downstream.runpytest_subprocess("-n", "2", *args, "--rlconform-json", "parallel.json")
    parallel.assert_outcomes(passed=7, failed=1)
    parallel.stdout.fnmatch_lines(
        ["2 workers [8 items]", "rlconform (ci profile): 7 passed, 1 failed, 1 not applicable"]
    )

    first = json.loads((downstream.path / "single.json").read_text())
    second = json.loads((downstream.path / "parallel.json").read_text())
    # specs in catalog order (`rlconform list --specs`)
    expected = [
        ("user:myvec:make", "seeding.seed_plus_i", "pass"),
        ("user:myvec:make", "terminal.final_obs", "pass"),
        ("user:myvec:make", "flags.terminated", "pass"),
        ("user:myvec:broken", "seeding.seed_plus_i", "pass"),
        ("user:myvec:broken", "terminal.final_obs", "fail"),
        ("user:myvec:broken", "flags.terminated", "pass"),
        ("gymnasium.Env.raw", "seeding.seed_plus_i", "not_applicable"),
        ("gymnasium.Env.raw", "terminal.final_obs", "pass"),
        ("gymnasium.Env.raw", "flags.terminated", "pass"),
    ]
    assert statuses(first) == statuses(second) == expected
    for document in (first, second):
        assert document["schema"] == "rlconform/results"
        assert document["schema_version"] == 2
        assert document["profile"]["name"] == "ci"
        assert document["profile"]["seed"] is None
        assert [s["id"] for s in document["systems"]] == ["user:myvec:make", "user:myvec:broken", "gymnasium.Env.raw"]
        assert [s["id"] for s in document["specs"]] == ["seeding.seed_plus_i", "terminal.final_obs", "flags.terminated"]
        assert document["summary"] == {"pass": 7, "fail": 1, "not_applicable": 1}
        failure = document["results"][4]
        assert failure["violations"] and failure["message"]
        assert "replay(broken, case, 'terminal.final_obs'" in failure["reproducer"]
    # derandomized: the same search finds the same minimal case in any process
    assert first["results"][4]["case"] == second["results"][4]["case"]


@pytest.mark.slow  # pytest in a subprocess
def test_workers_search_with_the_controllers_seed(downstream: pytest.Pytester) -> None:
    pytest.importorskip("xdist")
    result = downstream.runpytest_subprocess(
        "-v",
        "-n",
        "2",
        "--rlconform-profile",
        "fast",
        *CHECK,
        "myvec:make",
        *("--rlconform-systems", "gymnasium.SyncVectorEnv.SameStep"),
        *specs("flags.*"),
        "--rlconform-json",
        "fast.json",
    )
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(["profile: fast (*RLCONFORM_SEED=*", "*[[]gw0[]]*PASSED*"])
    result.stdout.fnmatch_lines(["*[[]gw1[]]*PASSED*"])
    document = json.loads((downstream.path / "fast.json").read_text())
    seed = document["profile"]["seed"]
    assert isinstance(seed, int)
    assert f"RLCONFORM_SEED={seed}" in result.stdout.str()
    assert [r["seed"] for r in document["results"]] == [seed] * 4


def test_skipped_specs_are_deselected_and_named(downstream: pytest.Pytester) -> None:
    result = downstream.runpytest(
        "-v",
        *CHECK,
        "myvec:make",
        *specs("flags.*", "terminal.final_obs"),
        *("--rlconform-skip-spec", "flags.t*", "--rlconform-json", "out.json"),
    )
    result.assert_outcomes(passed=1, deselected=2)
    note = "specs skipped by the user (--rlconform-skip-spec), not run: flags.terminated, flags.truncated"
    result.stdout.fnmatch_lines(
        [
            "rlconform: 1 system(s) x 1 spec(s), 1 applicable",
            f"rlconform: {note} (their checks are deselected)",
            "*rlconform::user:myvec:make-terminal.final_obs PASSED*",
            f"rlconform: {note}",
        ]
    )
    document = json.loads((downstream.path / "out.json").read_text())
    assert statuses(document) == [("user:myvec:make", "terminal.final_obs", "pass")]
    assert note in document["notes"]


def test_stacks_option_reaches_env_author_mode(downstream: pytest.Pytester) -> None:
    result = downstream.runpytest(
        *("--rlconform-api", "gymnasium.Env", "--rlconform-check", "rlconform.libraries.envauthor.sample_envs:counter"),
        *specs("env.stack_equivalence"),
        *("--rlconform-stacks", "gymnasium.SyncVectorEnv.NextStep", "--rlconform-json", "out.json"),
    )
    result.assert_outcomes(passed=1)
    (verdict,) = json.loads((downstream.path / "out.json").read_text())["results"]
    assert "; the same transitions as the bare env through gymnasium.SyncVectorEnv.NextStep;" in verdict["message"]
    # the tally of episode ends names the chosen stack only (over the five examples the stacks drove)
    assert verdict["message"].endswith(
        "examples driven through the stacks: 5; episode ends crossed through gymnasium.SyncVectorEnv.NextStep: 48"
    ), verdict["message"]
    assert "not chosen (--stacks), not run: gymnasium.SyncVectorEnv.SameStep," in verdict["message"]
