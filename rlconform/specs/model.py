"""The reference-model spec: every call's output equals what the family's documented semantics,
executed by the reference model on identical envs, predict."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rlconform.core.compare import first_difference
from rlconform.core.spec import Checker, Outcome, spec
from rlconform.envs.decode import decode, describe_decoded
from rlconform.specs.families import TUPLE_FAMILIES

if TYPE_CHECKING:
    from rlconform.envs.driver import Run
    from rlconform.envs.trace import CallRecord


def _volatile(path: str) -> bool:
    """Wall-clock entries no model can predict (episode duration)."""
    return path.endswith("['episode']['t']") or path.endswith("['t']")


def _decoded_difference(run: Run, real: CallRecord, model: CallRecord) -> str | None:
    """The first per-env difference in decoded terms, when the views allow it."""
    a, b = real.view, model.view
    if a is None or b is None:
        return None
    assert run.model is not None
    for env in range(run.case.num_envs):
        got, want = decode(run, a.obs_in_env_units()[env]), decode(run.model, b.obs_in_env_units()[env])
        if got != want:
            return f"env {env}: observation is {describe_decoded(got)}; the model returns {describe_decoded(want)}"
    if a.kind == "step" and b.kind == "step":
        for name in ("terminated", "truncated"):
            got_flags, want_flags = getattr(a, name), getattr(b, name)
            if got_flags != want_flags:
                return f"{name} is {got_flags}; the model returns {want_flags}"
        for env, (fa, fb) in enumerate(zip(a.final_obs or [], b.final_obs or [], strict=False)):
            got_final = decode(run, fa) if fa is not None else None
            want_final = decode(run.model, fb) if fb is not None else None
            if got_final != want_final:
                got_text = describe_decoded(got_final) if got_final is not None else "absent"
                want_text = describe_decoded(want_final) if want_final is not None else "absent"
                return f"env {env}: final observation is {got_text}; the model returns {want_text}"
    return None


@spec(
    "model.outputs_match",
    impact="api-contract",
    statement="Every call returns what the reference model of the family's documented semantics returns for the same calls on identical envs (wall-clock fields excepted).",
    rationale=(
        "The specs check properties; the model checks everything else the documentation promises, call by call, "
        "so that an undocumented change of behaviour between releases is caught even where no property names it."
    ),
    families=TUPLE_FAMILIES,
    needs=("usable",),
)
def outputs_match(run: Run) -> Outcome:
    ck = Checker()
    if run.system.kind == "reference":
        return ck.not_applicable("the system is itself a reference model")
    if run.model is None:
        return ck.not_applicable(run.model_reason or "no reference model models this system")
    if not run.model.usable:
        ck.fail(f"the reference model could not be built: {run.model.build_error}")
        return ck.done()
    for real, model in zip(run.calls, run.model.calls, strict=False):
        where = {"agent_step": real.agent_step or None, "call": real.position}
        if real.op != model.op or real.implied != model.implied:
            ck.fail(
                f"the call sequences diverge: the driver made {real.source} here, on the model {model.source}",
                **where,
            )
            return ck.done()
        if real.failed or model.failed:
            ck.expect(
                real.failed == model.failed,
                f"{real.source} "
                + (
                    f"raised {real.error_type}: {real.error_message}; the model returned normally"
                    if real.failed
                    else f"returned normally; the model raised {model.error_type}: {model.error_message}"
                ),
                **where,
            )
            continue
        decoded = _decoded_difference(run, real, model)
        if decoded is not None:
            ck.fail(f"{real.source}: {decoded}", **where)
            continue
        # normalised outputs carry float32 cancellation noise of order 1e-5; semantic differences
        # (a step, an episode, a reward) are of order 1 in reference-env units
        diff = first_difference(real.result_snapshot, model.result_snapshot, rtol=1e-5, atol=1e-4, ignore=_volatile)
        ck.expect(diff is None, f"{real.source}: output differs from the model at {diff} (system vs model)", **where)
    ck.expect(
        len(run.calls) == len(run.model.calls),
        f"the system made {len(run.calls)} calls, the model {len(run.model.calls)}",
    )
    return ck.done()
