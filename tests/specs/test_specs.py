"""Every spec catches a planted bug of its kind, and passes on the correct systems.

The planted bugs are reference models with one deliberate defect each (each library's planted.py);
the correct systems are the reference models themselves. A spec that no planted bug
fails, or that passes nowhere, could not tell a correct system from a broken one.
"""

from __future__ import annotations

import importlib.util
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
    # a ready-made vector env (family gymnasium.VectorEnv): the correct NumPy-batched walk, NEXT_STEP,
    # with the single env it must equal
    **dict.fromkeys(
        (
            "vector.api_shape",
            "vector.observations_in_space",
            "vector.autoreset_mode",
            "vector.reset_step_action_ignored",
            "vector.time_limit",
            "vector.determinism",
            "vector.subenv_independence",
            "vector.no_aliasing",
            "vector.single_env_match",
            "vector.seeding",
        ),
        "reference.native_vector.NextStep",
    ),
    # an SB3 algorithm's replay buffer (family sb3.Algorithm): DQN with SB3's own n-step buffer
    **dict.fromkeys(
        (
            "algorithm.buffer_transitions",
            "algorithm.buffer_next_obs",
            "algorithm.buffer_dones",
            "algorithm.nstep_returns",
            "algorithm.exact_targets",
        ),
        "sb3.DQN.n_steps",
    ),
    # an SB3 on-policy algorithm's rollout buffer (family sb3.Algorithm): PPO over DummyVecEnv
    **dict.fromkeys(
        (
            "algorithm.rollout_transitions",
            "algorithm.rollout_episode_starts",
            "algorithm.rollout_rewards",
            "algorithm.rollout_returns",
        ),
        "sb3.PPO.DummyVecEnv",
    ),
    # TorchRL's own replay buffers: rows drawn one by one, and MultiStepTransform's n-step windows
    "replay.rows_are_transitions": "torchrl.ReplayBuffer.LazyTensorStorage",
    "replay.multistep_returns": "torchrl.TensorDictReplayBuffer.MultiStepTransform.n3",
    "torchrl.actions_reach_env_natively": "torchrl.GymWrapper.TorchNative.categorical",
    "aliasing.torchrl_returned_data": "torchrl.GymWrapper",
    "torchrl.device": "torchrl.GymWrapper",
    "torchrl.transform_values": "torchrl.TransformedEnv.RewardSum.StepCounter.InitTracker.SerialEnv",
    # registered only where isaaclab is installed (its own venv)
    "isaaclab.actions_on_device": "isaaclab.DirectRLEnv",
    "isaaclab.outputs_on_device": "isaaclab.DirectRLEnv",
}


#: the Isaac Lab specs load wherever torch does (a user's torch-batched env is checked without Isaac
#: Lab), but their planted bugs and controls are DirectRLEnv subclasses: they are checked in the
#: Isaac Lab tier (`.venv-isaaclab`, tests/isaaclab), and left out here where Isaac Lab is missing
ISAACLAB_MISSING = importlib.util.find_spec("isaaclab") is None


def _checked_here(spec_ids: set[str]) -> set[str]:
    """The specs whose planted bugs and controls are loaded here: not the Isaac Lab specs without
    Isaac Lab, nor a spec of families none of whose systems are loaded (the learner specs, whose
    systems need RSL-RL or skrl: tests/isaaclab checks them in the Isaac Lab environment)."""
    loaded = {system.family for system in all_systems()}
    kept = {s for s in spec_ids if get_spec(s).families & loaded}
    if not ISAACLAB_MISSING:
        return kept
    return {s for s in kept if not s.startswith("isaaclab.")}


def test_every_spec_has_a_planted_bug():
    planted_for = {spec_id for _, spec_id in PLANTED}
    missing = sorted(_checked_here({s.id for s in all_specs()}) - planted_for)
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


#: for each spec, a correct system it must pass on (not merely be not applicable to): the
#: tests below that run every spec on that system require "pass" there, so the claim "every spec
#: passes somewhere" costs no search of its own (it used to rerun the specs in a loop of its own)
WITNESSES = {
    **dict.fromkeys(
        (
            "aliasing.caller_arguments",
            "aliasing.returned_objects",
            "api.failed_call_no_side_effect",
            "api.shape",
            "api.valid_calls_succeed",
            "api.wrong_size_batch_rejected",
            "continuity.fresh_first_obs",
            "continuity.no_discarded_episode",
            "counts.env_steps",
            "dtype.actions_received",
            "dtype.observations",
            "dtype.rewards_flags",
            "flags.terminated",
            "flags.truncated",
            "infos.aligned",
            "lifecycle.no_step_after_end",
            "lifecycle.responsive",
            "reset_step.neutral",
            "seeding.distinct_subenv_seeds",
            "seeding.reset_determinism",
            "seeding.seed_plus_i",
            "terminal.final_obs",
            "transitions.exact",
        ),
        "reference.gymnasium.vector.NextStep",
    ),
    "statistics.episode": "reference.gymnasium.vector.NextStep.RecordEpisodeStatistics",
    "statistics.normalizer": "reference.gymnasium.vector.NextStep.NormalizeReward",
    "collector.frame_accounting": "reference.torchrl.Collector",
    "collector.policy_updates": "reference.torchrl.Collector",
    "collector.transitions": "reference.torchrl.Collector",
    "replay.slices_within_episode": "reference.torchrl.SliceBuffer",
    "replay.rows_are_transitions": "reference.torchrl.ReplayBuffer.ListStorage",
    "replay.multistep_returns": "reference.torchrl.MultiStepBuffer",
    "replay.bootstrap_targets": "reference.torchrl.MultiStepBuffer",
    **dict.fromkeys(
        (
            "estimator.advantage",
            "estimator.value_target",
            "estimator.no_cross_episode",
            "estimator.no_cross_env",
            "estimator.exact_targets",
        ),
        "reference.torchrl.ValueEstimator",
    ),
    **dict.fromkeys(
        (
            "env.api_shape",
            "env.determinism",
            "env.edge_actions",
            "env.no_aliasing",
            "env.observations_in_space",
            "env.reset_reproducible",
            "env.seed_stream",
            "env.stack_equivalence",
            "env.step_after_end",
        ),
        "rlconform.libraries.envauthor.sample_envs:counter",
    ),
    # the bare counter has no layers: gymnasium.make's are compared with the env they wrap
    "env.wrapper_layers": "rlconform.libraries.envauthor.sample_envs:cartpole",
}
#: the env-author specs, each run on each correct user env as a test of its own (one spec costs
#: seconds on every installed stack; split, they spread over the workers)
ENV_SPECS = sorted(s.id for s in all_specs() if "gymnasium.Env" in s.families)


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
        wanted = ("pass",) if WITNESSES.get(spec.id) == system_id else ("pass", "not_applicable")
        if verdict.status not in wanted:
            problems.append(f"{spec.id}: {verdict.status}: {verdict.message}")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("spec_id", ENV_SPECS)
@pytest.mark.parametrize("reference", CORRECT_USER_ENVS)
def test_correct_user_env_passes_every_env_spec(reference, spec_id):
    system, spec = user_system(reference, "gymnasium.Env"), get_spec(spec_id)
    if spec.not_applicable_reason(system) is not None:
        assert WITNESSES.get(spec_id) != reference, f"{spec_id} does not apply to its witness {reference}"
        return
    verdict = check_spec(system, spec, "ci")
    # a spec may not apply to one correct env (env.wrapper_layers to an env without layers), but
    # it must pass on its witness
    wanted = ("pass",) if WITNESSES.get(spec_id) == reference else ("pass", "not_applicable")
    assert verdict.status in wanted, f"{spec.id}: {verdict.status}: {verdict.message}"


@pytest.mark.parametrize("spec_id", sorted(LIBRARY_CONTROLS))
def test_library_control_passes_its_spec(spec_id):
    if spec_id not in {s.id for s in all_specs()}:
        pytest.skip(f"{spec_id} is registered only where its library is installed")
    control = get_system(LIBRARY_CONTROLS[spec_id])
    if control.skip_reason():
        pytest.skip(f"{spec_id}'s control {control.id} cannot run here: {control.skip_reason()}")
    verdict = check_spec(control, get_spec(spec_id), "ci")
    assert verdict.status == "pass", f"{spec_id}: {verdict.status}: {verdict.message}"


def test_every_spec_passes_on_some_correct_system():
    # every spec has a correct system that must pass it; the tests above run each witness and
    # require "pass" (the model spec's control is test_model_spec_passes_on_a_correct_library_system)
    witnessed = set(WITNESSES) | set(LIBRARY_CONTROLS) | {"model.outputs_match"}
    never = sorted(_checked_here({s.id for s in all_specs()}) - witnessed)
    assert not never, f"specs with no correct system that must pass them (add one to WITNESSES): {never}"
    controls = set(REFERENCES) | set(CORRECT_USER_ENVS)
    assert set(WITNESSES.values()) <= controls, sorted(set(WITNESSES.values()) - controls)
    assert set(WITNESSES) <= {s.id for s in all_specs()}, sorted(set(WITNESSES) - {s.id for s in all_specs()})


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
