"""Family ``gymnasium.VectorEnv``: a ready-made vector env, vectorized natively (``--api gymnasium.VectorEnv``).

Gymnasium's ``vector_entry_point`` envs, envpool, JAX and GPU simulators, and the NumPy-batched
envs people write by hand build their own sub-envs: nothing can hand them rlconform's decodable
reference envs. They are checked black-box, against what the vector API documents and what the
env declares about itself: its autoreset mode (``metadata["autoreset_mode"]``, or the user's
``--autoreset-mode`` where the env declares none), its seeding scheme (``--seeding``: ``seed+i``
per sub-env, Gymnasium's convention and the default; ``shared``, one generator for every
sub-env; ``construction``, seeded when built only) and, where the user names one
(``--single-env``), the single env each sub-env must equal.

A case is a seed, an action seed, a number of steps and of sub-envs. The env is built
(``make(num_envs)``), reset with the seed and stepped with actions sampled from its single action
space (seeded per sub-env), resetting the ended sub-envs itself in DISABLED mode; then built
again and driven with the same seed and actions (determinism), and with other actions for every
sub-env but the first (independence). Two more drives give every sub-env the same actions,
reset with the seed and with the seed + 1 (seeding, without a single env: sub-envs seeded alike, a
seed ignored, and whether sub-env i of seed s is sub-env i - 1 of seed s + 1, the ``seed+i``
convention). Every output is snapshotted when it is returned, so that a later change of a returned
array is seen (aliasing).
"""

from __future__ import annotations

import contextlib
import copy
import functools
import inspect
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TextIO

import numpy as np

from rlconform.core.compare import first_difference
from rlconform.core.config import episode_seconds
from rlconform.core.family import FactoryShape
from rlconform.core.hangs import calls_hang
from rlconform.core.reproducer import ReproducerParts, case_lines, write
from rlconform.core.system import Capabilities, System
from rlconform.core.user import close_within_limit, load_callable
from rlconform.core.watchdog import CallTimeout, call_timeout, child_processes, deadline, reap
from rlconform.envs.batching import leaf_bytes
from rlconform.envs.time_limits import declared_time_limit, no_end_reason, positive_limit
from rlconform.envs.whole_run import WholeRunFamily, WholeRunRecord
from rlconform.libraries.gymnasium.options import (
    AUTORESET_OPTION,
    MODES,
    NATIVE_VECTOR_OPTIONS,
    SEEDING_OPTION,
    SINGLE_ENV_OPTION,
)
from rlconform.specs.families import NATIVE_VECTOR

if TYPE_CHECKING:
    from hypothesis.strategies import SearchStrategy

    from rlconform.core.spec import Spec


@dataclass(frozen=True)
class NativeCase:
    """One check of a ready-made vector env."""

    seed: int
    action_seed: int
    steps: int
    num_envs: int


@dataclass
class Call:
    """One call: what was sent, what came back (a deep copy taken on return) and the live value."""

    kind: str  # "reset" or "step"
    actions: Any = None
    #: the caller's action array as sent, copied before the call
    actions_sent: Any = None
    mask: Any = None
    snapshot: Any = None
    live: Any = None
    error: str | None = None
    #: the exception's type name (``CallTimeout``: the call did not answer within its deadline)
    error_type: str | None = None
    position: int = 0
    agent_step: int = 0

    @property
    def source(self) -> str:
        return f"envs.{self.kind}(...)"


@dataclass
class Drive:
    """One drive of the env over a case."""

    calls: list[Call] = field(default_factory=list)
    error: str | None = None
    closed_error: str | None = None
    #: worker processes still alive after close
    orphans: int = 0
    #: the same instance reset again, with ``again_seed``, and given the same actions: two fresh
    #: instances with the same history reset again with two seeds must part (vector.seeding)
    again: list[Call] = field(default_factory=list)


@dataclass
class NativeRun(WholeRunRecord):
    """What the specs read of one case (the core's RunRecord: ``system``, ``build_error``)."""

    system: System
    case: NativeCase
    build_error: str | None = None
    mode: str = "NextStep"
    #: where the mode came from: "metadata", "declared" (--autoreset-mode) or "assumed"
    mode_source: str = "assumed"
    seeding: str = "seed+i"
    num_envs: int = 0
    single_observation_space: Any = None
    single_action_space: Any = None
    observation_space: Any = None
    action_space: Any = None
    max_episode_steps: int | None = None
    #: where ``env.spec.max_episode_steps`` is not the limit the sub-envs were built with, says so
    stale_time_limit: str | None = None
    actions: list[list[Any]] = field(default_factory=list)
    #: how far the case was driven (its own steps, or past the first episode end)
    horizon: Horizon | None = None
    #: the library whose own class the built env is (:func:`library_of`; "": none)
    env_library: str = ""
    #: the library whose own env is under the user's wrappers (:func:`library_under`; "": none)
    library_below: str = ""
    first: Drive | None = None
    #: the same seed and actions again (hung_call reads ``first`` and ``second``)
    second: Drive | None = None
    #: sub-envs 1.. given other actions (sub-env 0's must not change)
    others: Drive | None = None
    #: NEXT_STEP: sub-env 0 given other actions on its reset steps only (None: it had none)
    reset_actions: Drive | None = None
    #: every sub-env given the same actions (:data:`ALIKE_STEPS` of them), reset with the seed
    alike: Drive | None = None
    #: the same actions, reset with the seed + 1 (under ``seed+i``, sub-env i there is sub-env i + 1
    #: of ``alike``)
    reseeded: Drive | None = None
    #: the single env's events per sub-env (:func:`single_events`), where --single-env names one
    single: list[list[dict[str, Any]]] | None = None
    single_error: str | None = None

    @property
    def usable(self) -> bool:
        """The env was built (the core's RunRecord)."""
        return self.build_error is None

    def hang(self) -> str | None:
        """The first call of the seeded drives that did not answer within its deadline."""
        for drive in (self.first, self.second):
            found = None if drive is None else calls_hang(drive.calls, 0.0, None, 0.0)
            if found is not None:
                return found
        return None


def _mode_of(env: Any) -> str | None:
    mode = (getattr(env, "metadata", None) or {}).get("autoreset_mode")
    if mode is None:
        return None
    value = str(getattr(mode, "value", mode))
    names = {m.lower(): m for m in MODES} | {"next_step": "NextStep", "same_step": "SameStep"}
    return names.get(value.lower(), value)


def stale_time_limit(spec: Any) -> str | None:
    """Where ``spec.max_episode_steps`` is not the limit the sub-envs were built with
    (``spec.kwargs["max_episode_steps"]``), a sentence that says so (FINDINGS.md G10)."""
    kwargs = getattr(spec, "kwargs", None)
    stated = getattr(spec, "max_episode_steps", None)
    if not isinstance(kwargs, dict) or "max_episode_steps" not in kwargs or stated == kwargs["max_episode_steps"]:
        return None
    built = kwargs["max_episode_steps"]
    return (
        f"env.spec.max_episode_steps is {stated!r}, but the sub-envs were built with max_episode_steps={built!r} "
        "(env.spec.kwargs; gymnasium.make_vec leaves the registered limit in the spec, FINDINGS.md G10): "
        + (f"checked against {built}" if positive_limit(built) else "no time limit is enforced")
    )


def _action_streams(space: Any, seed: int, num_envs: int, steps: int) -> list[list[Any]]:
    """Per sub-env, ``steps`` actions sampled from the single action space seeded ``seed + i``
    (a longer stream starts with a shorter one's actions)."""
    streams = []
    for i in range(num_envs):
        local = copy.deepcopy(space)
        local.seed(seed + i)
        streams.append([local.sample() for _ in range(steps)])
    return streams


#: the most steps a case is driven to reach an episode end (as env-author mode's horizon)
MAX_HORIZON = 5000
#: the most bytes of observation batches one drive records (every call is snapshotted)
MAX_RECORDED_BYTES = 16 * 2**20
#: steps driven past the first episode end: NEXT_STEP's reset step and the first step after it
PAST_THE_END = 2
#: systems whose probe ran a whole budget without an episode end: later examples do not spend it again
_NO_END: dict[str, str] = {}


@dataclass
class Horizon:
    """How far a case is driven: its own steps, or one step past the first episode end of any
    sub-env where that comes later (``ends_missed`` says why it could not be reached)."""

    steps: int
    first_end: int | None = None
    ends_missed: str | None = None


def horizon(system: System, env: Any, case: NativeCase, single_space: Any) -> Horizon:
    """Drive ``env`` (built for the case and not yet reset; its caller closes it) with the case's
    seed and first action streams until a sub-env's episode ends, for at most
    ``RLCONFORM_EPISODE_SECONDS``: envs whose episodes outlast a case's steps (Acrobot's 500,
    Pendulum's 200) are then driven past an end, so that the autoreset mode and the time limit are
    seen at work rather than "not exercised"."""
    if system.id in _NO_END:
        return Horizon(case.steps, ends_missed=_NO_END[system.id])
    budget = episode_seconds()
    generators = []
    for i in range(case.num_envs):
        local = copy.deepcopy(single_space)
        local.seed(case.action_seed + i)
        generators.append(local)
    steps, limit = 0, MAX_HORIZON
    try:
        with deadline(budget + call_timeout(user_envs=True) * 4):
            obs, _ = env.reset(seed=case.seed)
            limit = min(MAX_HORIZON, MAX_RECORDED_BYTES // max(1, leaf_bytes(obs)))
            start = time.monotonic()
            while time.monotonic() - start < budget and steps < limit:
                actions = _batch(single_space, [space.sample() for space in generators])
                result = env.step(actions)
                steps += 1
                if np.any(np.asarray(result[2], dtype=bool) | np.asarray(result[3], dtype=bool)):
                    return Horizon(max(case.steps, min(limit, steps + PAST_THE_END)), first_end=steps)
    except (Exception, CallTimeout) as exc:
        return Horizon(
            case.steps, ends_missed=f"driving the env to an episode end failed ({type(exc).__name__}: {exc})"
        )
    if steps >= limit:
        return Horizon(case.steps, ends_missed=f"no episode ended within {limit} steps (the most a case records)")
    _NO_END[system.id] = no_end_reason(budget, steps, declared_time_limit(getattr(env, "spec", None)))
    return Horizon(case.steps, ends_missed=_NO_END[system.id])


def _batch(space: Any, values: list[Any]) -> Any:
    from gymnasium.vector.utils import concatenate, create_empty_array

    return concatenate(space, values, create_empty_array(space, n=len(values)))  # type: ignore[arg-type]


#: the steps of the two seeding drives, long enough that sub-envs seeded apart part within them
ALIKE_STEPS = 24


def drive(
    factory: Callable[[int], Any],
    case: NativeCase,
    mode: str,
    streams: list[list[Any]],
    single_space: Any,
    *,
    seed: int | None = None,
    again_seed: int | None = None,
) -> Drive:
    """Build the env, reset it with ``seed`` (the case's by default) and step it with ``streams``;
    in DISABLED mode the ended sub-envs are reset with ``reset_mask`` before the next step, as the
    caller must. With ``again_seed``, the same instance is then reset with that seed and given the
    same actions once more (``Drive.again``)."""
    result = Drive()
    before = child_processes()
    try:
        env = factory(case.num_envs)
    except Exception as exc:
        result.error = f"building raised {type(exc).__name__}: {exc}"
        return result
    seed = case.seed if seed is None else seed
    steps = min((len(stream) for stream in streams), default=0)
    try:
        _episode(result.calls, env, mode, seed, streams, steps, single_space, case.num_envs)
        if again_seed is not None and result.calls and all(call.error is None for call in result.calls):
            _episode(result.again, env, mode, again_seed, streams, steps, single_space, case.num_envs)
    finally:
        try:
            close_within_limit(env.close)
        except Exception as exc:
            result.closed_error = f"{type(exc).__name__}: {exc}"
        result.orphans = len(child_processes() - before)
        reap(before)
    return result


def _episode(
    calls: list[Call], env: Any, mode: str, seed: int, streams: list[list[Any]], steps: int, single_space: Any, n: int
) -> None:
    """``reset(seed=seed)``, then ``steps`` steps of ``streams`` (the ended sub-envs reset with
    ``reset_mask`` in DISABLED mode), each call appended to ``calls``."""
    _call(calls, "reset", functools.partial(_seeded_reset, env, seed))
    done = np.zeros(n, dtype=bool)
    for t in range(steps):
        if calls[-1].error is not None:
            break
        if mode == "Disabled" and done.any():
            mask = done.copy()
            _call(calls, "reset", functools.partial(_masked_reset, env, mask), mask=mask)
            if calls[-1].error is not None:
                break
        actions = _batch(single_space, [streams[i][t] for i in range(n)])
        sent = copy.deepcopy(actions)
        _call(calls, "step", functools.partial(env.step, actions), actions=actions, sent=sent)
        call = calls[-1]
        if call.error is None and isinstance(call.snapshot, tuple) and len(call.snapshot) == 5:
            done = np.asarray(call.snapshot[2], dtype=bool) | np.asarray(call.snapshot[3], dtype=bool)


def _seeded_reset(env: Any, seed: int) -> Any:
    return env.reset(seed=seed)


def _masked_reset(env: Any, mask: np.ndarray) -> Any:
    return env.reset(options={"reset_mask": mask})


def _call(
    calls: list[Call], kind: str, fn: Callable[[], Any], *, actions: Any = None, sent: Any = None, mask: Any = None
) -> None:
    call = Call(kind, actions=actions, actions_sent=sent, mask=mask, position=len(calls))
    call.agent_step = sum(c.kind == "step" for c in calls) + (kind == "step")
    try:
        with deadline(call_timeout(user_envs=True)):
            call.live = fn()
        call.snapshot = copy.deepcopy(call.live)
    except (Exception, CallTimeout) as exc:
        call.error, call.error_type = f"{type(exc).__name__}: {exc}", type(exc).__name__
    calls.append(call)


def single_events(
    factory: Callable[[], Any], mode: str, case: NativeCase, streams: list[list[Any]]
) -> list[list[dict[str, Any]]]:
    """Per sub-env i: the single env reset with ``seed + i`` and given sub-env i's actions, across
    episodes: after an episode ends it is reset without a seed (it continues its own stream, as a
    vectorizer's autoreset does), and in NEXT_STEP mode the action of the vector env's reset step
    is not given to it. Each event is ``{"start": obs}`` (an episode's first observation) or a
    transition ``{"next_obs", "reward", "terminated", "truncated", "info"}``."""
    found = []
    for i in range(case.num_envs):
        env = factory()
        try:
            obs, _ = env.reset(seed=case.seed + i)
            events: list[dict[str, Any]] = [{"start": copy.deepcopy(obs)}]
            ended = False
            for action in streams[i]:
                if ended:
                    obs, _ = env.reset()
                    events.append({"start": copy.deepcopy(obs)})
                    ended = False
                    if mode == "NextStep":
                        continue  # the vector env's reset step: its action is ignored
                next_obs, reward, terminated, truncated, info = env.step(action)
                events.append(
                    {
                        "next_obs": copy.deepcopy(next_obs),
                        "reward": float(reward),
                        "terminated": bool(terminated),
                        "truncated": bool(truncated),
                        "info": copy.deepcopy(info),
                    }
                )
                ended = bool(terminated or truncated)
            found.append(events)
        finally:
            env.close()
    return found


def run_native_case(system: System, case: NativeCase) -> NativeRun:
    import warnings

    factory: Callable[[int], Any] = system.build  # type: ignore[assignment]  # this family builds from num_envs
    run = NativeRun(system=system, case=case, seeding=str(system.option(SEEDING_OPTION) or "seed+i"))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            probe = factory(case.num_envs)
    except Exception as exc:
        run.build_error = f"{type(exc).__name__}: {exc}"
        return run
    try:
        run.env_library = library_of(probe)
        run.library_below = library_under(probe)
        declared = _mode_of(probe)
        if declared is not None:
            run.mode, run.mode_source = declared, "metadata"
        elif system.option(AUTORESET_OPTION):
            run.mode, run.mode_source = str(system.option(AUTORESET_OPTION)), "declared"
        run.num_envs = int(getattr(probe, "num_envs", 0) or 0)
        run.single_observation_space = getattr(probe, "single_observation_space", None)
        run.single_action_space = getattr(probe, "single_action_space", None)
        run.observation_space = getattr(probe, "observation_space", None)
        run.action_space = getattr(probe, "action_space", None)
        run.max_episode_steps = declared_time_limit(getattr(probe, "spec", None))
        run.stale_time_limit = stale_time_limit(getattr(probe, "spec", None))
        if run.single_action_space is not None:
            # the env built to read what it declares drives the case to its first episode end
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                run.horizon = horizon(system, probe, case, run.single_action_space)
    finally:
        with contextlib.suppress(Exception):
            close_within_limit(probe.close)
    if run.single_action_space is None or run.horizon is None:
        return run  # api_shape reports it; nothing can be driven without the action space
    steps = run.horizon.steps
    streams = _action_streams(run.single_action_space, case.action_seed, case.num_envs, steps)
    other_streams = _action_streams(run.single_action_space, case.action_seed + 1000, case.num_envs, steps)
    others = [streams[0], *other_streams[1:]]
    run.actions = streams
    reseeds = run.seeding != "construction"  # under construction, reset(seed=...) is not its seeding
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # reset again with the seed, and with the seed + 1: a seed honoured on later resets too
        again = case.seed if reseeds else None
        run.first = drive(factory, case, run.mode, streams, run.single_action_space, again_seed=again)
        if any(call.error_type == CallTimeout.__name__ for call in run.first.calls):
            return run  # it hung: driving it again would only wait for the deadline again
        run.second = drive(
            factory, case, run.mode, streams, run.single_action_space, again_seed=None if again is None else again + 1
        )
        run.others = drive(factory, case, run.mode, others, run.single_action_space)
        reset_steps = _reset_steps_of_first(run.first) if run.mode == "NextStep" else []
        if reset_steps:
            changed = [list(stream) for stream in streams]
            alternatives = _action_streams(run.single_action_space, case.action_seed + 2000, 1, steps * 4)[0]
            for t in reset_steps:
                changed[0][t] = next(
                    (a for a in alternatives if first_difference(a, streams[0][t]) is not None), streams[0][t]
                )
            run.reset_actions = drive(factory, case, run.mode, changed, run.single_action_space)
        if reseeds:
            same = _action_streams(run.single_action_space, case.action_seed + 3000, 1, ALIKE_STEPS)[0]
            alike = [same] * case.num_envs
            run.alike = drive(factory, case, run.mode, alike, run.single_action_space)
            run.reseeded = drive(factory, case, run.mode, alike, run.single_action_space, seed=case.seed + 1)
        single = system.option(SINGLE_ENV_OPTION)
        if single and run.seeding == "seed+i":  # other schemes give sub-env i no seed to replay
            try:
                run.single = single_events(load_callable(str(single)), run.mode, case, streams)
            except Exception as exc:
                run.single_error = f"{type(exc).__name__}: {exc}"
    return run


def _reset_steps_of_first(first: Drive) -> list[int]:
    """The step indices (into the action streams) at which sub-env 0 is on its reset step: the
    steps right after one where it ended (NEXT_STEP)."""
    found = []
    t = 0
    ended = False
    for call in first.calls:
        if call.kind != "step" or call.error is not None or not isinstance(call.snapshot, tuple):
            continue
        if ended:
            found.append(t)
        ended = bool(np.asarray(call.snapshot[2])[0]) or bool(np.asarray(call.snapshot[3])[0])
        t += 1
    return found


def native_cases(system: System) -> SearchStrategy[NativeCase]:
    from hypothesis import strategies as st

    return st.builds(
        NativeCase,
        seed=st.integers(0, 2**16),
        action_seed=st.integers(0, 2**16),
        steps=st.integers(1, 60),
        num_envs=st.integers(2, 4),
    )


def native_reproducer(system: System, spec: Spec, case: NativeCase) -> str:
    """The reproducer of ``case``: a user's factory with its options, a bundled system by its id
    (its options are its own)."""
    options = {name: system.option(name) or None for name in (SINGLE_ENV_OPTION, SEEDING_OPTION, AUTORESET_OPTION)}
    about = (
        f"{system.title}: reset with seed {case.seed}, {case.num_envs} sub-envs, stepped {case.steps} times with\n"
        f"actions sampled from its action space seeded with {case.action_seed} (or, where no sub-env's episode\n"
        "ends within those steps, until one step past the first end)."
    )
    return write(ReproducerParts(system, spec, case_lines(case), NativeVectorFamily.api, about, options))


#: a library whose natively vectorized envs are bundled -> those bundled systems
LIBRARY_SYSTEMS: dict[str, tuple[str, ...]] = {"envpool": ("envpool.CartPole-v1", "envpool.Pendulum-v1")}


def library_under(env: Any) -> str:
    """The library of :data:`LIBRARY_SYSTEMS` whose own env is ``env`` or is under its wrappers
    (``env.env``, as Gymnasium's VectorWrapper keeps it); "" where none is."""
    seen = 0
    while env is not None and seen < 32:
        library = library_of(env)
        if library:
            return library
        env, seen = getattr(env, "env", None), seen + 1
    return ""


def library_of(env: Any) -> str:
    """The library of :data:`LIBRARY_SYSTEMS` whose own class ``env`` is: its class defined in
    that library, or generated by it (envpool makes each task's class at import, in module
    ``abc``) from the library's bases. A user's subclass or wrapper is the user's ("")."""
    cls = type(env)
    top = cls.__module__.split(".", 1)[0]
    if top in LIBRARY_SYSTEMS:
        return top
    if top != "abc":
        return ""
    for base in cls.__mro__[1:]:
        if base.__module__.split(".", 1)[0] in LIBRARY_SYSTEMS:
            return base.__module__.split(".", 1)[0]
    return ""


class NativeVectorFamily(WholeRunFamily):
    """Family ``gymnasium.VectorEnv`` (``--api gymnasium.VectorEnv``)."""

    name = NATIVE_VECTOR
    api = "gymnasium.VectorEnv"
    factory_signature = "(num_envs: int) -> gymnasium.vector.VectorEnv (a ready-made vector env)"
    options = NATIVE_VECTOR_OPTIONS
    factory_argument = "num_envs"
    claimed_classes = ("gymnasium.vector.vector_env.VectorEnv",)
    factory_shape = FactoryShape(
        returns=claimed_classes, return_names=("SyncVectorEnv", "AsyncVectorEnv", "VectorWrapper")
    )
    required_attributes = ("reset", "step", "num_envs", "single_action_space", "single_observation_space")
    #: the documented defects of the bundled library systems (a user's envpool factory inherits P1)
    findings = {("envpool.*", "vector.observations_in_space"): "P1"}

    def run_case(self, system: System, case: Any, *, with_model: bool) -> NativeRun:
        return run_native_case(system, case)

    def cases(self, system: System, scenario: str) -> SearchStrategy[Any]:
        return native_cases(system)

    def reproducer(self, system: System, spec: Spec, case: Any, run: Any) -> str:
        return native_reproducer(system, spec, case)

    def print_run(self, run: Any, case: Any, stream: TextIO) -> None:
        print(
            f"system: {run.system.source} (your vector env), {case}, mode {run.mode} ({run.mode_source})", file=stream
        )
        if run.build_error:
            print(f"build error: {run.build_error}", file=stream)

    def check_factory(self, signature: inspect.Signature) -> None:
        signature.bind(2)

    def user_system(self, fn: Callable[..., Any], reference: str, **options: Any) -> System:
        seeding = options.get(SEEDING_OPTION) or "seed+i"
        mode = options.get(AUTORESET_OPTION)
        single = options.get(SINGLE_ENV_OPTION)
        if single:
            load_callable(str(single))  # a typo is bad input now, not an error later
        given = tuple(
            (k, v) for k, v in ((SINGLE_ENV_OPTION, single), (SEEDING_OPTION, seeding), (AUTORESET_OPTION, mode)) if v
        )
        return self.user_system_of(
            reference,
            title=f"{reference}(num_envs) (your vector env)",
            build=fn,
            out_of_process=True,
            capabilities=Capabilities(partial_reset=True, min_envs=2, max_envs=4),
            description="a ready-made vector env, checked black-box against the vector API and its declarations",
            options=given,
        )

    def probe_build(self, system: System) -> Any:
        build: Callable[[int], Any] = system.build  # type: ignore[assignment]  # built from num_envs
        return build(2)

    def library_systems(self, run: Any) -> list[str]:
        """The bundled systems of the library whose own env the user's factory returned, or
        wrapped: a user's ``envpool.make_gymnasium(...)`` of any task is envpool's pool, as the
        bundled envpool systems are (a failure is replayed on them with the same case)."""
        return list(LIBRARY_SYSTEMS.get(str(getattr(run, "library_below", "")), ()))

    def built_from_library_classes(self, run: Any) -> bool:
        """The env's class is the library's own (no subclass or wrapper of the user's around it)."""
        return bool(getattr(run, "env_library", ""))


FAMILY = NativeVectorFamily()
