"""The check pipeline the three front ends share: ``rlconform run``/``check``, the pytest plugin and
:func:`rlconform.testing.parametrize_with_checks`.

Each front end once assembled the pipeline itself, and the copies drifted (the bundled-systems
filter was written three times, ``testing`` had its own pattern matcher). A :class:`Session` holds
the steps they share, in the order a check goes through them:

1. select: the bundled systems (library systems and reference models, never planted bugs), the
   user's own system (built from ``MODULE:CALLABLE`` or a factory object), the specs;
2. probe: build a user's system once, to learn its cost, capabilities and stack semantics;
3. plan: which selected systems no selected spec applies to, which are skipped (a library missing);
4. run: the searches, with the project's expected failures marked as verdicts arrive;
5. verdicts for the pairs that never run (not applicable, skipped).

:meth:`Session.check` takes a whole check as one :class:`CheckRequest` (what ``rlconform run`` and
``rlconform check`` are asked) through steps 1 to 5 and gives back a :class:`Checked`: the verdicts,
the notes the report carries, what was selected and planned. It is a core object, not the results
document: the core may not import ``rlconform.reports``, so each front end wraps it in
``rlconform.reports.results.Results`` (``Results.from_checked``) and only prints. The pytest plugin
runs one (system, spec) per item (:meth:`Session.check_pair`) and shares the selection
(:meth:`Session.select_specs`) and the results code instead.

What only one front end has stays there: argparse and printing in ``cli``, items, hooks and usage
errors in ``plugin``, the parametrization in ``testing``; so does making the results document
(``rlconform.reports``, which the core may not import). Every error here is the core's own
(:class:`~rlconform.core.user.BadInput`, :class:`~rlconform.core.selection.SelectionError`), and each
front end says it its own way.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rlconform.core.catalog import Catalog, current
from rlconform.core.expected import FAILING, ExpectedFailures
from rlconform.core.family import Family, get_family
from rlconform.core.findings import mark as mark_findings
from rlconform.core.library_messages import merged
from rlconform.core.options import FamilyOption, OptionError, declared_options, given_options
from rlconform.core.profiles import Profile, get_profile, session_seed
from rlconform.core.progress import Event, Progress
from rlconform.core.runner import RunCache
from rlconform.core.search import check_spec
from rlconform.core.selection import check_skip_patterns, matching, without_skipped
from rlconform.core.spec import Spec
from rlconform.core.suite import RunInterrupted, SystemProgress, run_checks
from rlconform.core.system import BUNDLED_KINDS, System
from rlconform.core.user import BadInput, factory_system, family_for, probe, user_system, with_intents
from rlconform.core.verdict import Verdict, skip_status


@dataclass
class Plan:
    """What happens to each selected system: checked by running it, checked as skipped (its
    library is missing: a verdict per spec, no run), or not checked at all (no selected spec
    applies to its family: an empty row and a line that says why)."""

    #: the systems whose searches run, in selection order
    runnable: list[System] = field(default_factory=list)
    #: the systems checked without running, each spec's verdict saying why
    skipped: list[System] = field(default_factory=list)
    #: system id -> the line saying no selected spec applies to it (never a verdict)
    without_specs: dict[str, str] = field(default_factory=dict)


@dataclass
class CheckRequest:
    """A whole check, as a front end asks :meth:`Session.check` for it: a user's factory (``target``
    as ``api``, ``rlconform check``) or the bundled systems (``rlconform run``), the specs, the
    profile, how to run, the project's expected failures, and whom to tell how it goes.

    The patterns are kept as the user gave them: a selection that matches nothing is said with
    them (``no spec matches ['flags.*']``)."""

    #: a user's factory (``MODULE:CALLABLE`` or the factory object); None: the bundled systems
    target: str | Callable[..., Any] | None = None
    #: the ``--api`` of ``target``
    api: str | None = None
    #: the family's own options for ``target`` (:meth:`Session.family_options`)
    options: Mapping[str, Any] = field(default_factory=dict)
    #: the value changes ``target`` makes on purpose (``--intended``)
    intended: Sequence[str] | str | None = None
    #: the bundled systems whose id matches (``--system``; None: every one); without ``target`` only
    systems: Sequence[str] | None = None
    #: with the reference models (the control rows; ``--no-reference`` leaves them out)
    reference: bool = True
    #: the specs whose id matches (``--spec``; None: every one)
    specs: Sequence[str] | None = None
    #: the specs left out (``--skip-spec``), and the option the user typed them with
    skip_specs: Sequence[str] = ()
    skip_option: str = "--skip-spec"
    #: the profile's name (None: $RLCONFORM_PROFILE, then the default)
    profile: str | None = None
    jobs: int = 1
    #: each system in a worker process of its own (``--in-process`` turns it off)
    isolate: bool = True
    #: the project's expected failures (read by the front end, so that a bad file is bad input
    #: before anything is built)
    expected: ExpectedFailures | None = None
    #: told of each spec and system as the searches go
    progress: Progress | SystemProgress | None = None
    #: told the selection and the plan (a :class:`Checked` without verdicts yet) once they are
    #: made, before any search runs: the front end prints its header there
    started: Callable[[Checked], None] | None = None


@dataclass
class Checked:
    """What :meth:`Session.check` made of a :class:`CheckRequest`: the selection, the plan, the
    verdicts and the notes the report carries. A core object: the front ends wrap it in the results
    document (``rlconform.reports.results.Results.from_checked``)."""

    profile: Profile
    #: the seed of the searches (None: derandomized)
    seed: int | None
    #: every system selected, in order (the report's rows), the user's own first
    systems: list[System]
    #: the specs checked (after ``skip_specs``)
    specs: list[Spec]
    #: the specs the user left out, named in the report
    skipped_specs: list[Spec] = field(default_factory=list)
    plan: Plan = field(default_factory=Plan)
    #: the user's own system (``target``), probed; None for the bundled systems
    user: System | None = None
    #: lines the report carries: the specs left out, systems without specs, the expected-failures
    #: file read and its entries that matched nothing
    notes: list[str] = field(default_factory=list)
    verdicts: list[Verdict] = field(default_factory=list)
    #: the expected-failures entries that matched no check (the front end warns about each)
    warnings: list[str] = field(default_factory=list)
    #: Ctrl-C (or SIGTERM) ended the searches: ``verdicts`` are those finished by then, the others
    #: "not run", and ``finished`` says how many were finished; no expected failure was applied
    interrupted: bool = False
    finished: int = 0

    @property
    def families(self) -> list[Family]:
        """The families of the systems checked, each once, in order."""
        return [get_family(name) for name in dict.fromkeys(system.family for system in self.systems)]

    @property
    def library_messages(self) -> dict[str, int]:
        """What the libraries said during every search (:mod:`rlconform.core.library_messages`)."""
        return merged(verdict.library_messages for verdict in self.verdicts)


def skipped_note(skipped: Sequence[Spec], option: str) -> str | None:
    """The line naming the specs the user left out (None: none)."""
    if not skipped:
        return None
    return f"specs skipped by the user ({option}), not run: {', '.join(spec.id for spec in skipped)}"


class Session:
    """The shared pipeline over one catalog (default: the one in use, looked up on each call, so
    that :func:`rlconform.core.catalog.use` in a test applies to a session made before it).

    A session remembers the user systems it probed (so that one built in a test process is probed
    once, however many checks it has) and which verdicts it marked as expected (so that a verdict
    marked while progress was shown is not marked twice)."""

    def __init__(self, catalog: Catalog | None = None) -> None:
        self._catalog = catalog
        self._probed: dict[str, System] = {}
        self._expected_applied: set[int] = set()

    @property
    def catalog(self) -> Catalog:
        return self._catalog if self._catalog is not None else current()

    # -- 1. selection ----------------------------------------------------------------------

    def bundled_systems(self, patterns: Sequence[str] | None = None, *, reference: bool = True) -> list[System]:
        """The bundled systems whose id matches ``patterns`` (all without patterns), in catalog
        order; ``reference=False`` leaves out the reference models (the control rows)."""
        kinds = BUNDLED_KINDS if reference else tuple(kind for kind in BUNDLED_KINDS if kind != "reference")
        return matching([s for s in self.catalog.systems() if s.kind in kinds], patterns)

    def specs(self, patterns: Sequence[str] | None = None) -> list[Spec]:
        """The specs whose id matches ``patterns`` (all without patterns), in catalog order."""
        return matching(self.catalog.specs(), patterns)

    def select_specs(self, patterns: Sequence[str] | None, skip_patterns: Sequence[str], option: str) -> list[Spec]:
        """The specs ``patterns`` select, before the user's ``skip_patterns`` leave some out: none
        selected is bad input, and so is a skip pattern that matches no selected spec
        (SelectionError: ``option`` is how the user typed it)."""
        specs = self.specs(patterns)
        if not specs:
            raise BadInput(f"no spec matches {patterns}")
        check_skip_patterns(specs, skip_patterns, option)
        return specs

    def user_system(
        self, target: str | Callable[..., Any], api: str, *, options: Mapping[str, Any] | None = None
    ) -> System:
        """The user's factory (``MODULE:CALLABLE`` or the factory object) as a system of the family
        of ``api``, not probed yet (:meth:`probed`); bad input raises BadInput."""
        given = dict(options or {})
        return user_system(target, api, **given) if isinstance(target, str) else factory_system(target, api, **given)

    def checked_user_system(
        self,
        target: str | Callable[..., Any],
        api: str,
        *,
        options: Mapping[str, Any] | None = None,
        intended: Sequence[str] | str | None = None,
    ) -> System:
        """The user's system probed, then with the value changes it makes on purpose: what ``check``
        and ``--rlconform-check`` run (a factory that cannot be built is reported before a bad
        intent)."""
        return self.with_intents(self.probed(self.user_system(target, api, options=options)), intended)

    @staticmethod
    def with_intents(system: System, intended: Sequence[str] | str | None) -> System:
        """``system`` with the value changes its user declared on purpose (an unknown one is bad input)."""
        return with_intents(system, intended)

    def family_options(self, api: str, value: Callable[[str], Any]) -> dict[str, Any]:
        """The options the family of ``api`` declares (``Family.options``: ``num_envs``,
        ``device``, ``stacks``, ...), each read with ``value(name)`` from the front end's own flags;
        an unknown api, an option of another family given, or a value the option does not accept
        is bad input."""
        family = family_for(api)
        try:
            return given_options(family, self.family_option_list(), value)
        except OptionError as exc:
            raise BadInput(str(exc)) from None

    def family_option_list(self) -> list[FamilyOption]:
        """Every option a family of the catalog declares, once (what the front ends render)."""
        return [option for option, _ in declared_options(self.catalog.libraries)]

    @staticmethod
    def unique(systems: Iterable[System]) -> list[System]:
        """``systems`` without repeats of an id (the first one stays), in order."""
        found: dict[str, System] = {}
        for system in systems:
            found.setdefault(system.id, system)
        return list(found.values())

    # -- 2. probing ------------------------------------------------------------------------

    def probed(self, system: System) -> System:
        """A user's system built once per session before its first check (to learn whether it
        starts worker processes, which sets its search budget); bundled systems need no probe."""
        if system.kind != "user":
            return system
        if system.id not in self._probed:
            self._probed[system.id] = probe(system)
        return self._probed[system.id]

    # -- 3. planning -----------------------------------------------------------------------

    def plan(self, systems: Sequence[System], specs: Sequence[Spec]) -> Plan:
        """Sort ``systems`` into those that run, those skipped and those no spec applies to."""
        plan = Plan(without_specs=self.without_specs(systems, specs))
        for system in systems:
            if system.id in plan.without_specs:
                continue
            (plan.skipped if system.skip_reason() else plan.runnable).append(system)
        return plan

    def without_specs(self, systems: Sequence[System], specs: Sequence[Spec]) -> dict[str, str]:
        """Systems no selected spec applies to (a family whose specs come in a later release), each
        with the line that says so: they keep an empty row in the table, never a verdict."""
        registered = self.catalog.specs()
        lines = {}
        for system in systems:
            if any(system.family in spec.families for spec in specs):
                continue
            if any(system.family in spec.families for spec in registered):
                lines[system.id] = f"NO SPECS {system.id}: no selected spec applies to family {system.family}; not run"
            else:
                lines[system.id] = f"NO SPECS {system.id}: no specs yet for family {system.family}; not run"
        return lines

    # -- 4. running ------------------------------------------------------------------------

    @staticmethod
    def profile(name: str | None) -> Profile:
        """The profile ``name`` (None: $RLCONFORM_PROFILE, then the default)."""
        return get_profile(name)

    @staticmethod
    def seed(profile: Profile) -> int | None:
        """The seed of this process's searches under ``profile`` (None: derandomized)."""
        return None if profile.derandomize else session_seed()

    def check_pair(self, system: System, spec: Spec, profile: Profile, cache: RunCache) -> Verdict:
        """One (system, spec) search, in this process (a pytest item); a bundled system's failure
        carries the FINDINGS row that explains it, as in a run."""
        verdict = check_spec(system, spec, profile, cache=cache)
        mark_findings(system, [verdict])
        return verdict

    def prepare(self, request: CheckRequest) -> Checked:
        """Steps 1 to 3 of ``request``: the profile and seed, the systems (a user's probed, with its
        family's companions; or the bundled ones), the specs that apply to their families without
        those left out, the plan, and the notes so far. Bad input raises BadInput or SelectionError,
        before any search runs."""
        profile = self.profile(request.profile)
        seed = self.seed(profile)
        user: System | None = None
        if request.target is not None:
            if request.api is None:
                raise BadInput("a factory needs the API it implements (--api)")
            user = self.checked_user_system(
                request.target, request.api, options=request.options, intended=request.intended
            )
            systems = [user, *get_family(user.family).companions(user)]
        else:
            systems = self.bundled_systems(request.systems, reference=request.reference)
            if not systems:
                raise BadInput(f"no system matches {request.systems}")
        selected = self.select_specs(request.specs, request.skip_specs, request.skip_option)
        families = {system.family for system in systems}
        applicable = [spec for spec in selected if spec.families & families]
        if user is not None and not applicable:
            raise BadInput(f"no spec matches {request.specs} for family {request.api}")
        specs, skipped = without_skipped(applicable, request.skip_specs, request.skip_option)
        checked = Checked(profile, seed, systems, specs, skipped, user=user)
        note = skipped_note(skipped, request.skip_option)
        if note is not None:
            checked.notes.append(note)
        if user is not None:
            # a user's check runs every system it selected: a companion whose library is missing
            # gets its skipped verdicts from its searches, in its place
            checked.plan = Plan(runnable=list(systems))
        else:
            checked.plan = self.plan(systems, specs)
            checked.notes.extend(checked.plan.without_specs.values())
        return checked

    def check(self, request: CheckRequest) -> Checked:
        """The whole of ``request``: select, probe and plan (:meth:`prepare`; ``request.started`` is
        told), run the searches, give the systems that cannot run their verdicts, and mark the
        project's expected failures (their note and the entries that matched nothing join the
        notes). A Ctrl-C during the searches ends them: the result is marked ``interrupted``."""
        checked = self.prepare(request)
        if request.started is not None:
            request.started(checked)
        try:
            checked.verdicts = self.run(
                checked.plan.runnable,
                checked.specs,
                checked.profile,
                jobs=request.jobs,
                isolate=request.isolate,
                progress=request.progress,
                expected=request.expected,
            )
        except RunInterrupted as interrupted:
            checked.verdicts, checked.finished = interrupted.verdicts, interrupted.finished
            checked.interrupted = True
            return checked
        checked.verdicts += self.skipped_verdicts(
            checked.plan.skipped, checked.specs, checked.profile.name, checked.seed
        )
        expected = request.expected
        if expected is not None:
            checked.warnings = self.apply_expected(expected, checked.verdicts)
            strict = " (strict)" if expected.strict else ""
            checked.notes.append(f"expected failures read from {expected.source}{strict}")
            checked.notes.extend(checked.warnings)
        return checked

    def run(
        self,
        systems: Sequence[System],
        specs: Sequence[Spec],
        profile: Profile,
        *,
        jobs: int = 1,
        isolate: bool = False,
        progress: Progress | SystemProgress | None = None,
        expected: ExpectedFailures | None = None,
    ) -> list[Verdict]:
        """Every (system, spec) search (:func:`~rlconform.core.suite.run_checks`); with ``expected``,
        each verdict is marked before ``progress`` shows it, so that an expected failure is
        counted as one ("known") and never as a failure."""
        if expected is not None and isinstance(progress, Progress):
            progress = expected_progress(expected, self._expected_applied, progress)
        return run_checks(systems, specs, profile, jobs=jobs, isolate=isolate, progress=progress)

    def apply_expected(self, expected: ExpectedFailures, verdicts: Iterable[Verdict]) -> list[str]:
        """Mark the project's expected failures among ``verdicts`` (those :meth:`run` did not mark
        already); returns the warnings for entries that matched no check."""
        for verdict in verdicts:
            if id(verdict) not in self._expected_applied:
                expected.apply(verdict)
                self._expected_applied.add(id(verdict))
        return expected.warnings()

    # -- 5. verdicts of the pairs that never run -------------------------------------------

    @staticmethod
    def skipped_verdicts(
        systems: Sequence[System], specs: Sequence[Spec], profile: str, seed: int | None
    ) -> list[Verdict]:
        """The verdicts of systems that cannot run here, in the order check_spec decides: a spec
        that does not apply to the system is not applicable whether or not the system can run."""
        return [
            Verdict(s.id, spec.id, "not_applicable", reason, profile=profile, seed=seed)
            if (reason := spec.not_applicable_reason(s)) is not None
            else Verdict(
                s.id, spec.id, skip_status(s.skip_reason() or ""), s.skip_reason() or "", profile=profile, seed=seed
            )
            for s in systems
            for spec in specs
        ]

    @staticmethod
    def not_applicable_verdicts(
        systems: Sequence[System], specs: Sequence[Spec], profile: str, seed: int | None
    ) -> list[tuple[Verdict, str]]:
        """(verdict, reason) for every pair whose spec does not apply to its system: no search runs
        for these (the plugin collects no item for them)."""
        found = []
        for system in systems:
            for spec in specs:
                reason = spec.not_applicable_reason(system)
                if reason is not None:
                    verdict = Verdict(
                        system.id, spec.id, "not_applicable", reason, profile=profile, seed=seed, impact=spec.impact
                    )
                    found.append((verdict, reason))
        return found


def expected_progress(expected: ExpectedFailures, applied: set[int], progress: Progress) -> Progress:
    """``progress``, marking the project's expected failures first; the ids of the verdicts it
    marked are added to ``applied``."""
    return _ExpectedProgress(expected, applied, progress)


class _ExpectedProgress(Progress):
    """``progress``, with each verdict marked with the project's expected failures before it is
    shown, so that an expected failure is counted as one ("known"), never as a failure: in the
    per-spec lines as in each system's line."""

    def __init__(self, expected: ExpectedFailures, applied: set[int], progress: Progress) -> None:
        self.expected = expected
        self.applied = applied
        self.progress = progress

    def event(self, event: Event) -> None:
        # the event carries the shown status (suite: cell_status): an inherited failure is one
        # the expected-failures file can excuse too (ExpectedFailures.apply reads its outcome, fail)
        if event[0] == "verdict" and event[5] in (*FAILING, "inherited"):
            entry = self.expected.match(event[1], event[4])
            # an entry pinned to a signature excuses that failure only
            if entry is not None and entry.excuses(event[8] if len(event) > 8 else None):
                event = (*event[:5], "known", *event[6:])
        self.progress.event(event)

    def system_started(self, done: int, total: int, system: System) -> None:
        self.progress.system_started(done, total, system)

    def system_finished(self, done: int, total: int, system: System, verdicts: list[Verdict], seconds: float) -> None:
        for verdict in verdicts:
            if id(verdict) not in self.applied:
                self.expected.apply(verdict)
                self.applied.add(id(verdict))
        self.progress.system_finished(done, total, system, verdicts, seconds)

    def tick(self) -> None:
        self.progress.tick()

    def close(self) -> None:
        self.progress.close()
