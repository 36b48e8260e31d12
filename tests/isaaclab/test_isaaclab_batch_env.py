"""The vectorized Isaac Lab reference env (BatchStampEnv) and its exact model (BatchStampModel).

The env runs through the real DirectRLEnv step/reset at 1 to 1024 sub-envs; the model finds
nothing on the correct env and catches each planted variant under the expected spec. Runs only
where isaaclab is installed (its own venv: see README's Isaac Lab notes). No timed tests: the
"no Python loop over sub-envs" property is checked structurally on the source.
"""

from __future__ import annotations

import ast
import inspect
import textwrap

import pytest

pytest.importorskip("isaaclab", reason="isaaclab not installed: the isaaclab family's tests need isaaclab==3.0.0")

import torch
from isaaclab.envs import DirectRLEnv

from rlconform.libraries.isaaclab.batch_env import (
    VARIANTS,
    BatchStampEnv,
    BatchStampModel,
    make_batch_stamp_env,
    run_with_model,
)
from rlconform.libraries.isaaclab.findings import hits

EPISODE_STEPS = 8
STEPS = 3 * EPISODE_STEPS
SIZES = (1, 7, 1024)
EXPECTED_SPEC = {
    "early_time_out": "isaaclab.flags",
    "stale_final_obs": "isaaclab.final_obs",
    "rolled_actions": "isaaclab.transitions",
}


def _run(num_envs: int, *, variant: str = "reference", compute_final_obs: bool = True) -> list:
    env = make_batch_stamp_env(
        num_envs, "cpu", variant=variant, compute_final_obs=compute_final_obs, episode_steps=EPISODE_STEPS
    )
    try:
        return run_with_model(env, STEPS, seed=3, generator=torch.Generator().manual_seed(1234))
    finally:
        env.close()


@pytest.mark.parametrize("compute_final_obs", [True, False])
@pytest.mark.parametrize("num_envs", SIZES)
def test_correct_env_has_no_findings(num_envs: int, compute_final_obs: bool) -> None:
    findings = _run(num_envs, compute_final_obs=compute_final_obs)
    assert findings == [], [f.message for f in findings]


@pytest.mark.parametrize("num_envs", SIZES)
@pytest.mark.parametrize("variant", sorted(EXPECTED_SPEC))
def test_planted_variant_is_caught(variant: str, num_envs: int) -> None:
    if variant == "rolled_actions" and num_envs == 1:
        pytest.skip("rolling one sub-env's actions by one is the identity")
    findings = _run(num_envs, variant=variant)
    specs = {f.spec for f in findings}
    assert EXPECTED_SPEC[variant] in specs, specs
    for f in findings:
        assert f.bad.dtype == torch.bool and tuple(f.bad.shape) == (num_envs,) and bool(f.bad.any())


def test_variants_registry() -> None:
    # the other variants plant bugs of the contract monitor's specs (tests/isaaclab/test_isaaclab_torch.py)
    assert {"reference", *EXPECTED_SPEC} <= set(VARIANTS)
    assert all(issubclass(cls, BatchStampEnv) for cls in VARIANTS.values())


def test_real_direct_rl_env_code_path() -> None:
    env = make_batch_stamp_env(3, "cpu")
    try:
        assert isinstance(env, DirectRLEnv)
        for name in (
            "step",
            "reset",
            "_reset_envs_from_buffer",
            "_compute_observations",
            "_configure_gym_env_spaces",
            "close",
        ):
            assert getattr(type(env), name) is getattr(DirectRLEnv, name), name
        assert env.max_episode_length == EPISODE_STEPS
        env.reset(seed=3)
        out = env.step(torch.zeros(3, 2))
        # DirectRLEnv's persistent buffers come back
        assert out[0] is env.obs_buf and out[2] is env.reset_terminated and out[3] is env.reset_time_outs
        assert out[4] is env.extras
        assert "sim.step" in env.sim.calls and "scene.reset" in env.sim.calls
    finally:
        env.close()


def test_script_and_flags() -> None:
    """Rows, rewards, flags and final_obs on the boundary steps, against hand-written values."""
    env = make_batch_stamp_env(2, "cpu")
    try:
        obs, _ = env.reset(seed=3)
        # salt = 1 + (31*i + 17*episode + seed) % 1000
        assert obs["policy"].tolist() == [[0, 0, 0, 0, 4], [1, 0, 0, 0, 35]]
        action = torch.tensor([[0.5, 1.0], [-0.25, 2.0]])
        obs, reward, terminated, time_outs, extras = env.step(action)
        # env 0: term_len(0, 0) = 1 -> terminated at step 1, autoreset to episode 1
        assert terminated.tolist() == [True, False] and time_outs.tolist() == [False, False]
        assert reward.dtype == torch.float32 and reward.tolist() == [0.125, 1.125]
        assert extras["final_obs"]["policy"][0].tolist() == [0, 0, 1, 0.5, 4]
        assert obs["policy"].tolist() == [[0, 1, 0, 0, 21], [1, 0, 1, -0.25, 35]]
        # env 1: term_len(1, 0) = 8 == episode_steps -> terminated AND timed out at step 8
        for _ in range(EPISODE_STEPS - 1):
            obs, reward, terminated, time_outs, extras = env.step(action)
        assert bool(terminated[1]) and bool(time_outs[1])
        assert extras["final_obs"]["policy"][1].tolist() == [1, 0, 8, -0.25, 35]
        assert obs["policy"][1].tolist() == [1, 1, 0, 0, 52]
    finally:
        env.close()


def test_no_final_obs_without_compute_final_obs() -> None:
    env = make_batch_stamp_env(7, "cpu", compute_final_obs=False)
    try:
        env.reset(seed=3)
        for _ in range(STEPS):
            *_, extras = env.step(torch.zeros(7, 2))
            assert "final_obs" not in extras
    finally:
        env.close()


def test_action_log_only_when_enabled() -> None:
    env = make_batch_stamp_env(4, "cpu")
    try:
        env.reset()
        action = torch.ones(4, 2)
        env.step(action)
        assert len(env.action_log) == 1 and env.action_log[0].data_ptr == action.data_ptr()
        env.log_actions = False
        env.step(action)
        assert len(env.action_log) == 1
        assert env.action_log.maxlen is not None
    finally:
        env.close()


def _check(model: BatchStampModel, a: list[torch.Tensor], final: torch.Tensor | None) -> list:
    return hits(model.step_findings(a[0], a[1], a[2], a[3], a[4], a[5], final))


def test_model_catches_corrupted_outputs() -> None:
    """Each spec fires on the sub-env whose output is corrupted, and only there."""
    env = make_batch_stamp_env(7, "cpu")
    model = BatchStampModel.for_env(env)
    try:
        obs, _ = env.reset(seed=3)
        assert hits(model.reset_findings(obs["policy"].clone(), 3)) == []
        model.env = None  # a model that knows the seed only from reset's argument
        assert {f.spec for f in hits(model.reset_findings(obs["policy"].clone(), 4))} == {"isaaclab.reset"}
        model.seed = 3
        prev = obs["policy"].clone()
        action = torch.full((7, 2), 0.5)
        obs, reward, term, tout, extras = env.step(action)
        args = [prev, action, obs["policy"].clone(), reward.clone(), term.clone(), tout.clone()]
        final = extras["final_obs"]["policy"].clone()
        assert _check(model, args, final) == []
        done = (term | tout).nonzero()[0, 0].item()
        not_done = (~(term | tout)).nonzero()[0, 0].item()

        def fired(index: int, value: torch.Tensor, final_obs: torch.Tensor | None = final) -> dict:
            changed = list(args)
            changed[index] = value
            return {f.spec: f.bad.nonzero().flatten().tolist() for f in _check(model, changed, final_obs)}

        bad_obs = args[2].clone()
        bad_obs[done, 1] -= 1
        assert fired(2, bad_obs) == {"isaaclab.autoreset": [done]}
        bad_obs = args[2].clone()
        bad_obs[not_done, 3] += 1
        assert fired(2, bad_obs) == {"isaaclab.transitions": [not_done]}
        bad_reward = args[3].clone()
        bad_reward[not_done] += 1
        assert fired(3, bad_reward) == {"isaaclab.transitions": [not_done]}
        bad_term = args[4].clone()
        bad_term[not_done] = True
        assert "isaaclab.flags" in fired(4, bad_term)
        assert fired(2, args[2], None) == {"isaaclab.final_obs": (term | tout).nonzero().flatten().tolist()}
        no_final_model = BatchStampModel(7, compute_final_obs=False)
        no_final_model.seed = 3
        assert {f.spec for f in _check(no_final_model, args, final)} == {"isaaclab.final_obs"}
        assert _check(no_final_model, args, None) == []
    finally:
        env.close()


@pytest.mark.parametrize("cls", [BatchStampModel, *VARIANTS.values()], ids=lambda c: c.__name__)
def test_no_python_loop_over_sub_envs(cls: type) -> None:
    """Structural: the env's hooks and the model's checks contain no loop or comprehension."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    loops = [node for node in ast.walk(tree) if isinstance(node, (ast.For, ast.While, ast.comprehension))]
    calls = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, (ast.Name, ast.Attribute))
        and getattr(node.func, "id", getattr(node.func, "attr", None)) in {"range", "tolist", "item"}
    ]
    assert not loops and not calls, [ast.dump(n)[:80] for n in loops + calls]


def test_factory_signature() -> None:
    sig = inspect.signature(make_batch_stamp_env)
    assert list(sig.parameters)[:2] == ["num_envs", "device"]
