"""Planted bugs for ``torchrl.transform_values``: TorchRL stacks whose RewardSum, StepCounter or
InitTracker is a subclass with one deliberate defect in what it writes at a reset.

Each is the smallest change to the library's own transform (the correct one passes the spec:
``torchrl.TransformedEnv.RewardSum.StepCounter.InitTracker.SerialEnv``) that reproduces a mistake
a transform makes when ``step_and_maybe_reset`` resets ended sub-envs through a ``"_reset"`` mask:
a running sum or count carried into the next episode, a first observation left unmarked.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rlconform.core.system import Capabilities, EnvFn, System, SystemTable
from rlconform.libraries.torchrl.env_systems import gym_wrapper
from rlconform.specs.families import TORCHRL_ENVBASE

#: this module's systems, read by the catalog (rlconform.core.catalog)
SYSTEMS = SystemTable()

SPEC_ID = "torchrl.transform_values"
_REQUIRES = ("torchrl", "tensordict", "gymnasium")


def _autoreset_mask(transform: Any, tensordict: Any) -> Any:
    """The ``"_reset"`` mask a reset received (None: a plain ``env.reset()``), shaped like the
    transform's entries (``batch + (1,)``)."""
    mask = tensordict.get(transform.parent.reset_keys[0], None)
    return None if mask is None else mask.reshape(*mask.shape[: len(transform.parent.batch_size)], 1)


def _carrying_over(base: type, keys: str, name: str) -> type:
    """``base`` (a TorchRL transform class), named ``name`` (the messages show it), changed to remember the entries it wrote at each step
    (its attribute ``keys`` names them) and to hand them to the episode an autoreset starts
    (TorchRL hands a reset only the ``"_reset"`` mask, so the bug keeps its own copy): only a plain
    ``env.reset()`` starts from 0."""

    class CarriesOver(base):  # type: ignore[misc, valid-type]
        def _step(self, tensordict: Any, next_tensordict: Any) -> Any:
            next_tensordict = super()._step(tensordict, next_tensordict)
            self.__dict__["_planted_last"] = {key: next_tensordict.get(key).clone() for key in getattr(self, keys)}
            return next_tensordict

        def _reset(self, tensordict: Any, tensordict_reset: Any) -> Any:
            tensordict_reset = super()._reset(tensordict, tensordict_reset)
            last, mask = self.__dict__.get("_planted_last"), _autoreset_mask(self, tensordict)
            if last is not None and mask is not None:
                for key, value in last.items():
                    tensordict_reset.set(key, value.where(mask, tensordict_reset.get(key)))
            return tensordict_reset

    CarriesOver.__name__ = CarriesOver.__qualname__ = name
    return CarriesOver


def _reward_sum_carries_over(env_fns: Sequence[EnvFn]) -> Any:
    """RewardSum carrying the last episode's running sum into the one an autoreset starts."""
    from torchrl.envs import RewardSum, TransformedEnv

    return TransformedEnv(gym_wrapper(env_fns[0]), _carrying_over(RewardSum, "out_keys", "CarriesOver")())


def _step_counter_not_zeroed(env_fns: Sequence[EnvFn]) -> Any:
    """StepCounter zeroing the count at ``env.reset()`` only: an episode an autoreset starts goes
    on counting from where the last one ended."""
    from torchrl.envs import StepCounter, TransformedEnv

    return TransformedEnv(gym_wrapper(env_fns[0]), _carrying_over(StepCounter, "step_count_keys", "NotZeroed")())


def _init_tracker_plain_reset_only(env_fns: Sequence[EnvFn]) -> Any:
    from torchrl.envs import InitTracker, TransformedEnv

    class PlainResetOnly(InitTracker):  # type: ignore[misc]
        """Sets ``is_init`` at ``env.reset()`` only: the first observation of an episode an autoreset
        starts is not marked (a recurrent policy keeps the last episode's hidden state)."""

        def _reset(self, tensordict: Any, tensordict_reset: Any) -> Any:
            tensordict_reset = super()._reset(tensordict, tensordict_reset)
            if _autoreset_mask(self, tensordict) is not None:
                for key in self.init_keys:
                    tensordict_reset.set(key, tensordict_reset.get(key).zero_())
            return tensordict_reset

    return TransformedEnv(gym_wrapper(env_fns[0]), PlainResetOnly())


def _register() -> None:
    single = Capabilities(
        obs_kinds=frozenset({"box", "dict"}), composite_box_leaves_only=True, partial_reset=False, max_envs=1
    )
    for name, build, source, capabilities, description in (
        (
            "torchrl_reward_sum_carries_over",
            _reward_sum_carries_over,
            "TransformedEnv(GymWrapper(env_fns[0]()), RewardSum subclass that keeps its sum through a reset)",
            single,
            "RewardSum whose episode_reward carries over an autoreset",
        ),
        (
            "torchrl_step_counter_not_zeroed",
            _step_counter_not_zeroed,
            "TransformedEnv(GymWrapper(env_fns[0]()), StepCounter subclass that keeps its count through an autoreset)",
            single,
            "StepCounter whose step_count is not zeroed by an autoreset",
        ),
        (
            "torchrl_init_tracker_plain_reset_only",
            _init_tracker_plain_reset_only,
            "TransformedEnv(GymWrapper(env_fns[0]()), InitTracker subclass that marks env.reset() only)",
            single,
            "InitTracker that leaves is_init False on the first observation of an autoreset episode",
        ),
    ):
        SYSTEMS.add(
            System(
                id=f"planted.{name}",
                family=TORCHRL_ENVBASE,
                title=f"planted bug: {name.removeprefix('torchrl_').replace('_', ' ')}",
                build=build,
                source=source,
                requires=_REQUIRES,
                kind="planted",
                capabilities=capabilities,
                plants=(SPEC_ID,),
                description=description,
            )
        )


_register()

#: TorchRL GymWrapper's own findings E1 and E2 (FINDINGS.md), inherited by the bugs planted on it
_GYM_WRAPPER_FINDINGS = ("api.wrong_size_batch_rejected", "api.valid_calls_succeed")

#: for every planted bug of this module, the exact set of specs it fails
#: (tests/specs/test_specificity.py)
MUST_FAIL: dict[str, frozenset[str]] = {
    "planted.torchrl_reward_sum_carries_over": frozenset({SPEC_ID, *_GYM_WRAPPER_FINDINGS}),
    "planted.torchrl_step_counter_not_zeroed": frozenset({SPEC_ID, *_GYM_WRAPPER_FINDINGS}),
    "planted.torchrl_init_tracker_plain_reset_only": frozenset({SPEC_ID, *_GYM_WRAPPER_FINDINGS}),
}
