"""API-shape specs: the family's documented call structure, wrong-size batches, failed calls."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rlconform.adapters.base import get_family
from rlconform.plan import BadStep, Step
from rlconform.specs.helpers import decode, describe_decoded, events_by_call, model_counterpart
from rlconform.specs.registry import TORCHRL_FAMILY, TRANSITION_FAMILIES, VECTOR_FAMILIES, Checker, Outcome, spec

if TYPE_CHECKING:
    from rlconform.runner import Run


@spec(
    "api.shape",
    impact="api-contract",
    statement="Every call returns the structure the family documents, and the object declares the documented attributes.",
    rationale=(
        "Generic training code unpacks tuples and indexes infos by the documented structure; a 4-tuple where a "
        "5-tuple is documented, an info key without its mask or a missing autoreset_mode tag breaks it."
    ),
    families=TRANSITION_FAMILIES,
)
def api_shape(run: Run) -> Outcome:
    ck = Checker("api.shape")
    if not run.usable:
        return ck.done()
    family = get_family(run.system.family)
    for problem in family.object_problems(run.semantics, run.case.num_envs):
        ck.fail(problem)
    ck.outcome.checked += 1
    for call in run.calls:
        if call.failed:
            continue
        problems = family.api_problems(call, run.case.num_envs)
        if "view_error" in call.extra:
            problems.append(f"its output cannot be read as documented: {call.extra['view_error']}")
        ck.expect(
            not problems,
            f"{call.source}: " + "; ".join(problems),
            agent_step=call.agent_step or None,
            call=call.position,
        )
    return ck.done()


@spec(
    "api.wrong_size_batch_rejected",
    impact="robustness",
    statement="A step with more or fewer actions than sub-envs raises an error.",
    rationale=(
        "An action batch of the wrong size is a caller bug (a stale num_envs, a dropped env); silently using "
        "the first n actions, or broadcasting, hides it and trains on mismatched actions."
    ),
    families=VECTOR_FAMILIES | {TORCHRL_FAMILY},
    scenario="robustness",
)
def wrong_size_rejected(run: Run) -> Outcome:
    ck = Checker("api.wrong_size_batch_rejected")
    if not run.usable:
        return ck.done()
    for call in run.calls:
        if isinstance(call.op, BadStep):
            ck.expect(
                call.failed,
                f"a batch of {len(call.op.actions)} actions for {run.case.num_envs} sub-envs was accepted",
                agent_step=call.agent_step,
            )
    return ck.done()


@spec(
    "api.failed_call_no_side_effect",
    impact="robustness",
    statement="A call that raises leaves the system as it was: no env is stepped or reset, and the next call returns what it would have returned without the failed one.",
    rationale=(
        "Callers catch errors and carry on; a step that advances some sub-envs before raising (or leaves worker "
        "replies queued) desynchronises every later step: observations arrive one step late, silently."
    ),
    families=VECTOR_FAMILIES | {TORCHRL_FAMILY},
    scenario="robustness",
)
def failed_call_no_side_effect(run: Run) -> Outcome:
    ck = Checker("api.failed_call_no_side_effect")
    if not run.usable:
        return ck.done()
    _, per_call = events_by_call(run)
    for call in run.calls:
        if not call.failed:
            continue
        events = per_call[call.position]
        touched = sorted({env for env, _ in events})
        ck.expect(
            not events,
            lambda: (
                f"{call.source} raised {call.error_type} but {len(events)} env call(s) happened because of it "
                f"(envs {touched}: "
                + ", ".join(f"{type(r).__name__.replace('Record', '').lower()}" for _, r in events[:4])
                + ")"
            ),
            agent_step=call.agent_step or None,
            call=call.position,
        )
        following = _next_successful_step(run, call.position)
        model_call = model_counterpart(run, following.position) if following is not None else None
        if following is None or model_call is None or following.view is None or model_call.view is None:
            continue
        for env in range(run.case.num_envs):
            got = decode(run, following.view.obs_in_env_units()[env])
            want = decode(run.model, model_call.view.obs_in_env_units()[env]) if run.model else None
            ck.expect(
                got == want,
                f"after the failed call, the next step returned {describe_decoded(got)} where a system left unchanged "
                f"returns {describe_decoded(want) if want is not None else 'nothing comparable'}",
                env=env,
                agent_step=following.agent_step,
            )
    return ck.done()


def _next_successful_step(run: Run, position: int):  # type: ignore[no-untyped-def]
    for call in run.calls[position + 1 :]:
        if isinstance(call.op, Step) and not call.failed:
            return call
        if not isinstance(call.op, (Step, BadStep)):
            return None
    return None


@spec(
    "api.valid_calls_succeed",
    impact="api-contract",
    statement="Every well-formed call (building the system, a reset, a step with one action from the action space per sub-env) returns without raising.",
    rationale=(
        "Every other spec reads the calls that returned, so a system that raises on valid input (an action it "
        "cannot convert, an observation its terminal-observation reader cannot walk) would pass them vacuously; "
        "and a training loop that meets the exception loses its run."
    ),
    families=TRANSITION_FAMILIES,
)
def valid_calls_succeed(run: Run) -> Outcome:
    ck = Checker("api.valid_calls_succeed")
    if run.build_error is not None:
        ck.fail(f"building the system raised {run.build_error.splitlines()[0]}")
        return ck.done()
    for call in run.calls:
        if isinstance(call.op, BadStep):
            break  # what follows a rejected call is api.failed_call_no_side_effect's concern
        ck.expect(
            not call.failed,
            f"{call.source} raised {call.error_type}: {call.error_message}",
            agent_step=call.agent_step or None,
            call=call.position,
        )
        if call.failed:
            break  # what follows is its consequence
    return ck.done()
