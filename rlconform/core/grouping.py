"""One defect, one story: failures of one system that share a minimal case are one group.

A planted bug that steps an env twice fails ``counts.env_steps``, ``transitions.exact``,
``terminal.final_obs``, ``infos.aligned`` and ``model.outputs_match``, each search shrinking to the
same two calls. Listed one by one that is five failures and five identical reproducers for one
defect. So the failures of one system whose minimal cases are equal (their ``repr``: what the JSON
document stores) form a group, printed once, with one reproducer, under its head; the others are
listed as "also fails". Failures excused (known or expected), and those a user's stack inherits
from the library under it, are grouped apart from the others,
so that a group is either counted against the system or not.

The head is the group's root cause, then its most specific member, by this rule (in order):

1. a member that reports a crash or a hang: ``api.valid_calls_succeed`` and ``lifecycle.responsive``,
   or any spec one of whose violations says a call raised or did not answer (:func:`reports_crash`).
   A call that raises ends the run, and what the other specs find on the same case (missing
   transitions, short counts, a run shorter than the model's) is its consequence: the crash is
   told first, not under the transitions it cascades into;
2. the most severe impact class (rlconform.core.impact);
3. the fewest violations on the shared case: a narrow spec (``counts.env_steps``: "stepped twice")
   names the defect in one fact where a catch-all (``transitions.exact``, ``model.outputs_match``)
   lists every consequence;
4. the spec listed first (registration order, as ``rlconform list`` shows them);
5. the spec id.

Groups are listed by the most severe impact class among their members (a group is ranked by the
worst thing the defect does, even when a crash of a milder class heads it), then the head's spec
id, then system order. Nothing is lost:
the JSON document keeps every verdict, each failure naming its group's head.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from rlconform.core.impact import rank

#: the specs whose failure is a crash or a hang of the system by definition
CRASH_SPECS = frozenset({"api.valid_calls_succeed", "lifecycle.responsive"})

#: a violation saying that a call raised (``step(...) raised ValueError: ...``, ``building the
#: system raised ...``) or did not answer within its time limit
_CRASH = re.compile(r"\braised [A-Za-z_][\w.]*(?::|$)|\bdid not answer within\b")
#: a comparison with the reference model: its "raised" is a consequence it reports, not its finding
_MODEL_COMPARISON = re.compile(r"\bthe model\b")


def reports_crash(spec: str, violations: Iterable[str]) -> bool:
    """Whether a failure of ``spec`` with these violations (rendered, or their kinds) reports a
    crash or a hang: the root cause of whatever else fails on the same minimal case. A refused
    bad call (``raised ValueError but ...``) and a comparison with the reference model are not."""
    if spec in CRASH_SPECS:
        return True
    return any(_CRASH.search(text) and not _MODEL_COMPARISON.search(text) for text in violations)


@dataclass(frozen=True)
class Failing:
    """What grouping needs to know of one failed (system, spec) result."""

    system: str
    spec: str
    #: the minimal case's repr; None: the failure has no case and stays alone
    case: str | None
    #: known or expected: grouped apart from failures that count
    excused: bool
    impact: str | None
    violations: int
    #: the spec's position in the run's spec list (rule 3)
    spec_order: int
    #: the system's position in the run's system list (listing order)
    system_order: int
    #: the failure reports a crash or a hang (:func:`reports_crash`): it heads its group (rule 1)
    crash: bool = False
    #: the library under the user's code fails the same way (rlconform.core.inherited): grouped
    #: apart from the user's own failures, and listed after them
    inherited: bool = False

    def head_key(self) -> tuple[int, int, int, int, str]:
        return (0 if self.crash else 1, rank(self.impact), self.violations, self.spec_order, self.spec)


def group_rank(group: Sequence[Failing]) -> int:
    """The most severe impact class among a group's members: where the group is listed."""
    return min(rank(member.impact) for member in group)


def groups(failures: Iterable[Failing]) -> list[list[Failing]]:
    """The groups, each head first then its members by the same rule, in listing order."""
    buckets: dict[tuple[Any, ...], list[Failing]] = {}
    for failure in failures:
        key = (
            (failure.system, failure.excused, failure.inherited, failure.case)
            if failure.case is not None
            else (id(failure),)
        )
        buckets.setdefault(key, []).append(failure)
    found = [sorted(members, key=Failing.head_key) for members in buckets.values()]
    return sorted(found, key=lambda g: (group_rank(g), g[0].spec, g[0].system_order, g[0].system))


def heads(failures: Iterable[Failing]) -> dict[tuple[str, str], str]:
    """(system, spec) -> the spec id heading its group (itself for a head or a lone failure)."""
    return {(m.system, m.spec): group[0].spec for group in groups(failures) for m in group}


def failing_from_json(results: Sequence[dict[str, Any]], spec_ids: Sequence[str]) -> list[Failing]:
    """The failed results of a JSON document's ``results`` list, as grouping reads them: those whose
    outcome is fail (``outcome`` in a schema_version 2 document, whose ``status`` shows a known or
    inherited failure as such; ``status`` in a v1 document or a row without ``outcome``), known,
    expected and inherited ones included (each grouped apart from the user's own)."""
    spec_order = {spec_id: i for i, spec_id in enumerate(spec_ids)}
    system_order: dict[str, int] = {}
    found = []
    for result in results:
        system_order.setdefault(result["system"], len(system_order))
        if result.get("outcome", result["status"]) != "fail":
            continue
        found.append(
            Failing(
                system=result["system"],
                spec=result["spec"],
                case=result.get("case"),
                excused=bool(result.get("known") or result.get("expected")),
                impact=result.get("impact"),
                violations=len(result.get("violations") or ()),
                spec_order=spec_order.get(result["spec"], len(spec_order)),
                system_order=system_order[result["system"]],
                crash=reports_crash(result["spec"], result.get("violation_kinds") or result.get("violations") or ()),
                inherited=bool(result.get("inherited")),
            )
        )
    return found


def annotate(results: Sequence[dict[str, Any]], spec_ids: Sequence[str]) -> None:
    """Set ``group`` on every result of a JSON ``results`` list: the spec id heading the group of
    a failure, None for any other status."""
    found = heads(failing_from_json(results, spec_ids))
    for result in results:
        result["group"] = found.get((result["system"], result["spec"]))
