"""JUnit XML: the format CI systems (GitLab, Jenkins, GitHub test-report actions) display natively.

One ``<testsuite>`` per system and one ``<testcase>`` per spec (classname = system id, name =
spec id), so that a CI's test browser groups the matrix the way the table does. The mapping keeps
JUnit's meaning of each outcome: a violation or a spec nothing exercised is a ``<failure>`` (the
run did not show the spec holds), a crash is an ``<error>``, and what is not counted against the
system (known or expected failures, not applicable, library not installed) is ``<skipped>`` with
its reason. Each of these elements carries the result's status (the word the JSON, the text and
the other formats show: ``fail``, ``inherited``, ``known``, ...) as its ``type``; a passing case
has none. Every string goes through ``text.clean``: one control character in a message would
make the whole file unreadable to every consumer.
"""

from __future__ import annotations

import datetime as _dt
import xml.etree.ElementTree as ET

from rlconform.core.impact import title
from rlconform.reports.document import Result, ResultsDocument, SystemInfo
from rlconform.reports.text import clean


def outcome(result: Result) -> str:
    """``passed``, ``failure``, ``error`` or ``skipped``: the JUnit outcome of a result."""
    status = result.status
    if status in ("fail", "not_exercised"):
        return "failure"
    if status == "error":
        return "error"
    if status == "pass":
        return "passed"
    return "skipped"


def _timestamp(created: str) -> str | None:
    """JUnit's timestamp: ISO 8601 without a zone (the Ant/Jenkins schema), in UTC."""
    try:
        moment = _dt.datetime.fromisoformat(created)
    except ValueError:
        return None
    if moment.tzinfo is not None:
        moment = moment.astimezone(_dt.timezone.utc).replace(tzinfo=None)
    return moment.isoformat(timespec="seconds")


def _details(result: Result, document: ResultsDocument | None = None) -> str:
    """The body of a failure or error: the full message, its impact class, signature and group,
    every violation and the reproducer."""
    parts = [result.message.rstrip()]
    if document is not None:
        parts.append(f"impact: {title(document.impact_of(result))}")
        head = document.group_head(result)
        if head is not None and head != result.spec:
            parts.append(f"same minimal case as {head} (the group's head, listed first in the reports)")
    if result.signature:
        parts.append(f"signature: {result.signature}")
    if result.excuse:
        parts.append(result.excuse)
    explanation = document.explanation(result) if document is not None else None
    if explanation:
        parts.append(explanation)
    if result.violations:
        parts.append("violations:\n" + "\n".join(f"- {v}" for v in result.violations))
    if result.case:
        parts.append(f"minimal case: {result.case}")
    if result.reproducer:
        parts.append(
            "reproducer (save as repro.py and run it; exit status 1 while the bug remains):\n" + result.reproducer
        )
    parts.append(f"{result.examples} examples, {result.checked} facts checked, {result.seconds:.3f} s")
    return clean("\n\n".join(p for p in parts if p))


def _element(tag: str, attrib: dict[str, str], text: str | None = None) -> ET.Element:
    element = ET.Element(tag, {key: clean(value) for key, value in attrib.items()})
    if text:
        element.text = text
    return element


def _skip_reason(result: Result) -> str:
    if result.excuse:
        return result.excuse.splitlines()[0]
    if result.status == "inherited" and result.inherited:
        return f"inherited: {result.inherited}"
    prefix = "not applicable" if result.status == "not_applicable" else result.status.replace("_", " ")
    if result.headline.startswith(prefix):  # "not run: system hung (...)" says its status itself
        return result.headline
    return f"{prefix}: {result.headline}" if result.headline else prefix


def _case_properties(result: Result, document: ResultsDocument | None) -> ET.Element | None:
    """A testcase's own properties (read by GitLab, Jenkins' JUnit plugin and pytest's format):
    the impact class of its spec and, for a failure, its signature and group head. Only on the
    results the reports list (failures, errors, unexercised specs): a pass stays an empty case."""
    if not result.reported:
        return None
    values: dict[str, str] = {}
    impact = document.impact_of(result) if document is not None else result.impact
    if impact:
        values["rlconform.core.impact"] = impact
    if result.signature:
        values["rlconform.core.signature"] = result.signature
    if result.finding:
        values["rlconform.finding"] = result.finding
    elif document is not None and document.is_new(result):
        values["rlconform.new"] = "true"
    head = document.group_head(result) if document is not None else None
    if head is not None:
        values["rlconform.group"] = head
    if not values:
        return None
    properties = ET.Element("properties")
    for name, value in values.items():
        properties.append(_element("property", {"name": name, "value": value}))
    return properties


def testcase(result: Result, document: ResultsDocument | None = None) -> ET.Element:
    case = _element(
        "testcase", {"classname": result.system, "name": result.spec, "time": f"{max(result.seconds, 0.0):.3f}"}
    )
    properties = _case_properties(result, document)
    if properties is not None:
        case.append(properties)
    kind = outcome(result)
    details = _details(result, document)
    if kind == "failure":
        case.append(_element("failure", {"message": result.headline, "type": result.status}, details))
    elif kind == "error":
        case.append(_element("error", {"message": result.headline, "type": "error"}, details))
    elif kind == "skipped":
        body = details if result.reported else None
        case.append(_element("skipped", {"message": _skip_reason(result), "type": result.status}, body))
    return case


def _properties(document: ResultsDocument, system: SystemInfo) -> ET.Element:
    values = {
        "rlconform.version": document.rlconform_version,
        "rlconform.profile": document.profile_name,
        "rlconform.seed": "derandomized" if document.profile.get("derandomize") else str(document.profile.get("seed")),
        "rlconform.created": document.created,
        "python": str(document.environment.get("python", "")),
        "platform": str(document.environment.get("platform", "")),
    }
    values.update({f"library.{name}": version or "not installed" for name, version in document.libraries.items()})
    if system.family:
        values["system.family"] = system.family
    if system.title:
        values["system.title"] = system.title
    gap = system.left_out()
    if gap is not None:
        # what the factory refused: a suite of passes says nothing about those kinds
        values["rlconform.left_out"] = gap.clause(see_above=False) + ": " + "; ".join(gap.lines())
    properties = ET.Element("properties")
    for name, value in values.items():
        properties.append(_element("property", {"name": name, "value": value}))
    return properties


def _counts(results: list[Result]) -> dict[str, str]:
    kinds = [outcome(r) for r in results]
    return {
        "tests": str(len(results)),
        "failures": str(kinds.count("failure")),
        "errors": str(kinds.count("error")),
        "skipped": str(kinds.count("skipped")),
        "time": f"{sum(max(r.seconds, 0.0) for r in results):.3f}",
    }


def render_junit(document: ResultsDocument) -> str:
    """The whole JUnit XML file, with its XML declaration."""
    root = _element("testsuites", {"name": "rlconform", **_counts(document.results)})
    stamp = _timestamp(document.created)
    for index, system in enumerate(document.rows()):
        results = document.results_of(system.id)
        if not results:
            continue
        attrib = {"name": system.id, "id": str(index), "package": system.family or "rlconform", **_counts(results)}
        if stamp:
            attrib["timestamp"] = stamp
        suite = _element("testsuite", attrib)
        suite.append(_properties(document, system))
        columns = {spec.id: i for i, spec in enumerate(document.columns())}
        for result in sorted(results, key=lambda r: columns[r.spec]):
            suite.append(testcase(result, document))
        gap = system.left_out()
        if gap is not None:
            # system-out after the test cases, as the JUnit schema orders them; CI pages show it
            text = "\n".join([f"{system.id} was {gap.clause(see_above=False)}.", gap.heading()])
            text += "".join(f"\n  {line}" for line in gap.lines())
            suite.append(_element("system-out", {}, clean(text)))
        root.append(suite)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
