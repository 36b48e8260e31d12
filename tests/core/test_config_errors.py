"""Bad RLCONFORM_* values stop the CLI and the plugin with one line, before anything runs.

Before, ``RLCONFORM_PROFILE=quick`` was a traceback and ``RLCONFORM_CALL_TIMEOUT=abc`` an ERROR
verdict on the user's system: a value the user typed is their input, not their system's defect.
"""

from __future__ import annotations

import pytest

from rlconform.cli import EXIT_BAD_INPUT, main
from rlconform.core.config import ConfigError, validate

CHECK = [
    "check",
    "rlconform.libraries.envauthor.sample_envs:counter",
    "--api",
    "gymnasium.Env",
    "--spec",
    "env.api_shape",
]

BAD_VALUES = [
    ("RLCONFORM_CALL_TIMEOUT", "abc", "RLCONFORM_CALL_TIMEOUT='abc' is not a number of seconds"),
    ("RLCONFORM_CALL_TIMEOUT", "-1", "RLCONFORM_CALL_TIMEOUT='-1' is not a number of seconds"),
    ("RLCONFORM_SYSTEM_TIMEOUT", "nan", "RLCONFORM_SYSTEM_TIMEOUT='nan' is not a number of seconds"),
    ("RLCONFORM_SYSTEM_TIMEOUT", "30m", "RLCONFORM_SYSTEM_TIMEOUT='30m' is not a number of seconds"),
    ("RLCONFORM_PROFILE", "quick", "RLCONFORM_PROFILE='quick' is not a profile; known: ci, fast, matrix, thorough"),
    ("RLCONFORM_SEED", "0x1f", "RLCONFORM_SEED='0x1f' is not an integer seed"),
]


@pytest.mark.parametrize(("name", "value", "line"), BAD_VALUES)
def test_the_cli_exits_2_with_one_line(
    name: str, value: str, line: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(name, value)
    assert main(CHECK) == EXIT_BAD_INPUT
    out, err = capsys.readouterr()
    assert err.startswith(f"rlconform: error: {line}")
    assert err.count("\n") == 1, err
    assert out == ""  # nothing ran: no header, no verdict


def test_run_validates_too(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("RLCONFORM_CALL_TIMEOUT", "abc")
    assert main(["run", "--system", "gymnasium.SyncVectorEnv.NextStep", "--spec", "flags.*"]) == EXIT_BAD_INPUT
    assert capsys.readouterr().err == "rlconform: error: RLCONFORM_CALL_TIMEOUT='abc' is not a number of seconds\n"


@pytest.mark.parametrize("value", ["2", "0.5", "1e1"])
def test_good_numbers_are_accepted(value: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RLCONFORM_CALL_TIMEOUT", value)
    monkeypatch.setenv("RLCONFORM_SYSTEM_TIMEOUT", value)
    validate()
    from rlconform.core.suite import system_timeout
    from rlconform.core.watchdog import call_timeout

    assert call_timeout() == system_timeout() == float(value)


def test_empty_means_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    from rlconform.core.watchdog import REFERENCE_CALL_TIMEOUT, call_timeout

    monkeypatch.setenv("RLCONFORM_CALL_TIMEOUT", "")
    validate()
    assert call_timeout() == REFERENCE_CALL_TIMEOUT


def test_a_search_never_turns_a_bad_value_into_a_verdict(monkeypatch: pytest.MonkeyPatch) -> None:
    """rlconform.testing and other library callers reach check_spec without the CLI's check."""
    from rlconform.core.search import check_spec
    from rlconform.core.spec import get_spec
    from rlconform.core.system import get_system

    monkeypatch.setenv("RLCONFORM_CALL_TIMEOUT", "abc")
    with pytest.raises(ConfigError, match="RLCONFORM_CALL_TIMEOUT='abc' is not a number of seconds"):
        check_spec(get_system("gymnasium.SyncVectorEnv.NextStep"), get_spec("flags.terminated"), "fast")


def test_the_plugin_raises_a_usage_error(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RLCONFORM_PROFILE", "quick")
    result = pytester.runpytest("--rlconform-systems", "gymnasium.SyncVectorEnv.NextStep", "--co")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["ERROR: rlconform: error: RLCONFORM_PROFILE='quick' is not a profile; known: ci, fast, matrix, thorough"]
    )
    assert "Traceback" not in result.stderr.str()
