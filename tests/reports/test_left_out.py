"""A factory that refuses some kinds says so in every report format (issue 24).

The probe draws cases only from the kinds a user's factory accepts. A user's image wrapper printed
"19 passed" having transposed nothing: what the probe left out was only in the results JSON. Here
real Gymnasium factories that refuse kinds (RescaleObservation takes Box observations only, a
user's stack raises on Dict observations, ClipAction takes Box actions only, NormalizeObservation
refuses partial resets) are probed for real, checked against one spec under the derandomized ci
profile, and every format is read for what they refused; a factory that accepts everything shows
no such line anywhere.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

gymnasium = pytest.importorskip("gymnasium")

from rlconform.core.profiles import get_profile  # noqa: E402
from rlconform.core.search import check_spec  # noqa: E402
from rlconform.core.spec import get_spec  # noqa: E402
from rlconform.core.system import System  # noqa: E402
from rlconform.core.user import factory_system, probe  # noqa: E402
from rlconform.reports import render_html, render_junit, render_markdown, validate  # noqa: E402
from rlconform.reports.left_out import left_out  # noqa: E402
from rlconform.reports.results import Results  # noqa: E402

SPEC = "flags.terminated"
RESCALE_LINE = (
    "Discrete, MultiDiscrete, MultiBinary, Dict and Tuple observations: TypeError: RescaleObservation "
    "requires a Box observation space, got <class '...'>"
)
RESCALE_CLAUSE = "checked with Box observations only: 5 observation kinds refused"

#: a user's module, for the CLI and the plugin (each runs where it is importable)
USER_MODULE = """
import gymnasium


def rescaled(env_fns):
    from gymnasium.wrappers.vector import RescaleObservation

    return RescaleObservation(gymnasium.vector.SyncVectorEnv(list(env_fns)), -1.0, 1.0)


def plain(env_fns):
    return gymnasium.vector.SyncVectorEnv(list(env_fns))
"""


def rescaled(env_fns: Sequence[Callable[[], Any]]) -> Any:
    from gymnasium.wrappers.vector import RescaleObservation

    return RescaleObservation(gymnasium.vector.SyncVectorEnv(list(env_fns)), -1.0, 1.0)


def no_dict(env_fns: Sequence[Callable[[], Any]]) -> Any:
    """A user's stack that documents it takes no Dict observations."""
    vec = gymnasium.vector.SyncVectorEnv(list(env_fns))
    if isinstance(vec.single_observation_space, gymnasium.spaces.Dict):
        vec.close()
        raise TypeError("this stack takes no Dict observations")
    return vec


def clipped(env_fns: Sequence[Callable[[], Any]]) -> Any:
    from gymnasium.wrappers.vector import ClipAction

    return ClipAction(gymnasium.vector.SyncVectorEnv(list(env_fns)))


def normalized(env_fns: Sequence[Callable[[], Any]]) -> Any:
    from gymnasium.wrappers.vector import NormalizeObservation

    return NormalizeObservation(gymnasium.vector.SyncVectorEnv(list(env_fns)))


def plain(env_fns: Sequence[Callable[[], Any]]) -> Any:
    return gymnasium.vector.SyncVectorEnv(list(env_fns))


_probed: dict[str, System] = {}


def probed(factory: Callable[..., Any]) -> System:
    if factory.__name__ not in _probed:
        _probed[factory.__name__] = probe(factory_system(factory, "gymnasium.vector"))
    return _probed[factory.__name__]


# -- what the probe's note is read as -----------------------------------------------------------


def test_kinds_refused_for_one_reason_share_a_line() -> None:
    gap = left_out(probed(rescaled).capabilities.notes)
    assert gap is not None
    assert gap.obs_kinds == ("box",)
    assert gap.lines() == [RESCALE_LINE]
    assert gap.clause() == f"{RESCALE_CLAUSE}, see above"


def test_one_refused_kind_is_named_with_its_own_reason() -> None:
    gap = left_out(probed(no_dict).capabilities.notes)
    assert gap is not None
    assert gap.lines() == ["Dict observations: TypeError: this stack takes no Dict observations"]
    assert gap.clause(see_above=False) == (
        "checked with Box, Discrete, MultiDiscrete, MultiBinary and Tuple observations only: 1 observation kind refused"
    )


def test_refused_action_kinds_and_partial_resets_are_named() -> None:
    actions = left_out(probed(clipped).capabilities.notes)
    assert actions is not None
    assert actions.lines() == [
        "Discrete and MultiDiscrete actions: TypeError: ClipAction requires a Box action space, got <class '...'>"
    ]
    assert actions.clause(see_above=False) == "checked with Box actions only: 2 action kinds refused"
    normal = left_out(probed(normalized).capabilities.notes)
    assert normal is not None
    assert [line.split(":")[0] for line in normal.lines()] == [
        "Dict observations",
        "Tuple observations",
        "partial resets",
    ]
    assert "NormalizeObservation does not support partial resets" in normal.lines()[-1]
    assert normal.clause(see_above=False).endswith("only: 2 observation kinds and partial resets refused")


def test_a_factory_that_accepts_everything_left_nothing_out() -> None:
    notes = probed(plain).capabilities.notes
    assert any(note.startswith("probed: exercised with") for note in notes)  # probed, not skipped
    assert left_out(notes) is None


# -- every report format ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def document() -> Any:
    """A results document of a refusing and an accepting factory, as ``rlconform report`` reads it."""
    profile = get_profile("ci")
    systems = [probed(rescaled), probed(plain)]
    verdicts = [check_spec(system, get_spec(SPEC), profile) for system in systems]
    assert [v.status for v in verdicts] == ["pass", "pass"], [v.message for v in verdicts]
    results = Results(profile=profile, seed=None, systems=systems, specs=[get_spec(SPEC)], verdicts=verdicts)
    return validate(json.loads(json.dumps(results.to_json(), default=str)))


def test_markdown_names_what_was_left_out(document: Any) -> None:
    text = render_markdown(document)
    section = text.split("## Left out by the factory probe", 1)[1].split("## Systems x specs", 1)[0]
    assert f"`{probed(rescaled).id}` was {RESCALE_CLAUSE}." in section
    assert f"- {RESCALE_LINE.replace('<', chr(92) + '<').replace('>', chr(92) + '>')}" in section
    assert probed(plain).id not in section


def test_junit_names_what_was_left_out_on_the_suite(document: Any) -> None:
    root = ET.fromstring(render_junit(document))
    suites = {suite.get("name"): suite for suite in root.iter("testsuite")}
    refusing, accepting = suites[probed(rescaled).id], suites[probed(plain).id]
    properties = {p.get("name"): p.get("value") for p in refusing.iter("property")}
    assert properties["rlconform.left_out"] == f"{RESCALE_CLAUSE}: {RESCALE_LINE}"
    out = refusing.find("system-out")
    assert out is not None and out.text is not None and RESCALE_LINE in out.text
    assert "rlconform.left_out" not in {p.get("name") for p in accepting.iter("property")}
    assert accepting.find("system-out") is None


def test_html_names_what_was_left_out(document: Any) -> None:
    text = render_html(document)
    assert '<section id="left-out">' in text
    section = text.split('<section id="left-out">', 1)[1].split("</section>", 1)[0]
    assert RESCALE_CLAUSE in section
    assert "RescaleObservation requires a Box observation space, got &lt;class &#x27;...&#x27;&gt;" in section
    assert probed(plain).id not in section


def test_no_format_has_such_lines_when_nothing_was_left_out() -> None:
    profile = get_profile("ci")
    system = probed(plain)
    verdicts = [check_spec(system, get_spec(SPEC), profile)]
    results = Results(profile=profile, seed=None, systems=[system], specs=[get_spec(SPEC)], verdicts=verdicts)
    document = validate(json.loads(json.dumps(results.to_json(), default=str)))
    assert "Left out" not in render_markdown(document)
    assert 'id="left-out"' not in render_html(document)
    junit = render_junit(document)
    assert "rlconform.left_out" not in junit and "system-out" not in junit


# -- the front ends ---------------------------------------------------------------------------


def test_plugin_terminal_summary_names_what_was_left_out(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(usermod=USER_MODULE)
    pytester.syspathinsert()
    result = pytester.runpytest(
        "-p",
        "no:xdist",
        *("--rlconform-check", "usermod:rescaled", "--rlconform-check", "usermod:plain"),
        *("--rlconform-api", "gymnasium.vector", "--rlconform-specs", SPEC, "--rlconform-profile", "ci"),
    )
    result.assert_outcomes(passed=2)
    text = result.stdout.str()
    summary = text.split("- rlconform -", 1)[1]
    assert f"rlconform: user:usermod:rescaled was {RESCALE_CLAUSE}; left out" in summary
    assert f"  {RESCALE_LINE}" in summary
    assert "user:usermod:plain was" not in text
    # also in the header, before the items run
    assert text.count(RESCALE_LINE) == 2 and text.index(RESCALE_LINE) < text.index("collected")


@pytest.mark.slow
def test_parametrize_with_checks_summary_names_what_was_left_out(pytester: pytest.Pytester) -> None:
    """rlconform.testing's tests print it in the same rlconform summary (before, they printed nothing)."""
    pytester.makepyfile(usermod=USER_MODULE)
    pytester.makepyfile(
        test_user=f"""
from rlconform.testing import parametrize_with_checks
import usermod

@parametrize_with_checks([usermod.rescaled, usermod.plain], api="gymnasium.vector", specs=["{SPEC}"])
def test_stack(rlconform_check):
    rlconform_check()
"""
    )
    pytester.syspathinsert()
    # in subprocesses: rlconform.testing keeps a session per process, which an in-process run
    # after another one would share with modules pytester re-imported
    result = pytester.runpytest_subprocess("-p", "no:xdist", "--rlconform-profile", "ci", "--junitxml", "out.xml")
    result.assert_outcomes(passed=2)
    text = result.stdout.str()
    # the plugin is inert here (no --rlconform-* option): pytest's warnings summary tells it, once
    warned = text.split("warnings summary", 1)[1]
    assert warned.count("RlconformLeftOutWarning: rlconform: user:usermod:rescaled was ") == 1, warned
    assert RESCALE_LINE in warned and "usermod:plain was" not in text
    junit = (pytester.path / "out.xml").read_text()
    assert 'name="rlconform_left_out"' in junit and "usermod:plain was" not in junit
    # with the plugin active (a results file asked for) its own summary tells it too
    active = pytester.runpytest_subprocess(
        "-p", "no:xdist", "--rlconform-profile", "ci", "--rlconform-json", "out.json"
    )
    active.assert_outcomes(passed=2)
    summary = active.stdout.str().split("- rlconform -", 1)[1]
    assert "rlconform: user:usermod:rescaled was " in summary and f"  {RESCALE_LINE}" in summary, summary
    assert "usermod:plain was" not in summary


def _check(cwd: Path, target: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "RLCONFORM_PROFILE": "ci"}
    env.pop("RLCONFORM_SEED", None)
    return subprocess.run(
        [sys.executable, "-m", "rlconform.cli", "check", target, "--api", "gymnasium.vector", "--spec", SPEC],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.slow
def test_check_prints_what_was_left_out_before_the_verdicts_and_in_the_summary(tmp_path: Path) -> None:
    (tmp_path / "usermod.py").write_text(USER_MODULE)
    result = _check(tmp_path, "usermod:rescaled")
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("checking "))
    assert lines[at + 1 : at + 3] == ["left out (refused by the factory, so no case used them):", f"  {RESCALE_LINE}"]
    verdict = next(i for i, line in enumerate(lines) if line.strip().startswith("PASS"))
    assert verdict > at + 2
    # the last lines: the summary, then what Gymnasium said meanwhile (RescaleObservation's Box
    # precision warnings), counted instead of printed (rlconform.core.library_messages)
    summary = next(i for i, line in enumerate(lines) if line.startswith("summary: "))
    assert lines[summary] == f"summary: 1 passed ({RESCALE_CLAUSE}, see above)"
    assert lines[summary + 1 :] in ([], [lines[-1]]) and lines[-1].startswith(("summary: ", "library messages: "))
    assert "precision lowered" not in result.stderr

    accepting = _check(tmp_path, "usermod:plain")
    assert accepting.returncode == 0, accepting.stdout + accepting.stderr
    assert "left out" not in accepting.stdout
    assert accepting.stdout.splitlines()[-1] == "summary: 1 passed"
