"""Every spec catches a planted bug of its kind, and passes on the correct systems.

The planted bugs are reference models with one deliberate defect each (each library's planted.py);
the correct systems are the reference models themselves. A spec that no planted bug
fails, or that passes nowhere, could not tell a correct system from a broken one.
"""

from __future__ import annotations

import io

import pytest

from rlconform.core.search import check_spec
from rlconform.core.spec import all_specs, get_spec
from rlconform.core.system import all_systems, get_system
from rlconform.core.user import user_system
from rlconform.replay import replay

PLANTED = [(s.id, spec_id) for s in all_systems() if s.kind == "planted" for spec_id in s.plants]
REFERENCES = [s.id for s in all_systems() if s.kind == "reference"]
#: correct envs of users, the control group of the env-author specs
CORRECT_USER_ENVS = [
    "rlconform.libraries.envauthor.sample_envs:counter",
    "rlconform.libraries.envauthor.sample_envs:cartpole",
]
#: real library systems that conform to a spec no reference model covers (their family has none)
LIBRARY_CONTROLS = {
    "torchrl.actions_reach_env_natively": "torchrl.GymWrapper.TorchNative.categorical",
    "aliasing.torchrl_returned_data": "torchrl.GymWrapper",
    "torchrl.device": "torchrl.GymWrapper",
    # registered only where isaaclab is installed (its own venv)
    "isaaclab.actions_on_device": "isaaclab.DirectRLEnv",
    "isaaclab.outputs_on_device": "isaaclab.DirectRLEnv",
}


def test_every_spec_has_a_planted_bug():
    planted_for = {spec_id for _, spec_id in PLANTED}
    missing = sorted({s.id for s in all_specs()} - planted_for)
    assert not missing, f"specs without a planted bug: {missing}"


@pytest.mark.parametrize(("system_id", "spec_id"), PLANTED, ids=[f"{a}-{b}" for a, b in PLANTED])
def test_spec_catches_its_planted_bug(system_id, spec_id):
    system, spec = get_system(system_id), get_spec(spec_id)
    verdict = check_spec(system, spec, "ci")
    assert verdict.status == "fail", f"{spec_id} missed {system_id}: {verdict.status} {verdict.message}"
    assert verdict.case is not None and verdict.reproducer
    # the shrunk case reproduces the violation without Hypothesis
    out = io.StringIO()
    assert replay(system_id, verdict.case, spec_id, out=out), out.getvalue()
    assert f"VIOLATION {spec_id}" in out.getvalue()


@pytest.mark.parametrize("system_id", REFERENCES)
def test_reference_model_passes_every_spec(system_id):
    system = get_system(system_id)
    problems = []
    for spec in all_specs():
        verdict = check_spec(system, spec, "ci")
        if system.known_violation(spec.id):
            # documented semantics that break a spec: it must really fail, and say why
            if verdict.status != "fail":
                problems.append(f"{spec.id}: listed as a known violation but {verdict.status}")
            continue
        if verdict.status not in ("pass", "not_applicable"):
            problems.append(f"{spec.id}: {verdict.status}: {verdict.message}")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("reference", CORRECT_USER_ENVS)
def test_correct_user_env_passes_every_env_spec(reference):
    system = user_system(reference, "gymnasium.Env")
    for spec in all_specs():
        if spec.not_applicable_reason(system) is not None:
            continue
        verdict = check_spec(system, spec, "ci")
        assert verdict.status == "pass", f"{spec.id}: {verdict.status}: {verdict.message}"


def test_every_spec_passes_on_some_correct_system():
    passed = set()
    systems = [get_system(system_id) for system_id in REFERENCES]
    systems += [user_system(reference, "gymnasium.Env") for reference in CORRECT_USER_ENVS]
    for system in systems:
        for spec in all_specs():
            if spec.id in passed or system.known_violation(spec.id):
                continue
            if check_spec(system, spec, "ci").status == "pass":
                passed.add(spec.id)
    registered = {s.id for s in all_specs()}
    for spec_id, system_id in LIBRARY_CONTROLS.items():
        if (
            spec_id in registered
            and spec_id not in passed
            and check_spec(get_system(system_id), get_spec(spec_id), "ci").status == "pass"
        ):
            passed.add(spec_id)
    never = sorted({s.id for s in all_specs()} - passed - {"model.outputs_match"})
    assert not never, f"specs that pass on no reference system or library control: {never}"


def test_model_spec_passes_on_a_correct_library_system():
    # the reference models are compared with nothing; the model spec is shown to pass on a real
    # system that follows its documented semantics exactly
    verdict = check_spec(get_system("sb3.DummyVecEnv"), get_spec("model.outputs_match"), "ci")
    assert verdict.status == "pass", verdict.message


def test_specs_have_statements_and_rationales():
    for spec in all_specs():
        assert spec.statement.endswith("."), spec.id
        assert len(spec.rationale) > 40, spec.id
        assert spec.families, spec.id
