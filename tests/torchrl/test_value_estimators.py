"""Return estimators (family ``torchrl.ValueEstimator``): the reference computation, every planted
bug caught by exactly its specs, the correct and innocent estimators passing, TorchRL's own
estimators pinned (FINDINGS.md, "TorchRL 0.14.1 — value estimators": V1, V2 and the documented
approximations), and a user's factory checked through the CLI and ``parametrize_with_checks``.

The fast tests replay concrete cases (the family's edge cases, tried first by every search); the
searches themselves run in tests/specs/test_specificity.py and the slow tests here.
"""

from __future__ import annotations

import io
import subprocess
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

pytest.importorskip("torchrl")

from rlconform.core.profiles import Profile
from rlconform.core.runner import execute
from rlconform.core.search import check_spec
from rlconform.core.spec import Violation, all_specs, get_spec
from rlconform.core.system import get_system
from rlconform.core.user import user_system
from rlconform.envs.plan import Reset
from rlconform.envs.script import EnvScript, EpisodePlan
from rlconform.envs.stamp import Stamp
from rlconform.libraries.torchrl.value_case import EstimatorCase, estimator_edge_cases
from rlconform.libraries.torchrl.value_family import MUST_FAIL
from rlconform.libraries.torchrl.value_reference import RefStep, batch_moments, gae, retained, standardized
from rlconform.replay import replay

SPECS = sorted(s.id for s in all_specs() if "torchrl.ValueEstimator" in s.families)
SMALL = Profile("value-estimators", 6, 3, True, "a few derandomized examples", 20, 5, 20.0)
#: the edge cases every search tries first; the first three have two sub-envs
EDGES = estimator_edge_cases(get_system("reference.torchrl.ValueEstimator"))
#: a truncation, then a termination on the last sample shifted=True keeps (V1)
SHIFTED_CASE = EDGES[1]
#: a step both terminated and truncated (TimeLimit on the terminating step, V2)
BOTH_CASE = EDGES[2]


def violations(system_id: str, spec_id: str, case: EstimatorCase) -> list[Violation]:
    return replay(system_id, case, spec_id, out=io.StringIO())


def failing(system_id: str, cases: list[EstimatorCase]) -> dict[str, str]:
    """The specs with a violation on one of ``cases`` (each run once), and their first violation."""
    found: dict[str, str] = {}
    for case in cases:
        run = execute(get_system(system_id), case)
        assert run.build_error is None, run.build_error
        for spec_id in SPECS:
            hits = get_spec(spec_id).check(run).violations
            if hits and spec_id not in found:
                found[spec_id] = hits[0].render()
    return found


# ------------------------------------------------------------------------ the reference


def _step(
    step: int, reward: float, value: float, next_value: float, *, term: bool = False, trunc: bool = False
) -> RefStep:
    return RefStep(Stamp(0, 1, step, 0), Stamp(0, 1, step + 1, 0), reward, term, trunc, value, next_value)


def test_reference_returns_by_hand() -> None:
    # a terminated episode of 3 steps (lambda 1): the discounted sum, no bootstrap
    row = [_step(0, 1.0, 0.0, 0.0), _step(1, 2.0, 0.0, 0.0), _step(2, 4.0, 0.0, 9.0, term=True)]
    targets = [target for _, target in gae([row], 0.5, 1.0)[0]]
    assert targets == [1.0 + 0.5 * 2.0 + 0.25 * 4.0, 2.0 + 0.5 * 4.0, 4.0]
    # the same episode truncated: bootstrapped from V(final observation) = 9
    row[2] = _step(2, 4.0, 0.0, 9.0, trunc=True)
    assert gae([row], 0.5, 1.0)[0][2][1] == 4.0 + 0.5 * 9.0
    # TD(0) and the advantage: r + gamma V' - V
    row = [_step(0, 1.0, 3.0, 2.0), _step(1, 1.0, 2.0, 5.0)]
    assert gae([row], 0.5, 0.0)[0] == [(1.0 + 1.0 - 3.0, 2.0), (1.0 + 2.5 - 2.0, 3.5)]
    # an episode end inside the row cuts the trace; a termination and a time-out on the same step
    # is a termination
    row = [_step(0, 1.0, 0.0, 7.0, term=True, trunc=True), _step(0, 5.0, 0.0, 0.0)]
    assert gae([row], 0.5, 1.0)[0][0] == (1.0, 1.0)


def test_retained_follows_the_documented_shifted_rule() -> None:
    # T = 4, budget 1: a truncation at t=0 shifts the later samples one slot; t=3's next slot is 5
    row = [_step(0, 0, 0, 0, trunc=True), _step(1, 0, 0, 0), _step(2, 0, 0, 0, term=True), _step(3, 0, 0, 0)]
    assert retained([row], 1) == [[True, True, True, False]]
    assert retained([row], 2) == [[True, True, True, True]]


# --------------------------------------------------------------------- planted and correct


@pytest.mark.parametrize("system_id", sorted(MUST_FAIL))
def test_planted_bug_fails_exactly_its_specs(system_id: str) -> None:
    found = failing(system_id, EDGES)
    assert set(found) == set(MUST_FAIL[system_id]), found


@pytest.mark.parametrize(
    ("system_id", "cause"),
    [
        ("planted.torchrl.ValueEstimator.BootstrapsTerminations", "bootstrapped at a termination"),
        ("planted.torchrl.ValueEstimator.DoneAsTerminated", "did not bootstrap at a time-out"),
        ("planted.torchrl.ValueEstimator.IgnoresDone", "accumulated across an episode end"),
        ("planted.torchrl.ValueEstimator.MixesSubEnvs", "from one sub-env into the next"),
        ("planted.torchrl.ValueEstimator.LambdaWithoutGamma", "decayed by lambda where gamma*lambda was due"),
    ],
)
def test_a_failure_names_the_row_the_values_and_the_cause(system_id: str, cause: str) -> None:
    found = failing(system_id, EDGES)
    message = found["estimator.advantage"]
    assert "sub-env" in message and "step" in message and "expected" in message, message
    assert cause in message, message


def test_replay_prints_the_run_and_finds_the_violation() -> None:
    hits = violations("planted.torchrl.ValueEstimator.BootstrapsTerminations", "estimator.value_target", EDGES[0])
    assert hits and "bootstrapped at a termination" in hits[0].message


def test_cross_specs_name_the_episode_end_and_the_sub_envs() -> None:
    message = failing("planted.torchrl.ValueEstimator.IgnoresDone", EDGES)["estimator.no_cross_episode"]
    assert "after its episode end at step" in message, message
    message = failing("planted.torchrl.ValueEstimator.MixesSubEnvs", EDGES)["estimator.no_cross_env"]
    assert "from sub-env 1 into sub-env 0" in message, message


@pytest.mark.parametrize("system_id", ["reference.torchrl.ValueEstimator", "reference.torchrl.ValueEstimator.float64"])
def test_correct_and_innocent_estimators_pass(system_id: str) -> None:
    assert failing(system_id, EDGES) == {}


def test_the_cross_specs_are_exercised_on_the_edge_cases() -> None:
    # a spec that checks nothing cannot fail: each edge case with an episode end inside a row and
    # several sub-envs gives both perturbation specs facts to check
    system, case = get_system("reference.torchrl.ValueEstimator"), EDGES[0]
    run = execute(system, case)
    for spec_id in SPECS:
        outcome = get_spec(spec_id).check(run)
        assert outcome.not_applicable is None and outcome.checked > 0 and not outcome.violations, spec_id


# ------------------------------------------ standardized advantages (issue 35, cause 8)

#: TorchRL documents it: "average_gae (bool): if True, the resulting GAE values will be standardized"
AVERAGE_GAE = """
from torchrl.objectives.value import GAE


def make(value_network):
    return GAE(gamma=0.9, lmbda=0.8, value_network=value_network, average_gae=True)
"""


def test_standardizing_like_torch() -> None:
    import torch

    values = [[1.0, 4.0, 2.5], [0.5, -3.0, 7.0]]
    given = torch.tensor(values, dtype=torch.float64)
    expected = ((given - given.mean()) / given.std()).tolist()
    for row, expected_row in zip(standardized(values, 1), expected, strict=True):
        assert row == pytest.approx(expected_row)
    # the scale never falls under TorchRL's clamp_min(1e-4)
    assert batch_moments([[2.0, 2.0]], 1) == (2.0, 1e-4)


def test_standardized_advantages_pass_every_spec(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # innocent: every frame's advantage moves with the batch's mean and deviation, by design; before
    # issue 35 no_cross_episode and no_cross_env blamed it for that
    (tmp_path / "standardizing_estimators.py").write_text(AVERAGE_GAE)
    monkeypatch.syspath_prepend(str(tmp_path))
    system = user_system("standardizing_estimators:make", "torchrl.ValueEstimator")
    for case in EDGES:
        run = execute(system, case)
        for spec_id in SPECS:
            outcome = get_spec(spec_id).check(run)
            assert outcome.not_applicable is None and not outcome.violations, (spec_id, outcome)
    outcomes = {spec_id: get_spec(spec_id).check(execute(system, EDGES[0])) for spec_id in SPECS}
    assert all(outcome.checked > 0 for outcome in outcomes.values()), outcomes
    # the advantage is compared, standardized; the cross specs compare the value target and say so
    assert any("compared with the exact advantages standardized" in n for n in outcomes["estimator.advantage"].notes)
    for spec_id in ("estimator.no_cross_episode", "estimator.no_cross_env"):
        assert any("compared on the value target only" in n for n in outcomes[spec_id].notes), outcomes[spec_id]


def test_a_standardizing_estimator_that_crosses_episode_ends_still_fails() -> None:
    # planted: the trace runs on across episode ends, then the advantages are standardized
    found = failing("planted.torchrl.ValueEstimator.IgnoresDoneStandardized", EDGES)
    assert set(found) == {"estimator.advantage", "estimator.value_target", "estimator.no_cross_episode"}, found
    assert "its value_target moved" in found["estimator.no_cross_episode"]
    assert "compared on the value target only" in found["estimator.no_cross_episode"]
    assert "standardized advantage" in found["estimator.advantage"]
    assert "it accumulated across an episode end" in found["estimator.advantage"]


def test_standardized_rewards_are_not_compared(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # average_rewards=True standardizes the rewards before any target: every target depends on the
    # whole batch, so the cross specs have nothing to compare (never a FAIL)
    (tmp_path / "reward_standardizing.py").write_text(
        "from torchrl.objectives.value import TD0Estimator\n\n\n"
        "def make(value_network):\n"
        "    return TD0Estimator(gamma=0.9, value_network=value_network, average_rewards=True)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    run = execute(user_system("reward_standardizing:make", "torchrl.ValueEstimator"), EDGES[0])
    for spec_id in ("estimator.no_cross_episode", "estimator.no_cross_env"):
        outcome = get_spec(spec_id).check(run)
        assert outcome.not_applicable and "average_rewards=True" in outcome.not_applicable, outcome


# --------------------------------------------------------------------- TorchRL's own


EXACT = [
    "torchrl.GAE",
    "torchrl.GAE.not_vectorized",
    "torchrl.TD0Estimator",
    "torchrl.TD1Estimator",
    "torchrl.TDLambdaEstimator",
    "torchrl.TDLambdaEstimator.not_vectorized",
    "torchrl.VTrace",
    "torchrl.functional.generalized_advantage_estimate",
    "torchrl.functional.vec_generalized_advantage_estimate",
]
SHIFTED = [
    "torchrl.GAE.shifted",
    "torchrl.GAE.shifted.not_vectorized",
    "torchrl.TD0Estimator.shifted",
    "torchrl.TDLambdaEstimator.shifted",
]


@pytest.mark.parametrize("system_id", EXACT)
def test_torchrl_estimators_are_exact(system_id: str) -> None:
    assert failing(system_id, EDGES) == {}


@pytest.mark.parametrize("system_id", SHIFTED)
def test_shifted_bootstraps_a_termination_on_the_last_retained_sample(system_id: str) -> None:
    # FINDINGS V1; the dropped samples themselves are the documented approximation
    found = failing(system_id, [SHIFTED_CASE])
    assert set(found) == {"estimator.advantage", "estimator.value_target", "estimator.exact_targets"}, found
    assert "bootstrapped at a termination" in found["estimator.advantage"]
    assert "the last sample shifted=True retains" in found["estimator.advantage"]
    assert "samples dropped" in found["estimator.exact_targets"]


def test_auto_reset_env_bootstraps_a_step_both_terminated_and_truncated() -> None:
    # FINDINGS V2; its V(s_t) bootstrap at a time-out is the documented approximation, with its bias
    found = failing("torchrl.GAE.auto_reset_env", [BOTH_CASE])
    # every episode end here is a termination too: the approximation itself changes nothing
    assert set(found) == {"estimator.advantage", "estimator.value_target"}, found
    assert "(terminated and truncated)" in found["estimator.advantage"]
    assert "bootstrapped at a termination" in found["estimator.advantage"]
    truncated_only = EstimatorCase(EnvScript(episodes=(EpisodePlan(3, "truncated"),)), 2, (Reset(),), steps=5)
    found = failing("torchrl.GAE.auto_reset_env", [truncated_only])
    assert set(found) == {"estimator.exact_targets"}, found
    assert "biased at" in found["estimator.exact_targets"] and "by up to" in found["estimator.exact_targets"]


def test_the_functional_api_without_terminated_does_not_bootstrap_time_outs() -> None:
    # documented: terminated "Defaults to done if not provided"; passed, the same call is exact
    found = failing("torchrl.functional.vec_generalized_advantage_estimate.terminated_omitted", EDGES)
    assert set(found) == {"estimator.advantage", "estimator.value_target"}, found
    assert "it did not bootstrap at a time-out" in found["estimator.advantage"]
    verdict = check_spec(
        get_system("torchrl.functional.vec_generalized_advantage_estimate.terminated_omitted"),
        get_spec("estimator.advantage"),
        SMALL,
    )
    assert verdict.status == "fail" and verdict.known and "Defaults to done" in verdict.known, verdict.message


def test_documented_approximations_are_known_not_failures() -> None:
    for system_id in ("torchrl.GAE.auto_reset_env", "torchrl.GAE.shifted"):
        verdict = check_spec(get_system(system_id), get_spec("estimator.exact_targets"), SMALL)
        assert verdict.status == "fail" and verdict.known and verdict.ok, (system_id, verdict.message)
        assert "documented" in verdict.known


def test_a_users_declared_approximation_is_known_with_its_bias(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a user's own factory gets no known_violations: the spec itself cites TorchRL's documentation
    (tmp_path / "approximating_estimators.py").write_text(
        "from torchrl.objectives.value import GAE\n\n\n"
        "def make(value_network):\n"
        "    return GAE(gamma=0.9, lmbda=0.8, value_network=value_network, auto_reset_env=True)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    system = user_system("approximating_estimators:make", "torchrl.ValueEstimator")
    verdict = check_spec(system, get_spec("estimator.exact_targets"), SMALL)
    assert verdict.status == "fail" and verdict.ok, verdict.message
    assert verdict.known is not None and verdict.known.startswith("documented approximation: TorchRL's GAE docstring")
    assert "biased at" in verdict.message and "by up to" in verdict.message
    # its real defect (FINDINGS V2, a step both terminated and truncated) stays a failure, TorchRL's
    advantage = check_spec(system, get_spec("estimator.advantage"), SMALL)
    assert advantage.status == "fail" and advantage.known is None and not advantage.ok, advantage.message
    assert "bootstrapped at a termination" in advantage.message
    assert advantage.inherited and advantage.inherited.startswith("torchrl.GAE.auto_reset_env fails"), (
        advantage.inherited
    )
    assert "(FINDINGS V2)" in advantage.inherited


def test_an_actor_rlconform_cannot_sample_from_is_told_not_failed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # VTrace reads behaviour log-probabilities; an actor without get_dist cannot give them
    (tmp_path / "plain_actor_vtrace.py").write_text(
        "import torch\n"
        "from tensordict.nn import TensorDictModule\n"
        "from torchrl.objectives.value import VTrace\n\n\n"
        "def make(value_network):\n"
        "    actor = TensorDictModule(torch.nn.LazyLinear(3), in_keys=['observation'], out_keys=['logits'])\n"
        "    return VTrace(gamma=0.9, value_network=value_network, actor_network=actor)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    verdict = check_spec(
        user_system("plain_actor_vtrace:make", "torchrl.ValueEstimator"), get_spec("estimator.advantage"), SMALL
    )
    assert verdict.status == "not_applicable" and "has no get_dist" in verdict.message, verdict.message


# ------------------------------------------------------------------- a user's factory

GOOD = """
from torchrl.objectives.value import GAE


def make(value_network):
    return GAE(gamma=0.95, lmbda=0.9, value_network=value_network)
"""
BUGGY = """
from rlconform.libraries.torchrl.value_torch import PlainGAE


def make(value_network):
    return PlainGAE(gamma=0.9, lmbda=0.8, value_network=value_network, defect="bootstraps_terminations")
"""

#: the conftest's user_module and rlconform_cli/user_python fixtures
UserModule = Callable[[str, str], Path]
Process = Callable[..., subprocess.CompletedProcess[str]]


@pytest.mark.slow  # rlconform check in a subprocess
def test_user_factory_from_the_cli(
    tmp_path: Path, user_module: UserModule, rlconform_cli: Process, user_python: Process
) -> None:
    user_module("estimators", GOOD + BUGGY.replace("def make", "def make_buggy"))
    good = rlconform_cli("check", "estimators:make", "--api", "torchrl.ValueEstimator")
    assert good.returncode == 0, good.stdout + good.stderr
    assert "5 passed" in good.stdout
    buggy = rlconform_cli("check", "estimators:make_buggy", "--api", "torchrl.ValueEstimator", "--reproducers", "repro")
    assert buggy.returncode == 1, buggy.stdout + buggy.stderr
    assert "FAIL" in buggy.stdout and "bootstrapped at a termination" in buggy.stdout
    (script,) = (tmp_path / "repro").glob("*.py")
    again = user_python(str(script.relative_to(tmp_path)), timeout=300)
    assert again.returncode == 1, again.stdout + again.stderr
    assert "VIOLATION estimator." in again.stdout
    wrong = rlconform_cli("check", "estimators:make", "--api", "gymnasium.vector")
    assert wrong.returncode != 0


@pytest.mark.slow  # pytest in a subprocess
def test_user_factory_with_parametrize_with_checks(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(estimators=GOOD + BUGGY.replace("def make", "def make_buggy"))
    pytester.makepyfile(
        test_estimators=textwrap.dedent(
            """
            from rlconform.testing import parametrize_with_checks


            @parametrize_with_checks(["estimators:make", "estimators:make_buggy"], api="torchrl.ValueEstimator",
                                     specs=["estimator.advantage"])
            def test_estimator(rlconform_check):
                verdict = rlconform_check()
                assert verdict.status == "pass", verdict.message
            """
        )
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*bootstrapped at a termination*"])


@pytest.mark.slow  # pytest in a subprocess
def test_a_declared_approximation_is_an_xfail_with_its_bias_in_pytest(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        estimators="from torchrl.objectives.value import GAE\n\n\n"
        "def make(value_network):\n"
        "    return GAE(gamma=0.9, lmbda=0.8, value_network=value_network, auto_reset_env=True)\n"
    )
    pytester.makepyfile(
        test_estimators=textwrap.dedent(
            """
            from rlconform.testing import parametrize_with_checks


            @parametrize_with_checks(["estimators:make"], api="torchrl.ValueEstimator", specs=["estimator.exact_targets"])
            def test_estimator(rlconform_check):
                rlconform_check()
            """
        )
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-rx")
    result.assert_outcomes(xfailed=1)
    result.stdout.fnmatch_lines(["*known violation: documented approximation: TorchRL's GAE docstring*biased at*"])


@pytest.mark.slow  # a search per spec on every bundled estimator
@pytest.mark.parametrize("system_id", [*EXACT, "reference.torchrl.ValueEstimator"])
def test_searches_pass_on_correct_estimators(system_id: str) -> None:
    for spec_id in SPECS:
        verdict = check_spec(get_system(system_id), get_spec(spec_id), "ci")
        assert verdict.status == "pass", (spec_id, verdict.message)
