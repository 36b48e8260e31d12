"""``rlconform.testing.parametrize_with_checks``: ids, selection and bad input, as a test file uses it."""

from __future__ import annotations

import pytest

pytest.importorskip("gymnasium")

BUNDLED = """
from rlconform.testing import parametrize_with_checks


@parametrize_with_checks(["reference.gymnasium.vector.NextStep"], specs=["transitions.exact", "terminal.*"])
def test_rl(rlconform_check):
    verdict = rlconform_check()
    assert verdict.status == "pass"
"""


@pytest.mark.slow  # pytest in a subprocess
def test_one_test_per_system_and_spec_with_selectable_ids(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_bundled=BUNDLED)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--collect-only", "-q")
    result.stdout.fnmatch_lines(
        [
            "test_bundled.py::test_rl[[]reference.gymnasium.vector.NextStep-transitions.exact[]]",
            "test_bundled.py::test_rl[[]reference.gymnasium.vector.NextStep-terminal.final_obs[]]",
        ]
    )
    ran = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-k", "transitions.exact", "-m", "rlconform")
    ran.assert_outcomes(passed=1, deselected=1)


@pytest.mark.parametrize(
    ("call", "reason"),
    [
        ('["reference.gymnasium.vector.NextStep"], specs=["no.such_spec"]', "no spec matches 'no.such_spec'"),
        ('["no.such.system"]', "no bundled system matches 'no.such.system'"),
        ("[lambda env_fns: None]", "needs api=FAMILY"),
        ('["os:getcwd"], api="gymnasium.vector"', "has signature (); family gymnasium.vector expects"),
        ('["nosuchmodule:make"], api="gymnasium.Env"', "module 'nosuchmodule' not found"),
        ('["os:getcwd"], api="no.family"', "unknown API family 'no.family'"),
    ],
)
@pytest.mark.slow  # pytest in a subprocess
def test_bad_input_is_a_collection_error_with_a_reason(pytester: pytest.Pytester, call: str, reason: str) -> None:
    pytester.makepyfile(
        test_bad=f"""
from rlconform.testing import parametrize_with_checks


@parametrize_with_checks({call})
def test_rl(rlconform_check):
    rlconform_check()
"""
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines([f"*BadInput*{reason}*"])
