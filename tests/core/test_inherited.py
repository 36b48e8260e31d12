"""A user's failure that the library under the user's code shows on its own is named inherited.

Before, 7 of the first 10 failures a user saw belonged to Gymnasium's SyncVectorEnv or SB3's
DummyVecEnv/VecEnvWrapper under the user's factory (FINDINGS G1, G2, S1, S5), unlabelled and
listed before the user's own. Each failure of a user's system is now replayed, with its minimal
case, on the bundled library system under the user's code (rlconform.core.inherited): where the
library alone fails the same way, the verdict says so, has its own table status, is listed after
the user's own, and ``--fail-on own`` leaves it out.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("stable_baselines3")

import gymnasium
import numpy as np
from gymnasium.vector import VectorWrapper
from stable_baselines3.common.vec_env import DummyVecEnv, VecEnvWrapper

from rlconform.core.impact import check_fail_on, fail_on_class, fail_on_own
from rlconform.core.search import Verdict, check_spec
from rlconform.core.spec import get_spec
from rlconform.core.user import factory_system, probe
from rlconform.reports.results import failure_groups


def passthrough(env_fns: list[Any]) -> Any:
    """Correct: the user's vector wrapper passes everything through."""
    return VectorWrapper(gymnasium.vector.SyncVectorEnv(env_fns))


class ZeroesActions(VectorWrapper):
    """Bug of the user's own: writes into the caller's action array."""

    def step(self, actions: Any) -> Any:
        result = self.env.step(actions)
        if isinstance(actions, np.ndarray):
            actions[...] = 0
        return result


def zeroes_actions(env_fns: list[Any]) -> Any:
    return ZeroesActions(gymnasium.vector.SyncVectorEnv(env_fns))


class Passthrough(VecEnvWrapper):
    def reset(self) -> Any:
        return self.venv.reset()

    def step_wait(self) -> Any:
        return self.venv.step_wait()


def sb3_passthrough(env_fns: list[Any]) -> Any:
    """Correct: the user's VecEnvWrapper passes everything through."""
    return Passthrough(DummyVecEnv(env_fns))


def sb3_transpose_image(env_fns: list[Any]) -> Any:
    """Correct: SB3's own VecTransposeImage over DummyVecEnv (drawn with image observations only,
    which the bundled DummyVecEnv is not searched with)."""
    from stable_baselines3.common.vec_env import VecTransposeImage

    return VecTransposeImage(DummyVecEnv(env_fns))


def clipped_observations(env_fns: list[Any]) -> Any:
    """Correct, declared --intended observation: clips observations over SyncVectorEnv, so the
    observation in a violation's wording reads otherwise than the library's own."""
    from gymnasium.wrappers.vector import TransformObservation

    def clip(obs: Any) -> Any:
        return np.clip(obs, None, 100) if isinstance(obs, np.ndarray) else obs

    return TransformObservation(gymnasium.vector.SyncVectorEnv(env_fns), clip)


def _verdict(factory: Any, api: str, spec_id: str, *intended: str) -> Verdict:
    system = probe(factory_system(factory, api))
    if intended:
        system = dataclasses.replace(system, intended=frozenset(intended))
    return check_spec(system, get_spec(spec_id), "ci")


@pytest.mark.parametrize(
    ("factory", "api", "spec_id", "intended", "library", "row"),
    [
        (sb3_transpose_image, "sb3.VecEnv", "api.failed_call_no_side_effect", (), "sb3.DummyVecEnv", "S1"),
        (
            clipped_observations,
            "gymnasium.vector",
            "api.failed_call_no_side_effect",
            ("observation",),
            "gymnasium.SyncVectorEnv.NextStep",
            "G2",
        ),
    ],
)
def test_a_library_defect_worded_otherwise_under_the_users_layer_is_still_inherited(
    factory: Any, api: str, spec_id: str, intended: tuple[str, ...], library: str, row: str
) -> None:
    """Issue 35, the lost labels: the library's replay of the minimal case was refused (the
    bundled system is searched without image observations) or failed at the same call with a
    violation worded otherwise (the observation read through the user's transform); both were
    the user's FAIL before, and --fail-on own could not reach 0."""
    verdict = _verdict(factory, api, spec_id, *intended)
    assert verdict.status == "fail", verdict.message
    assert verdict.inherited == f"{library} fails it the same way on its own (FINDINGS {row})"


@pytest.mark.parametrize(
    ("factory", "api", "spec_id", "library", "row"),
    [
        (passthrough, "gymnasium.vector", "aliasing.caller_arguments", "gymnasium.SyncVectorEnv.NextStep", "G1"),
        (passthrough, "gymnasium.vector", "api.failed_call_no_side_effect", "gymnasium.SyncVectorEnv.NextStep", "G2"),
        (sb3_passthrough, "sb3.VecEnv", "api.wrong_size_batch_rejected", "sb3.DummyVecEnv", "S1"),
        (sb3_passthrough, "sb3.VecEnv", "infos.aligned", "sb3.VecMonitor.DummyVecEnv", "S5"),
    ],
)
def test_a_library_defect_under_the_users_code_is_inherited(
    factory: Any, api: str, spec_id: str, library: str, row: str
) -> None:
    verdict = _verdict(factory, api, spec_id)
    assert verdict.status == "fail", verdict.message
    assert verdict.inherited == f"{library} fails it the same way on its own (FINDINGS {row})"


def test_a_failure_the_library_does_not_show_the_same_way_stays_the_users() -> None:
    # SyncVectorEnv fails aliasing.caller_arguments too (G1, the reset options), but not by
    # writing into the actions: the user's own defect is not excused by the library's
    verdict = _verdict(zeroes_actions, "gymnasium.vector", "aliasing.caller_arguments")
    assert verdict.status == "fail"
    assert verdict.inherited is None, verdict.inherited


def test_inherited_failures_are_listed_after_the_users_own() -> None:
    own = Verdict("user:x", "terminal.final_obs", "fail", "lost", case="a", impact="training-data")
    inherited = Verdict(
        "user:x", "aliasing.caller_arguments", "fail", "popped", case="b", impact="training-data", inherited="G1"
    )
    groups = failure_groups([inherited, own])
    assert [g[0].spec_id for g in groups] == ["terminal.final_obs", "aliasing.caller_arguments"]


def test_fail_on_own_parses_alone_and_with_a_class() -> None:
    assert check_fail_on("own") == "own"
    assert check_fail_on("training-data,own") == "own,training-data"
    assert fail_on_class("own,training-data") == "training-data" and fail_on_own("own,training-data")
    assert fail_on_class("robustness") == "robustness" and not fail_on_own("robustness")
    with pytest.raises(ValueError, match="expected an impact class"):
        check_fail_on("own,robustness,training-data")


#: a user's vector wrapper that passes everything through: what fails is Gymnasium's (FINDINGS G1)
MYSTACK = (
    "import gymnasium\nfrom gymnasium.vector import VectorWrapper\n\n"
    "def make(env_fns):\n    return VectorWrapper(gymnasium.vector.SyncVectorEnv(env_fns))\n"
)


@pytest.mark.slow
def test_the_cli_reports_inherited_failures_and_fail_on_own_leaves_them_out(
    tmp_path: Path, user_module: Callable[[str, str], Path], rlconform_cli: Callable[..., Any]
) -> None:
    user_module("mystack", MYSTACK)

    def check(*extra: str) -> Any:
        return rlconform_cli("check", "mystack:make", "--api", "gymnasium.vector", *extra)

    plain = check("--json", "out.json")
    assert plain.returncode == 1, plain.stdout + plain.stderr
    assert "INHERITED [" in plain.stdout and "(FINDINGS G1)" in plain.stdout
    document = json.loads((tmp_path / "out.json").read_text())
    assert document["summary"].get("inherited") == 2, document["summary"]
    assert {r["spec"] for r in document["results"] if r.get("inherited")} == {
        "aliasing.caller_arguments",
        "api.failed_call_no_side_effect",
    }
    # one status in every report (issue 34): the JSON's status and the per-spec list say inherited,
    # as the listing does; the outcome stays fail
    inherited = [r for r in document["results"] if r.get("inherited")]
    assert {(r["status"], r["outcome"]) for r in inherited} == {("inherited", "fail")}
    for spec in ("aliasing.caller_arguments", "api.failed_call_no_side_effect"):
        assert re.search(rf"^\s*INHERITED\s+{re.escape(spec)}: ", plain.stdout, re.MULTILINE), plain.stdout
        assert not re.search(rf"^\s*FAIL\s+{re.escape(spec)}: ", plain.stdout, re.MULTILINE), plain.stdout
    own = check("--fail-on", "own")
    assert own.returncode == 0, own.stdout + own.stderr


def test_the_plugin_reports_an_inherited_failure_as_xfail_under_fail_on_own(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RLCONFORM_PROFILE", "ci")
    pytester.makepyfile(mystack=MYSTACK)
    args = ["--rlconform-api", "gymnasium.vector", "--rlconform-check", "mystack:make"]
    args += ["--rlconform-specs", "aliasing.caller_arguments"]
    # in subprocesses: a second in-process run of the same failing search in one pytester session
    # hits an internal error in the replay of the first one's cases (noted in the closing note)
    pytester.runpytest_subprocess(*args, "--junitxml=junit.xml").assert_outcomes(failed=1)
    # the item's status property is the word every report uses
    assert '<property name="rlconform_status" value="inherited"' in (pytester.path / "junit.xml").read_text()
    own = pytester.runpytest_subprocess(*args, "--rlconform-fail-on", "own", "-rx")
    own.assert_outcomes(xfailed=1)
    own.stdout.fnmatch_lines(
        ["*inherited: gymnasium.SyncVectorEnv.NextStep fails it the same way on its own (FINDINGS G1)*"]
    )
