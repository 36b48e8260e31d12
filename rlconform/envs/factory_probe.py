"""Which env configurations a user's factory accepts, found by building it around reference envs.

A user's factory is a vectorizer or a wrapper stack nobody here wrote. Some stacks take only some
envs: ``RescaleAction`` and ``ClipAction`` need Box actions, ``VecNormalize`` refuses Tuple
observations. Drawing cases such a stack refuses would blame it for a documented limit, and a
first probe with one fixed env would refuse the stack as bad input. So the probe drives the
factory once per candidate observation and action kind (build, ``reset``, one ``step``, close),
keeps the kinds it accepts and names the ones it refused; the cases are then drawn from the
accepted kinds only.

The same runs show whether the factory uses the envs it is given at all: a system whose calls
succeed while no reference env logged a single call built envs of its own, and nothing it returns
could be checked against ground truth.
"""

from __future__ import annotations

import dataclasses
import glob
import os
import shutil
import tempfile
from dataclasses import dataclass
from typing import Any, Literal

from rlconform.core.hangs import hung_call
from rlconform.core.runner import quiet_library_logs
from rlconform.core.system import Capabilities, StackSemantics, System, stack_reading
from rlconform.core.verdict import internal_error_message
from rlconform.envs.calllog import FileSink
from rlconform.envs.driver import LiveRun, ReferenceEnvFamily
from rlconform.envs.plan import Case, Reset, Step
from rlconform.envs.script import EnvScript
from rlconform.envs.spaces import (
    IMAGE_KINDS,
    ActionValue,
    ActSpec,
    BoxAction,
    BoxObs,
    DictObs,
    DiscreteAction,
    DiscreteObs,
    MultiBinaryObs,
    MultiDiscreteAction,
    MultiDiscreteObs,
    ObsSpec,
    SmallDiscreteObs,
    TupleObs,
    image_obs,
)

#: one candidate per observation kind, the simplest first (the base of the other trials); the
#: image kinds, tried only where a flat Box was refused, and the small Discrete, tried only where
#: the stamp-packing Discrete was refused (a one-hot wrapper), last (:func:`_eligible`)
OBS_CANDIDATES: tuple[ObsSpec, ...] = (
    BoxObs(),
    DiscreteObs(),
    MultiDiscreteObs(),
    MultiBinaryObs(),
    DictObs((("state", BoxObs()),)),
    TupleObs((BoxObs(),)),
    *(image_obs(kind) for kind in IMAGE_KINDS.values()),
    SmallDiscreteObs(),
)
#: one candidate per action kind
ACTION_CANDIDATES: tuple[ActSpec, ...] = (DiscreteAction(), BoxAction(), MultiDiscreteAction())
#: a Dict with a non-Box leaf: accepted only by stacks that handle every leaf kind
MIXED_DICT = DictObs((("state", BoxObs()), ("tag", DiscreteObs())))

#: internal: rlconform's own code raised while driving the factory (never the factory's fault)
TrialOutcome = Literal["ok", "refused", "unbuilt", "ignored", "shared", "internal", "untried"]


@dataclass(frozen=True)
class Trial:
    """The factory driven once with one observation and one action kind."""

    script: EnvScript
    outcome: TrialOutcome
    #: why it was refused or not built (the failing call and its exception)
    reason: str = ""
    #: a call (reset, step or close) did not answer within its deadline: further trials would each
    #: wait for it again (a vectorizer whose step never returns cost the probe 18 deadlines)
    hung: bool = False
    #: the built stack's semantics (rlconform.core.system.STACK_KEYS), for a trial that ran cleanly
    stack: StackSemantics | None = None

    @property
    def ok(self) -> bool:
        return self.outcome == "ok"

    def label(self) -> str:
        return f"{self.script.obs.kind} observations with {self.script.action.kind} actions"


@dataclass(frozen=True)
class Acceptance:
    """What the trials found: the accepted kinds (empty when no trial ran cleanly)."""

    trials: tuple[Trial, ...]
    obs_kinds: frozenset[str]
    action_kinds: frozenset[str]
    composite_box_leaves_only: bool
    #: why the factory refused a partial reset (``reset_mask``), if it did
    partial_reset_refused: str | None = None

    @property
    def base(self) -> EnvScript | None:
        """A script the factory accepts (None: none was found)."""
        return next((t.script for t in self.trials if t.ok), None)

    @property
    def ignored_env_fns(self) -> bool:
        """No trial ran cleanly and one succeeded without any reference env seeing a call."""
        return self.base is None and any(t.outcome == "ignored" for t in self.trials)

    @property
    def shared_sub_envs(self) -> Trial | None:
        """No trial ran cleanly and one drove a sub-env as several env instances at once: copies
        of TorchRL's env_fn in worker processes each built it."""
        if self.base is not None:
            return None
        return next((t for t in self.trials if t.outcome == "shared"), None)

    @property
    def stack_semantics(self) -> StackSemantics | None:
        """The stack semantics every clean trial read, if they all read the same (None otherwise:
        a factory whose stack changes with the envs it is given is decided example by example)."""
        readings = {t.stack for t in self.trials if t.ok}
        return readings.pop() if len(readings) == 1 else None

    def refusals(self) -> list[str]:
        """The kinds refused, one line each, for the report. The small Discrete, tried because the
        stamp-packing Discrete was refused, is not named again when it was refused too: the
        Discrete line already says that no Discrete observation was exercised."""
        refused = [t for t in self.trials if t.outcome in ("refused", "unbuilt", "internal")]
        discrete = any(t.script.obs.kind == DiscreteObs.kind for t in refused)
        return [
            f"{t.label()}: {t.reason}" for t in refused if not (discrete and isinstance(t.script.obs, SmallDiscreteObs))
        ]

    def restrict(self, caps: Capabilities) -> Capabilities:
        """``caps`` narrowed to the accepted kinds, with a note saying which were exercised."""
        if self.base is None:
            return caps
        note = (
            f"probed: exercised with {', '.join(sorted(self.obs_kinds))} observations and "
            f"{', '.join(sorted(self.action_kinds))} actions"
        )
        refused = self.refusals()
        if refused:
            note += "; not exercised (refused by the factory, or an internal error): " + "; ".join(refused)
        if self.partial_reset_refused is not None:
            note += f"; partial resets not exercised (refused by the factory: {self.partial_reset_refused})"
        return dataclasses.replace(
            caps,
            partial_reset=caps.partial_reset and self.partial_reset_refused is None,
            obs_kinds=self.obs_kinds,
            action_kinds=self.action_kinds,
            composite_box_leaves_only=caps.composite_box_leaves_only or self.composite_box_leaves_only,
            notes=(*caps.notes, note),
        )


def plain_value(spec: ActSpec) -> ActionValue:
    """A valid action of ``spec`` in reference-env units: the centre of a Box, index 0 otherwise."""
    if isinstance(spec, BoxAction):
        return tuple(0.0 for _ in range(spec.dims))
    if isinstance(spec, DiscreteAction):
        return 0
    return tuple(0 for _ in spec.nvec)


@dataclass(frozen=True)
class InstanceLoggedEnv:
    """An env_fn for the trials: each call builds reference sub-env ``index`` logging to a file
    of its own, so that the trial can tell which env instances received the driver's calls, in
    whatever process they were built (files work across fork, spawn and forkserver)."""

    script: EnvScript
    index: int
    folder: str

    def __call__(self) -> Any:
        import uuid

        from rlconform.envs.reference_env import make_reference_env

        sink = FileSink(os.path.join(self.folder, f"env-{self.index}-{uuid.uuid4().hex}.log"))
        return make_reference_env(self.script, self.index, sink)


def driven_instances(folder: str, index: int, since_ns: int) -> int:
    """How many instances of sub-env ``index`` received a call at or after ``since_ns`` (the
    driver's first call: calls a library makes while it is built do not count)."""
    paths = glob.glob(os.path.join(glob.escape(folder), f"env-{index}-*.log"))
    return sum(any(record.t_ns >= since_ns for record in FileSink(path).read()) for path in paths)


def run_trial(
    system: System, family: ReferenceEnvFamily, script: EnvScript, num_envs: int, *, masked_reset: bool = False
) -> Trial:
    """Build ``system`` around ``num_envs`` reference envs following ``script``, reset it, step it
    once (then, with ``masked_reset``, reset its first sub-env alone) and close it (in the calling
    process: :func:`rlconform.core.user.probe` isolates the whole probe)."""
    action = plain_value(script.action)
    ops: tuple[Reset | Step, ...] = (Reset(seed=0), Step(tuple(action for _ in range(num_envs))))
    if masked_reset:
        ops += (Reset(mask=tuple(k == 0 for k in range(num_envs))),)
    case = Case(script, num_envs, ops)
    folder = tempfile.mkdtemp(prefix="rlconform-trial-")
    try:
        env_fns = [InstanceLoggedEnv(script, k, folder) for k in range(num_envs)]
        try:
            with quiet_library_logs():
                run = LiveRun(system, case, family=family, env_fns=env_fns).drive(case.ops)
        except Exception as exc:
            # the system's own failures are recorded in the run; this one is rlconform's
            return Trial(script, "internal", internal_error_message(exc).splitlines()[0])
        if run.build_error is not None:
            return Trial(script, "unbuilt", run.build_error.splitlines()[0])
        failed = next((call for call in run.calls if call.failed), None)
        if failed is not None:
            reason = f"{failed.source} raised {failed.error_type}: {failed.error_message}"
            return Trial(script, "refused", reason, hung=hung_call(run) is not None)
        since = run.calls[0].start_ns if run.calls else 0
        driven = [driven_instances(folder, k, since) for k in range(num_envs)]
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    if not any(driven):
        return Trial(script, "ignored")
    shared = [k for k, count in enumerate(driven) if count > 1]
    if shared and family.one_env_fn:
        return Trial(script, "shared", f"sub-env(s) {shared} were built and driven more than once at the same time")
    return Trial(script, "ok", hung=hung_call(run) is not None, stack=stack_reading(run.semantics))


def _eligible(obs: ObsSpec, caps: Capabilities) -> bool:
    """Whether the probe may try ``obs`` on a system of ``caps``: an image is a uint8 Box, so a
    family that takes uint8 Boxes is tried with images (its capabilities name no image kind); a
    small Discrete is a Discrete, so a family that takes Discrete is tried with it."""
    if isinstance(obs, SmallDiscreteObs):
        return obs.kind in caps.obs_kinds or DiscreteObs.kind in caps.obs_kinds
    if obs.kind in IMAGE_KINDS.values():
        return obs.kind in caps.obs_kinds or ("box" in caps.obs_kinds and "uint8" in caps.box_dtypes)
    return obs.kind in caps.obs_kinds


def accepted_kinds(system: System, family: ReferenceEnvFamily, num_envs: int) -> Acceptance:
    """Drive the factory with each candidate kind (see the module docstring).

    Images are tried only when the factory refused a flat Box (a stack that takes images only,
    VecTransposeImage or GrayscaleObservation): one that accepts Box is probed, and so drawn,
    exactly as before image kinds existed, and images are drawn only where Box is not
    (``strategies.image_kinds``). The small Discrete is tried, and drawn, only where the
    stamp-packing Discrete was refused (``strategies.small_discrete``): a one-hot wrapper
    (FlattenObservation) cannot build a vector of its ``n`` (about 2**40)."""
    caps = system.capabilities
    obs_options = [o for o in OBS_CANDIDATES if _eligible(o, caps)]
    action_options = [a for a in ACTION_CANDIDATES if a.kind in caps.action_kinds]
    trials: list[Trial] = []

    def attempt(obs: ObsSpec, action: ActSpec) -> Trial:
        if any(t.hung for t in trials):
            # a call that hangs would cost its whole deadline per trial: the kinds found so far
            # stand, and lifecycle.responsive reports the hang
            return Trial(EnvScript(obs=obs, action=action), "untried", "not tried: an earlier call hung")
        trial = run_trial(system, family, EnvScript(obs=obs, action=action), num_envs)
        trials.append(trial)
        return trial

    base: tuple[ObsSpec, ActSpec] | None = None
    for obs in obs_options:
        for action in action_options:
            trial = attempt(obs, action)
            if trial.outcome in ("ignored", "shared"):
                # how the factory treats the envs it is given does not depend on their kind
                return Acceptance(tuple(trials), frozenset(), frozenset(), False)
            if trial.ok:
                base = (obs, action)
                break
        if base is not None:
            break
    if base is None:
        return Acceptance(tuple(trials), frozenset(), frozenset(), False)
    tried = {(t.script.obs, t.script.action) for t in trials}
    obs_kinds = {base[0].kind}
    action_kinds = {base[1].kind}
    for action in action_options:
        if (base[0], action) not in tried and attempt(base[0], action).ok:
            action_kinds.add(action.kind)
    for obs in obs_options:
        if obs.kind in IMAGE_KINDS.values() and "box" in obs_kinds:
            continue
        if isinstance(obs, SmallDiscreteObs) and DiscreteObs.kind in obs_kinds:
            continue
        if (obs, base[1]) not in tried and attempt(obs, base[1]).ok:
            obs_kinds.add(obs.kind)
    box_leaves_only = False
    if "dict" in obs_kinds and not caps.composite_box_leaves_only:
        box_leaves_only = not attempt(MIXED_DICT, base[1]).ok
    partial_reset_refused = None
    if caps.partial_reset and not any(t.hung for t in trials):
        # a documented refusal (Gymnasium's NormalizeObservation) is the factory's choice: cases
        # then draw no partial reset, and the report says so
        masked = run_trial(system, family, EnvScript(obs=base[0], action=base[1]), num_envs, masked_reset=True)
        if masked.outcome == "refused":
            partial_reset_refused = masked.reason
    return Acceptance(
        tuple(trials), frozenset(obs_kinds), frozenset(action_kinds), box_leaves_only, partial_reset_refused
    )
