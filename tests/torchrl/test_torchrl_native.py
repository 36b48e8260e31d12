"""Torch-native envs through TorchRL's GymWrapper: which action object reaches the env.

Pins what torchrl 0.14.1 does (FINDINGS.md, "TorchRL 0.14.1 — torch-native envs") and shows that
``torchrl.actions_reach_env_natively`` catches its planted bug and passes its control.
"""

from __future__ import annotations

import pytest

pytest.importorskip("torchrl")

from rlconform.core.runner import execute
from rlconform.core.spec import get_spec
from rlconform.core.system import get_system
from rlconform.envs.driver import Run
from rlconform.envs.plan import Case, Reset, Step
from rlconform.envs.script import EnvScript, EpisodePlan
from rlconform.envs.spaces import ActionValue, ActSpec, BoxAction, DiscreteAction, MultiDiscreteAction
from rlconform.libraries.torchrl.native_specs import SPEC_ID

NUMPY_DEFAULT = "torchrl.GymWrapper.TorchNative"
TENSORS = "torchrl.GymWrapper.TorchNative.tensor_actions"
PLANTED = "planted.torchrl.TorchNative.NumpyRoundTrip"
CONTROL = "torchrl.GymWrapper.TorchNative.categorical"
#: action kind -> (action spec, the two actions a case steps with)
ACTIONS: dict[str, tuple[ActSpec, tuple[ActionValue, ActionValue]]] = {
    "box": (BoxAction(), ((0.5, -0.25), (-0.5, 0.75))),
    "discrete": (DiscreteAction(), (2, 1)),
    "multidiscrete": (MultiDiscreteAction(), ((2, 1), (0, 1))),
}


def _run(system_id: str, kind: str) -> Run:
    action, values = ACTIONS[kind]
    script = EnvScript(action=action, episodes=(EpisodePlan(2, "terminated"),))
    case = Case(script, 1, (Reset(seed=3), *(Step((v,)) for v in values)))
    run = execute(get_system(system_id), case, with_model=False)
    assert run.usable, run.build_error
    return run


def _received(run: Run) -> list[tuple[str, str | None, tuple[int, ...] | None, str | None]]:
    return [
        (r.action.type_name, r.action.dtype, r.action.shape, r.action.device)  # type: ignore[union-attr]
        for env in run.truth.envs  # type: ignore[union-attr]
        for r in env.records
        if type(r).__name__ == "StepRecord"
    ]


def _violations(run: Run) -> list[str]:
    outcome = get_spec(SPEC_ID).check(run)
    assert outcome.checked == 2 and outcome.not_applicable is None
    return [v.render() for v in outcome.violations]


@pytest.mark.parametrize("kind", sorted(ACTIONS))
def test_control_passes(kind: str) -> None:
    assert _violations(_run(CONTROL, kind)) == []


@pytest.mark.parametrize("kind", sorted(ACTIONS))
def test_planted_round_trip_is_caught(kind: str) -> None:
    violations = _violations(_run(PLANTED, kind))
    assert len(violations) == 2 and all("torch.float64" in v for v in violations), violations


def test_default_converts_to_numpy_a_documented_known_violation() -> None:
    """convert_actions_to_numpy=True (the default): NumPy on CPU (a Python int for Discrete)."""
    assert get_system(NUMPY_DEFAULT).known_violation(SPEC_ID)
    expected = {
        "box": ("numpy.ndarray", "float32", (2,), "cpu"),
        "discrete": ("int", None, None, None),
        "multidiscrete": ("numpy.ndarray", "int64", (2,), "cpu"),
    }
    for kind, received in expected.items():
        run = _run(NUMPY_DEFAULT, kind)
        assert _received(run) == [received] * 2
        assert all("expected a torch.Tensor on cpu" in v for v in _violations(run))


def test_tensor_actions_arrive_natively_except_one_hot_encodings() -> None:
    """convert_actions_to_numpy=False: td["action"] itself, a CPU tensor of the space's dtype; but
    Discrete/MultiDiscrete actions arrive in GymWrapper's default one-hot encoding (finding)."""
    assert not get_system(TENSORS).known_violation(SPEC_ID)
    box = _run(TENSORS, "box")
    assert _received(box) == [("torch.Tensor", "torch.float32", (2,), "cpu")] * 2
    assert _violations(box) == []
    discrete = _run(TENSORS, "discrete")
    assert _received(discrete) == [("torch.Tensor", "torch.int64", (3,), "cpu")] * 2
    assert all("declares shape ()" in v for v in _violations(discrete))
    multi = _run(TENSORS, "multidiscrete")
    assert _received(multi) == [("torch.Tensor", "torch.int64", (5,), "cpu")] * 2
    assert all("declares shape (2,)" in v for v in _violations(multi))


def test_spec_applies_only_to_declared_torch_native_systems() -> None:
    spec = get_spec(SPEC_ID)
    assert spec.not_applicable_reason(get_system("torchrl.GymWrapper"))
    assert spec.not_applicable_reason(get_system(TENSORS)) is None


def test_finding_n2_torch_reward_keeps_its_dtype_against_the_reward_spec() -> None:
    """N2: GymWrapper passes a torch env's float64 reward through; its reward_spec says float32."""
    from rlconform.core.search import check_spec

    for system_id in ("torchrl.GymWrapper.TorchNative", "torchrl.GymWrapper.TorchNative.categorical"):
        verdict = check_spec(get_system(system_id), get_spec("dtype.rewards_flags"), "fast")
        assert verdict.status == "fail", verdict.message
        assert "torch.float64" in verdict.message and "declares torch.float32" in verdict.message
