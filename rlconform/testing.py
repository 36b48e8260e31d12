"""A pytest-native API for test files: one test per (system, spec), in the spirit of
scikit-learn's ``parametrize_with_checks``.

A downstream repository writes the checks it owns as an ordinary test, so that they live beside its
other tests, run with its pytest options (``-k``, ``-n``, ``--junitxml``) and need no command-line
flags::

    from rlconform.testing import parametrize_with_checks

    from mypkg.vec import make_vec_env


    @parametrize_with_checks([make_vec_env], api="gymnasium.vector")
    def test_rlconform(rlconform_check):
        rlconform_check()

Each test is named ``test_rlconform[{system id}-{spec id}]`` and carries the ``rlconform`` marker,
so ``-k transitions.exact`` and ``-m rlconform`` select among them and the project's
expected-failures file (``--rlconform-xfail`` or the ``rlconform_xfail`` ini option) applies to
them as to the plugin's own items. The Hypothesis profile is the session's (``--rlconform-profile``,
``$RLCONFORM_PROFILE``, the ``rlconform_profile`` ini option, then ``ci``), and ``--rlconform-json``
collects their verdicts too.

``api="torchrl.EnvBase"`` takes a factory ``(env_fn) -> EnvBase``: each ``env_fn()`` builds one
reference sub-env, the factory picks how many (``SerialEnv(2, lambda: GymWrapper(env_fn()))``)
and rlconform reads the number off the returned env's batch size.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import pytest

from rlconform import plugin as rl_plugin
from rlconform.core.runner import RunCache
from rlconform.core.selection import matching
from rlconform.core.session import Session
from rlconform.core.spec import Spec
from rlconform.core.system import System
from rlconform.core.user import BadInput, factory_signatures
from rlconform.core.verdict import Verdict
from rlconform.reports.left_out import left_out

#: the pipeline of this process's checks: one, so that a user's system is probed once however
#: many tests check it
_SESSION = Session()


class RlconformLeftOutWarning(UserWarning):
    """A user's factory refused some observation or action kinds, so no case used them: a pass
    says nothing about them. Shown once per system in pytest's warnings summary (the plugin's
    own summary is there only when the plugin is active), and on each test's
    ``rlconform_left_out`` property (JUnit XML)."""


#: the systems whose left-out kinds this process already warned about
_WARNED: set[str] = set()

#: what ``systems`` may hold: a factory, ``MODULE:CALLABLE``, a bundled system id or glob, a System
SystemLike = Callable[..., Any] | str | System


class RlconformCheck:
    """One (system, spec) check; calling it runs the search and turns the verdict into the test's
    outcome (a failure with the violations and a standalone reproducer, an xfail for a documented
    violation, a skip with its reason when the spec does not apply or a library is missing)."""

    def __init__(self, system: System, spec: Spec) -> None:
        self.system = system
        self.spec = spec

    @property
    def id(self) -> str:
        return f"{self.system.id}-{self.spec.id}"

    def __repr__(self) -> str:
        return f"RlconformCheck({self.id})"

    def __call__(self) -> Verdict:
        config = rl_plugin._current_config
        if config is None:
            raise RuntimeError("rlconform checks run inside pytest, with the rlconform plugin loaded")
        session = config.pluginmanager.get_plugin(rl_plugin.SESSION_PLUGIN)
        profile = session.profile if session is not None else rl_plugin.resolve_profile(config)
        cache = session.cache if session is not None and session.cache is not None else _process_cache()
        item = _current_item(config)
        system = _SESSION.probed(self.system)
        _tell_left_out(system, item)
        verdict = _SESSION.check_pair(system, self.spec, profile, cache)
        rl_plugin.enforce_verdict(verdict, self.spec, item, session, system)
        return verdict


def _tell_left_out(system: System, item: pytest.Item) -> None:
    gap = left_out(system.capabilities.notes)
    if gap is None:
        return
    text = f"rlconform: {system.id} was {gap.clause(see_above=False)}; {gap.heading()}: {'; '.join(gap.lines())}"
    item.user_properties.append(("rlconform_left_out", text))
    if system.id not in _WARNED:
        _WARNED.add(system.id)
        warnings.warn(RlconformLeftOutWarning(text), stacklevel=1)


def parametrize_with_checks(
    systems: Iterable[SystemLike],
    *,
    api: str | None = None,
    specs: Sequence[str] | None = None,
    intended: Sequence[str] | str | None = None,
    options: Mapping[str, Any] | None = None,
) -> pytest.MarkDecorator:
    """Parametrize a test over every (system, spec) pair, as ``rlconform_check``.

    ``systems``: factories (callables with the signature of family ``api``), ``MODULE:CALLABLE``
    strings (also of family ``api``), ids or globs of bundled systems (``rlconform list``), or
    :class:`~rlconform.core.system.System` objects. ``specs``: spec ids or globs (default: every spec
    that applies to the system's family). ``intended``: value changes the systems make on purpose
    (``"reward"``, ``"observation"``, ``"action"``, ``"time_limit"``, ``"frame_skip"`` and the narrow
    kinds of rlconform.core.intents), accepted and listed as
    "changed as declared". ``options``: the family's options for the factories given, as
    ``rlconform check`` takes them (``{"single_env": "m:make_single", "seeding": "shared"}`` for
    ``api="gymnasium.VectorEnv"``, ``num_envs`` and ``device`` for ``api="isaaclab"``). Bad input raises :class:`~rlconform.core.user.BadInput` when
    the test module is imported, with a one-line reason.
    """
    resolved = [
        _SESSION.with_intents(system, intended) for system in _resolve_systems(list(systems), api, options or {})
    ]
    chosen = _resolve_specs(specs)
    params = []
    for system in resolved:
        for spec in chosen:
            if system.family not in spec.families:
                continue
            check = RlconformCheck(system, spec)
            params.append(
                pytest.param(
                    check,
                    id=check.id,
                    marks=pytest.mark.rlconform(system=system.id, spec=spec.id, family=system.family),
                )
            )
    if not params:
        raise BadInput("parametrize_with_checks: no spec applies to the systems given")
    return pytest.mark.parametrize("rlconform_check", params)


def _resolve_systems(systems: list[SystemLike], api: str | None, options: Mapping[str, Any]) -> list[System]:
    if not systems:
        raise BadInput("parametrize_with_checks: no systems given")
    resolved: list[System] = []
    for entry in systems:
        if isinstance(entry, System):
            resolved.append(entry)
        elif isinstance(entry, str) and ":" in entry:
            resolved.append(_SESSION.user_system(entry, _need_api(api, entry), options=options))
        elif isinstance(entry, str):
            matches = _SESSION.bundled_systems([entry])
            if not matches:
                raise BadInput(f"no bundled system matches {entry!r} (`rlconform list` lists them)")
            resolved.extend(matches)
        elif callable(entry):
            resolved.append(_SESSION.user_system(entry, _need_api(api, repr(entry)), options=options))
        else:
            raise BadInput(f"parametrize_with_checks: {entry!r} is not a factory, a MODULE:CALLABLE or a system id")
    return Session.unique(resolved)


def _need_api(api: str | None, what: str) -> str:
    if api is None:
        raise BadInput(f"parametrize_with_checks: {what} needs api=FAMILY ({', '.join(factory_signatures())})")
    return api


def _resolve_specs(patterns: Sequence[str] | None) -> list[Spec]:
    every = _SESSION.specs()
    for pattern in patterns or ():
        if not matching(every, [pattern]):
            raise BadInput(f"parametrize_with_checks: no spec matches {pattern!r} (`rlconform list` lists them)")
    return matching(every, patterns)


_CACHE: list[RunCache] = []


def _process_cache() -> RunCache:
    if not _CACHE:
        _CACHE.append(RunCache())
    return _CACHE[0]


def _current_item(config: pytest.Config) -> pytest.Item:
    item = config.stash.get(rl_plugin.CURRENT_ITEM_KEY, None)
    if item is None:
        raise RuntimeError("rlconform_check() must be called from the test it parametrizes")
    return item
