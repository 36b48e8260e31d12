"""Planted bugs for the TorchRL output specs: TorchRL's GymWrapper with one deliberate defect each.

There is no TorchRL reference model to break, so each bug is the smallest change to the library's
own ``GymWrapper`` (correct on the reference envs: ``torchrl.GymWrapper`` passes these specs) that
reproduces a mistake a TorchRL env makes: an output tensor that is a reused buffer, a leaf on
another device than declared, a reward of another dtype than its spec declares.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rlconform.core.system import Capabilities, EnvFn, System, SystemTable
from rlconform.specs.families import TORCHRL_ENVBASE

#: this module's systems, read by the catalog (rlconform.core.catalog)
SYSTEMS = SystemTable()

FAMILY_NAME = TORCHRL_ENVBASE
_REQUIRES = ("torchrl", "tensordict", "gymnasium")


def _wrapper_class() -> Any:
    from torchrl.envs import GymWrapper

    return GymWrapper


def _reuses_obs_buffer(env_fns: Sequence[EnvFn]) -> Any:
    class ReusesObsBuffer(_wrapper_class()):  # type: ignore[misc]
        """Copies every observation into one tensor per key and returns that tensor (a reused
        output buffer): every TensorDict returned earlier sees the latest observation."""

        def read_obs(self, observations: Any) -> Any:
            import torch

            out = super().read_obs(observations)
            buffers = self.__dict__.setdefault("_planted_buffers", {})
            for key, value in list(out.items()):
                if not isinstance(value, torch.Tensor):
                    continue
                buffer = buffers.get(key)
                if buffer is None or buffer.shape != value.shape or buffer.dtype != value.dtype:
                    buffer = buffers[key] = torch.empty_like(value)
                buffer.copy_(value)
                out[key] = buffer
            return out

    return ReusesObsBuffer(env_fns[0]())


def _meta_leaf(env_fns: Sequence[EnvFn]) -> Any:
    class MetaLeaf(_wrapper_class()):  # type: ignore[misc]
        """Adds an entry on the meta device to every step's output (a tensor left on the wrong
        device), while the env and its specs declare the CPU."""

        def _step(self, tensordict: Any) -> Any:
            import torch

            out = super()._step(tensordict)
            out.set("planted_probe", torch.zeros(1, device="meta"))
            return out

    return MetaLeaf(env_fns[0]())


def _float64_reward(env_fns: Sequence[EnvFn]) -> Any:
    class Float64Reward(_wrapper_class()):  # type: ignore[misc]
        """Returns the reward as float64 while its reward_spec declares float32."""

        def _step(self, tensordict: Any) -> Any:
            out = super()._step(tensordict)
            out.set("reward", out.get("reward").double())
            return out

    return Float64Reward(env_fns[0]())


def _register() -> None:
    capabilities = Capabilities(
        obs_kinds=frozenset({"box", "dict"}), composite_box_leaves_only=True, partial_reset=False, max_envs=1
    )
    for name, build, plants, description in (
        (
            "torchrl_reuses_obs_buffer",
            _reuses_obs_buffer,
            ("aliasing.torchrl_returned_data",),
            "GymWrapper returning one reused tensor per observation key",
        ),
        ("torchrl_meta_leaf", _meta_leaf, ("torchrl.device",), "GymWrapper adding a leaf on the meta device"),
        (
            "torchrl_float64_reward",
            _float64_reward,
            ("dtype.rewards_flags",),
            "GymWrapper returning float64 rewards while its reward_spec declares float32",
        ),
    ):
        SYSTEMS.add(
            System(
                id=f"planted.{name}",
                family=FAMILY_NAME,
                title=f"planted bug: {name.removeprefix('torchrl_').replace('_', ' ')} (GymWrapper)",
                build=build,
                source=f"planted.{build.__name__}(env_fns)",
                requires=_REQUIRES,
                kind="planted",
                capabilities=capabilities,
                plants=plants,
                description=description,
            )
        )


_register()


# ------------------------------------------------------------------------------- specificity

_EXACT = "transitions.exact"
#: TorchRL GymWrapper's own findings E1 and E2 (FINDINGS.md), inherited by bugs planted on it
_GYM_WRAPPER_FINDINGS = ("api.wrong_size_batch_rejected", "api.valid_calls_succeed")

#: For every planted bug of the torchrl library, the exact set of specs it fails; every other spec
#: that applies must pass (tests/specs/test_specificity.py)
MUST_FAIL: dict[str, frozenset[str]] = {
    f"planted.{name}": frozenset(specs)
    for name, specs in {
        # TorchRL GymWrapper bugs (this module) inherit the findings of the GymWrapper
        # they are built on (FINDINGS.md E1: a wrong-size batch is accepted; E2: a one-component
        # MultiDiscrete action raises TypeError), which are no defect of theirs
        "torchrl_reuses_obs_buffer": (
            "aliasing.torchrl_returned_data",
            # the recipe reads next observations from the reused buffer, already overwritten by
            # the reset: every transition read across an episode end is wrong
            "continuity.fresh_first_obs",
            "flags.terminated",
            "flags.truncated",
            "terminal.final_obs",
            _EXACT,
            *_GYM_WRAPPER_FINDINGS,
        ),
        "torchrl_meta_leaf": ("torchrl.device", *_GYM_WRAPPER_FINDINGS),
        "torchrl_float64_reward": ("dtype.rewards_flags", *_GYM_WRAPPER_FINDINGS),
        # native.py, collectors.py, replay_family.py
        "torchrl.TorchNative.NumpyRoundTrip": ("torchrl.actions_reach_env_natively", "dtype.rewards_flags"),
        "torchrl.Collector.DropsLastFrame": ("collector.frame_accounting",),
        "torchrl.Collector.RecordsResetStep": ("collector.transitions",),
        "torchrl.Collector.StaleCopy": ("collector.policy_updates",),
        "torchrl.SliceBuffer.IgnoresEpisodeEnds": ("replay.slices_within_episode",),
    }.items()
}
