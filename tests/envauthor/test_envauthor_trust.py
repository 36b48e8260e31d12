"""Env-author mode never blames a correct env, and still fails a buggy one.

Three ways it used to blame correct code, each shown with a real env and the real libraries:
- a stack that cannot take the env at all (TorchRL's GymWrapper and a Tuple of Discretes,
  AsyncVectorEnv's shared memory and SB3 with a custom space) is named as not run, with the
  library's own error, never a failure, while a stack that raises *while stepping* an env it
  took still fails it; every stack's outcome is in the message;
- long episodes (MountainCar's 200 steps) reach their end, so ``env.step_after_end`` is checked;
  an env whose episodes never end is "not exercised", with the time budget named;
- a torch-native env (tensors in and out) is checked natively, through the stacks that take
  tensors, and a torch env with a real bug still fails.
Plus innocent variants (correct but unusual envs) and Gymnasium's own envs: no FAIL.
"""

from __future__ import annotations

import dataclasses
import functools

import pytest

pytest.importorskip("torchrl")
pytest.importorskip("stable_baselines3")

import gymnasium

from rlconform.core.profiles import Profile
from rlconform.core.runner import RunCache
from rlconform.core.search import Verdict, check_spec
from rlconform.core.spec import all_specs, get_spec
from rlconform.core.system import System
from rlconform.core.user import factory_system, user_system
from rlconform.libraries.envauthor import family as envcheck
from rlconform.libraries.envauthor import harness
from rlconform.libraries.envauthor import specs as envauthor_specs
from rlconform.libraries.envauthor import stacks as envstacks
from rlconform.libraries.envauthor.case import EnvCase
from rlconform.libraries.envauthor.harness import execute_user_env
from rlconform.specs.families import USER_ENV

#: a few derandomized examples: every stack_equivalence example runs the env through every stack
SMALL = Profile("envauthor-trust", 3, 2, True, "a few derandomized examples", 20, 5, 10.0)
#: the sweeps over many envs: two examples per spec, one through every stack
SWEEP = Profile("envauthor-sweep", 2, 1, True, "two derandomized examples, one through the stacks", 20, 5, 10.0)
ENV_SPECS = sorted(s.id for s in all_specs() if USER_ENV in s.families)
#: stacks that run the env in this process (cheap; enough to show one outcome of each kind)
IN_PROCESS = ("gymnasium.SyncVectorEnv.SameStep", "torchrl.GymWrapper", "sb3.DummyVecEnv")
TORCHRL_STACKS = ("torchrl.GymWrapper", "torchrl.SerialEnv.GymWrapper", "torchrl.ParallelEnv.GymWrapper")


def _fixture(name: str, module: str = "sample_envs") -> str:
    return f"rlconform.libraries.envauthor.{module}:{name}"


def _check(reference: str, spec_id: str) -> Verdict:
    return check_spec(user_system(reference, "gymnasium.Env"), get_spec(spec_id), SMALL, cache=RunCache())


def _check_all(system: System, profile: Profile = SWEEP) -> dict[str, Verdict]:
    """Every env-author spec's verdict (one run cache: the specs share their examples' runs)."""
    cache = RunCache()
    return {spec_id: check_spec(system, get_spec(spec_id), profile, cache=cache) for spec_id in ENV_SPECS}


def _gymnasium_env(env_id: str) -> System:
    # a partial of gymnasium.make pickles by reference, for the stacks' worker processes
    return factory_system(functools.partial(gymnasium.make, env_id), "gymnasium.Env", f"gymnasium.make:{env_id}")


def _not_passed(verdicts: dict[str, Verdict]) -> dict[str, str]:
    return {k: f"{v.status}: {v.message}" for k, v in verdicts.items() if v.status not in ("pass", "not_applicable")}


#: one case with two copies and 12 steps, enough for episode ends and for shared state to show
ONE_CASE = EnvCase(seed=1, action_seed=2, steps=12, num_envs=2)


def _stack_outcome(reference: str) -> str:
    """The one-message outcome of env.stack_equivalence on one case: its violation, else its notes."""
    outcome = envauthor_specs.env_stack_equivalence(execute_user_env(user_system(reference, "gymnasium.Env"), ONE_CASE))
    return "\n".join([v.render() for v in outcome.violations] or outcome.notes)


# ------------------------------------------------------------------- stacks that cannot take the env


def test_torchrl_cannot_wrap_a_tuple_of_discretes_and_the_other_stacks_still_compare(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(envstacks, "STACKS", IN_PROCESS)
    verdict = _check(_fixture("tuple_discrete"), "env.stack_equivalence")
    assert verdict.status == "pass", verdict.message
    assert "torchrl.GymWrapper not run: it cannot wrap this env (its first reset raised NotImplementedError" in (
        verdict.message
    )
    assert "the same transitions as the bare env through gymnasium.SyncVectorEnv.SameStep, sb3.DummyVecEnv" in (
        verdict.message
    )


def test_no_stack_able_to_take_a_custom_space_is_not_exercised_with_each_library_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    stacks = ("gymnasium.AsyncVectorEnv.SameStep", "torchrl.GymWrapper", "sb3.DummyVecEnv")
    monkeypatch.setattr(envstacks, "STACKS", stacks)
    verdict = _check(_fixture("word"), "env.stack_equivalence")
    assert verdict.status == "not_exercised", verdict.message
    message = verdict.message
    assert (
        "gymnasium.AsyncVectorEnv.SameStep not run: it cannot wrap this env (ValueError: Using `AsyncVector(..., shared_memory=True)` caused an error"
        in message
    )
    assert (
        'torchrl.GymWrapper not run: it cannot wrap this env (KeyError: "No conversion tool could be found' in message
    )
    assert "sb3.DummyVecEnv not run: it cannot wrap this env (TypeError" in message
    assert " at 0x" not in message  # no object address: the same message on every run


def test_a_stack_that_raises_while_stepping_an_env_it_took_fails_it_and_every_outcome_is_listed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the env returns observations of the wrong shape from its third step on: each stack
    # accepted it, then raised while stepping; that is the env's bug, reported with their errors
    monkeypatch.setattr(envstacks, "STACKS", IN_PROCESS)
    message = _stack_outcome(_fixture("shape_shift"))
    assert message.startswith("3 of 3 stacks that ran the env differ from the bare env"), message
    assert "gymnasium.SyncVectorEnv.SameStep: envs.step(" in message and "raised ValueError" in message
    assert "torchrl.GymWrapper: " in message and "RuntimeError: Shape mismatch" in message
    assert "sb3.DummyVecEnv: venv.step(" in message
    assert "(+" not in message


def test_a_transition_mismatch_names_the_stacks_that_agree_and_those_not_exercised(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # class state shared by the copies of one process: the in-process vectorizers see it, a
    # single-env GymWrapper does not; a Tuple-of-Discretes env is not needed for the listing
    monkeypatch.setattr(envstacks, "STACKS", (*IN_PROCESS, "torchrl.SerialEnv.GymWrapper"))
    real = envstacks.stack_skip_reason
    monkeypatch.setattr(
        envstacks,
        "stack_skip_reason",
        lambda stack_id: "not installed: torchrl" if stack_id == "torchrl.SerialEnv.GymWrapper" else real(stack_id),
    )
    message = _stack_outcome(_fixture("shared_state"))
    assert message.startswith("2 of 3 stacks that ran the env differ from the bare env"), message
    assert "gymnasium.SyncVectorEnv.SameStep: reward" in message and "sb3.DummyVecEnv: reward" in message
    assert "| agree: torchrl.GymWrapper" in message
    assert "| torchrl.SerialEnv.GymWrapper not run (not installed: torchrl)" in message


# ------------------------------------------------------------------------------ episodes that are long


@pytest.mark.parametrize("env_id", ["MountainCar-v0", "CartPole-v1"])
def test_long_episodes_reach_their_end_and_step_after_end_is_checked(env_id: str) -> None:
    # MountainCar's random-action episodes last its TimeLimit, 200 steps: the case's 1-40 steps
    # never reached an end and the spec was not exercised (exit 1 for a conforming env)
    verdict = check_spec(_gymnasium_env(env_id), get_spec("env.step_after_end"), SMALL, cache=RunCache())
    assert verdict.status == "pass", verdict.message
    # the drawn examples and the episode-end case every search tries first
    assert verdict.checked == verdict.examples == SMALL.max_examples + 1, verdict.message


def test_an_env_whose_episodes_never_end_is_not_exercised_naming_the_time_budget(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("RLCONFORM_EPISODE_SECONDS", "0.25")
    monkeypatch.setattr(harness, "_NO_END", {}, raising=False)  # budgets spent by earlier tests
    verdict = _check(_fixture("endless"), "env.step_after_end")
    assert verdict.status == "not_exercised", verdict.message
    assert "no episode ended within 0.25 s of random actions" in verdict.message


def test_leaky_env_still_fails_step_after_end() -> None:
    verdict = _check(_fixture("leaky"), "env.step_after_end")
    assert verdict.status == "fail", verdict.message


# --------------------------------------------------------------------------------- torch-native envs


def test_correct_torch_native_env_gets_only_pass_verdicts_through_the_tensor_stacks() -> None:
    verdicts = _check_all(user_system(_fixture("torch_counter", "sample_torch_envs"), "gymnasium.Env"), SMALL)
    assert not _not_passed(verdicts), _not_passed(verdicts)
    stacks = verdicts["env.stack_equivalence"].message
    assert f"the same transitions as the bare env through {', '.join(TORCHRL_STACKS)}" in stacks, stacks
    for stack_id in ("gymnasium.SyncVectorEnv.NextStep", "gymnasium.AsyncVectorEnv.Disabled", "sb3.DummyVecEnv"):
        assert f"{stack_id} not run: it needs NumPy (this env returns torch tensors on cpu)" in stacks


def test_torch_native_stacks_hand_the_env_tensor_actions() -> None:
    run = execute_user_env(
        user_system(_fixture("torch_counter", "sample_torch_envs"), "gymnasium.Env"), EnvCase(3, 4, 6, 2)
    )
    assert run.torch_device == "cpu"
    results = {r.stack: r for r in run.stacks() if r.stack.startswith("torchrl.")}
    # the env raises TypeError on a NumPy action: every TorchRL stack ran all its steps
    for stack_id in ("torchrl.GymWrapper", "torchrl.SerialEnv.GymWrapper"):
        result = results[stack_id]
        assert result.error is None and result.cannot_wrap is None, (stack_id, result.error, result.cannot_wrap)
        assert result.run is not None and "convert_actions_to_numpy=False" in result.run.system.id
        # the case's 6 steps, continued past each copy's first episode end (issue 25)
        assert run.horizon >= 6 and all(len(slots) == run.horizon for slots, _ in result.pairs)


@pytest.mark.parametrize(
    ("name", "spec_id", "words"),
    [
        ("torch_out_of_space", "env.observations_in_space", "(as NumPy) is array("),
        ("torch_leaky", "env.step_after_end", "after a step past the end"),
        ("torch_dtype_drift", "env.api_shape", "reward is torch.float64 on cpu; env.step("),
    ],
)
def test_torch_native_env_with_a_real_bug_still_fails(name: str, spec_id: str, words: str) -> None:
    verdict = _check(_fixture(name, "sample_torch_envs"), spec_id)
    assert verdict.status == "fail", verdict.message
    assert words in verdict.message, verdict.message


# ------------------------------------------------------------------------------ innocent variants


@pytest.mark.parametrize(
    "name",
    [
        "float64_declared",
        "dict_obs",
        "offset_discrete",
        "copying",
        "tuple_discrete",
        "word",
        "mission",
        # issue 25: long episodes, MultiDiscrete actions with a start, streams reseeded or without randomness
        "swing",
        "grid_moves",
        "stream_reseed",
        "clockwork",
    ],
)
def test_correct_unusual_env_gets_no_failure(name: str) -> None:
    verdicts = _check_all(user_system(_fixture(name), "gymnasium.Env"))
    assert not _not_passed(verdicts), _not_passed(verdicts)


def test_a_text_leaf_is_compared_through_the_gymnasium_vectorizers() -> None:
    """SyncVectorEnv batches a Text leaf as a tuple with one string per sub-env (MiniGrid's mission):
    it is read per sub-env, so the stack is compared, not "not run"."""
    message = _stack_outcome(_fixture("mission"))
    agreeing = next(line for line in message.splitlines() if line.startswith("the same transitions as the bare env"))
    for stack in ("gymnasium.SyncVectorEnv.SameStep", "torchrl.GymWrapper", "torchrl.SerialEnv.GymWrapper"):
        assert stack in agreeing, message
    assert "cannot split" not in message, message
    # Gymnasium's own defect (FINDINGS G9) is named, not blamed on the env
    assert (
        "gymnasium.AsyncVectorEnv.SameStep not run: Gymnasium's AsyncVectorEnv with shared memory returns a "
        "Text observation leaf as it read it at construction, never the env's (FINDINGS G9)"
    ) in message, message


def test_async_vector_env_returns_a_text_leaf_read_at_construction() -> None:
    """FINDINGS G9, on Gymnasium itself: the shared-memory AsyncVectorEnv's Text leaf never changes."""
    from rlconform.libraries.envauthor.sample_envs import mission

    env = gymnasium.vector.AsyncVectorEnv([mission, mission])
    try:
        obs, _ = env.reset(seed=0)
        assert obs["mission"] == ("0" * 32, "0" * 32)
        obs, *_ = env.step([1, 1])
        assert obs["mission"] == ("0" * 32, "0" * 32)
    finally:
        env.close()
    copied = gymnasium.vector.AsyncVectorEnv([mission, mission], shared_memory=False)
    try:
        obs, _ = copied.reset(seed=0)
        assert obs["mission"] == ("reach0", "reach0")
    finally:
        copied.close()


def test_torchrl_ignoring_a_discrete_start_is_named_not_a_failure() -> None:
    message = _stack_outcome(_fixture("offset_discrete"))
    assert (
        "torchrl.GymWrapper not run: TorchRL's GymWrapper ignores the start of the env's "
        "Discrete/MultiDiscrete action and observation space"
    ) in message, message


@pytest.mark.parametrize(
    "env_id", ["CartPole-v1", "MountainCar-v0", "Pendulum-v1", "FrozenLake-v1", "Taxi-v4", "Blackjack-v1"]
)
def test_gymnasium_own_envs_get_no_failure(env_id: str) -> None:
    if env_id not in gymnasium.registry:
        pytest.skip(f"{env_id} is not registered by gymnasium {gymnasium.__version__}")
    verdicts = _check_all(_gymnasium_env(env_id))
    assert not _not_passed(verdicts), _not_passed(verdicts)


# ------------------------------------------------------------------------------ reproducers


def _undefined_names(source: str) -> set[str]:
    """Names the module ``source`` reads that nothing in it defines (nor builtins)."""
    import ast
    import builtins

    tree = ast.parse(source)
    defined = set(dir(builtins)) | {"__name__"}
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            defined |= {(alias.asname or alias.name).split(".")[0] for alias in node.names}
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            defined.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            defined.add(node.id)
        elif isinstance(node, ast.arg):
            defined.add(node.arg)
    read = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)}
    return read - defined


@pytest.mark.parametrize("importable", [True, False], ids=["regression-test", "script"])
def test_env_reproducers_read_only_names_they_define(importable: bool) -> None:
    """Both forms of an env-author reproducer, each a pytest test: the factory imported by name,
    or named by its reference where no test file can import it (e.g. defined in a function), with
    the stacks chosen carried into the replay call."""
    reference = _fixture("counter")
    system = user_system(reference, "gymnasium.Env", stacks=("sb3.DummyVecEnv",))
    if not importable:
        system = dataclasses.replace(system, source="tests.somewhere:make.<locals>.env")
    source = envcheck.env_reproducer(system, get_spec("env.step_after_end"), ONE_CASE)
    assert _undefined_names(source) == set(), source
    assert "stacks=('sb3.DummyVecEnv',)" in source
    assert "def test_env_step_after_end() -> None:" in source
    assert ("from rlconform.libraries.envauthor.sample_envs import counter" in source) is importable
