"""TorchRL envs in both wrapping orders, GymEnv(id, num_envs=N) and TransformedEnv, against the
reference envs' ground truth.

GymWrapper(SyncVectorEnv(..., DISABLED)) and SerialEnv(n, [GymWrapper(env) ...]) must yield the same
transitions from the same seeds and actions. Unseeded they do. From ``env.set_seed(s)`` they do not:
the vector env seeds sub-env i with s + i, SerialEnv chains ``torchrl._utils.seed_generator`` (a
TorchRL finding, E5 in FINDINGS.md).
"""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("torchrl")

from rlconform.core.runner import execute
from rlconform.core.spec import get_spec
from rlconform.core.system import get_system
from rlconform.envs.decode import decode
from rlconform.envs.driver import Run
from rlconform.envs.plan import Case, Reset, Step
from rlconform.envs.script import EnvScript, EpisodePlan
from rlconform.envs.stamp import Stamp
from rlconform.libraries.torchrl.env_objects import SUB_ENV_RESETS

SCRIPT = EnvScript(
    episodes=(EpisodePlan(2, "terminated"), EpisodePlan(3, "truncated"), EpisodePlan(4, "never")),
    env_stride=1,
    max_episode_steps=3,
)
VECTOR_ORDER = "torchrl.GymWrapper.SyncVectorEnv"
BATCHED_ORDER = "torchrl.SerialEnv.GymWrapper"


def _case(seed: int | None, num_envs: int = 2, steps: int = 8) -> Case:
    return Case(
        SCRIPT, num_envs, (Reset(seed=seed), *(Step(tuple((t + j) % 2 for j in range(num_envs))) for t in range(steps)))
    )


def _transitions(run: Run) -> list[tuple[Any, ...]]:
    """Each transition as (sub-env, agent step, obs, next obs, reward, terminated, truncated), the
    observations as (sub-env, step, salt): the lifetime episode counter is left out, it counts
    resets made while building, which differ between the stacks and are no transition."""

    def where(value: Any) -> Any:
        stamp = decode(run, value)
        return (stamp.env, stamp.step, stamp.salt) if isinstance(stamp, Stamp) else repr(stamp)

    return [
        (s.env, s.agent_step, where(s.obs), where(s.next_obs), s.reward, s.terminated, s.truncated)
        for s in run.slots
        if s.kind == "transition"
    ]


def _both(seed: int | None) -> tuple[Run, Run]:
    runs = tuple(execute(get_system(sid), _case(seed), with_model=False) for sid in (VECTOR_ORDER, BATCHED_ORDER))
    for run in runs:
        assert run.usable, run.build_error
        assert not get_spec("transitions.exact").check(run).violations
    return runs  # type: ignore[return-value]


def test_both_wrapping_orders_give_the_same_transitions_unseeded() -> None:
    vector, batched = _both(None)
    assert _transitions(vector) == _transitions(batched)
    assert len(_transitions(vector)) == 16


def test_both_wrapping_orders_differ_after_the_same_set_seed() -> None:
    """E5: the same set_seed(7) gives sub-env 1 another seed, so other episodes, in each order."""
    vector, batched = _both(7)
    a, b = _transitions(vector), _transitions(batched)
    assert [t for t in a if t[0] == 0] == [t for t in b if t[0] == 0]  # sub-env 0 gets 7 in both
    assert [t for t in a if t[0] == 1] != [t for t in b if t[0] == 1]
    vector_seeds = [seeds[0] for seeds in vector.calls[0].extra[SUB_ENV_RESETS]]
    batched_seeds = [seeds[0] for seeds in batched.calls[0].extra[SUB_ENV_RESETS]]
    assert vector_seeds == [7, 8]
    assert batched_seeds[0] == 7 and batched_seeds[1] != 8
    # the seeds the adapter names are the ones the envs logged
    for run, seeds in ((vector, vector_seeds), (batched, batched_seeds)):
        assert [env.resets[-1 - _later_resets(run, env.env)].seed for env in run.truth.envs] == seeds  # type: ignore[union-attr]


def _later_resets(run: Run, env: int) -> int:
    """Resets of ``env`` after its seeded one: the unseeded reset() that follows set_seed, then
    the autoresets of the steps."""
    truth = run.truth
    assert truth is not None
    resets = truth.envs[env].resets
    seeded = max(i for i, r in enumerate(resets) if r.seed is not None)
    return len(resets) - 1 - seeded


def test_step_counter_transform_leaves_the_transitions_exact() -> None:
    run = execute(get_system("torchrl.TransformedEnv.StepCounter.SerialEnv"), _case(3), with_model=False)
    assert run.usable, run.build_error
    for spec_id in ("transitions.exact", "terminal.final_obs", "continuity.no_discarded_episode", "flags.truncated"):
        outcome = get_spec(spec_id).check(run)
        assert outcome.checked and not outcome.violations, (spec_id, [v.render() for v in outcome.violations])


def test_gym_env_num_envs_runs_next_step_mode_and_records_reset_steps() -> None:
    """E6: GymEnv(id, num_envs=N) builds a NEXT_STEP AsyncVectorEnv, a mode GymWrapper refuses:
    terminal observations come back zero-filled and the reset step is taken for a transition."""
    run = execute(get_system("torchrl.GymEnv.num_envs"), _case(3), with_model=False)
    assert run.usable, run.build_error
    final = [v.render() for v in get_spec("terminal.final_obs").check(run).violations]
    assert final and all("zero-filled" in m for m in final), final
    exact = [v.render() for v in get_spec("transitions.exact").check(run).violations]
    assert any("invented transition" in m and "reset step recorded as a transition" in m for m in exact), exact


def test_double_to_float_transform_declares_and_returns_float32() -> None:
    from rlconform.envs.spaces import BoxObs

    script = EnvScript(
        obs=BoxObs(dtype="float64", shape=(5,)), episodes=SCRIPT.episodes, env_stride=1, max_episode_steps=3
    )
    case = Case(script, 2, _case(3).ops)
    run = execute(get_system("torchrl.TransformedEnv.DoubleToFloat.SerialEnv"), case, with_model=False)
    assert run.usable, run.build_error
    assert str(run.semantics["single_observation_space"].dtype) == "float32"
    for spec_id in ("transitions.exact", "terminal.final_obs", "dtype.observations"):
        outcome = get_spec(spec_id).check(run)
        assert outcome.checked and not outcome.violations, (spec_id, [v.render() for v in outcome.violations])


def _serial_three(env_fn: Any) -> Any:
    from torchrl.envs import GymWrapper, SerialEnv

    return SerialEnv(3, lambda: GymWrapper(env_fn()))


def _not_an_env(env_fn: Any) -> Any:
    return env_fn()


def test_user_factory_picks_the_number_of_sub_envs_from_its_batch_size() -> None:
    from rlconform.core.user import BadInput, factory_system

    system = factory_system(_serial_three, "torchrl.EnvBase")
    assert (system.capabilities.min_envs, system.capabilities.max_envs) == (3, 3)
    run = execute(system, _case(5, num_envs=3), with_model=False)
    assert run.usable, run.build_error
    outcome = get_spec("transitions.exact").check(run)
    assert outcome.checked and not outcome.violations, [v.render() for v in outcome.violations]
    with pytest.raises(BadInput, match=r"building .*_not_an_env as torchrl\.EnvBase"):
        factory_system(_not_an_env, "torchrl.EnvBase")
