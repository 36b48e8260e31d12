"""API-shape specs: the family's documented call structure, wrong-size batches, failed calls."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rlconform.core.runner import execute
from rlconform.core.spec import Checker, Outcome, spec
from rlconform.envs.decode import decode, describe_decoded
from rlconform.envs.driver import reference_family
from rlconform.envs.plan import BadStep, Case, Step
from rlconform.specs.families import TORCHRL_ENVBASE, TRANSITION_FAMILIES, VECTOR_FAMILIES
from rlconform.specs.helpers import events_by_call

if TYPE_CHECKING:
    from rlconform.envs.driver import Run
    from rlconform.envs.trace import CallRecord, CallView


@spec(
    "api.shape",
    impact="api-contract",
    statement="Every call returns the structure the family documents, and the object declares the documented attributes.",
    rationale=(
        "Generic training code unpacks tuples and indexes infos by the documented structure; a 4-tuple where a "
        "5-tuple is documented, an info key without its mask or a missing autoreset_mode tag breaks it."
    ),
    families=TRANSITION_FAMILIES,
    needs=("usable",),
)
def api_shape(run: Run) -> Outcome:
    ck = Checker()
    family = reference_family(run.system.family)
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
    families=VECTOR_FAMILIES | {TORCHRL_ENVBASE},
    scenario="robustness",
    needs=("usable",),
)
def wrong_size_rejected(run: Run) -> Outcome:
    ck = Checker()
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
    families=VECTOR_FAMILIES | {TORCHRL_ENVBASE},
    scenario="robustness",
    needs=("usable",),
)
def failed_call_no_side_effect(run: Run) -> Outcome:
    ck = Checker()
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
        if following is None or following.view is None:
            continue
        control = _control_counterpart(run, following.position)
        if control is None or control.view is None:
            continue
        control_run = _control_run(run)
        assert control_run is not None
        if not _agrees_before(run, control_run, call.position):
            ck.note(
                "a second run of the same calls returned different outputs before any failed call (the system "
                "is not deterministic between builds): the step after a failed call was not compared"
            )
            continue
        difference = _first_difference(run, following.view, control_run, control.view)
        where, got, want = difference or ("", "", "")
        ck.expect(
            difference is None,
            f"after the failed call, the next step returned {where}{got}; the same system given the same calls "
            f"without the failed one returns {want}",
            agent_step=following.agent_step,
            call=following.position,
        )
    return ck.done()


def _next_successful_step(run: Run, position: int) -> CallRecord | None:
    for call in run.calls[position + 1 :]:
        if isinstance(call.op, Step) and not call.failed:
            return call
        if not isinstance(call.op, (Step, BadStep)):
            return None
    return None


#: ``run.memo`` key of the control run: the same system given the case without its wrong-size steps
_CONTROL = "api.control_run_without_bad_steps"


def _control_run(run: Run) -> Run | None:
    """The same system driven through the same case minus its wrong-size steps (each rejected, so
    a system without side effects is then exactly where the control run is); None when the case
    has none. The comparison is with the system itself, never with a model that may not describe
    it: an unrelated defect is in both runs and cancels out."""
    if _CONTROL not in run.memo:
        ops = tuple(op for op in run.case.ops if not isinstance(op, BadStep))
        control = None
        if len(ops) != len(run.case.ops):
            control = execute(run.system, Case(run.case.script, run.case.num_envs, ops), with_model=False)
        run.memo[_CONTROL] = control
    control_run: Run | None = run.memo[_CONTROL]
    return control_run


def _agrees_before(run: Run, control_run: Run, position: int) -> bool:
    """Whether the control run returned what the run did on the last call before ``position``
    that returned: if not, the two runs differ for a reason other than the failed call (a system
    whose outputs vary between builds), and comparing them would blame the failed call for it."""
    for call in reversed(run.calls[:position]):
        if call.failed or call.view is None:
            continue
        control = _control_counterpart(run, call.position)
        if control is None or control.view is None:
            return False
        return _first_difference(run, call.view, control_run, control.view) is None
    return True


def _control_counterpart(run: Run, position: int) -> CallRecord | None:
    """The control run's record of the call at ``position``: the calls line up once the failed
    wrong-size steps are taken out. None when a wrong-size step before it was accepted (then the
    two runs legitimately differ; api.wrong_size_batch_rejected reports it) or the sequences
    diverge."""
    aligned = []
    for call in run.calls[: position + 1]:
        if isinstance(call.op, BadStep):
            if not call.failed:
                return None
            continue
        aligned.append(call)
    control_run = _control_run(run)
    if control_run is None or not control_run.usable or len(aligned) > len(control_run.calls):
        return None
    for mine, theirs in zip(aligned, control_run.calls, strict=False):
        if mine.op != theirs.op or mine.implied != theirs.implied or mine.failed != theirs.failed:
            return None
    return control_run.calls[len(aligned) - 1]


def _describe(decoded: Any, other: Any) -> str:
    """``describe_decoded``, naming the sub-env the observation came from when that is all that
    tells it from ``other`` (the two runs' envs in another order)."""
    text = describe_decoded(decoded)
    env = getattr(decoded, "env", None)
    if env is not None and env != getattr(other, "env", env) and text == describe_decoded(other):
        return f"sub-env {env}'s {text}"
    return text


def _first_difference(run: Run, view: CallView, control_run: Run, control: CallView) -> tuple[str, str, str] | None:
    """The first difference between the two views in decoded terms: (where, got, control)."""
    for env in range(run.case.num_envs):
        got = decode(run, view.obs_in_env_units()[env])
        want = decode(control_run, control.obs_in_env_units()[env])
        if got != want:
            return f"for env {env} ", _describe(got, want), _describe(want, got)
    for name in ("terminated", "truncated"):
        got_flags, want_flags = getattr(view, name), getattr(control, name)
        if got_flags != want_flags:
            return f"{name} ", str(got_flags), str(want_flags)
    got_finals = view.final_obs_in_env_units() or []
    want_finals = control.final_obs_in_env_units() or []
    for env, (a, b) in enumerate(zip(got_finals, want_finals, strict=False)):
        got_final = decode(run, a) if a is not None else None
        want_final = decode(control_run, b) if b is not None else None
        if got_final != want_final:
            got_text = describe_decoded(got_final) if got_final is not None else "absent"
            want_text = describe_decoded(want_final) if want_final is not None else "absent"
            return f"as env {env}'s final observation ", got_text, want_text
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
    ck = Checker()
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
