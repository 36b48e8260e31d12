"""The plugin reads an expected-failures entry pinned to a failure's signature (issue 25): the
pinned failure is XFAIL, the same spec failing with another signature fails the item, and the
failure says which signature the entry pins and which one the check has now."""

from __future__ import annotations

import pytest

pytest.importorskip("gymnasium")

pytestmark = pytest.mark.slow  # pytest runs in a subprocess

ARGS = (
    *("--rlconform-api", "gymnasium.vector", "--rlconform-check", "myvec:broken"),
    *("--rlconform-specs", "terminal.final_obs", "--rlconform-xfail", "expected.txt", "-p", "no:cacheprovider"),
)


def _signature(pytester: pytest.Pytester) -> str:
    result = pytester.runpytest_subprocess(*ARGS[:6], "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    line = next(text for text in result.outlines if "signature: terminal.final_obs#" in text)
    return line.split("signature: ", 1)[1].strip()


def test_a_pinned_entry_excuses_its_failure_and_only_it(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, vectorizer_source: str
) -> None:
    monkeypatch.setenv("RLCONFORM_PROFILE", "ci")
    monkeypatch.delenv("RLCONFORM_SEED", raising=False)
    pytester.makepyfile(myvec=vectorizer_source)  # broken: loses final_obs
    signature = _signature(pytester)
    pin = signature.rsplit("#", 1)[1]
    pytester.path.joinpath("expected.txt").write_text(f"user:myvec:broken-terminal.final_obs#{pin}  drops final_obs\n")
    pytester.runpytest_subprocess(*ARGS).assert_outcomes(xfailed=1)
    pytester.path.joinpath("expected.txt").write_text(
        "user:myvec:broken-terminal.final_obs#00000000  drops final_obs\n"
    )
    changed = pytester.runpytest_subprocess(*ARGS)
    changed.assert_outcomes(failed=1)
    changed.stdout.fnmatch_lines(
        [f"*pins signature #00000000, but user:myvec:broken-terminal.final_obs failed with signature {signature}*"]
    )
