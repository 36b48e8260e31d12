"""Driving a user's env (env-author mode): the bare env twice with the case's seeds and sampled
actions (once, as far as the stacks go, for ``env.stack_equivalence``'s ``stacks_only`` cases), on
past its first episode ends (:func:`_horizon`), the probe of a step past an episode end,
and :class:`EnvRun`, everything the specs read, which runs the stacks (:mod:`.stacks`), the wrapper
layers and the edge and seed-stream probes only when a spec asks."""

from __future__ import annotations

import contextlib
import functools
import pickle
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from rlconform.core.compare import first_difference
from rlconform.core.config import episode_seconds
from rlconform.core.hangs import hung_call
from rlconform.core.system import Capabilities, System
from rlconform.core.watchdog import CallTimeout, call_timeout, deadline
from rlconform.envs.batching import leaf_bytes
from rlconform.envs.driver import ActionCodec, Run
from rlconform.envs.plan import Case, Op, Reset, Step, reset_options
from rlconform.envs.script import EnvScript
from rlconform.envs.time_limits import declared_time_limit, no_end_reason
from rlconform.envs.whole_run import WholeRunRecord
from rlconform.libraries.envauthor import stack_pool, stacks
from rlconform.libraries.envauthor.case import EnvCase, _action_stream, _batch, _drive, _factory, _sampled
from rlconform.libraries.envauthor.layers import LayerRun, LayerTap, drive_layers
from rlconform.libraries.envauthor.probes import edge_actions, probe_edges, probe_stream
from rlconform.libraries.envauthor.stacks import StackResult
from rlconform.libraries.envauthor.torch_envs import to_env_action, torch_device
from rlconform.specs.families import GYMNASIUM_ENV


@dataclass
class EnvRun(WholeRunRecord):
    """Everything the env-author specs read; the stacks are run only when a spec asks."""

    system: System
    case: EnvCase
    build_error: str | None = None
    first: Run | None = None
    second: Run | None = None
    after_end: dict[str, Any] = field(default_factory=dict)
    _stacks: list[StackResult] | None = None
    #: the search had driven the stacks on its first examples: this one was not run through them
    stacks_left_out: bool = False
    _layers: tuple[LayerRun | None] | None = None
    actions: list[list[Any]] = field(default_factory=list)
    observation_space: Any = None
    action_space: Any = None
    #: a torch-native env's device (its reset returned tensors there); None for a NumPy env
    torch_device: str | None = None
    #: the steps each copy is driven: the case's, or more, to one step past the first episode end
    #: of every copy and on into the next episodes (see :func:`_horizon`)
    horizon: int = 0
    #: per copy: the step of its first episode end in the bare env (None: none was reached)
    first_ends: list[int | None] = field(default_factory=list)
    #: why the episodes were not driven to their end (no end within the time budget, too long)
    ends_missed: str | None = None
    #: bytes of one observation (the first reset's), bounding how long an example may be
    observation_bytes: int = 0
    _edges: dict[str, Any] | None = None
    _stream: dict[str, Any] | None = None

    @property
    def stack_steps(self) -> int:
        """The steps each stack drives the copies: the :attr:`horizon`, except in the episode-end
        case whose episodes could not be driven to their end (:attr:`ends_missed`). That case
        crosses no end through a stack whatever its length, so the stacks drive it
        :data:`STACK_STEPS_WITHOUT_END` steps, as they drive a drawn case: driving a slow env's
        three copies 40 steps through eleven stacks was a sixth of a CarRacing check, for nothing
        the drawn cases do not check (issue 39: "stop an episode that cannot end within its budget
        early, and say so": env.stack_equivalence names the steps driven)."""
        if self.case.to_end and self.ends_missed is not None:
            return min(self.horizon, STACK_STEPS_WITHOUT_END)
        return self.horizon

    #: the bare env's replays of this example, by the resets and actions replayed (see replay)
    _replays: dict[bytes, list[dict[str, Any]]] = field(default_factory=dict)

    def replay(
        self,
        make: Callable[[tuple[int | None, ...], list[Any]], list[dict[str, Any]]],
        resets: tuple[int | None, ...],
        actions: list[Any],
    ) -> list[dict[str, Any]]:
        """The bare env's transitions after ``resets`` under ``actions`` (``make`` replays them),
        replayed once per example: Gymnasium's and SB3's stacks seed copy i alike and deliver the
        same actions, so eight of the eleven stacks ask for the same replays, and for a slow env
        (CarRacing: 13 ms a step) the replays were half of the stacks' time. The transitions are
        only read."""
        try:
            key = pickle.dumps((resets, actions))
        except Exception:  # actions that do not pickle: replayed every time
            return make(resets, actions)
        if key not in self._replays:
            self._replays[key] = make(resets, actions)
        return self._replays[key]

    @property
    def usable(self) -> bool:
        return self.build_error is None and self.first is not None

    def hang(self) -> str | None:
        """The first call of the bare env's runs that hung (the stacks' runs have their own)."""
        for part in (self.first, self.second):
            found = None if part is None else part.hang()
            if found is not None:
                return found
        return None

    @property
    def call_deadline(self) -> float:
        """The bare run's call deadline."""
        return self.first.call_timeout if self.first is not None else 0.0

    def edges(self) -> dict[str, Any]:
        """The env stepped once with each action at the edges of its action space
        (:func:`rlconform.libraries.envauthor.probes.probe_edges`); ``edges`` lists them."""
        if self._edges is None:
            edges = edge_actions(self.action_space)
            self._edges = {"edges": edges}
            if edges:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    self._edges |= probe_edges(_factory(self.system), self.case.seed, edges, self.torch_device)
        return self._edges

    def stream(self) -> dict[str, Any]:
        """Episodes after seeded and unseeded resets (:func:`rlconform.libraries.envauthor.probes.probe_stream`)."""
        if self._stream is None:
            no_end = _no_end(self.system.id, _factory(self.system))
            if no_end is not None:
                self._stream = {"no_end": no_end}
            else:
                device, space, action_seed = self.torch_device, self.action_space, self.case.action_seed

                def actions() -> Iterator[Any]:
                    return (to_env_action(a, device) for a in _action_stream(space, action_seed))

                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    self._stream = probe_stream(_factory(self.system), self.case.seed, actions, 2 * episode_seconds())
        return self._stream

    def layers(self) -> LayerRun | None:
        """The env's wrapper layers driven once with the first copy's actions (None: no layers):
        what they answered in the fresh replay (:attr:`second`), else driven now."""
        if self._layers is None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                actions = [to_env_action(a, self.torch_device) for a in self.actions[0]] if self.actions else []
                self._layers = (drive_layers(_factory(self.system), self.case.seed, actions),)
        return self._layers[0]

    def stacks(self) -> list[StackResult]:
        """The env run through each chosen stack that can run here; none where the bare env hung,
        and none where the search already drove the stacks on its first examples
        (``stacks_left_out``; :func:`rlconform.libraries.envauthor.stack_pool.take_stack_example`)."""
        if self._stacks is None and hung_call(self) is not None:
            self._stacks = []  # an env that hung bare is not put into stacks to hang again
        if self._stacks is None and not stack_pool.take_stack_example(self.system.id):
            self._stacks = []
            self.stacks_left_out = True
        if self._stacks is None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                # looked up on the stacks module, where STACKS and stack_skip_reason live
                self._stacks = [
                    stacks._run_stack(self, stack_id)
                    for stack_id in stacks.chosen_stacks(self.system)
                    if not stacks.stack_skip_reason(stack_id)
                ]
            if any(stacks.disagrees(result) for result in self._stacks):
                stack_pool.saw_disagreement(self.system.id)
        return self._stacks


def _bare_system(system: System) -> System:
    return System(
        id=f"{system.id}#bare",
        family=GYMNASIUM_ENV,
        title=f"{system.title}, bare",
        build=lambda env_fns: env_fns[0](),
        source=system.source,
        kind="user",
        capabilities=Capabilities(partial_reset=False, max_envs=1),
    )


def execute_user_env(system: System, case: EnvCase) -> EnvRun:
    with warnings.catch_warnings():
        # the env's own warnings (Gymnasium's passive checker) belong to the env, not the report
        warnings.simplefilter("ignore")
        run = _execute_user_env(system, case)
    if case.stacks_only:
        _keep_bare_replay(run)
    return run


def _keep_bare_replay(run: EnvRun) -> None:
    """Keep a ``stacks_only`` run's bare pass as the replay of copy 0 that Gymnasium's and SB3's
    stacks ask for (:meth:`EnvRun.replay`): seeded ``seed + 0`` and given copy 0's actions, they ask
    for exactly that run, which :func:`rlconform.libraries.envauthor.stacks._replay` would make again
    (a CarRacing check spent 2-3 s of its stack worker on it). Kept only where the pass is what a
    replay makes: every call answered, the seeded reset made without options, no episode end before
    the last step (a replay resets with ``reset()``, the driver with ``reset(seed=None)``), and as
    many steps as the stacks drive."""
    first = run.first
    if first is None or first.build_error is not None or hung_call(first) is not None:
        return
    if reset_options(Reset(seed=run.case.seed)) is not None:
        return
    calls = first.calls
    steps = run.stack_steps
    if len(calls) != steps + 1 or not isinstance(calls[0].op, Reset) or any(call.failed for call in calls):
        return
    reset = calls[0].result_live
    if not (isinstance(reset, tuple) and len(reset) == 2):
        return  # not what a replay reads (the api spec reports it): the stacks replay as before
    obs = reset[0]
    transitions = []
    for t, call in enumerate(calls[1:]):
        result = call.result_live
        if not (isinstance(call.op, Step) and isinstance(result, tuple) and len(result) == 5):
            return
        next_obs, reward, terminated, truncated, _ = result
        try:
            transition = stacks.replayed_transition(obs, call.op.actions[0], reward, next_obs, terminated, truncated)
        except (TypeError, ValueError):  # a reward or flag a replay could not read either
            return
        transitions.append(transition)
        if (transition["terminated"] or transition["truncated"]) and t < steps - 1:
            return  # the driver's implied reset is not the replay's
        obs = next_obs
    actions = [to_env_action(a, run.torch_device) for a in run.actions[0][:steps]]
    with contextlib.suppress(Exception):  # actions that do not pickle: every stack replays
        run._replays[pickle.dumps(((run.case.seed,), actions))] = transitions


def _execute_user_env(system: System, case: EnvCase) -> EnvRun:
    factory = _factory(system)
    run = EnvRun(system=system, case=case)
    probed = _PROBED.get(system.id)
    if probed is None or probed[0] is not factory:
        try:
            probe = factory()
            spaces = probe.observation_space, probe.action_space
            probed = _PROBED[system.id] = (factory, *spaces, *_returns_tensors_on(probe, case.seed))
            probe.close()
        except Exception as exc:
            _PROBED.pop(system.id, None)
            run.build_error = f"{type(exc).__name__}: {exc}"
            return run
    _, run.observation_space, run.action_space, run.torch_device, run.observation_bytes = probed
    device = run.torch_device
    codec = ActionCodec(
        single=lambda value: to_env_action(value, device), batch=functools.partial(_batch, run.action_space)
    )
    bare = _bare_system(system)

    def drive_bare(horizon: int, driven: int | None = None) -> None:
        """Draw each copy's ``horizon`` actions and drive the bare env with the first ``driven``
        of copy 0's (all of them by default): twice from the seeded reset, once for a
        ``stacks_only`` case."""
        run.horizon = horizon
        run.actions = [_sampled(run.action_space, case.action_seed + i, horizon) for i in range(case.num_envs)]
        steps = [Step((a,)) for a in run.actions[0][:driven]]
        ops: tuple[Op, ...] = (Reset(seed=case.seed), *steps)
        if not case.stacks_only:
            ops = (*ops, Reset(seed=case.seed), *steps)
        run.first = _drive(bare, Case(EnvScript(), 1, ops), [factory], codec)
        if run.first.build_error is not None and not run.first.calls:
            # the env was built once for the check (_PROBED): this example's build failed
            run.build_error = run.first.build_error.splitlines()[0]

    # a stacks_only episode-end case is driven bare no further than the stacks drive it where its
    # ends cannot be reached (STACK_STEPS_WITHOUT_END), until they are known
    first_driven = min(case.steps, STACK_STEPS_WITHOUT_END) if case.stacks_only and case.to_end else case.steps
    drive_bare(case.steps, first_driven)
    if hung_call(run.first) is not None:
        return run  # the env hung: driving it again would only wait for the deadline again
    if case.stacks_only and not case.to_end:
        return run  # the stacks replay the bare env themselves: nothing else is read of this run
    actions = (to_env_action(a, device) for a in _action_stream(run.action_space, case.action_seed))
    run.after_end = _probe_after_end(system.id, factory, case.seed, actions, episode_seconds())
    # only the episode-end case is driven past the ends (EnvCase): the others keep their own steps
    horizon = _horizon(run, factory) if case.to_end else case.steps
    if case.stacks_only:
        run.horizon = horizon
        if horizon > case.steps or run.stack_steps > first_driven:
            drive_bare(horizon, run.stack_steps)  # as far as the stacks drive the copies
        return run
    if horizon > case.steps:
        drive_bare(horizon)  # the same actions, continued: every copy reaches its episode end
        if hung_call(run.first) is not None:
            return run
    steps = [Step((a,)) for a in run.actions[0]]
    # the fresh replay is also the run env.wrapper_layers reads: each layer tapped (LayerTap)
    taps: list[LayerTap] = []

    def tapped() -> Any:
        env = factory()
        taps.append(LayerTap(env))
        return env

    run.second = _drive(bare, Case(EnvScript(), 1, (Reset(seed=case.seed), *steps)), [tapped], codec)
    if len(taps) == 1 and hung_call(run.second) is None:
        run._layers = (taps[0].layer_run(),)
    return run


#: the most steps an example drives each copy to reach its episode ends
MAX_HORIZON = 5000
#: the steps the stacks drive the episode-end case where its episodes could not end (EnvRun.stack_steps)
STACK_STEPS_WITHOUT_END = 8


#: the most bytes of observations an example records per copy and run (a long episode of images
#: is driven only as far as this allows: every stack's run of an example is kept while it is searched)
MAX_RECORDED_BYTES = 4 * 2**20


#: steps driven past the last copy's first episode end, at most: copies a stack seeds otherwise than
#: the bare env (TorchRL) end elsewhere, and the next episodes' first steps cross the stack too
PAST_THE_END = 40


def _horizon(run: EnvRun, factory: Callable[[], Any]) -> int:
    """The steps each copy of ``run``'s case is driven: the case's, or, where the bare env's first
    episodes end later, one step past the last copy's first end plus up to ``PAST_THE_END`` more
    (as many as that episode's length, when shorter). The ends are found as
    :func:`_probe_after_end` finds them (the copy's seed and action stream, for at most
    ``episode_seconds()``); ``run.ends_missed`` says why the episodes were not driven to their end."""
    case = run.case
    after_end = run.after_end
    if not after_end.get("ended"):
        if "no_end" in after_end:
            run.ends_missed = after_end["no_end"]
        elif "error" in after_end:
            run.ends_missed = f"driving an episode to its end failed ({after_end['error']})"
        return case.steps
    run.first_ends = [int(after_end["steps"])]
    for i in range(1, case.num_envs):
        actions = (to_env_action(a, run.torch_device) for a in _action_stream(run.action_space, case.action_seed + i))
        run.first_ends.append(_first_end(run.system.id, factory, case.seed + i, actions, episode_seconds()))
    ends = [end for end in run.first_ends if end is not None]
    if len(ends) < len(run.first_ends):
        run.ends_missed = f"a copy's episode did not end within {episode_seconds():g} s of random actions"
    last = max(ends)
    limit = min(MAX_HORIZON, MAX_RECORDED_BYTES // max(1, run.observation_bytes))
    if last + 1 > limit:
        run.ends_missed = (
            f"the first episode ended after {last} steps, past the {limit} steps an example records "
            f"({run.observation_bytes} bytes per observation)"
        )
        return case.steps
    return max(case.steps, min(limit, last + 1 + min(last, PAST_THE_END)))


def _first_end(
    system_id: str, factory: Callable[[], Any], seed: int, actions: Iterator[Any], budget: float
) -> int | None:
    """The step at which the first episode after ``reset(seed=seed)`` ends under ``actions``
    (None: none within ``budget`` seconds, or the env raised)."""
    if _no_end(system_id, factory) is not None:
        return None
    try:
        with deadline(budget + call_timeout(user_envs=True) * 4):
            env = factory()
            try:
                env.reset(seed=seed)
                start = time.monotonic()
                steps = 0
                while time.monotonic() - start < budget:
                    result = env.step(next(actions))
                    steps += 1
                    if result[2] or result[3]:
                        return steps
            finally:
                env.close()
    except (Exception, CallTimeout):
        return None
    return None


def episode_ends(run: Run) -> int:
    """The episode ends (terminated or truncated) the bare env's steps of ``run`` returned."""
    ends = 0
    for call in run.calls:
        if isinstance(call.op, Step) and not call.failed and isinstance(call.result_snapshot, tuple):
            result = call.result_snapshot
            if len(result) == 5 and (bool(result[2]) or bool(result[3])):
                ends += 1
    return ends


def _returns_tensors_on(env: Any, seed: int) -> tuple[str | None, int]:
    """The device of the torch tensors the env's reset returns (a torch-native env), or None (a
    NumPy env, or a reset that fails: the api spec reports that one); and the observation's size
    in bytes."""
    try:
        obs, _ = env.reset(seed=seed)
    except Exception:
        return None, 0
    return torch_device(obs), leaf_bytes(obs)


#: per user system, what its env showed when first built (a later example's build that fails is the
#: bare run's build error): the factory it came from (two factories may share a name, two
#: ``functools.partial`` say: only the same factory object reads it), its observation and action
#: spaces, the device of the tensors its seeded reset returned (None: NumPy) and the bytes of that
#: observation. Built and reset once per check, not per example: a CarRacing reset generates a track
#: (50 ms), and a check makes some fifty examples
_PROBED: dict[str, tuple[Any, Any, Any, str | None, int]] = {}


#: systems whose probe already ran a whole budget without an episode end, with the factory probed
#: (two factories may share a name: only the same factory object reads it) and why no end was seen
#: (:func:`rlconform.envs.time_limits.no_end_reason`): later examples do not spend it again (an env that
#: does not end in one budget is not expected to in the next)
_NO_END: dict[str, tuple[Any, str]] = {}


def _no_end(system_id: str, factory: Any) -> str | None:
    """Why ``factory``'s episodes were already found not to end within the budget (None: not found)."""
    found = _NO_END.get(system_id)
    return found[1] if found is not None and found[0] is factory else None


def _probe_after_end(
    system_id: str, factory: Callable[[], Any], seed: int, actions: Iterator[Any], budget: float
) -> dict[str, Any]:
    """Step an env until its first episode ends (for at most ``budget`` seconds), once more
    without reset, then reset(seed): the reset must give what a fresh env's reset(seed) gives."""
    out: dict[str, Any] = {"ended": False}
    no_end = _no_end(system_id, factory)
    if no_end is not None:
        out["no_end"] = no_end
        return out
    try:
        with deadline(budget + call_timeout(user_envs=True) * 4):
            fresh = factory()
            expected, _ = fresh.reset(seed=seed)
            fresh.close()
            env = factory()
            env.reset(seed=seed)
            start = time.monotonic()
            first = None
            steps = 0
            while time.monotonic() - start < budget:
                action = next(actions)
                first = action if first is None else first
                _, _, terminated, truncated, _ = env.step(action)
                steps += 1
                if terminated or truncated:
                    out["ended"] = True
                    break
            out["steps"] = steps
            if out["ended"]:
                try:
                    env.step(first)
                    out["step_after_end"] = "returned"
                except Exception as exc:
                    out["step_after_end"] = f"raised {type(exc).__name__}"
                got, _ = env.reset(seed=seed)
                out["difference"] = first_difference(got, expected)
            else:
                out["no_end"] = no_end_reason(budget, steps, declared_time_limit(getattr(env, "spec", None)))
                _NO_END[system_id] = (factory, out["no_end"])
            env.close()
    except (Exception, CallTimeout) as exc:
        out["error"] = f"{type(exc).__name__}: {exc}"
    return out
