"""The shared check pipeline (``rlconform.core.session``) on real systems: what the CLI, the pytest
plugin and ``rlconform.testing`` select, probe, plan and run goes through one object.

- the bundled systems are the library systems and reference models, never the planted bugs, and a
  glob selects among them as ``--system`` and ``--rlconform-systems`` do;
- a user's factory is built into a system of its family and probed once per session;
- the plan sorts systems into runnable, skipped (a library missing) and without specs;
- a run marks the project's expected failures as verdicts arrive, and says which entries matched
  nothing; a planted bug fails the spec its module says it must fail, its reference model passes;
- the pairs that never run get their verdicts (not applicable, skipped) with the reason;
- one CheckRequest goes through all of it (Session.check), telling the front end the selection
  before any search runs and giving back the verdicts with the notes the report carries.
"""

from __future__ import annotations

import io
import textwrap
from pathlib import Path

import pytest

from rlconform.core.catalog import current
from rlconform.core.expected import ExpectedFailures
from rlconform.core.profiles import Profile
from rlconform.core.progress import LineProgress
from rlconform.core.runner import RunCache
from rlconform.core.session import BUNDLED_KINDS, Checked, CheckRequest, Session
from rlconform.core.user import BadInput

pytest.importorskip("gymnasium")

#: a handful of examples, derandomized: enough for a planted bug's failure to show
TINY = Profile("tiny", 5, 2, True, "", 20, 5, 10.0)
PLANTED = "planted.shifted_reward"  # its module: MUST_FAIL includes transitions.exact
REFERENCE = "reference.gymnasium.vector.SameStep"


def test_the_bundled_systems_are_the_library_systems_and_reference_models_never_planted_bugs() -> None:
    session = Session()
    every = current().systems()
    bundled = session.bundled_systems()
    assert [s.id for s in bundled] == [s.id for s in every if s.kind in BUNDLED_KINDS]
    assert PLANTED not in {s.id for s in bundled} and REFERENCE in {s.id for s in bundled}
    assert {s.kind for s in session.bundled_systems(reference=False)} == {"library"}
    chosen = session.bundled_systems(["gymnasium.SyncVectorEnv.*", REFERENCE])
    assert chosen and all(s.id.startswith("gymnasium.SyncVectorEnv.") or s.id == REFERENCE for s in chosen)
    assert session.bundled_systems(["planted.*"]) == []  # a glob never reaches a planted bug
    assert session.bundled_systems(["no.such.system"]) == []


def test_specs_are_selected_by_glob_in_catalog_order_and_repeats_of_a_system_are_dropped() -> None:
    session = Session()
    ids = [s.id for s in current().specs()]
    assert [s.id for s in session.specs()] == ids
    chosen = [s.id for s in session.specs(["flags.*", "transitions.exact"])]
    assert chosen == [i for i in ids if i.startswith("flags.") or i == "transitions.exact"]
    reference, planted = current().system(REFERENCE), current().system(PLANTED)
    assert Session.unique([reference, planted, reference]) == [reference, planted]


def test_a_run_fails_the_planted_bug_marks_it_expected_and_names_the_entry_that_matched_nothing() -> None:
    session = Session()
    systems = [current().system(REFERENCE), current().system(PLANTED)]
    specs = session.specs(["transitions.exact"])
    expected = ExpectedFailures.parse(
        f"{PLANTED}-transitions.exact  planted on purpose\nno.such.system-*  a stale entry\n", "xf.txt"
    )
    out = io.StringIO()
    verdicts = session.run(systems, specs, TINY, progress=LineProgress(out), expected=expected)
    by_system = {v.system_id: v for v in verdicts}
    assert [v.system_id for v in verdicts] == [REFERENCE, PLANTED]
    assert by_system[REFERENCE].status == "pass", by_system[REFERENCE].message
    assert by_system[PLANTED].status == "fail"
    assert by_system[PLANTED].expected == "planted on purpose (xf.txt:1)"
    assert f"{PLANTED} :: transitions.exact: known" in out.getvalue()  # never shown as a failure
    warnings = session.apply_expected(expected, verdicts)
    assert warnings == [
        "expected-failure entry 'no.such.system-*' (xf.txt:2) matches no check: remove it or fix its key"
    ]


def test_a_check_in_process_gives_the_verdict_a_run_gives() -> None:
    session = Session()
    planted, spec = current().system(PLANTED), current().spec("transitions.exact")
    verdict = session.check_pair(planted, spec, TINY, RunCache())
    assert verdict.status == "fail" and verdict.violations


def test_the_plan_sorts_systems_into_runnable_skipped_and_without_specs() -> None:
    session = Session()
    gym = current().system("gymnasium.SyncVectorEnv.SameStep")
    missing = next((s for s in session.bundled_systems() if s.skip_reason()), None)
    if missing is None:
        pytest.skip("every optional library is installed: no bundled system is skipped here")
    collector = current().system("reference.torchrl.Collector")
    specs = session.specs(["transitions.exact"])
    plan = session.plan([gym, missing, collector], specs)
    assert plan.runnable == [gym]
    assert plan.skipped == ([missing] if missing.family in specs[0].families else [])
    assert collector.id in plan.without_specs and "no selected spec applies" in plan.without_specs[collector.id]
    skipped = session.skipped_verdicts([missing], specs, TINY.name, None)
    assert [(v.system_id, v.spec_id) for v in skipped] == [(missing.id, "transitions.exact")]
    assert skipped[0].status in ("skipped", "not_applicable") and skipped[0].message


def test_not_applicable_pairs_get_a_verdict_with_the_reason_and_the_specs_impact() -> None:
    gym = current().system("gymnasium.SyncVectorEnv.SameStep")
    collector_spec = current().spec("collector.frame_accounting")
    exact = current().spec("transitions.exact")
    found = Session.not_applicable_verdicts([gym], [exact, collector_spec], "ci", None)
    assert [(v.spec_id, v.status) for v, _ in found] == [("collector.frame_accounting", "not_applicable")]
    verdict, reason = found[0]
    assert reason == verdict.message and "not gymnasium.vector" in reason
    assert verdict.impact == collector_spec.impact


FACTORY = textwrap.dedent(
    """
    import gymnasium


    def make(env_fns, **kwargs):
        return gymnasium.vector.SyncVectorEnv(env_fns)
    """
)


def test_a_users_factory_becomes_a_system_of_its_family_probed_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "session_factory.py").write_text(FACTORY)
    monkeypatch.syspath_prepend(str(tmp_path))
    session = Session()
    system = session.user_system("session_factory:make", "gymnasium.vector")
    assert (system.kind, system.family, system.costly) == ("user", "gymnasium.vector", None)
    probed = session.probed(system)
    assert probed.costly is False  # built once: a SyncVectorEnv starts no worker process
    assert session.probed(system) is probed  # the second check of the system reuses the probe
    checked = session.checked_user_system("session_factory:make", "gymnasium.vector", intended="reward")
    assert checked.intended and checked.costly is False
    with pytest.raises(BadInput, match="unknown"):
        session.checked_user_system("session_factory:make", "gymnasium.vector", intended="colour")
    with pytest.raises(BadInput, match="unknown API family"):
        session.family_options("no.family", lambda name: None)
    bundled = current().system(REFERENCE)
    assert session.probed(bundled) is bundled  # bundled systems need no probe


def test_one_check_request_selects_plans_runs_and_marks_the_expected_failures() -> None:
    session = Session()
    expected = ExpectedFailures.parse("no.such.system-*  a stale entry\n", "xf.txt")
    told: list[Checked] = []
    request = CheckRequest(
        systems=[REFERENCE, "reference.torchrl.Collector"],
        specs=["transitions.exact", "flags.*"],
        skip_specs=["flags.*"],
        profile="fast",
        isolate=False,
        expected=expected,
        started=told.append,
    )
    checked = session.check(request)
    assert told == [checked]  # told before the searches, with the same selection
    assert {s.id for s in checked.systems} == {REFERENCE, "reference.torchrl.Collector"}  # in catalog order
    assert [s.id for s in checked.specs] == ["transitions.exact"]
    assert checked.skipped_specs and all(s.id.startswith("flags.") for s in checked.skipped_specs)
    assert [(v.system_id, v.spec_id, v.status) for v in checked.verdicts] == [(REFERENCE, "transitions.exact", "pass")]
    assert checked.warnings == [
        "expected-failure entry 'no.such.system-*' (xf.txt:1) matches no check: remove it or fix its key"
    ]
    assert checked.notes[0].startswith("specs skipped by the user (--skip-spec), not run: flags.")
    assert "no selected spec applies" in checked.notes[1]
    assert checked.notes[2:] == ["expected failures read from xf.txt", *checked.warnings]
    assert not checked.interrupted and {f.name for f in checked.families} == {s.family for s in checked.systems}
    with pytest.raises(BadInput, match=r"no system matches \['no.such.\*'\]"):
        session.prepare(CheckRequest(systems=["no.such.*"]))
