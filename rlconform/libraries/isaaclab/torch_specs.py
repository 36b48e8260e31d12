"""The specs of family ``isaaclab.torch`` (the torch tier, :mod:`rlconform.libraries.isaaclab.torch_tier`).

A system of this family is a :class:`~rlconform.libraries.isaaclab.torch_run.Target`: a ``(num_envs,
device)`` factory (the bundled torch-vectorized reference env, a real task, or a user's env),
optionally a wrapper to drive it through and an exact model. A search draws
:class:`~rlconform.libraries.isaaclab.torch_run.TorchCase` examples; each spec reads the violations the
contract monitor (and the wrapper comparison, and the model) recorded for its id.

Which specs apply: the monitor's to every system; the wrapper specs to systems driven through a
wrapper; the exact-model specs (``isaaclab.transitions``, ``isaaclab.flags``) to systems with a
model (a user's env has no decodable observations).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rlconform.core.impact import Impact
from rlconform.core.spec import Checker, Outcome, Spec, spec, spec_of
from rlconform.core.system import System
from rlconform.libraries.isaaclab import monitor as mon
from rlconform.libraries.isaaclab import wrappers as wr
from rlconform.libraries.isaaclab.torch_run import Target, TorchRun
from rlconform.libraries.isaaclab.user import isaaclab_installed
from rlconform.specs.families import ISAACLAB_TORCH

if TYPE_CHECKING:
    pass

NAME = ISAACLAB_TORCH
TRANSITIONS = "isaaclab.transitions"
MODEL_FLAGS = "isaaclab.flags"
MODEL_RESET = "isaaclab.reset"
MODEL_SPECS = (MODEL_RESET, TRANSITIONS, MODEL_FLAGS)

#: system id -> what it builds and drives
TARGETS: dict[str, Target] = {}


def target_of(system: System) -> Target:
    try:
        return TARGETS[system.id]
    except KeyError:
        raise KeyError(f"{system.id} is not an {NAME} system") from None


# ------------------------------------------------------------------------------------- specs


def _no_wrapper(system: System) -> str | None:
    return None if target_of(system).wrapper else "the system is the env itself, not driven through a wrapper"


def _no_model(system: System) -> str | None:
    if target_of(system).model:
        return None
    reason = "needs decodable observations (a reference env's exact model)"
    if system.kind == "user" and not isaaclab_installed():
        reason += (
            "; the bundled reference env that has them needs Isaac Lab (not installed here: scripts/install-isaaclab)"
        )
    return reason


def outcome(spec_id: str, run: TorchRun) -> Outcome:
    """A spec's outcome on one run: the violations the monitor recorded under its id."""
    ck = Checker(spec_id)
    if not run.usable:
        return ck.done()
    for note in run.notes:
        if spec_id == mon.ACTIONS or "action" not in note:
            ck.note(note)
    for note in run.spec_notes.get(spec_id, ()):
        ck.note(note)
    if spec_id in run.requirements:
        what, met, why_not, occasion = run.requirements[spec_id]
        ck.requires(what, met, why_not, occasion=occasion)
    for label, n in run.tallies.get(spec_id, ()):
        ck.count(label, n)
    ck.outcome.checked += run.env_steps
    for violation in run.violations:
        if violation.spec == spec_id:
            ck.fail(violation.render(), call=violation.call)
    extra = run.counts.get(spec_id, 0) - sum(v.spec == spec_id for v in run.violations)
    if extra > 0:
        ck.note(f"{extra} more call(s) broke it (the first {mon.KEEP} are shown)")
    return ck.done()


_TEXTS: dict[str, tuple[str, str, Any]] = {
    mon.API: (
        "reset returns (obs, extras) and step (obs, reward, terminated, time_outs, extras), with obs a dict holding "
        "a 'policy' tensor and extras a dict.",
        "Every Isaac Lab wrapper and learning library indexes these positions and keys.",
        None,
    ),
    mon.TIME_LIMIT: (
        "No episode runs past env.max_episode_length steps without ending.",
        "Isaac Lab declares the episode length in steps (ceil(episode_length_s / step_dt)); time-out "
        "bootstrapping and episode statistics rely on it.",
        None,
    ),
    mon.TIME_OUTS: (
        "An episode that ends when its episode_length_buf reaches max_episode_length is reported in time_outs "
        "(and in terminated too where it also terminated on that step).",
        "A learner bootstraps time-outs and not terminations: a time-out reported only as a termination teaches "
        "the value of the last state as if the task had ended there. Isaac Lab's tasks compute time_outs as "
        "episode_length_buf >= max_episode_length, apart from the termination.",
        None,
    ),
    mon.AUTORESET: (
        "A sub-env that ends is reset in the same step: its episode_length_buf is 0, and its returned row is the "
        "next episode's first observation (computed after its _reset_idx; exact model: decoded); one that does "
        "not end continues its episode.",
        "Isaac Lab's documented autoreset mode is SameStep; a learner takes the returned row as the next "
        "episode's start, and a row read before the reset starts it from the ended episode's last state.",
        None,
    ),
    mon.REWARD_ORDER: (
        "The reward returned for a sub-env that ends is computed before its reset (DirectRLEnv.step calls "
        "_get_rewards before _reset_idx), from the state its last step reached.",
        "A reward computed after the reset scores the next episode's first state: every episode's last reward, "
        "the one that says how it ended, is wrong.",
        None,
    ),
    mon.FINAL_OBS: (
        "A step in which some sub-env ends returns its terminal observation in extras['final_obs']['policy'], "
        "written in that step (exact model: the row is the episode's last observation).",
        "Without it the transition's next observation is the next episode's first: time-out bootstrapping "
        "evaluates the wrong state. Isaac Lab computes it only with cfg.compute_final_obs (default False) "
        "and leaves it in extras afterwards.",
        None,
    ),
    mon.STABLE: (
        "What reset or step returned does not change afterwards.",
        "A caller that stores the returned tensors without cloning them (a rollout buffer) otherwise stores "
        "later values. DirectRLEnv returns its persistent reset_terminated/reset_time_outs buffers.",
        None,
    ),
    wr.OBS: (
        "The observation the wrapper hands the agent after a step is the env's.",
        "The wrapper stands between the env and the learner; anything it changes is what the learner trains on.",
        _no_wrapper,
    ),
    wr.REWARDS: (
        "The wrapper's reward is the env's.",
        "The wrapper stands between the env and the learner: a reward it scales, delays or takes from another "
        "sub-env is what the learner's returns and advantages are computed from.",
        _no_wrapper,
    ),
    wr.FLAGS: (
        "The wrapper reports as ending exactly the sub-envs the env ended, and as terminated (not bootstrapped) "
        "exactly those the env terminated; one both terminated and timed out is terminated.",
        "A learner bootstraps time-outs and not terminations: a termination reported as a time-out bootstraps "
        "a value past the end of the episode.",
        _no_wrapper,
    ),
    wr.TERMINAL: (
        "The next observation of each transition the wrapper yields is the env's: extras['final_obs'] for a "
        "sub-env that ended, the returned observation otherwise.",
        "Time-out bootstrapping evaluates the terminal observation; the next episode's first observation or NaN "
        "there is a wrong target with no error.",
        _no_wrapper,
    ),
    MODEL_RESET: (
        "After reset(seed), every row is the first observation of a fresh episode of that sub-env under that seed.",
        "A reset that leaves a sub-env mid-episode, or ignores the seed, starts the next rollout from the wrong state.",
        _no_model,
    ),
    TRANSITIONS: (
        "Every transition is the reference env's: the next observation continues the episode by one step, echoes "
        "the action the sub-env was sent, and the reward is the scripted one.",
        "The exact check of the data a learner gets, possible because every observation row decodes to "
        "(env, episode, step, action, salt).",
        _no_model,
    ),
    MODEL_FLAGS: (
        "terminated and time_outs are exactly the scripted ones: a time-out at max_episode_length steps, not before.",
        "An off-by-one time limit shortens every episode and mislabels its last step.",
        _no_model,
    ),
}


#: each spec's impact class (rlconform.core.impact), read from its statement and rationale above
_IMPACTS: dict[str, Impact] = {
    mon.API: "api-contract",
    mon.TIME_LIMIT: "training-data",
    mon.TIME_OUTS: "training-data",
    mon.AUTORESET: "training-data",
    mon.REWARD_ORDER: "training-data",
    mon.FINAL_OBS: "training-data",
    mon.STABLE: "training-data",
    wr.OBS: "training-data",
    wr.REWARDS: "training-data",
    wr.FLAGS: "training-data",
    wr.TERMINAL: "training-data",
    MODEL_RESET: "reproducibility",
    TRANSITIONS: "training-data",
    MODEL_FLAGS: "training-data",
}


def _spec(spec_id: str) -> Spec:
    statement, rationale, applies = _TEXTS[spec_id]

    def check(run: TorchRun) -> Outcome:
        return outcome(spec_id, run)

    check.__qualname__ = f"check_{spec_id.replace('.', '_')}"
    spec(
        spec_id,
        statement=statement,
        rationale=rationale,
        impact=_IMPACTS[spec_id],
        families=frozenset({NAME}),
        applies=applies,
    )(check)
    return spec_of(check)


#: registered by rlconform.libraries.isaaclab.device_specs for both Isaac Lab families
SHARED = (mon.ACTIONS, mon.OUTPUTS)
#: this module's specs, read by the catalog (the device specs are rlconform.libraries.isaaclab.device_specs)
SPECS = [_spec(spec_id) for spec_id in (*mon.MONITOR_SPECS, *wr.WRAPPER_SPECS, *MODEL_SPECS) if spec_id not in SHARED]
