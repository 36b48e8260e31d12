"""What the libraries say while rlconform drives them is captured, counted and reported, never
printed (``rlconform.core.library_messages``), and only what a library says:

- a WARNING+ record of a family's logger (and its children) is counted, ANSI colours stripped,
  and kept off every handler; an INFO record and other loggers are left alone;
- a warning located in a library's package is counted; the user's own warnings go on as before;
- a TorchRL estimator checked in this process prints no ``[torchrl][WARNING]`` line, and its
  verdicts and results document carry the count, with one line saying how many there were;
- the results document's header lists the libraries of the families checked (``check``, the
  plugin), every library only for ``rlconform run``.
"""

from __future__ import annotations

import json
import logging
import warnings
from pathlib import Path

import pytest

from rlconform.core.library_messages import captured, clean, import_packages, summary_line


def test_a_library_loggers_warnings_are_counted_without_colour_and_kept_off_its_handlers(
    caplog: pytest.LogCaptureFixture,
) -> None:
    logger = logging.getLogger("rlconform_test_lib")
    seen: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append(record.getMessage())

    handler = Keep()
    logger.addHandler(handler)
    logger.propagate = False
    logger.setLevel(logging.INFO)
    try:
        with captured(("rlconform_test_lib",)) as counts:
            for _ in range(3):
                logger.warning("\033[92mGot a tensordict\033[0m without a time dimension")
            logging.getLogger("rlconform_test_lib.child").error("a child's error")
            logger.info("an info line")
            logging.getLogger("rlconform_test_other").warning("someone else's warning")
        logger.warning("after the check")
    finally:
        logger.removeHandler(handler)
    assert dict(counts) == {
        "rlconform_test_lib WARNING: Got a tensordict without a time dimension": 3,
        "rlconform_test_lib ERROR: a child's error": 1,
    }
    assert seen == ["an info line", "after the check"]  # nothing captured reached the handler
    # not a named logger: left alone (pytest's handler on the root logger still gets it)
    assert [r.getMessage() for r in caplog.records] == ["someone else's warning"]
    assert clean("\033[33mWARN: x\033[0m ") == "WARN: x"


def test_a_warning_located_in_a_library_is_counted_and_the_users_own_goes_on() -> None:
    gymnasium = pytest.importorskip("gymnasium")
    numpy = pytest.importorskip("numpy")
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("always")
        with captured((), ("gymnasium",)) as counts:
            gymnasium.spaces.Box(low=numpy.full(2, 0.1), high=numpy.ones(2), dtype=numpy.float16)
            warnings.warn("the user's own warning", UserWarning, stacklevel=1)
    assert [str(w.message) for w in shown] == ["the user's own warning"]
    assert any(key.startswith("gymnasium UserWarning: WARN: Box low's precision lowered") for key in counts), counts
    assert all("\033" not in key for key in counts)
    assert import_packages("stable-baselines3") == ("stable_baselines3",)


def test_the_summary_line_counts_every_message_and_the_distinct_ones_per_library() -> None:
    counts = {"torchrl WARNING: a": 17, "torchrl WARNING: b": 2, "gymnasium UserWarning: c": 1}
    assert summary_line(counts, "in the results JSON") == (
        "library messages: 20 (gymnasium: 1 distinct, torchrl: 2 distinct; in the results JSON)"
    )
    assert summary_line({}, "in the results JSON") is None


def test_a_torchrl_estimator_checked_in_process_prints_no_torchrl_warning_and_the_report_counts_them(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("torchrl")
    from rlconform.cli import main

    monkeypatch.setenv("RL_WARNINGS", "1")
    path = tmp_path / "results.json"
    code = main(
        [
            "run",
            "--system",
            "torchrl.GAE.shifted",
            "--spec",
            "estimator.no_cross_episode",
            "--in-process",
            "--profile",
            "fast",
            "--json",
            str(path),
        ]
    )
    out, err = capfd.readouterr()
    assert code == 0, out + err
    assert "[torchrl][WARNING]" not in out + err and "time-marked dimension" not in out + err
    document = json.loads(path.read_text())
    (result,) = [r for r in document["results"] if r["system"] == "torchrl.GAE.shifted"]
    said = result["library_messages"]
    assert said and all(key.startswith("torchrl WARNING: ") for key in said), said
    assert any("time-marked dimension" in key for key in said), said
    assert document["library_messages"] == said
    total = sum(said.values())
    assert f"library messages: {total} (torchrl: {len(said)} distinct; in the results JSON)" in out.splitlines()


def test_the_header_of_a_check_lists_only_the_libraries_of_the_families_checked() -> None:
    pytest.importorskip("gymnasium")
    from rlconform.core.catalog import current
    from rlconform.core.profiles import get_profile
    from rlconform.core.session import Checked
    from rlconform.reports.results import LIBRARIES, Results

    system = current().system("gymnasium.SyncVectorEnv.SameStep")
    checked = Checked(get_profile("fast"), None, [system], current().specs())
    libraries = Results.from_checked(checked).to_json()["environment"]["libraries"]
    assert list(libraries) == ["gymnasium", "numpy", "hypothesis", "pytest"]
    assert "isaaclab" not in libraries and "envpool" not in libraries and "torchrl" not in libraries
    every = Results.from_checked(checked, every_library=True).to_json()["environment"]["libraries"]
    assert list(every) == list(LIBRARIES)  # rlconform run: every library rlconform knows
