"""Edge cases every search of a reference-env family tries first, under every profile.

A random search finds a defect when one of its examples happens to reach the state that shows
it, and a small profile may not: SB3's clipped terminal observation (FINDINGS S3) needs a terminal
observation while VecNormalize's statistics are fresh, RecordEpisodeStatistics' lost statistics
(G5) a masked reset while another sub-env is mid-episode, GymWrapper's refused action (E2) a
MultiDiscrete action of one component, AsyncVectorEnv's discarded episode (G4) a manual reset
right after an episode ended, its queued replies (G3) a batch one action short followed by a
partial reset. Such states are the edges of the input space, not
properties of one library: an episode of one step from the very first reset, the smallest
action space of a kind, a reset of one sub-env while the other runs on. So every search runs
these cases first (Hypothesis' explicit examples: they do not change what the derandomized search
draws after them), filtered by what the system accepts; each is a plain :class:`Case`, so a
failure found on one is reported, replayed and reproduced like any other.
"""

from __future__ import annotations

from rlconform.core.system import Capabilities, System
from rlconform.envs.plan import BadStep, Case, Op, Reset, Step
from rlconform.envs.script import EnvScript, EpisodePlan
from rlconform.envs.spaces import (
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
)

#: observations tried in this order: the first the system accepts is used
_OBSERVATIONS: tuple[ObsSpec, ...] = (
    BoxObs(),
    DictObs((("state", BoxObs()),)),
    MultiDiscreteObs(),
    MultiBinaryObs(),
    DiscreteObs(),
    # only a system that refused the stamp-packing Discrete takes it (strategies.small_discrete)
    SmallDiscreteObs(),
)
#: actions tried in this order, with the value each step sends
_ACTIONS: tuple[tuple[ActSpec, ActionValue], ...] = (
    (DiscreteAction(n=2), 0),
    (BoxAction(dims=1), (0.0,)),
    (MultiDiscreteAction(nvec=(2, 2)), (0, 0)),
)
#: the smallest MultiDiscrete action space: one component
_ONE_COMPONENT: tuple[ActSpec, ActionValue] = (MultiDiscreteAction(nvec=(4,)), (1,))


def boundary_cases(system: System, scenario: str, *, vectorized: bool) -> list[Case]:
    """The edge cases ``system`` accepts, for a search of the standard scenario, or of the
    robustness scenario, whose cases end with a wrong-size batch and one more step (the last, where
    partial resets are accepted, then resets one sub-env and steps again; a system that
    hangs on an edge case must be told by lifecycle.responsive, which searches there). The seeded
    scenario builds its cases around a repeated segment: it gets none."""
    if scenario not in ("standard", "robustness"):
        return []
    caps = system.capabilities
    found: list[Case] = []
    one_step = _script(caps, (EpisodePlan(1, "terminated"),))
    if one_step is not None:
        # every step ends an episode, from the first reset on: terminal observations while
        # running statistics are fresh, autoreset on every call
        script, value = one_step
        n = max(caps.min_envs, 1)
        found.append(Case(script, n, (Reset(seed=None), *_steps(value, n, 3))))
        # a manual reset right after an episode ended, then steps: an autoreset still pending
        # from the ended episode must not discard the episode the caller just started (G4)
        found.append(Case(script, n, (Reset(seed=None), *_steps(value, n, 1), Reset(seed=None), *_steps(value, n, 2))))
    action, value = _ONE_COMPONENT
    if action.kind in caps.action_kinds:
        script_one = _script(caps, (EpisodePlan(2, "terminated"),), action=action)
        if script_one is not None:
            n = max(caps.min_envs, 1)
            found.append(Case(script_one[0], n, (Reset(seed=None), *_steps(value, n, 3))))
    if vectorized and caps.partial_reset and caps.max_envs >= 2 and caps.min_envs <= 2:
        # sub-env 0 is reset while sub-env 1 runs on: per-sub-env statistics must survive it
        mid = _script(caps, (EpisodePlan(3, "terminated"),))
        if mid is not None:
            script, value = mid
            found.append(
                Case(
                    script,
                    2,
                    (
                        Reset(seed=None),
                        *_steps(value, 2, 1),
                        Reset(seed=None, mask=(True, False)),
                        *_steps(value, 2, 2),
                    ),
                )
            )
    if scenario == "robustness" and vectorized:
        # a single env has no batch to get wrong: its robustness cases are standard ones, as drawn
        found = [_with_wrong_size_batch(case) for case in found]
        if caps.partial_reset and caps.max_envs >= 2 and caps.min_envs <= 2:
            found.extend(_short_batch_then_partial_reset(caps))
    return found


def _short_batch_then_partial_reset(caps: Capabilities) -> list[Case]:
    """A batch one action short, a valid step, then a reset of one sub-env and a step: a
    vectorizer that sent the short batch to some workers and not others answers the next call with
    the replies still queued, and its next reset then fails or hangs (AsyncVectorEnv, G3). A random
    search reaches this sequence in a few examples of ten, so a profile of six could miss it."""
    mid = _script(caps, (EpisodePlan(3, "terminated"),))
    if mid is None:
        return []
    script, value = mid
    step = Step((value, value))
    ops: tuple[Op, ...] = (Reset(seed=None), step, BadStep((value,)), step, Reset(seed=None, mask=(True, False)), step)
    return [Case(script, 2, ops)]


def _with_wrong_size_batch(case: Case) -> Case:
    """``case``, then a batch of one action too many and a valid step, as the robustness cases end."""
    last = next(op for op in reversed(case.ops) if isinstance(op, Step))
    value = last.actions[0]
    extra: tuple[Op, ...] = (BadStep(tuple([value] * (case.num_envs + 1))), Step(last.actions))
    return Case(case.script, case.num_envs, (*case.ops, *extra))


def _script(
    caps: Capabilities, episodes: tuple[EpisodePlan, ...], *, action: ActSpec | None = None
) -> tuple[EnvScript, ActionValue] | None:
    limit = 4 if caps.time_limit == "required" else None
    actions = _ACTIONS if action is None else ((action, _ONE_COMPONENT[1]),)
    for act, value in actions:
        for obs in _OBSERVATIONS:
            script = EnvScript(obs=obs, action=act, episodes=episodes, max_episode_steps=limit)
            if caps.accepts(script):
                return script, value
    return None


def _steps(value: ActionValue, num_envs: int, count: int) -> list[Op]:
    return [Step(tuple([value] * num_envs)) for _ in range(count)]
