"""scripts/matrix.py: one run per release, aggregated, gated against a baseline.

Run on one release and a narrow selection (the whole matrix is CI's job): the baseline it stores
is accepted on an unchanged rerun, and a planted regression (a verdict the baseline says passed
that now fails) fails the script and is named.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SELECTION = ["--env", "gymnasium-1.0.0", "--system", "gymnasium.SyncVectorEnv.NextStep", "--spec", "api.*"]
PAIR = ("gymnasium.SyncVectorEnv.NextStep", "api.failed_call_no_side_effect")


def _matrix(tmp_path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "scripts/matrix.py", *SELECTION, "--out", str(tmp_path / "out")]
    command += ["--baseline", str(tmp_path / "baseline"), *extra]
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=900)


@pytest.mark.slow
def test_baseline_then_gate_then_planted_regression(tmp_path):
    first = _matrix(tmp_path, "--update-baseline")
    assert first.returncode == 0, first.stdout + first.stderr
    baseline = tmp_path / "baseline" / "gymnasium-1.0.0.json.gz"
    document = json.loads(gzip.decompress(baseline.read_bytes()))
    assert document["environment"]["libraries"]["gymnasium"] == "1.0.0"
    statuses = {(r["system"], r["spec"]): r["status"] for r in document["results"]}
    # Gymnasium 1.0.0 steps sub-envs before it rejects a short batch (as 1.4.0 does, finding G2)
    assert statuses[PAIR] == "fail"
    assert (tmp_path / "out" / "matrix.md").is_file() and (tmp_path / "out" / "matrix.html").is_file()

    unchanged = _matrix(tmp_path)
    assert unchanged.returncode == 0, unchanged.stdout + unchanged.stderr
    assert "0 regressions" in unchanged.stdout or "Regressions" not in unchanged.stdout, unchanged.stdout

    for result in document["results"]:
        if (result["system"], result["spec"]) == PAIR:
            result.update(
                status="pass", outcome="pass", message="planted: passed in the baseline", violations=[], reproducer=None
            )
    baseline.write_bytes(gzip.compress(json.dumps(document).encode()))
    regressed = _matrix(tmp_path)
    assert regressed.returncode == 1, regressed.stdout + regressed.stderr
    assert "api.failed_call_no_side_effect" in regressed.stdout
    assert "regressions (or no baseline) in ['gymnasium-1.0.0']" in regressed.stderr


def test_unknown_environment_is_refused(tmp_path):
    result = subprocess.run(
        [sys.executable, "scripts/matrix.py", "--env", "gymnasium-9.9.9", "--out", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1
    assert "unknown environment(s) ['gymnasium-9.9.9']" in result.stderr


def test_committed_baseline_covers_every_release():
    releases = sorted(path.stem for path in (ROOT / "constraints").glob("gymnasium-*.txt"))
    baselines = sorted(path.name.removesuffix(".json.gz") for path in (ROOT / "matrix" / "baseline").glob("*.json.gz"))
    assert baselines == releases
    for name in baselines:
        document = json.loads(gzip.decompress((ROOT / "matrix" / "baseline" / f"{name}.json.gz").read_bytes()))
        assert document["environment"]["libraries"]["gymnasium"] == name.removeprefix("gymnasium-")
        assert document["profile"]["name"] == "matrix"


def test_docs_show_the_baseline_matrix(monkeypatch, matrix_script):
    from rlconform.reports.matrix import Matrix, load_directory, render_markdown

    monkeypatch.chdir(ROOT)  # the page names the baseline files relative to the repository
    rendered = render_markdown(Matrix.build(load_directory(Path("matrix/baseline"))), grouped=True)
    expected = matrix_script.docs_block(rendered)
    assert matrix_script.DOCS_PAGE == ROOT / "docs" / "matrix.md"
    page = matrix_script.DOCS_PAGE.read_text(encoding="utf-8")
    block = page.split("<!-- matrix:start -->", 1)[1].split("<!-- matrix:end -->", 1)[0].strip()
    assert block == expected, "docs/matrix.md's matrix is stale: run scripts/matrix.py --docs-only"


def test_update_docs_rewrites_only_the_marked_section(matrix_script, tmp_path):
    page = tmp_path / "matrix.md"
    page.write_text("# Matrix\n\nprose\n\n<!-- matrix:start -->\nold\n<!-- matrix:end -->\n\nmore prose\n")
    rendered = tmp_path / "rendered.md"
    rendered.write_text("# rlconform matrix\n\n| new | table |\n")
    matrix_script.update_docs(rendered, page)
    assert page.read_text() == (
        "# Matrix\n\nprose\n\n<!-- matrix:start -->\n| new | table |\n<!-- matrix:end -->\n\nmore prose\n"
    )


def test_the_ci_releases_are_matrix_releases_with_baselines_and_ci_gates_them() -> None:
    """``--ci`` gates a subset of the releases (CI's time budget); each is a matrix environment
    with a committed baseline, the oldest and the newest among them, and the README's test command
    (the one CI runs) uses it."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("matrix_script", ROOT / "scripts" / "matrix.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    known = list(module.environments())
    assert set(module.CI_ENVIRONMENTS) <= set(known)
    assert known[0] in module.CI_ENVIRONMENTS and known[-1] in module.CI_ENVIRONMENTS
    for env in module.CI_ENVIRONMENTS:
        assert (ROOT / "matrix" / "baseline" / f"{env}.json.gz").is_file(), env
    assert "scripts/matrix.py --ci" in (ROOT / "README.md").read_text(encoding="utf-8")
