"""A user's replay buffer or estimator made of TorchRL's own classes only, with other settings than
the bundled system built like it, inherits that system's FINDINGS defect on the spec by how it is
built (issue 35, the lost labels): the replay of the user's minimal case on the bundled system
(its own settings) does not show it at the same call, so these were the user's FAILs before and
``--fail-on own`` could not reach 0. A subclass of the user's stays the user's."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("torchrl")

from rlconform.core.search import Verdict, check_spec
from rlconform.core.spec import get_spec
from rlconform.core.user import factory_system, probe


def end_key_slice_sampler() -> Any:
    """T3's configuration with the user's own slice length and batch size."""
    from torchrl.data import LazyTensorStorage, SliceSampler, TensorDictReplayBuffer

    return TensorDictReplayBuffer(
        storage=LazyTensorStorage(100), sampler=SliceSampler(slice_len=4, end_key=("next", "done")), batch_size=16
    )


def without_replacement_by_batch_size() -> Any:
    """T3 with SliceSamplerWithoutReplacement sized by the buffer's batch_size."""
    from torchrl.data import LazyTensorStorage, SliceSamplerWithoutReplacement, TensorDictReplayBuffer

    return TensorDictReplayBuffer(
        storage=LazyTensorStorage(100),
        sampler=SliceSamplerWithoutReplacement(num_slices=4, end_key=("next", "done")),
        batch_size=16,
    )


def own_slice_sampler() -> Any:
    """The same sampler as a subclass of the user's: its failure stays the user's."""
    from torchrl.data import LazyTensorStorage, SliceSampler, TensorDictReplayBuffer

    class MySampler(SliceSampler):
        pass

    return TensorDictReplayBuffer(
        storage=LazyTensorStorage(100), sampler=MySampler(slice_len=4, end_key=("next", "done")), batch_size=16
    )


def multistep_n4() -> Any:
    """T4's configuration with n = 4 (the bundled systems have n = 2 and 3)."""
    from torchrl.data import LazyTensorStorage, TensorDictReplayBuffer
    from torchrl.envs import MultiStepTransform

    return TensorDictReplayBuffer(
        storage=LazyTensorStorage(200, ndim=2), transform=MultiStepTransform(n_steps=4, gamma=0.9), batch_size=16
    )


def gae_shifted_budget_2(value_network: Any) -> Any:
    """V1's configuration (shifted=True) with shifted_budget=2."""
    from torchrl.objectives.value import GAE

    return GAE(gamma=0.9, lmbda=0.95, value_network=value_network, shifted=True, shifted_budget=2)


def _verdict(factory: Any, api: str, spec_id: str) -> Verdict:
    return check_spec(probe(factory_system(factory, api)), get_spec(spec_id), "ci")


@pytest.mark.parametrize(
    ("factory", "library"),
    [
        (end_key_slice_sampler, "torchrl.TensorDictReplayBuffer.SliceSampler"),
        (without_replacement_by_batch_size, "torchrl.TensorDictReplayBuffer.SliceSamplerWithoutReplacement"),
    ],
)
def test_a_slice_sampler_told_ends_by_end_key_alone_inherits_t3(factory: Any, library: str) -> None:
    verdict = _verdict(factory, "torchrl.ReplayBuffer", "replay.slices_within_episode")
    assert verdict.status == "fail", verdict.message
    assert verdict.inherited == (
        f"built from the library's own classes as {library} is, whose defect on this spec is FINDINGS T3"
    ), verdict.inherited
    # the message says the fix
    assert 'traj_key=("collector", "traj_ids")' in verdict.message and "set_truncated=True" in verdict.message


@pytest.mark.parametrize(
    ("factory", "api", "spec_id", "library", "row"),
    [
        (
            multistep_n4,
            "torchrl.ReplayBuffer",
            "replay.bootstrap_targets",
            "torchrl.TensorDictReplayBuffer.MultiStepTransform.n3",
            "T4",
        ),
        (gae_shifted_budget_2, "torchrl.ValueEstimator", "estimator.advantage", "torchrl.GAE.shifted", "V1"),
    ],
)
def test_other_settings_of_a_bundled_configuration_inherit_its_row(
    factory: Any, api: str, spec_id: str, library: str, row: str
) -> None:
    verdict = _verdict(factory, api, spec_id)
    assert verdict.status == "fail", verdict.message
    assert verdict.inherited is not None and f"FINDINGS {row}" in verdict.inherited, verdict.inherited
    assert library in verdict.inherited, verdict.inherited


def test_a_sampler_subclass_of_the_users_keeps_its_failure() -> None:
    verdict = _verdict(own_slice_sampler, "torchrl.ReplayBuffer", "replay.slices_within_episode")
    assert verdict.status == "fail", verdict.message
    assert verdict.inherited is None, verdict.inherited
