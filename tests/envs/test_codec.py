"""The observation codecs: every stamp round-trips through every space, and values no reference
env could produce (zeroed buffers, corrupted elements, mixed steps) decode to garbage."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from rlconform.core.system import Capabilities
from rlconform.envs.spaces import (
    BoxObs,
    DictObs,
    DiscreteObs,
    Garbage,
    MultiBinaryObs,
    MultiDiscreteObs,
    TupleObs,
)
from rlconform.envs.stamp import MAX_ENVS, MAX_EPISODES, MAX_SALT, MAX_STEPS, Stamp
from rlconform.envs.strategies import obs_specs

stamps = st.builds(
    Stamp,
    env=st.integers(0, MAX_ENVS - 1),
    episode=st.integers(1, MAX_EPISODES - 1),
    step=st.integers(0, MAX_STEPS - 1),
    salt=st.integers(0, MAX_SALT - 1),
)


@given(spec=obs_specs(Capabilities()), stamp=stamps)
def test_every_stamp_round_trips_and_lies_in_the_space(spec, stamp):
    obs = spec.encode(stamp)
    assert spec.decode(obs) == stamp
    assert spec.build().contains(obs)


@given(spec=obs_specs(Capabilities()))
def test_a_zeroed_observation_is_garbage(spec):
    zero = spec.build().sample() * 0 if not isinstance(spec, (DictObs, TupleObs)) else None
    if zero is None:
        space = spec.build()
        sample = space.sample()
        zero = {k: v * 0 for k, v in sample.items()} if isinstance(spec, DictObs) else tuple(v * 0 for v in sample)
    assert isinstance(spec.decode(zero), Garbage)


@given(stamp=stamps, position=st.integers(0, 6), delta=st.integers(1, 3))
def test_corrupting_any_box_element_is_detected(stamp, position, delta):
    spec = BoxObs(dtype="float32", shape=(7,))
    obs = spec.encode(stamp)
    obs[position] += delta
    assert spec.decode(obs) != stamp


def test_parts_of_two_steps_in_one_dict_are_garbage():
    spec = DictObs((("state", BoxObs()), ("tag", DiscreteObs())))
    a, b = Stamp(0, 2, 3, 7), Stamp(0, 2, 4, 7)
    mixed = {"state": spec.entries[0][1].encode(a), "tag": spec.entries[1][1].encode(b)}
    decoded = spec.decode(mixed)
    assert isinstance(decoded, Garbage)
    assert "different steps" in decoded.reason


def test_uint8_boxes_hold_large_episode_and_step_numbers():
    spec = BoxObs(dtype="uint8", shape=(7,))
    stamp = Stamp(63, 4000, 3000, 255)
    assert spec.decode(spec.encode(stamp)) == stamp


def test_wrong_shapes_and_types_are_garbage():
    assert isinstance(BoxObs().decode(np.zeros(6, dtype=np.float32)), Garbage)
    assert isinstance(MultiDiscreteObs().decode(np.zeros(4, dtype=np.int64)), Garbage)
    assert isinstance(MultiBinaryObs().decode(np.full(45, 2, dtype=np.int8)), Garbage)
    assert isinstance(DiscreteObs().decode(np.float32(3.0)), Garbage)
    assert isinstance(DictObs().decode([1, 2]), Garbage)


def test_a_text_leaf_batched_as_one_string_per_sub_env_splits_per_sub_env() -> None:
    """Gymnasium's vectorizers batch a Text leaf as a tuple of strings (MiniGrid's mission)."""
    from rlconform.envs.batching import split_batch

    batch = {"mission": ("go left", "go right"), "image": np.zeros((2, 3))}
    parts = split_batch(batch, 2)
    assert [p["mission"] for p in parts] == ["go left", "go right"]
    # a Tuple observation of two Text leaves: one tuple of strings per leaf
    assert split_batch((("a", "b"), ("c", "d")), 2) == [("a", "c"), ("b", "d")]
