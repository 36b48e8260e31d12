"""Shared by the TorchRL collector and replay-buffer scenarios: their scripts, how their envs are
built, and how a TensorDict of frames is read back into decoded stamps.

Both scenarios use Box float32 observations (the codec every TorchRL stack keeps intact) and a
Discrete action, so that the drawn dimension is what matters to them: how episodes end
(terminated, truncated only, both, by a TimeLimit), their lengths, and how many sub-envs.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rlconform.core.system import EnvFn, System
from rlconform.envs.driver import BUILD_ERROR, Contract, ReferenceEnvFamily
from rlconform.envs.script import EnvScript
from rlconform.envs.spaces import BoxObs, Decoded, DiscreteAction, Garbage
from rlconform.envs.stamp import Stamp
from rlconform.envs.strategies import episode_plans
from rlconform.envs.trace import CallRecord, Slot
from rlconform.libraries.torchrl.env_systems import gym_wrapper

if TYPE_CHECKING:
    from hypothesis.strategies import SearchStrategy

    from rlconform.envs.driver import Driver

#: seconds one recorded call of these scenarios may take: it constructs a collector (starting its
#: worker processes) or runs a whole batch, not one env step
SCENARIO_CALL_TIMEOUT = 120.0


#: errors that say the installed libraries cannot work together (TorchRL's ``implement_for`` finds
#: no implementation for the installed Gymnasium, say), whatever the case asked for
ENVIRONMENT_ERRORS = ("ImportError", "ModuleNotFoundError")


def note_environment_error(driver: Driver, record: CallRecord) -> None:
    """A scenario whose first call failed for a reason no case could avoid: the run counts as a
    build failure, so a search in which every example fails that way is an error verdict (not a
    vacuous "not applicable")."""
    if record.failed and record.error_type in ENVIRONMENT_ERRORS:
        driver.state[BUILD_ERROR] = f"{record.error_type}: {record.error_message}"


class DrivenObjectFamily(ReferenceEnvFamily):
    """A family whose case is one whole run (construct, iterate, sample) rather than a sequence
    of env calls: its calls get the scenario deadline, the specs read the decoded frames from the
    call records (no transition recipe), and closing shuts the driven object down."""

    libraries = ("gymnasium", "torch", "torchrl", "tensordict")
    uses_accelerator = True

    contract = Contract(
        reward_dtype="float32",
        reward_precision="float32",
        step_arity=2,
        separate_flags=True,
        vectorized=True,
        # collectors and replay buffers hand out TensorDicts whose dtypes the env's specs declare
        array_namespace="torch",
        dtypes="declared",
    )

    def boundary_cases(self, system: System, scenario: str) -> list[Any]:
        """None: this family's cases are whole scenarios of its own kind, not call sequences (the
        edge cases of rlconform.envs.boundary_cases are call sequences)."""
        return []

    def begin(self, driver: Driver, obj: Any) -> None:
        driver.timeout = max(driver.timeout, SCENARIO_CALL_TIMEOUT)

    def recipe(self, calls: list[CallRecord], num_envs: int, semantics: dict[str, Any]) -> list[Slot]:
        return []

    def close(self, obj: Any) -> None:
        obj.shutdown()


#: the number of actions of every scenario script (the collector policies pick codes 0 and 2)
NUM_ACTIONS = 3


def scenario_scripts() -> SearchStrategy[EnvScript]:
    """Scripts with short episodes ending every way, some with a TimeLimit."""
    from hypothesis import strategies as st

    return st.builds(
        EnvScript,
        obs=st.just(BoxObs()),
        action=st.just(DiscreteAction(NUM_ACTIONS)),
        episodes=st.lists(episode_plans(4), min_size=1, max_size=3).map(tuple),
        env_stride=st.integers(0, 2),
        max_episode_steps=st.none() | st.integers(1, 4),
    )


def serial_or_single(env_fns: Sequence[EnvFn]) -> Any:
    """One GymWrapper for one sub-env, a SerialEnv of GymWrappers for several."""
    from torchrl.envs import SerialEnv

    if len(env_fns) == 1:
        return gym_wrapper(env_fns[0])
    return SerialEnv(len(env_fns), [functools.partial(gym_wrapper, fn) for fn in env_fns])


def env_source(num_envs: int) -> str:
    if num_envs == 1:
        return "GymWrapper(make_reference_env(script, 0))"
    return f"SerialEnv({num_envs}, [partial(gym_wrapper, partial(make_reference_env, script, i)) for i in range({num_envs})])"


@dataclass(frozen=True)
class Frame:
    """One recorded transition, decoded: where its observation and next observation came from."""

    obs: Decoded
    next_obs: Decoded
    terminated: bool
    truncated: bool
    action: int
    traj_id: int | None

    @property
    def env(self) -> int | None:
        return self.obs.env if isinstance(self.obs, Stamp) else None


def describe(decoded: Decoded) -> str:
    return decoded.short() if isinstance(decoded, Stamp) else decoded.describe()


def read_frames(td: Any, script: EnvScript) -> list[Frame]:
    """The frames of ``td`` (any batch shape) in row-major order, each decoded literally."""
    flat = td.reshape(-1)
    obs = flat.get("observation").cpu().numpy()
    next_obs = flat.get(("next", "observation")).cpu().numpy()
    terminated = flat.get(("next", "terminated")).reshape(-1).tolist()
    truncated = _flag(flat, ("next", "truncated"))
    action = flat.get("action").argmax(-1).reshape(-1).tolist() if "action" in flat else [0] * len(obs)
    traj = flat.get(("collector", "traj_ids"), None)
    traj_ids = traj.reshape(-1).tolist() if traj is not None else [None] * len(obs)
    codec = script.obs
    return [
        Frame(
            codec.decode(obs[i]),
            codec.decode(next_obs[i]),
            bool(terminated[i]),
            truncated[i],
            int(action[i]),
            traj_ids[i],
        )
        for i in range(len(obs))
    ]


def _flag(flat: Any, key: tuple[str, str]) -> list[bool]:
    value = flat.get(key, None)
    if value is None:
        return [False] * flat.numel()
    return [bool(v) for v in value.reshape(-1).tolist()]


def garbage(decoded: Decoded) -> bool:
    return isinstance(decoded, Garbage)
