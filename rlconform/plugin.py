"""The pytest plugin: rlconform's checks as pytest items in a downstream repository.

Installing rlconform auto-loads this plugin (``pytest11`` entry point) in every pytest run of that
environment, so it is inert unless asked: without ``--rlconform-check`` or ``--rlconform-systems``
it creates no items, prints nothing and imports nothing beyond pytest (never gymnasium or torch);
``--rlconform-json`` and ``--rlconform-xfail`` also activate it, for the tests of
:mod:`rlconform.testing`.

Asked, it adds one item per (system, spec) the spec applies to, named ``{system id}-{spec id}``
under a ``rlconform`` collector, so that ``-k``, ``-m rlconform``, ``--deselect``, JUnit XML and
xdist work as for any test (a spec that does not apply to a system is no item: the terminal summary
says once which ones, and why, and the JSON results list them as not applicable)::

    pytest -m rlconform --rlconform-check mypkg.vec:make --rlconform-api gymnasium.vector
    pytest -m rlconform --rlconform-systems 'gymnasium.SyncVectorEnv.*' -k final_obs -n 4 \\
        --rlconform-json results.json

Each item runs one search (:func:`rlconform.core.search.check_spec`) and maps its verdict onto pytest's
outcomes: a violation fails with the violations and the standalone reproducer (no traceback, the
traceback would be rlconform's own), a documented violation is an xfail, a library that is not
installed is an explicit skip with its reason.

The project's expected-failures file (``--rlconform-xfail FILE`` or the ``rlconform_xfail`` ini
option; see :mod:`rlconform.core.expected`) turns matching checks into xfail markers at collection,
for these items and for the tests of :func:`rlconform.testing.parametrize_with_checks` alike;
entries that match nothing are warned about, and strict mode makes an unexpected pass fail.

Under xdist every worker collects the same items in the same order; workers hand their verdicts
to the controller through ``workeroutput`` and the controller writes the one JSON document, with
results ordered by (system, spec) whichever worker ran what. The controller also chooses the seed
of non-derandomized profiles and hands it to the workers, so that one ``RLCONFORM_SEED``
reproduces the whole run.
"""

from __future__ import annotations

import argparse
import json
import os
import warnings
from collections.abc import Generator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from rlconform.core import intents
from rlconform.core.catalog import current

# the core modules below import nothing beyond the standard library, so the inert plugin stays
# cheap (tests/frontends/test_plugin.py::test_inert_without_options). What pulls Hypothesis, numpy or
# the systems (config, profiles, user, system, the session, the run cache, the searches, the
# reports) is imported where an active session first needs it
from rlconform.core.expected import (
    Entry,
    ExpectedFailures,
    ExpectedFailuresError,
    changed_warning,
    unexpected_pass_message,
    unused_warning,
)
from rlconform.core.family import get_family
from rlconform.core.grouping import failing_from_json, groups
from rlconform.core.impact import IMPACTS, UNCLASSIFIED, at_least, check_fail_on, fail_on_class, fail_on_own
from rlconform.core.impact import title as impact_title
from rlconform.core.options import FamilyOption, declared_options
from rlconform.core.selection import SelectionError, without_skipped
from rlconform.core.spec import Spec, get_spec
from rlconform.core.verdict import Verdict, cell_status

if TYPE_CHECKING:
    from rlconform.core.family import Family
    from rlconform.core.profiles import Profile
    from rlconform.core.runner import RunCache
    from rlconform.core.session import Session
    from rlconform.core.system import System
    from rlconform.reports.results import Results

#: the option that leaves specs out, as the plugin's users type it
SKIP_OPTION = "--rlconform-skip-spec"
#: name of the per-session plugin object registered when the plugin is active
SESSION_PLUGIN = "rlconform.session"
#: key of the verdicts (a JSON string) a worker hands to the controller in ``workeroutput``
WORKEROUTPUT_KEY = "rlconform_verdicts"
#: key of the seed the controller hands to every worker in ``workerinput``
WORKERINPUT_SEED = "rlconform_seed"

#: at most this many violations are listed in a failure (all are in the JSON document)
MAX_VIOLATIONS_SHOWN = 10
#: the expected-failures entry that matched an item (set at collection)
EXPECTED_KEY: pytest.StashKey[Entry] = pytest.StashKey()
#: the test running now, for checks made by rlconform.testing
CURRENT_ITEM_KEY: pytest.StashKey[pytest.Item] = pytest.StashKey()
#: the config of the running session, for checks made by rlconform.testing outside any fixture
_current_config: pytest.Config | None = None


class RlconformWarning(UserWarning):
    """Something in the rlconform set-up the project should fix (a stale expected failure)."""


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("rlconform", "rlconform: conformance checks of RL environment APIs")
    group.addoption(
        "--rlconform-check",
        action="append",
        default=[],
        dest="rlconform_check",
        metavar="MODULE:CALLABLE",
        help="check your own system: a factory with the signature --rlconform-api names (rlconform check --help "
        "lists them: env_fns for a vectorizer, env for a wrapper or an algorithm, num_envs for a ready-made vector "
        "env, ...); repeatable",
    )
    group.addoption(
        "--rlconform-api",
        default=None,
        dest="rlconform_api",
        metavar="FAMILY",
        help="the API family of the --rlconform-check factories, as rlconform check --api names it "
        "(rlconform check --help lists them with their factory signatures)",
    )
    # each family's own options, from its declaration (rlconform.core.options), as rlconform check has them
    for option, apis in _family_options():
        option.add_to(group.addoption, prefix="rlconform-", apis=apis)
    group.addoption(
        "--rlconform-intended",
        action="append",
        default=[],
        dest="rlconform_intended",
        metavar="CHANGES",
        help=f"of the --rlconform-check systems: {intents.help_text()}",
    )
    group.addoption(
        "--rlconform-systems",
        action="append",
        default=[],
        dest="rlconform_systems",
        metavar="PATTERN",
        help="check the bundled systems whose id matches this glob (repeatable; `rlconform list` lists them)",
    )
    group.addoption(
        "--rlconform-specs",
        action="append",
        default=[],
        dest="rlconform_specs",
        metavar="PATTERN",
        help="only the specs whose id matches this glob (repeatable; default: every spec)",
    )
    group.addoption(
        "--rlconform-skip-spec",
        action="append",
        default=[],
        dest="rlconform_skip_spec",
        metavar="PATTERN",
        help="leave out the specs whose id matches this glob (repeatable): their checks are deselected, and the "
        "report names them",
    )
    group.addoption(
        "--rlconform-profile",
        default=None,
        dest="rlconform_profile",
        metavar="NAME",
        help="Hypothesis profile: fast, ci or thorough (default: $RLCONFORM_PROFILE, then the "
        "rlconform_profile ini option, then ci)",
    )
    group.addoption(
        "--rlconform-json",
        default=None,
        dest="rlconform_json",
        metavar="FILE",
        help="write the rlconform results document (JSON) to FILE",
    )
    group.addoption(
        "--rlconform-xfail",
        default=None,
        dest="rlconform_xfail",
        metavar="FILE",
        help="your project's expected failures: lines of 'KEY  REASON' (KEY: a spec id, SYSTEM-SPEC, a node id "
        "or a glob); matching checks are xfail, entries that match nothing are warned about",
    )
    group.addoption(
        "--rlconform-xfail-strict",
        action="store_true",
        default=None,
        dest="rlconform_xfail_strict",
        help="an expected failure that passes fails the run (XPASS(strict))",
    )
    group.addoption(
        "--rlconform-fail-on",
        default=None,
        dest="rlconform_fail_on",
        metavar="CLASS",
        type=_impact_option,
        help="fail only the checks whose spec's impact class is CLASS or more severe (training-data, "
        "reproducibility, api-contract, robustness; default: every failure fails); the others are reported "
        "as xfail with their class. 'own' (alone or as own,CLASS) reports the failures inherited from the "
        "library under your code as xfail",
    )
    parser.addini("rlconform_profile", "rlconform's Hypothesis profile: fast, ci or thorough", default="")
    parser.addini("rlconform_xfail", "path of the expected-failures file (relative to the ini file)", default="")
    parser.addini("rlconform_xfail_strict", "an expected failure that passes fails the run", type="bool", default=False)


def _family_options() -> list[tuple[FamilyOption, list[str]]]:
    """Every family's own options with the ``--api`` names that take them, read from the
    libraries' declarations: no family module is loaded for it (the plugin loads in every pytest
    run of a project that has rlconform installed)."""
    return declared_options(current().libraries)


def _impact_option(value: str) -> str:
    """--rlconform-fail-on's value, checked when the command line is parsed (a usage error)."""
    try:
        return check_fail_on(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def pytest_configure(config: pytest.Config) -> None:
    global _current_config
    _current_config = config
    config.addinivalue_line(
        "markers", "rlconform(system, spec, family): a conformance check item created by the rlconform plugin"
    )
    if _active(config) and not config.pluginmanager.has_plugin(SESSION_PLUGIN):
        from rlconform.core.config import ConfigError
        from rlconform.core.config import validate as validate_config

        try:
            validate_config()  # a bad RLCONFORM_* value is a usage error, before any check runs
        except ConfigError as exc:
            raise pytest.UsageError(f"rlconform: error: {exc}") from None
        config.pluginmanager.register(RlconformSession(config), SESSION_PLUGIN)


@pytest.fixture(scope="session")
def rlconform_profile(pytestconfig: pytest.Config) -> Profile:
    """The Hypothesis profile rlconform uses in this session, for tests that run searches themselves."""
    return resolve_profile(pytestconfig)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item: pytest.Item) -> None:
    """Remember the running test, for :mod:`rlconform.testing`'s checks (a stash entry: cheap)."""
    item.config.stash[CURRENT_ITEM_KEY] = item


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, None]:
    """Render a conformance failure raised in any test (the checks of :mod:`rlconform.testing`
    run inside the project's own test functions) as the plugin's items render it: violations and
    reproducer, without rlconform's traceback."""
    outcome = yield
    if call.excinfo is not None and isinstance(call.excinfo.value, ConformanceFailure):
        report = outcome.get_result()
        if report.failed:
            report.longrepr = call.excinfo.value.render()


def pytest_unconfigure(config: pytest.Config) -> None:
    global _current_config
    if _current_config is config:
        _current_config = None


def _active(config: pytest.Config) -> bool:
    """Asked for: checks to run, a results file to write or an expected-failures file to apply."""
    return bool(
        config.getoption("rlconform_check")
        or config.getoption("rlconform_systems")
        or config.getoption("rlconform_json")
        or _expected_failures_path(config)
    )


def _expected_failures_path(config: pytest.Config) -> Path | None:
    option = config.getoption("rlconform_xfail")
    if option:
        return Path(config.invocation_params.dir, option)
    ini = str(config.getini("rlconform_xfail") or "")
    if ini:
        base = config.inipath.parent if config.inipath else config.rootpath
        return base / ini
    return None


def load_expected_failures(config: pytest.Config) -> ExpectedFailures | None:
    path = _expected_failures_path(config)
    if path is None:
        return None
    strict = config.getoption("rlconform_xfail_strict")
    if strict is None:
        strict = bool(config.getini("rlconform_xfail_strict"))
    try:
        return ExpectedFailures.load(path, strict=strict)
    except ExpectedFailuresError as exc:
        raise pytest.UsageError(f"rlconform: {exc}") from None


def resolve_profile(config: pytest.Config) -> Profile:
    """--rlconform-profile, then $RLCONFORM_PROFILE, then the ini option, then the default.

    The environment variable wins over the ini file as PYTEST_ADDOPTS does: the ini file is the
    project's choice, the environment is this run's (a nightly job asking for ``thorough``).
    """
    from rlconform.core.profiles import get_profile

    name = (
        config.getoption("rlconform_profile")
        or os.environ.get("RLCONFORM_PROFILE")
        or str(config.getini("rlconform_profile") or "")
        or None
    )
    try:
        return get_profile(name)
    except KeyError as exc:
        raise pytest.UsageError(f"rlconform: {exc.args[0]}") from None


class ConformanceFailure(AssertionError):
    """A failed (system, spec) item: a title, a message, the violations and the reproducer.

    The item renders it without a Python traceback: the traceback would only show rlconform's
    search, while the reproducer shows the calls that break the spec.
    """

    def __init__(
        self,
        title: str,
        message: str,
        *,
        statement: str = "",
        violations: Sequence[str] = (),
        reproducer: str | None = None,
        details: Sequence[str] = (),
    ) -> None:
        #: a pinned expected failure that now fails differently (:func:`changed_warning`)
        self.changed = ""
        self.title = title
        self.message = message
        self.statement = statement
        self.violations = list(violations)
        self.reproducer = reproducer
        self.details = list(details)
        super().__init__(f"{title}: {message.splitlines()[0] if message else ''}")

    @classmethod
    def from_verdict(cls, verdict: Verdict, spec: Spec) -> ConformanceFailure:
        details = []
        if verdict.case is not None:
            ops = getattr(verdict.case, "ops", None)
            if ops is not None:
                details.append(f"minimal case: {len(ops)} calls on {verdict.case.num_envs} sub-env(s)")
            else:  # a case of its own kind (env-author mode, Isaac Lab): its repr says what it is
                details.append(f"minimal case: {verdict.case!r}")
        from rlconform.reports.results import impact_of  # pulls Hypothesis: only once a check failed

        impact = impact_of(verdict)
        details.append(f"impact: {impact_title(impact)} ({impact})" if impact else f"impact: {impact_title(impact)}")
        if verdict.signature:
            details.append(f"signature: {verdict.signature}")
        if verdict.profile:
            seed = "derandomized" if verdict.seed is None else f"seed {verdict.seed} (RLCONFORM_SEED={verdict.seed})"
            details.append(f"search: profile {verdict.profile}, {verdict.examples} examples, {seed}")
        if verdict.status == "fail":
            title = f"{verdict.system_id} violates {verdict.spec_id}"
        elif verdict.status == "not_exercised":
            title = f"{verdict.system_id} :: {verdict.spec_id} was not exercised"
        else:
            title = f"{verdict.system_id} :: {verdict.spec_id}: {verdict.status}"
        return cls(
            title,
            verdict.message,
            statement=spec.statement,
            violations=verdict.violations,
            reproducer=verdict.reproducer,
            details=details,
        )

    def render(self) -> str:
        lines = [self.title]
        if self.changed:
            lines.append(self.changed)
        if self.statement:
            lines.append(f"spec: {self.statement}")
        if self.violations:
            lines.append("")
            lines.append(f"violations ({len(self.violations)}):")
            lines.extend(f"  - {v}" for v in self.violations[:MAX_VIOLATIONS_SHOWN])
            if len(self.violations) > MAX_VIOLATIONS_SHOWN:
                lines.append(f"  ... {len(self.violations) - MAX_VIOLATIONS_SHOWN} more in the JSON results")
        elif self.message:
            lines.append("")
            lines.extend(self.message.rstrip().splitlines())
        if self.details:
            lines.append("")
            lines.extend(self.details)
        if self.reproducer:
            lines.append("")
            lines.append("reproducer (save it as a .py file and run it: exit status 1 while the violation remains):")
            lines.append("")
            lines.extend(self.reproducer.rstrip().splitlines())
        return "\n".join(lines)


def enforce_verdict(
    verdict: Verdict, spec: Spec, item: pytest.Item, plugin: RlconformSession | None, system: System | None = None
) -> None:
    """Record a verdict and map it onto pytest's outcomes (shared by the plugin's items and the
    tests made by :func:`rlconform.testing.parametrize_with_checks`).

    An entry of the project's expected-failures file is applied at collection as an ``xfail``
    marker, so pytest itself reports XFAIL, XPASS and XPASS(strict); here the verdict only notes it.
    """
    expected = item.stash.get(EXPECTED_KEY, None)
    changed = ""
    if expected is not None and verdict.status in ("fail", "not_exercised", "error") and not verdict.known:
        if expected.excuses(verdict.signature):
            verdict.expected = f"{expected.reason} ({expected.origin})"
        else:
            changed = changed_warning(expected, f"{verdict.system_id}-{verdict.spec_id}", verdict.signature)
    elif expected is not None and verdict.status == "pass":
        verdict.message = unexpected_pass_message(expected)
    if plugin is not None:
        plugin.record(verdict, system, spec)
    first_line = verdict.message.splitlines()[0] if verdict.message else ""
    # the status every report shows (known, inherited, ...), as the JSON's "status" field
    item.user_properties.append(("rlconform_status", cell_status(verdict)))
    item.user_properties.append(("rlconform_message", first_line))
    if verdict.known:
        item.user_properties.append(("rlconform_known", verdict.known))
    if verdict.status == "pass":
        return
    if verdict.status == "fail" and verdict.known:
        # a documented approximation's message carries the bias it measured: shown, never silent
        measured = f" ({first_line})" if verdict.known.startswith("documented approximation") else ""
        pytest.xfail(f"known violation: {verdict.known}{measured}")
    fail_on = item.config.getoption("rlconform_fail_on", None)
    if verdict.status == "fail" and verdict.inherited and not verdict.expected and fail_on_own(fail_on):
        pytest.xfail(f"inherited: {verdict.inherited} (--rlconform-fail-on {fail_on}): {first_line}")
    if verdict.status in ("fail", "not_exercised") and not verdict.expected:
        from rlconform.reports.results import impact_of  # pulls Hypothesis: only once a check failed

        impact = impact_of(verdict)
        if not at_least(impact, fail_on_class(fail_on)):
            pytest.xfail(f"{impact_title(impact)} ({impact}) is below --rlconform-fail-on {fail_on}: {first_line}")
    if verdict.status == "not_applicable":
        pytest.skip(f"not applicable: {first_line}")
    if verdict.status == "skipped":
        pytest.skip(first_line or "not installed")
    if verdict.status == "not_run":
        # the system hung or crashed before this spec was checked: lifecycle.responsive (or the
        # system's first error) carries the failure, once; this spec has no verdict to give
        pytest.skip(first_line)
    # "fail", "not_exercised" and "error" all fail the item
    if expected is not None and expected.pin is not None and verdict.expected:
        raise PinnedFailure.from_verdict(verdict, spec)
    failure = ConformanceFailure.from_verdict(verdict, spec)
    failure.changed = changed
    raise failure


class PinnedFailure(ConformanceFailure):
    """The failure an expected-failures entry pinned to its signature expects: the item's xfail
    marker takes only this (``raises=``), so the same spec failing differently fails the item."""


class RlconformItem(pytest.Item):
    """One (system, spec) search."""

    def __init__(self, *, system: System, spec: Spec, session_plugin: RlconformSession, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.system = system
        self.spec = spec
        self.session_plugin = session_plugin

    def runtest(self) -> None:
        plugin = self.session_plugin
        assert plugin.profile is not None and plugin.cache is not None and plugin.pipeline is not None, (
            "set up in pytest_sessionstart"
        )
        verdict = plugin.pipeline.check_pair(self.system, self.spec, plugin.profile, plugin.cache)
        enforce_verdict(verdict, self.spec, self, plugin, self.system)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, ConformanceFailure):
            return excinfo.value.render()
        return super().repr_failure(excinfo, style)

    def reportinfo(self) -> tuple[Any, int | None, str]:
        return self.path, None, f"rlconform: {self.system.id} :: {self.spec.id}"


class RlconformCollector(pytest.Collector):
    """The parent of every rlconform item: systems in selection order, then specs in registry order."""

    def __init__(self, *, session_plugin: RlconformSession, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.session_plugin = session_plugin

    def collect(self) -> list[pytest.Item | pytest.Collector]:
        plugin = self.session_plugin
        group = self.config.pluginmanager.has_plugin("xdist")
        items: list[pytest.Item | pytest.Collector] = []
        for system in plugin.systems:
            # the skipped specs' items too: the session deselects them, so that pytest counts them
            # as deselected instead of never mentioning them
            for spec in plugin.collected_specs:
                if spec.not_applicable_reason(system) is not None:
                    continue  # no item: recorded, and named once in the terminal summary
                item = RlconformItem.from_parent(
                    self, name=f"{system.id}-{spec.id}", system=system, spec=spec, session_plugin=plugin
                )
                item.add_marker(pytest.mark.rlconform(system=system.id, spec=spec.id, family=system.family))
                if group:
                    # with --dist loadgroup a system's specs share one worker, and so its run cache
                    item.add_marker(pytest.mark.xdist_group(system.id))
                items.append(item)
        return items


class RlconformSession:
    """Everything one active pytest session needs: the selection, the profile and the verdicts."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.profile: Profile | None = None
        self.seed: int | None = None
        self.systems: list[System] = []
        self.specs: list[Spec] = []
        #: the specs --rlconform-skip-spec leaves out: collected, then deselected, and named in the report
        self.skipped_specs: list[Spec] = []
        #: the selected specs, skipped ones included, in registry order: the items collected
        self.collected_specs: list[Spec] = []
        self.cache: RunCache | None = None
        #: the shared pipeline (rlconform.core.session), made when the session has checks of its own
        self.pipeline: Session | None = None
        #: (system id, spec id) -> verdict_json(verdict): this process's verdicts, and on the
        #: xdist controller those the workers handed over
        self.verdicts: dict[tuple[str, str], dict[str, Any]] = {}
        json_path = config.getoption("rlconform_json")
        self.json_path = Path(config.invocation_params.dir, json_path) if json_path else None
        self.json_written = False
        self.expected: ExpectedFailures | None = None
        #: no checks of its own to collect (only --rlconform-json / --rlconform-xfail): the session
        #: stays light (no header, no imports of systems or specs) and records the checks of
        #: rlconform.testing's tests, if any run
        self.passive = not (config.getoption("rlconform_check") or config.getoption("rlconform_systems"))
        #: JSON entries of the systems and specs of checks recorded beyond this session's own
        #: selection (rlconform.testing's tests), so that the document describes every result
        self.extra_systems: dict[str, dict[str, Any]] = {}
        self.extra_specs: dict[str, dict[str, Any]] = {}
        #: (system id, spec id) -> why the spec does not apply to the system: no item is collected
        #: for these (one skipped item per spec of another family would bury the real results)
        self.not_applicable: dict[tuple[str, str], str] = {}

    @property
    def is_worker(self) -> bool:
        return hasattr(self.config, "workerinput")

    # -- set-up: every bad input is a usage error, before any worker starts -----------------

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        from rlconform.core.profiles import session_seed

        self.profile = resolve_profile(self.config)
        if self.is_worker:
            seed = self.config.workerinput.get(WORKERINPUT_SEED)  # type: ignore[attr-defined]
            if seed is not None:
                os.environ["RLCONFORM_SEED"] = str(seed)
        self.seed = None if self.profile.derandomize else session_seed()
        self.expected = load_expected_failures(self.config)
        if self.passive:
            return  # nothing to collect: only record the checks of rlconform.testing, if any run
        from rlconform.core.runner import RunCache
        from rlconform.core.session import Session

        self.pipeline = Session()
        self.systems = Session.unique(self._user_systems(self.pipeline) + self._bundled_systems(self.pipeline))
        patterns = self.config.getoption("rlconform_specs")
        skip_patterns: list[str] = self.config.getoption("rlconform_skip_spec")
        from rlconform.core.user import BadInput

        try:
            # the selection rule of rlconform check (Session.select_specs), in the plugin's words
            self.specs = self.pipeline.select_specs(patterns, skip_patterns, SKIP_OPTION)
            self.collected_specs = self.specs
            self.specs, self.skipped_specs = without_skipped(self.specs, skip_patterns, SKIP_OPTION)
        except BadInput:
            raise pytest.UsageError(f"rlconform: no spec matches {', '.join(patterns)}") from None
        except SelectionError as exc:
            raise pytest.UsageError(f"rlconform: {exc}") from None
        self.cache = RunCache()
        self._record_not_applicable()

    def _record_not_applicable(self) -> None:
        """The pairs whose spec does not apply to the system: their verdicts are recorded here
        (every process computes the same ones), and no item is collected for them."""
        assert self.profile is not None and self.pipeline is not None
        for verdict, reason in self.pipeline.not_applicable_verdicts(
            self.systems, self.specs, self.profile.name, self.seed
        ):
            self.not_applicable[(verdict.system_id, verdict.spec_id)] = reason
            self.record(verdict)

    def _user_systems(self, pipeline: Session) -> list[System]:
        references: list[str] = self.config.getoption("rlconform_check")
        if not references:
            return []
        from rlconform.core.user import BadInput, factory_signatures

        family = self.config.getoption("rlconform_api")
        if not family:
            raise pytest.UsageError(
                f"rlconform: --rlconform-check needs --rlconform-api, one of {', '.join(factory_signatures())}"
            )
        try:
            options = pipeline.family_options(family, lambda name: self.config.getoption(f"rlconform_{name}"))
        except BadInput as exc:
            raise pytest.UsageError(f"rlconform: {exc}") from None
        systems = []
        for reference in references:
            try:
                system = pipeline.checked_user_system(
                    reference, family, options=options, intended=self.config.getoption("rlconform_intended")
                )
            except BadInput as exc:
                raise pytest.UsageError(f"rlconform: {exc}") from None
            except Exception as exc:
                first = str(exc).splitlines()[0] if str(exc) else ""
                raise pytest.UsageError(
                    f"rlconform: building {reference} as {family} raised {type(exc).__name__}: {first}"
                ) from None
            systems.append(system)
        return systems

    def _bundled_systems(self, pipeline: Session) -> list[System]:
        patterns: list[str] = self.config.getoption("rlconform_systems")
        if not patterns:
            return []
        selected = pipeline.bundled_systems(patterns)
        if not selected:
            raise pytest.UsageError(
                f"rlconform: no bundled system matches {', '.join(patterns)} (`rlconform list` lists them)"
            )
        return selected

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        """xdist controller: every worker searches with the controller's seed."""
        node.workerinput[WORKERINPUT_SEED] = self.seed

    def pytest_report_header(self, config: pytest.Config) -> list[str]:
        assert self.profile is not None
        if self.passive:
            return []
        from rlconform.reports.results import header_lines

        families = [get_family(name) for name in dict.fromkeys(system.family for system in self.systems)]
        applicable = len(self.systems) * len(self.specs) - len(self.not_applicable)
        lines = [
            *header_lines(self.profile, self.seed, families),
            f"rlconform: {len(self.systems)} system(s) x {len(self.specs)} spec(s), {applicable} applicable",
        ]
        if self.skipped_specs:
            lines.append(f"rlconform: {self.skipped_note()} (their checks are deselected)")
        return lines + self.left_out_lines()

    def left_out_lines(self) -> list[str]:
        """What each user factory refused, so no case used it (a pass says nothing about it)."""
        from rlconform.reports.left_out import left_out

        # the plugin's own systems, then those checked by tests of rlconform.testing (recorded
        # with their verdicts, also from xdist workers)
        restrictions = [(system.id, list(system.capabilities.notes)) for system in self.systems]
        restrictions += [
            (system_id, list(self.extra_systems[system_id].get("restrictions") or ()))
            for system_id in sorted(self.extra_systems)
        ]
        lines = []
        for system_id, notes in restrictions:
            gap = left_out(notes)
            if gap is not None:
                lines.append(f"rlconform: {system_id} was {gap.clause(see_above=False)}; {gap.heading()}")
                lines += [f"  {line}" for line in gap.lines()]
        return lines

    def skipped_note(self) -> str:
        from rlconform.core.session import skipped_note

        return skipped_note(self.skipped_specs, SKIP_OPTION) or ""

    # -- collection: the same items in the same order in every process -----------------------

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(self, session: pytest.Session, items: list[pytest.Item]) -> None:
        # tryfirst: before -k / -m deselect, so that they select among these items too
        if not self.passive:
            collector = RlconformCollector.from_parent(
                session, name="rlconform", nodeid="rlconform", session_plugin=self
            )
            collected = list(session.genitems(collector))
            skipped = {spec.id for spec in self.skipped_specs}
            deselected = [item for item in collected if isinstance(item, RlconformItem) and item.spec.id in skipped]
            items.extend(item for item in collected if item not in deselected)
            if deselected:
                self.config.hook.pytest_deselected(items=deselected)
        if self.expected is not None:
            self._mark_expected(items)

    def _mark_expected(self, items: list[pytest.Item]) -> None:
        """Apply the expected-failures file to every rlconform check collected (the plugin's items
        and the tests of :func:`rlconform.testing.parametrize_with_checks`), and warn, from one
        process only, about entries that match none."""
        assert self.expected is not None
        for item in items:
            marker = item.get_closest_marker("rlconform")
            if marker is None:
                continue
            entry = self.expected.match(marker.kwargs["system"], marker.kwargs["spec"], item.nodeid)
            if entry is not None:
                item.stash[EXPECTED_KEY] = entry
                # pinned to a signature: only that failure is expected (PinnedFailure)
                raises: type[BaseException] | None = None if entry.pin is None else PinnedFailure
                item.add_marker(
                    pytest.mark.xfail(
                        reason=f"expected failure: {entry.reason} ({entry.origin})",
                        strict=self.expected.strict,
                        raises=raises,
                    )
                )
        workerid = getattr(self.config, "workerinput", {}).get("workerid")
        if workerid in (None, "gw0"):
            for entry in self.expected.unused():
                # located at the entry's line, so the warning points at what to edit
                warnings.warn_explicit(
                    RlconformWarning(unused_warning(entry)), RlconformWarning, entry.path, entry.line
                )

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, None]:
        """Locate an item's skip at the item, not at the line of this plugin that skipped it."""
        outcome = yield
        report = outcome.get_result()
        if (
            isinstance(item, RlconformItem)
            and report.skipped
            and isinstance(report.longrepr, tuple)
            and not hasattr(report, "wasxfail")
        ):
            report.longrepr = (item.nodeid, None, report.longrepr[2])

    # -- verdicts -----------------------------------------------------------------------------

    def record(self, verdict: Verdict, system: System | None = None, spec: Spec | None = None) -> None:
        from rlconform.reports.results import spec_json, system_json, verdict_json

        self.verdicts[(verdict.system_id, verdict.spec_id)] = verdict_json(verdict)
        if system is not None and all(s.id != system.id for s in self.systems):
            self.extra_systems.setdefault(system.id, system_json(system))
        if spec is not None and all(s.id != spec.id for s in self.specs):
            self.extra_specs.setdefault(spec.id, spec_json(spec))

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        """xdist controller: merge the verdicts of a worker that finished."""
        raw = (getattr(node, "workeroutput", None) or {}).get(WORKEROUTPUT_KEY)
        if not raw:
            return
        handed = json.loads(raw)
        for result in handed["results"]:
            self.verdicts[(result["system"], result["spec"])] = result
        for entry in handed["systems"]:
            self.extra_systems.setdefault(entry["id"], entry)
        for entry in handed["specs"]:
            self.extra_specs.setdefault(entry["id"], entry)

    def ordered_results(self) -> list[dict[str, Any]]:
        system_rank = {s.id: i for i, s in enumerate(self.systems)}
        spec_rank = {s.id: i for i, s in enumerate(self.specs)}
        last = len(system_rank) + len(spec_rank)

        def key(pair: tuple[str, str]) -> tuple[int, str, int, str]:
            system_id, spec_id = pair
            return (system_rank.get(system_id, last), system_id, spec_rank.get(spec_id, last), spec_id)

        return [self.verdicts[pair] for pair in sorted(self.verdicts, key=key)]

    def results(self) -> Results:
        """This session's results as ``rlconform check`` has them (``rlconform.reports.results``):
        the verdicts of every process, in (system, spec) order, as the rows of the document (each
        result's status is already the one every report shows: ``verdict_json``), the systems and
        specs of checks made by ``rlconform.testing`` beside the plugin's own, and the libraries of
        the families checked."""
        from rlconform.reports.results import Results, family_libraries

        assert self.profile is not None
        results = Results(
            profile=self.profile,
            seed=self.seed,
            systems=self.systems,
            specs=self.specs,
            notes=["pytest plugin run: results list the items that ran (deselected items are absent)"],
            libraries=family_libraries(self.families()),
            rows=self.ordered_results(),
            extra_systems=[self.extra_systems[k] for k in sorted(self.extra_systems)],
            extra_specs=[self.extra_specs[k] for k in sorted(self.extra_specs)],
        )
        if self.skipped_specs:
            results.notes.append(self.skipped_note())
        return results

    def families(self) -> list[Family]:
        """The families of every system checked (the plugin's, then rlconform.testing's), once each."""
        names = [s.family for s in self.systems] + [self.extra_systems[k]["family"] for k in sorted(self.extra_systems)]
        known = current().families()
        return [known[name] for name in dict.fromkeys(names) if name in known]

    def summary(self) -> dict[str, int]:
        return self.results().summary()

    def summary_text(self) -> str:
        """The verdicts as a sentence, as ``rlconform check`` ends: '7 passed, 1 failed'."""
        return self.results().summary_text()

    def not_applicable_lines(self) -> list[str]:
        """The pairs not collected because the spec does not apply, once per system: the specs
        of the system's own family one by one with the reason, those of other families counted
        (named when there are at most three)."""
        lines = []
        for system in self.systems:
            pairs = [(spec, why) for (sid, spec), why in self.not_applicable.items() if sid == system.id]
            if not pairs:
                continue
            own = [f"{spec} ({why})" for spec, why in pairs if system.family in get_spec(spec).families]
            other = [(spec, why) for spec, why in pairs if system.family not in get_spec(spec).families]
            if len(other) <= 3:
                own += [f"{spec} ({why})" for spec, why in other]
            else:
                own.append(f"{len(other)} specs of other families than {system.family}")
            lines.append(f"  {system.id}: {'; '.join(own)}")
        return lines

    def failures_by_impact(self) -> str:
        """'6 training-data, 1 api-contract (4 groups of one minimal case)': the failures that count,
        most severe class first, and how many groups sharing a minimal case they form."""
        counted = [r for r in self.ordered_results() if not (r.get("known") or r.get("expected"))]
        found = groups(failing_from_json(counted, [s.id for s in self.specs]))
        members = [m for g in found for m in g]
        if not members:
            return ""
        parts = []
        for impact in (*IMPACTS, None):
            n = sum(m.impact == impact for m in members)
            if n:
                parts.append(f"{n} {impact or UNCLASSIFIED}")
        return f"{', '.join(parts)} ({len(found)} group{'' if len(found) == 1 else 's'} of one minimal case)"

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.is_worker:
            handed = {
                "results": list(self.verdicts.values()),
                "systems": list(self.extra_systems.values()),
                "specs": list(self.extra_specs.values()),
            }
            self.config.workeroutput[WORKEROUTPUT_KEY] = json.dumps(handed, default=str)  # type: ignore[attr-defined]
        else:
            self.write_json()
        if self.cache is not None:
            self.cache.clear()

    def write_json(self) -> None:
        if self.json_path is None or self.profile is None or (self.passive and not self.verdicts):
            return
        self.results().write_json(str(self.json_path))
        self.json_written = True

    def pytest_terminal_summary(self, terminalreporter: Any, config: pytest.Config) -> None:
        if self.is_worker or self.profile is None or (self.passive and not self.verdicts):
            return
        terminalreporter.write_sep("-", "rlconform")
        results = self.results()
        terminalreporter.write_line(f"rlconform ({self.profile.name} profile): {results.summary_text()}")
        said = results.library_messages_line(written=self.json_written)
        if said is not None:
            terminalreporter.write_line(f"rlconform: {said}")
        for line in self.left_out_lines():
            terminalreporter.write_line(line)
        if self.skipped_specs:
            terminalreporter.write_line(f"rlconform: {self.skipped_note()}")
        not_applicable = self.not_applicable_lines()
        if not_applicable:
            terminalreporter.write_line("rlconform: not applicable, so not collected as test items:")
            for line in not_applicable:
                terminalreporter.write_line(line)
        by_impact = self.failures_by_impact()
        if by_impact:
            terminalreporter.write_line(f"rlconform failures by impact: {by_impact}")
        if self.json_written:
            terminalreporter.write_line(f"rlconform: results written to {self.json_path}")
