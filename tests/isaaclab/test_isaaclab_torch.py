"""Family ``isaaclab`` (the torch tier, ``--api isaaclab``): the vectorized contract monitor, the wrapper comparisons, the user API.

Runs where isaaclab is installed (``scripts/install-isaaclab``; README). Pins what isaaclab 3.0.0
and its wrappers do, shows every spec catching its planted bug and passing on the reference env,
and shows that checking needs no Python work per sub-env.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

pytest.importorskip("isaaclab", reason="isaaclab not installed: the torch tier's tests need isaaclab==3.0.0")

import torch

from rlconform.core.search import check_spec
from rlconform.core.spec import all_specs, get_spec
from rlconform.core.system import all_systems, get_system
from rlconform.libraries.isaaclab import monitor as mon
from rlconform.libraries.isaaclab import wrappers as wr
from rlconform.libraries.isaaclab.batch_env import BatchStampModel, make_batch_stamp_env
from rlconform.libraries.isaaclab.monitor import ContractMonitor
from rlconform.libraries.isaaclab.torch_run import TorchCase, drive
from rlconform.libraries.isaaclab.torch_specs import MODEL_SPECS, NAME, TARGETS

SPECS = sorted(s.id for s in all_specs() if NAME in s.families)
CASE = TorchCase(seed=5, action_seed=7, steps=20, pattern="uniform")


def test_family_specs_are_the_monitor_wrapper_and_model_specs() -> None:
    assert set(SPECS) == {*mon.MONITOR_SPECS, *wr.WRAPPER_SPECS, *MODEL_SPECS}


def _systems(kind: str) -> list[str]:
    return sorted(s.id for s in all_systems() if s.family == NAME and s.kind == kind)


@pytest.mark.parametrize("system_id", _systems("planted"))
def test_planted_bug_is_caught_by_its_specs(system_id: str) -> None:
    system = get_system(system_id)
    assert system.plants
    for spec_id in system.plants:
        verdict = check_spec(system, get_spec(spec_id), "fast")
        assert verdict.status == "fail" and verdict.known is None, (spec_id, verdict.message)


@pytest.mark.parametrize("system_id", ["isaaclab.torch.DirectRLEnv", "isaaclab.torch.DirectRLEnv.no_final_obs"])
@pytest.mark.parametrize("spec_id", SPECS)
def test_reference_env_passes_every_spec_but_its_documented_ones(system_id: str, spec_id: str) -> None:
    system = get_system(system_id)
    verdict = check_spec(system, get_spec(spec_id), "fast")
    if system.known_violation(spec_id):
        assert verdict.status == "fail", verdict.message
    else:
        assert verdict.status in ("pass", "not_applicable"), verdict.message


#: what each real wrapper does with the reference env (compute_final_obs=True), spec -> status
WRAPPER_VERDICTS = {
    "sb3": {},
    "torchrl_isaaclab": {},
    # RslRlVecEnvWrapper: extras["time_outs"] = truncated also where the env terminated, so PPO
    # bootstraps a value past a termination (rsl_rl/vecenv_wrapper.py:162-166)
    "rsl_rl": {wr.FLAGS: "fail"},
    # skrl's IsaacLabWrapper returns the post-reset observation as the next state of an ending step
    "skrl": {wr.TERMINAL: "fail"},
    # TorchRL's IsaacLabWrapper fills the terminal observation with NaN, final_obs or not
    # (documented: a known violation)
    "torchrl_lib": {wr.TERMINAL: "fail"},
}


@pytest.mark.parametrize("name", sorted(WRAPPER_VERDICTS))
def test_each_wrapper_against_the_env(name: str) -> None:
    system = get_system(f"isaaclab.torch.{name}")
    for spec_id in (*wr.WRAPPER_SPECS, mon.API, mon.OUTPUTS, mon.ACTIONS, mon.FINAL_OBS):
        verdict = check_spec(system, get_spec(spec_id), "fast")
        assert verdict.status == WRAPPER_VERDICTS[name].get(spec_id, "pass"), (spec_id, verdict.message)


def test_wrapper_messages_name_the_stand_in() -> None:
    skrl = check_spec(get_system("isaaclab.torch.skrl"), get_spec(wr.TERMINAL), "fast")
    assert "next episode's first observation" in skrl.message
    lib = check_spec(get_system("isaaclab.torch.torchrl_lib"), get_spec(wr.TERMINAL), "fast")
    assert "NaN" in lib.message and lib.known
    sb3 = check_spec(get_system("isaaclab.torch.sb3.no_final_obs"), get_spec(wr.TERMINAL), "fast")
    assert sb3.status == "fail" and sb3.known and "next episode's first observation" in sb3.message


def test_cuda_systems_say_why_they_are_skipped() -> None:
    cuda = [s for s in all_systems() if s.family == NAME and s.id.endswith(".cuda")]
    assert cuda
    for system in cuda:
        verdict = check_spec(system, get_spec(mon.API), "fast")
        if torch.cuda.is_available():
            assert verdict.status in ("pass", "fail"), verdict.message
        else:
            assert verdict.status == "skipped" and "no CUDA device" in verdict.message


def test_a_wrapper_system_whose_library_is_missing_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each wrapper system requires its wrapper's library, so that without it the system is reported
    skipped with "not installed: ...", not built and failed."""
    import importlib.metadata

    for name, driver in wr.DRIVERS.items():
        requires = driver().requires
        assert requires and set(requires) <= set(get_system(f"isaaclab.torch.{name}").requires), name
    real = importlib.metadata.version

    def version(dist: str) -> str:
        if dist == "skrl":
            raise importlib.metadata.PackageNotFoundError(dist)
        return real(dist)

    monkeypatch.setattr(importlib.metadata, "version", version)
    verdict = check_spec(get_system("isaaclab.torch.skrl"), get_spec(wr.TERMINAL), "fast")
    assert verdict.status == "skipped" and verdict.message == "not installed: skrl", verdict.message
    assert get_system("isaaclab.torch.DirectRLEnv").skip_reason() is None


class PerSubEnvModel(BatchStampModel):
    """A model with a Python loop over sub-envs: what the call count must tell apart."""

    def step_findings(self, prev_obs, actions, obs, reward, terminated, time_outs, final_obs):  # type: ignore[no-untyped-def]
        [r.item() for r in reward]
        return super().step_findings(prev_obs, actions, obs, reward, terminated, time_outs, final_obs)


def _python_calls(num_envs: int, model: type[BatchStampModel] = BatchStampModel) -> int:
    """Python and C function calls made while the monitor (with an exact model) checks one step."""
    env = make_batch_stamp_env(num_envs, "cpu")
    env.log_actions = False
    monitor = ContractMonitor(env, model=model.for_env(env))
    env.reset(seed=1)
    action = torch.zeros(num_envs, 2)
    env.step(action)  # warm: lazy imports, first-call caches
    calls = 0

    def profile(frame: object, event: str, arg: object) -> None:
        nonlocal calls
        if event in ("call", "c_call"):
            calls += 1

    sys.setprofile(profile)
    try:
        env.step(action)
    finally:
        sys.setprofile(None)
    monitor.detach()
    env.close()
    return calls


def test_checks_do_no_python_work_per_sub_env() -> None:
    """The same Python calls for 64 and 4096 sub-envs: the checks are tensor operations."""
    assert _python_calls(64) == _python_calls(4096)
    # and the count does see a loop over sub-envs
    assert _python_calls(4096, PerSubEnvModel) > _python_calls(64, PerSubEnvModel) + 4000


#: the torch.Tensor methods that read a tensor's values on the host (a sync on CUDA)
HOST_READS = ("__bool__", "__int__", "__float__", "__index__", "item", "tolist", "nonzero", "numpy")


class SyncPerSpecModel(BatchStampModel):
    """A model that reads each finding's mask on the host itself: a sync per spec per step."""

    def step_findings(self, prev_obs, actions, obs, reward, terminated, time_outs, final_obs):  # type: ignore[no-untyped-def]
        found = super().step_findings(prev_obs, actions, obs, reward, terminated, time_outs, final_obs)
        return [f for f in found if f.bad is None or bool(f.bad.any())]


def _host_reads_per_step(
    monkeypatch: pytest.MonkeyPatch, model: type[BatchStampModel] | None, steps: int = 6
) -> list[int]:
    """Host reads of tensor values during each of ``steps`` steps of 64 sub-envs (on CPU, the calls
    that would synchronise with a GPU): raw stepping with ``model`` None, else under the monitor
    with that exact model."""
    env = make_batch_stamp_env(64, "cpu")
    env.log_actions = False
    monitor = ContractMonitor(env, model=model.for_env(env)) if model is not None else None
    env.reset(seed=1)
    reads = 0

    def counted(method):  # type: ignore[no-untyped-def]
        def read(self, *args, **kwargs):  # type: ignore[no-untyped-def]
            nonlocal reads
            reads += 1
            return method(self, *args, **kwargs)

        return read

    per_step = []
    for _ in range(steps):
        action = torch.zeros(64, 2)
        with monkeypatch.context() as patch:
            for name in HOST_READS:
                patch.setattr(torch.Tensor, name, counted(getattr(torch.Tensor, name)))
            before = reads
            env.step(action)
            per_step.append(reads - before)
    if monitor is not None:
        monitor.detach()
    env.close()
    return per_step


def test_monitor_and_model_read_the_device_once_per_step(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every mask of the monitor's and the exact model's checks is read in one host sync per step."""
    raw = _host_reads_per_step(monkeypatch, None)
    monitored = _host_reads_per_step(monkeypatch, BatchStampModel)
    assert [m - r for m, r in zip(monitored, raw, strict=True)] == [1] * len(raw)
    # and the count does see a model that syncs per spec
    planted = _host_reads_per_step(monkeypatch, SyncPerSpecModel)
    assert all(p - r > 3 for p, r in zip(planted, raw, strict=True)), (planted, raw)


def test_monitor_checks_a_thousand_sub_envs() -> None:
    target = TARGETS["isaaclab.torch.DirectRLEnv"]
    assert target.num_envs == 1024
    run = drive(target, CASE)
    assert run.usable and run.steps == CASE.steps and run.env_steps == 1024 * CASE.steps
    assert {v.spec for v in run.violations} == {mon.STABLE}  # DirectRLEnv's reused flag buffers


def test_returned_buffers_are_rewritten_by_directrlenv() -> None:
    env = make_batch_stamp_env(4, "cpu")
    env.reset(seed=0)
    first = env.step(torch.zeros(4, 2))
    second = env.step(torch.zeros(4, 2))
    assert first[2] is second[2] and first[3] is second[3]  # the same tensors, rewritten in place
    env.close()


# ------------------------------------------------------------------------------- the user API
FACTORY = "rlconform.libraries.isaaclab.batch_env:make_batch_stamp_env"


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rlconform.cli", *args], capture_output=True, text=True, timeout=600, check=False
    )


@pytest.mark.slow  # runs the CLI or pytest in a subprocess
def test_check_api_isaaclab_runs_the_users_env_and_the_reference_env() -> None:
    done = _cli("check", FACTORY, "--api", "isaaclab", "--num-envs", "32", "--device", "cpu", "--profile", "fast")
    out = done.stdout
    assert f"checking {FACTORY}(32, 'cpu')" in out
    assert "[isaaclab.torch.DirectRLEnv] isaaclab.transitions" in out  # the reference env's exact checks
    assert f"PASS            [user:{FACTORY}] isaaclab.final_obs" in out
    # a DirectRLEnv subclass inherits the reused flag buffers: the user's env fails, with a reproducer
    assert f"FAIL            [user:{FACTORY}] isaaclab.returned_data_stable" in out
    assert "replay(make_batch_stamp_env, case, " in out and "num_envs=32, device='cpu'" in out
    assert done.returncode == 1


@pytest.mark.slow  # runs the CLI or pytest in a subprocess
def test_check_api_isaaclab_rejects_a_factory_of_the_wrong_shape() -> None:
    done = _cli("check", "rlconform.libraries.isaaclab.batch_env:BatchStampModel.for_env", "--api", "isaaclab")
    assert done.returncode == 2
    assert "(num_envs: int, device: str)" in done.stderr


@pytest.mark.slow  # runs the CLI or pytest in a subprocess
def test_plugin_checks_an_isaaclab_factory(tmp_path: object) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-m",
            "rlconform",
            "--rlconform-check",
            FACTORY,
            "--rlconform-api",
            "isaaclab",
            "--rlconform-num-envs",
            "16",
            "--rlconform-device",
            "cpu",
            "--rlconform-profile",
            "fast",
            "-q",
        ],
        capture_output=True,
        text=True,
        cwd=str(tmp_path),
        timeout=600,
        check=False,
    )
    assert f"FAILED rlconform::user:{FACTORY}-isaaclab.returned_data_stable" in done.stdout
    assert "1 failed, 8 passed" in done.stdout, done.stdout[-2000:]
