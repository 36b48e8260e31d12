"""TorchRL's outputs: returned TensorDicts stay as returned, leaves on the declared device,
rewards and flags as their specs declare, and Dict observations compared key by key.

Findings E8 and E9 (FINDINGS.md, "TorchRL 0.14.1 — envs and transitions") are pinned on small
cases: GymWrapper wraps the NumPy arrays a vector env returns without a copy (``torch.as_tensor``
in ``TensorSpec.encode``), so with ``SyncVectorEnv(copy=False)`` every returned observation is the
vector env's own buffer, overwritten by the next step and by the reset of ended sub-envs.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence
from typing import Any

import pytest

pytest.importorskip("torchrl")

from rlconform.core.runner import execute
from rlconform.core.spec import get_spec
from rlconform.core.system import EnvFn, System, get_system
from rlconform.envs.driver import Run
from rlconform.envs.plan import Case, Op, Reset, Step
from rlconform.envs.script import EnvScript, EpisodePlan
from rlconform.envs.spaces import BoxObs, DictObs, DiscreteAction

BOX = BoxObs(dtype="float32", shape=(5,))
DICT = DictObs(entries=(("state", BOX), ("tag", BoxObs(dtype="float64", shape=(5,))), ("extra", BOX)))
NO_COPY = "torchrl.GymWrapper.SyncVectorEnv.NoCopy"
OUTPUT_SPECS = ("aliasing.torchrl_returned_data", "torchrl.device", "dtype.rewards_flags")


def _steps(n: int, num_envs: int) -> tuple[Op, ...]:
    return tuple(Step(tuple((t + j) % 2 for j in range(num_envs))) for t in range(n))


#: long episodes: no sub-env ends, so nothing but a later step can change a returned leaf
LONG = Case(
    EnvScript(obs=BOX, action=DiscreteAction(n=2), episodes=(EpisodePlan(6, "never"),)), 2, (Reset(), *_steps(3, 2))
)
#: episodes that end (terminated, then truncated by the time limit) and are reset in the same call
ENDING = Case(
    EnvScript(
        obs=BOX,
        action=DiscreteAction(n=2),
        episodes=(EpisodePlan(2, "terminated"), EpisodePlan(3, "truncated")),
        env_stride=1,
        max_episode_steps=3,
    ),
    2,
    (Reset(seed=3), *_steps(7, 2)),
)
DICT_ENDING = dataclasses.replace(ENDING, script=dataclasses.replace(ENDING.script, obs=DICT))


def _violations(run: Run, spec_id: str) -> list[str]:
    assert run.build_error is None, run.build_error
    outcome = get_spec(spec_id).check(run)
    assert outcome.not_applicable is None, outcome.not_applicable
    assert outcome.checked, f"{spec_id} checked nothing"
    return [v.render() for v in outcome.violations]


# ------------------------------------------------------------------------------- correct systems


@pytest.mark.parametrize(
    "system_id",
    [
        "torchrl.GymWrapper.SyncVectorEnv",
        "torchrl.SerialEnv.GymWrapper",
        "torchrl.TransformedEnv.StepCounter.SerialEnv",
    ],
)
@pytest.mark.parametrize("case", [LONG, ENDING, DICT_ENDING], ids=["long", "ending", "dict"])
def test_correct_torchrl_systems_pass_the_output_specs(system_id: str, case: Case) -> None:
    run = execute(get_system(system_id), case, with_model=False)
    for spec_id in OUTPUT_SPECS:
        assert _violations(run, spec_id) == [], spec_id


def test_single_gym_wrapper_passes_the_output_specs() -> None:
    case = dataclasses.replace(ENDING, num_envs=1, ops=(Reset(seed=3), *_steps(7, 1)))
    run = execute(get_system("torchrl.GymWrapper"), case, with_model=False)
    for spec_id in OUTPUT_SPECS:
        assert _violations(run, spec_id) == [], spec_id


# ---------------------------------------------------------------------------------- planted bugs

PLANTED = [
    ("planted.torchrl_reuses_obs_buffer", "aliasing.torchrl_returned_data", "changed after it was returned"),
    ("planted.torchrl_meta_leaf", "torchrl.device", "planted_probe .* is on meta; declared: cpu"),
    ("planted.torchrl_float64_reward", "dtype.rewards_flags", "next/reward is torch.float64 .* declares torch.float32"),
]


@pytest.mark.parametrize(("system_id", "spec_id", "words"), PLANTED, ids=[p[1] for p in PLANTED])
def test_planted_torchrl_bug_is_caught(system_id: str, spec_id: str, words: str) -> None:
    import re

    case = dataclasses.replace(LONG, num_envs=1, ops=(Reset(), *_steps(3, 1)))
    messages = _violations(execute(get_system(system_id), case, with_model=False), spec_id)
    assert any(re.search(words, m) for m in messages), messages


# ---------------------------------------------------------------------------- findings E8 and E9


def test_e8_no_copy_vector_env_overwrites_returned_tensordicts() -> None:
    """Each root and transition TensorDict holds the vector env's observation buffer: the next
    step rewrites every one returned before."""
    messages = _violations(execute(get_system(NO_COPY), LONG, with_model=False), "aliasing.torchrl_returned_data")
    assert any("the root returned by td = env.reset() changed" in m for m in messages), messages
    assert any("the transition data returned by" in m for m in messages), messages


def test_e8_reproducer() -> None:
    import gymnasium
    import numpy as np
    import torch
    from torchrl.envs import GymWrapper

    from rlconform.envs.reference_env import ReferenceEnv

    fns = [functools.partial(ReferenceEnv, EnvScript(), i) for i in range(2)]
    v = gymnasium.vector.SyncVectorEnv(fns, copy=False, autoreset_mode=gymnasium.vector.AutoresetMode.DISABLED)
    e = GymWrapper(v)
    td = e.reset()
    first, snap = td["observation"], td["observation"].clone()
    e.step_and_maybe_reset(e.rand_action(td))
    assert not torch.equal(first, snap)
    assert np.shares_memory(first.numpy(), v._observations)
    e.close()


def test_e9_no_copy_terminal_observation_is_overwritten_by_the_reset() -> None:
    """Within one step_and_maybe_reset: the reset of an ended sub-env writes its first observation
    into the buffer the transition's ("next", "observation") still holds."""
    run = execute(get_system(NO_COPY), ENDING, with_model=False)
    assert any("expected" in m and "terminal observation" in m for m in _violations(run, "terminal.final_obs"))
    assert _violations(run, "transitions.exact")


def test_e9_reproducer() -> None:
    import gymnasium
    import torch
    from torchrl.envs import GymWrapper

    from rlconform.envs.reference_env import ReferenceEnv

    script = EnvScript(episodes=(EpisodePlan(1),))
    fns = [functools.partial(ReferenceEnv, script, 0)]
    v = gymnasium.vector.SyncVectorEnv(fns, copy=False, autoreset_mode=gymnasium.vector.AutoresetMode.DISABLED)
    e = GymWrapper(v)
    td = e.reset()
    data, td = e.step_and_maybe_reset(e.rand_action(td))
    assert bool(data["next", "done"].all())
    assert torch.equal(data["next", "observation"], td["observation"])
    e.close()


def test_copying_vector_env_conforms_where_no_copy_does_not() -> None:
    run = execute(get_system("torchrl.GymWrapper.SyncVectorEnv"), ENDING, with_model=False)
    for spec_id in ("terminal.final_obs", "transitions.exact", "aliasing.torchrl_returned_data"):
        assert _violations(run, spec_id) == [], spec_id


# ------------------------------------------------------------------------------ Dict observations


def test_torchrl_systems_are_searched_with_dict_observations_of_box_leaves() -> None:
    from hypothesis import find

    from rlconform.envs.strategies import obs_specs

    for system_id in ("torchrl.SerialEnv.GymWrapper", "torchrl.GymWrapper.SyncVectorEnv", NO_COPY):
        caps = get_system(system_id).capabilities
        found = find(obs_specs(caps), lambda o: o.kind == "dict" and len(o.entries) >= 2)  # type: ignore[union-attr]
        assert all(leaf.kind == "box" for _, leaf in found.entries)  # type: ignore[union-attr]
        assert caps.accepts(DICT_ENDING.script)


def _corrupt_one_key(env_fns: Sequence[EnvFn], key: str) -> Any:
    """SerialEnv(n, [GymWrapper(CorruptKey(env_fn())) ...]): each terminal observation has one
    Dict entry off by one, the others exact."""
    import gymnasium
    from torchrl.envs import GymWrapper, SerialEnv

    class CorruptKey(gymnasium.Wrapper):  # type: ignore[type-arg]
        def step(self, action: Any) -> Any:
            obs, reward, terminated, truncated, info = self.env.step(action)
            if terminated or truncated:
                obs = {**obs, key: obs[key] + 1}
            return obs, reward, terminated, truncated, info

    def make(fn: EnvFn) -> Any:
        return GymWrapper(CorruptKey(fn()))

    env = SerialEnv(len(env_fns), [functools.partial(make, fn) for fn in env_fns])
    env.start()
    return env


def _corrupting(key: str) -> System:
    return dataclasses.replace(
        get_system("torchrl.SerialEnv.GymWrapper"),
        id=f"test.corrupt_{key}",
        build=functools.partial(_corrupt_one_key, key=key),
        source=f"test-local SerialEnv of GymWrapper(CorruptKey(env, {key!r}))",
    )


def test_dict_obs_through_serial_env_passes_with_every_key_compared() -> None:
    run = execute(get_system("torchrl.SerialEnv.GymWrapper"), DICT_ENDING, with_model=False)
    for spec_id in ("terminal.final_obs", "transitions.exact"):
        assert _violations(run, spec_id) == [], spec_id
    ended = [s for s in run.slots if s.kind == "transition" and (s.terminated or s.truncated)]
    assert ended and all(sorted(s.next_obs) == ["extra", "state", "tag"] for s in ended)


@pytest.mark.parametrize("key", ["tag", "extra"])
def test_one_wrong_dict_key_is_caught(key: str) -> None:
    run = execute(_corrupting(key), DICT_ENDING, with_model=False)
    for spec_id in ("terminal.final_obs", "transitions.exact"):
        messages = _violations(run, spec_id)
        assert messages, f"{spec_id} missed a wrong {key!r}"
    assert any(repr(key) in m for m in _violations(run, "terminal.final_obs"))
