"""TorchRL transforms that rewrite the observation spec: ``dtype.observations`` reads the spec the
stack itself declares (``env.observation_spec``), not the wrapped Gymnasium env's space.

``CatFrames`` widens the observation, ``DoubleToFloat`` changes a Dict's leaves to float32, and a
``Compose`` of both does both: each declares what it returns, so each passes (they failed
before: "shape (15,), the space declares (5,)"). A transform whose data does not match what it
declares still fails, on the dtype and on the spec's bounds (``spec.is_in``).

Each test drives the stack on one fixed case and reads the spec directly: no Hypothesis search.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from rlconform.core.runner import execute
from rlconform.core.spec import Outcome, get_spec
from rlconform.core.user import factory_system, probe
from rlconform.envs.plan import Case, Reset, Step
from rlconform.envs.script import EnvScript, EpisodePlan
from rlconform.envs.spaces import BoxObs, DictObs, DiscreteAction, MultiDiscreteObs

pytest.importorskip("torchrl")

SCRIPT = EnvScript(
    obs=BoxObs(), action=DiscreteAction(n=2), episodes=(EpisodePlan(2, "terminated"), EpisodePlan(3, "truncated"))
)
FLOAT64_DICT = dataclasses.replace(
    SCRIPT, obs=DictObs((("pos", BoxObs(dtype="float64", shape=(2, 3))), ("state", BoxObs(dtype="float64"))))
)


def _observations(factory: Any, script: EnvScript, num_envs: int = 1) -> Outcome:
    case = Case(script, num_envs, (Reset(seed=3), *(Step((i % 2,) * num_envs) for i in range(6))))
    run = execute(factory_system(factory, "torchrl.EnvBase"), case, with_model=False)
    assert run.usable, run.build_error
    return get_spec("dtype.observations").check(run)


# --- stacks (module level: user factories are importable) ------------------------------------


def cat_frames(env_fn: Any) -> Any:
    from torchrl.envs import CatFrames, GymWrapper, TransformedEnv

    return TransformedEnv(GymWrapper(env_fn()), CatFrames(3, dim=-1, in_keys=["observation"]))


def double_to_float_dict(env_fn: Any) -> Any:
    from torchrl.envs import DoubleToFloat, GymWrapper, TransformedEnv

    return TransformedEnv(GymWrapper(env_fn()), DoubleToFloat())


def composed(env_fn: Any) -> Any:
    from torchrl.envs import CatFrames, Compose, DoubleToFloat, GymWrapper, SerialEnv, TransformedEnv

    env = SerialEnv(2, lambda: GymWrapper(env_fn()))
    return TransformedEnv(env, Compose(DoubleToFloat(), CatFrames(2, dim=-1, in_keys=["observation"])))


def _lying_transform(change: Any) -> Any:
    """A transform that changes the observation data but not its spec."""
    from torchrl.envs import Transform

    class Lying(Transform):  # type: ignore[misc]
        def _apply_transform(self, obs: Any) -> Any:
            return change(obs)

        def _reset(self, tensordict: Any, tensordict_reset: Any) -> Any:
            return self._call(tensordict_reset)

    return Lying(in_keys=["observation"], out_keys=["observation"])


def undeclared_float64(env_fn: Any) -> Any:
    from torchrl.envs import GymWrapper, TransformedEnv

    return TransformedEnv(GymWrapper(env_fn()), _lying_transform(lambda obs: obs.double()))


def undeclared_shift(env_fn: Any) -> Any:
    from torchrl.envs import GymWrapper, TransformedEnv

    return TransformedEnv(GymWrapper(env_fn()), _lying_transform(lambda obs: obs - 1.0e6))


# --- tests ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("factory", "script", "num_envs"),
    [
        (cat_frames, SCRIPT, 1),
        (double_to_float_dict, FLOAT64_DICT, 1),
        (composed, dataclasses.replace(SCRIPT, obs=BoxObs("float64")), 2),
    ],
    ids=["CatFrames", "DoubleToFloat-Dict", "Compose-SerialEnv"],
)
def test_a_transform_that_rewrites_the_observation_spec_is_checked_against_that_spec(
    factory: Any, script: EnvScript, num_envs: int
) -> None:
    outcome = _observations(factory, script, num_envs)
    assert outcome.checked > 0 and outcome.violations == [], [v.render() for v in outcome.violations]


def test_the_declared_space_is_the_transformed_spec() -> None:
    case = Case(SCRIPT, 1, (Reset(seed=3), Step((0,))))
    run = execute(factory_system(cat_frames, "torchrl.EnvBase"), case, with_model=False)
    space = run.semantics["single_observation_space"]
    assert (space.shape, str(space.dtype)) == ((15,), "float32")
    assert "observation_spec['observation']" in repr(space)


@pytest.mark.parametrize(
    ("factory", "words"),
    [
        (undeclared_float64, "dtype float64, the space declares float32"),
        (undeclared_shift, "is outside the env's observation_spec['observation'] (BoundedContinuous"),
    ],
    ids=["dtype", "bounds"],
)
def test_data_that_does_not_match_the_declared_spec_still_fails(factory: Any, words: str) -> None:
    messages = [v.render() for v in _observations(factory, SCRIPT).violations]
    assert messages and all(words in m for m in messages), messages


# --- a spec the stack cannot read back: a refusal, not rlconform's error ----------------------

#: what CatFrames over a one-hot MultiDiscrete leaf is refused with: its MultiOneHot spec is widened
#: threefold but keeps its categories, so TorchRL cannot convert a value of its own (issue 24)
UNREADABLE = (
    "the stack cannot take this observation: the observation_spec['observation'] it declares (MultiOneHot, shape ("
)


def test_a_spec_that_cannot_read_its_own_values_refuses_the_kind_and_is_no_internal_error() -> None:
    """``CatFrames`` over GymWrapper's one-hot MultiDiscrete observation: the run is not built (the
    stack's limit, with why), and the probe leaves MultiDiscrete observations out as refused by the
    stack; before, ``describe_semantics`` raised in rlconform ("internal error in rlconform")."""
    from rlconform.reports.left_out import left_out

    script = dataclasses.replace(SCRIPT, obs=MultiDiscreteObs())
    run = execute(factory_system(cat_frames, "torchrl.EnvBase"), Case(script, 1, (Reset(seed=3), Step((0,)))))
    assert run.build_error is not None and run.build_error.startswith(UNREADABLE), run.build_error
    assert "to_numpy(spec.zero()) raised TypeError" in run.build_error
    assert run.calls == [] and not run.usable

    gap = left_out(probe(factory_system(cat_frames, "torchrl.EnvBase")).capabilities.notes)
    assert gap is not None
    # the one-hot Discrete leaf is refused too (the next test): one line per refusal reason
    lines = gap.lines()
    (line,) = [text for text in lines if text.startswith("MultiDiscrete observations")]
    assert line.startswith(f"MultiDiscrete observations: {UNREADABLE}"), line
    assert not any("internal error" in text for text in lines), lines
    assert "multidiscrete" not in gap.obs_kinds and "box" in gap.obs_kinds


def test_cat_frames_over_a_one_hot_discrete_leaf_is_refused_as_the_stacks_limit() -> None:
    """``CatFrames`` over GymWrapper's one-hot Discrete observation declares a ``OneHot`` of 3n
    entries over n categories, whose own ``is_in`` refuses every value the stack returns. Before,
    the corpus's ``torchrl_cat_frames`` stack failed dtype.observations, terminal.final_obs,
    transitions.exact and flags.terminated on it once the small Discrete observation was drawn:
    rlconform read the stacked vector as one index. Now the run is not built and the probe leaves
    the kind out, saying why."""
    from rlconform.envs.spaces import SmallDiscreteObs

    script = dataclasses.replace(SCRIPT, obs=SmallDiscreteObs())
    run = execute(factory_system(cat_frames, "torchrl.EnvBase"), Case(script, 1, (Reset(seed=3), Step((0,)))))
    assert run.build_error is not None and "a OneHot of 3075 entries over 1025 categories" in run.build_error
    assert run.build_error.startswith("the stack cannot take this observation"), run.build_error
    assert not run.usable
