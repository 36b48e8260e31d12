"""A group's headline is its root cause (issue 24): a crash or a hang heads the failures it cascades into.

Failures of one system sharing a minimal case form one group (``rlconform.core.grouping``). A call
that raises ends the run, so the specs reading the transitions, the counts and the model's calls
fail on the same case; the report must tell the crash first, not under its consequences.
"""

from __future__ import annotations

import pytest

pytest.importorskip("gymnasium")

from rlconform.core.grouping import Failing, annotate, failing_from_json, groups, reports_crash
from rlconform.core.search import check_spec
from rlconform.core.spec import get_spec
from rlconform.core.system import get_system
from rlconform.reports.results import failure_groups, render_failures

CASE = "Case(two calls)"
RAISED = "agent step 1: envs.step(np.array([1])) raised TypeError: cannot convert action np.int64(1)"


def failing(spec: str, impact: str, violations: int, order: int, *, crash: bool = False, case: str = CASE) -> Failing:
    return Failing(
        system="user:vec:make",
        spec=spec,
        case=case,
        excused=False,
        impact=impact,
        violations=violations,
        spec_order=order,
        system_order=0,
        crash=crash,
    )


def test_a_crash_heads_the_transitions_it_cascades_into() -> None:
    members = [
        failing("transitions.exact", "training-data", 3, 0),
        failing("counts.env_steps", "training-data", 1, 1),
        failing("model.outputs_match", "api-contract", 1, 2),
        failing("api.valid_calls_succeed", "api-contract", 1, 3, crash=True),
    ]
    (group,) = groups(members)
    assert [m.spec for m in group] == [
        "api.valid_calls_succeed",
        "counts.env_steps",
        "transitions.exact",
        "model.outputs_match",
    ]


def test_a_group_headed_by_a_crash_is_still_listed_by_its_worst_member() -> None:
    """A robustness hang heading training-data consequences is listed before an api-contract group
    of another case: a group is ranked by the worst thing the defect does."""
    hang = [
        failing("lifecycle.responsive", "robustness", 1, 9, crash=True, case="A"),
        failing("transitions.exact", "training-data", 2, 0, case="A"),
    ]
    other = [failing("dtype.observations", "api-contract", 1, 4, case="B")]
    found = groups([*other, *hang])
    assert [[m.spec for m in g] for g in found] == [
        ["lifecycle.responsive", "transitions.exact"],
        ["dtype.observations"],
    ]


def test_which_failures_report_a_crash() -> None:
    assert reports_crash("api.valid_calls_succeed", [])
    assert reports_crash("lifecycle.responsive", [])  # a hang's verdict carries no violation kinds
    assert reports_crash("env.api_shape", [RAISED])
    assert reports_crash("some.spec", ["call #: building the system raised ValueError: no"])
    assert reports_crash("some.spec", ["envs.step(...) did not answer within # s; the run was stopped there"])
    # a correctly refused bad call is not a crash, and the model comparison reports a consequence
    assert not reports_crash("api.failed_call_no_side_effect", ["envs.step(...) raised ValueError but # env call(s)"])
    assert not reports_crash("model.outputs_match", [RAISED + "; the model returned normally"])
    assert not reports_crash("transitions.exact", ["env #, agent step #: transition # is missing"])


def test_a_saved_document_groups_by_the_same_rule() -> None:
    """The JSON document (and any document read back, whose rows may lack violation kinds) names
    the crash as the head of every member of its group."""
    results = [
        {"system": "s", "spec": "model.outputs_match", "status": "fail", "case": CASE, "impact": "api-contract",
         "violations": [RAISED + "; the model returned normally"]},
        {"system": "s", "spec": "transitions.exact", "status": "fail", "case": CASE, "impact": "training-data",
         "violations": ["a", "b"]},
        {"system": "s", "spec": "env.api_shape", "status": "fail", "case": CASE, "impact": "api-contract",
         "violations": [RAISED, "c"]},
    ]  # fmt: skip
    specs = ["transitions.exact", "model.outputs_match", "env.api_shape"]
    assert [f.crash for f in failing_from_json(results, specs)] == [False, False, True]
    annotate(results, specs)
    assert {r["spec"]: r["group"] for r in results} == dict.fromkeys(
        ("model.outputs_match", "transitions.exact", "env.api_shape"), "env.api_shape"
    )


def test_a_planted_crash_is_listed_under_the_spec_that_reports_it() -> None:
    """planted.raises_on_valid_action raises on a valid action: ``model.outputs_match`` and
    ``api.valid_calls_succeed`` fail on one two-call case, with one violation each and the same
    impact class; the crash heads, though the model's spec is listed first."""
    system = get_system("planted.raises_on_valid_action")
    specs = [get_spec(s) for s in ("model.outputs_match", "api.valid_calls_succeed")]
    verdicts = [check_spec(system, s, "fast") for s in specs]
    assert [v.status for v in verdicts] == ["fail", "fail"]
    (group,) = failure_groups(verdicts, specs)
    assert [v.spec_id for v in group] == ["api.valid_calls_succeed", "model.outputs_match"]
    listing = render_failures(verdicts, specs=specs)
    assert listing.splitlines()[0].endswith(":: api.valid_calls_succeed")
    assert "also fails on the same minimal case: model.outputs_match (api-contract)" in listing
