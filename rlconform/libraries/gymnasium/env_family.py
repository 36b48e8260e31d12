"""Family ``gymnasium.Env``: a single Gymnasium environment, bare or under Gymnasium's wrappers.

Recipe, as Gymnasium documents it: every step is a transition; after ``terminated or truncated``
the caller must call ``reset()`` before stepping again (the driver does, and marks the call as
required by the recipe). Under the ``Autoreset`` wrapper the step after an episode end is a reset
step (next-step autoreset, like the vector API) and must be skipped.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from rlconform.core.family import FactoryShape, find_layer, layer_chain
from rlconform.core.system import Capabilities, EnvFn, System, SystemTable
from rlconform.envs.action_space import send_in_space
from rlconform.envs.driver import Contract, ReferenceEnvFamily
from rlconform.envs.plan import BadStep, Op, Reset, Step, reset_options
from rlconform.envs.spaces import array_literal
from rlconform.envs.tap import single_env_layers
from rlconform.envs.trace import CallRecord, CallView, Slot
from rlconform.libraries.gymnasium.model_selection import ModelMatch, sub_env_limit
from rlconform.libraries.gymnasium.releases import installed as installed_release
from rlconform.libraries.gymnasium.releases import unavailable_unless
from rlconform.libraries.gymnasium.vector_family import sub_env_layer_semantics, sub_env_normalizer_statistics
from rlconform.specs.families import GYMNASIUM_ENV

#: this module's systems, read by the catalog (rlconform.core.catalog)
SYSTEMS = SystemTable()


def action_literal(action: Any) -> str:
    if isinstance(action, np.ndarray):
        return array_literal(action)
    if isinstance(action, np.generic):
        return f"np.{type(action).__name__}({action.item()!r})"
    return repr(action)


def has_autoreset(env: Any) -> bool:
    return find_layer(env, "Autoreset", "env") is not None


def wrapper_names(env: Any) -> list[str]:
    return [type(layer).__name__ for layer in layer_chain(env, "env")]


class GymEnvFamily(ReferenceEnvFamily):
    """Also the family of a user's own wrapper (``--api gymnasium.Wrapper``, a ``make(env) -> Env``
    factory): built around one decodable reference env, so that every exact spec of a single env
    (transitions, flags, terminal observations, infos, seeding) applies to the wrapper's outputs,
    compared with what the env it wraps really returned."""

    name = GYMNASIUM_ENV
    api = "gymnasium.Wrapper"
    factory_signature = "(env: gymnasium.Env) -> gymnasium.Env"
    factory_argument = "env"
    claimed_classes = ("gymnasium.core.Env",)
    factory_shape = FactoryShape(
        returns=claimed_classes,
        return_names=("Wrapper", "ObservationWrapper", "ActionWrapper", "RewardWrapper"),
        takes=claimed_classes,
    )
    plain_build = "env = {factory}(env_fns[0]())"
    plain_object = "env"
    required_attributes = ("reset", "step", "observation_space", "action_space")
    contract = Contract(
        reward_dtype=None, reward_precision="float64", step_arity=5, separate_flags=True, vectorized=False
    )

    def check_factory(self, signature: inspect.Signature) -> None:
        signature.bind(None)

    def user_capabilities(self) -> Capabilities:
        return Capabilities(partial_reset=False, max_envs=1)

    def probe_num_envs(self, system: System) -> int:
        return 1

    def user_system(self, fn: Callable[..., Any], reference: str, **options: Any) -> System:
        """A user's ``(env) -> Env`` wrapper factory, built around the one reference env."""

        def build(env_fns: Sequence[EnvFn]) -> Any:
            if len(env_fns) != 1:
                raise ValueError(f"a wrapper is built around one env, got {len(env_fns)} env factories")
            return fn(env_fns[0]())

        return System(
            id=f"user:{reference}",
            family=self.name,
            title=f"{reference}(env) (your wrapper)",
            build=build,
            source=reference,
            kind="user",
            out_of_process=True,
            capabilities=self.user_capabilities(),
        )

    def describe_semantics(self, obj: Any) -> dict[str, Any]:
        wrappers = wrapper_names(obj)
        semantics = {
            "autoreset_mode": "NextStep" if has_autoreset(obj) else None,
            "wrappers": wrappers,
            "single_observation_space": getattr(obj, "observation_space", None),
            "single_action_space": getattr(obj, "action_space", None),
            "metadata_type": type(getattr(obj, "metadata", None)).__name__,
        }
        # an episode recorder or running normalizer in the wrapper chain is read as it is around
        # each sub-env of a SyncVectorEnv (RecordEpisodeStatistics, NormalizeReward: FINDINGS G8)
        semantics.update(
            sub_env_layer_semantics(obj, "NextStep", vector_statistics=False, layers_by_env=single_env_layers(obj))
        )
        return semantics

    def observe(self, obj: Any, record: CallRecord) -> None:
        stats = sub_env_normalizer_statistics(obj, single_env_layers(obj))
        if stats:
            record.extra["sub_env_normalizers"] = stats

    def model_match(self, obj: Any) -> Any:
        """The bare env's model, or the Autoreset wrapper's when that is the outer layer; a time
        limit a layer adds is applied by the model too; any other layer (a user's wrapper) has
        no model, and the exact specs compare it with the env it wraps instead."""
        autoreset = has_autoreset(obj)
        if autoreset and find_layer(obj, "Autoreset", "env") is not obj:
            return ModelMatch(None, f"no reference model of its layer {type(obj).__name__} over an Autoreset")
        limit, problem = sub_env_limit(obj.env if autoreset else obj)
        if problem is not None:
            return ModelMatch(None, f"no reference model of its {problem.removeprefix('sub-env ')}")
        return ModelMatch(
            "reference.gymnasium.Env.Autoreset" if autoreset else "reference.gymnasium.Env", time_limit=limit
        )

    def begin(self, driver: Any, obj: Any) -> None:
        # a wrapper that declares its own action space (RescaleAction) is sent elements of it
        send_in_space(driver, getattr(obj, "action_space", None))
        driver.state["autoreset"] = has_autoreset(obj)
        driver.state["ended"] = False

    def execute(self, driver: Any, obj: Any, op: Op) -> None:
        if isinstance(op, Reset):
            self._reset(driver, obj, op, implied=False)
            return
        if isinstance(op, BadStep):
            raise ValueError("wrong-size batches do not apply to a single env")
        assert isinstance(op, Step)
        if driver.state["ended"] and not driver.state["autoreset"]:
            self._reset(driver, obj, Reset(seed=None), implied=True)
        action = driver.single(op.actions[0])
        record = driver.call(op, f"env.step({action_literal(action)})", obj.step, (action,), view=_view_step, obj=obj)
        if record.view is not None and record.view.terminated is not None and record.view.truncated is not None:
            driver.state["ended"] = record.view.terminated[0] or record.view.truncated[0]

    def _reset(self, driver: Any, obj: Any, op: Reset, *, implied: bool) -> None:
        options = reset_options(op)
        record = driver.call(
            op,
            f"env.reset(seed={op.seed!r}" + ("" if options is None else f", options={options!r}") + ")",
            lambda seed: obj.reset(seed=seed) if options is None else obj.reset(seed=seed, options=options),
            (op.seed,),
            implied=implied,
            view=_view_reset,
            obj=obj,
        )
        if record.view is not None:
            driver.state["ended"] = False

    def recipe(self, calls: list[CallRecord], num_envs: int, semantics: dict[str, Any]) -> list[Slot]:
        autoreset = semantics.get("autoreset_mode") == "NextStep"
        slots: list[Slot] = []
        last_obs: Any = None
        prev_done = False
        for record in calls:
            view = record.view
            if record.failed or view is None:
                continue
            if view.kind == "reset":
                last_obs, prev_done = view.obs[0], False
                continue
            assert view.rewards is not None and view.terminated is not None and view.truncated is not None
            done = view.terminated[0] or view.truncated[0]
            kind = "reset_step" if autoreset and prev_done else "transition"
            slots.append(
                Slot(
                    env=0,
                    call=record.position,
                    agent_step=record.agent_step,
                    kind=kind,  # type: ignore[arg-type]
                    obs=last_obs,
                    action=record.op.actions[0],  # type: ignore[union-attr]
                    reward=view.rewards[0],
                    next_obs=view.obs[0],
                    terminated=view.terminated[0],
                    truncated=view.truncated[0],
                    info=view.infos[0] if view.infos else None,
                )
            )
            last_obs, prev_done = view.obs[0], done
        return slots

    def api_problems(self, call: CallRecord, num_envs: int) -> list[str]:
        result = call.result_live
        expected = 2 if isinstance(call.op, Reset) else 5
        if not isinstance(result, tuple) or len(result) != expected:
            return [f"returned a {type(result).__name__}; documented: a {expected}-tuple"]
        if not isinstance(result[-1], dict):
            return [f"info is a {type(result[-1]).__name__}; documented: a dict"]
        return []

    def object_problems(self, semantics: dict[str, Any], num_envs: int) -> list[str]:
        problems = []
        for name in ("single_observation_space", "single_action_space"):
            if semantics.get(name) is None:
                problems.append(f"no {name.removeprefix('single_')} attribute")
        if semantics.get("metadata_type") != "dict":
            problems.append(f"metadata is a {semantics.get('metadata_type')}, not a dict")
        return problems


def _view_reset(result: Any) -> CallView:
    obs, info = result
    return CallView(kind="reset", obs=[obs], infos=[info], touched=[True])


def _view_step(result: Any) -> CallView:
    obs, reward, terminated, truncated, info = result
    return CallView(
        kind="step",
        obs=[obs],
        rewards=[float(reward)],
        terminated=[bool(terminated)],
        truncated=[bool(truncated)],
        infos=[info],
        touched=[True],
    )


FAMILY = GymEnvFamily()

# ------------------------------------------------------------------------------------- systems


def _single(fn: Any) -> Any:
    """Adapt a one-env builder to the systems' list-of-factories signature."""

    @functools.wraps(fn)
    def build(env_fns: Sequence[EnvFn]) -> Any:
        if len(env_fns) != 1:
            raise ValueError(f"a single-env system takes one env factory, got {len(env_fns)}")
        return fn(env_fns[0])

    return build


def _build_raw(env_fn: EnvFn) -> Any:
    return env_fn()


def _build_make(env_fn: EnvFn) -> Any:
    import gymnasium

    from rlconform.envs.reference_env import register_reference_env

    script, index, sink = _partial_args(env_fn)
    return gymnasium.make(
        register_reference_env(), script=script, index=index, sink=sink, max_episode_steps=script.max_episode_steps
    )


def _build_autoreset(env_fn: EnvFn) -> Any:
    from gymnasium.wrappers import Autoreset

    return Autoreset(env_fn())


def _partial_args(env_fn: EnvFn) -> tuple[Any, int, Any]:
    """The (script, index, sink) a reference env factory was made with."""
    args = getattr(env_fn, "args", None)
    if not isinstance(env_fn, functools.partial) or args is None or len(args) != 3:
        raise TypeError("gymnasium.make systems are built from rlconform's reference env factories")
    return args[0], args[1], args[2]


SYSTEMS.add(
    System(
        id="gymnasium.Env.raw",
        family=GYMNASIUM_ENV,
        title="ReferenceEnv, no wrapper",
        build=_single(_build_raw),
        source="env_fns[0]()",
        requires=("gymnasium",),
        capabilities=Capabilities(time_limit="forbidden", partial_reset=False, max_envs=1),
    )
)
SYSTEMS.add(
    System(
        id="gymnasium.Env.make",
        family=GYMNASIUM_ENV,
        title="gymnasium.make (PassiveEnvChecker, OrderEnforcing, TimeLimit when set)",
        build=_single(_build_make),
        source="gymnasium.make('rlconform/Reference-v0', script=script, index=0, max_episode_steps=script.max_episode_steps)",
        requires=("gymnasium",),
        capabilities=Capabilities(partial_reset=False, max_envs=1),
    )
)
SYSTEMS.add(
    System(
        id="gymnasium.Env.TimeLimit",
        family=GYMNASIUM_ENV,
        title="gymnasium.wrappers.TimeLimit(ReferenceEnv)",
        build=_single(_build_raw),
        source="gymnasium.wrappers.TimeLimit(ReferenceEnv(script, 0), max_episode_steps=script.max_episode_steps)",
        requires=("gymnasium",),
        capabilities=Capabilities(time_limit="required", partial_reset=False, max_envs=1),
    )
)
SYSTEMS.add(
    System(
        id="gymnasium.Env.Autoreset",
        family=GYMNASIUM_ENV,
        title="gymnasium.wrappers.Autoreset(ReferenceEnv) (next-step autoreset)",
        build=_single(_build_autoreset),
        source="gymnasium.wrappers.Autoreset(env_fns[0]())",
        requires=("gymnasium",),
        capabilities=Capabilities(partial_reset=False, max_envs=1),
        availability=lambda: unavailable_unless(
            installed_release().next_step_autoreset_wrapper,
            "next-step Autoreset wrapper (0.29's AutoResetWrapper resets in the same step)",
        ),
    )
)
