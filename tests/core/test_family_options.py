"""A family's options are declared once and every front end renders that declaration (issue 34).

``rlconform check`` (``--single-env``), the pytest plugin (``--rlconform-single-env``),
``parametrize_with_checks(options=...)`` and ``replay(..., single_env=...)`` all read
``Library.options``/``Family.options`` (rlconform.core.options); a new family with options touches
no front end. An option given to an ``--api`` that does not take it, a value outside its choices,
or an unknown key is bad input with a one-line reason.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from rlconform.catalog import LIBRARIES
from rlconform.core.catalog import Catalog, Library, current, use
from rlconform.core.options import FamilyOption, OptionError, declared_options, mapping_options
from rlconform.core.session import Session
from rlconform.core.user import BadInput


def test_each_family_declares_the_options_its_library_lists() -> None:
    """The light declaration the front ends read (``Library.options``) is the family's own."""
    families = {family.api: family for family in current().families().values() if family.api}
    listed = {api: options for library in current().libraries for api, options in library.options.items()}
    for api, family in families.items():
        assert tuple(family.options) == tuple(listed.get(api, ())), api
    assert {"gymnasium.VectorEnv", "gymnasium.Env", "isaaclab"} <= set(listed)


def test_the_cli_and_the_plugin_render_every_declared_option() -> None:
    from rlconform.cli import build_parser
    from rlconform.plugin import pytest_addoption

    check = next(
        action
        for action in build_parser()._actions
        if isinstance(action, argparse._SubParsersAction)  # the subcommands
    ).choices["check"]
    cli_flags = {flag for action in check._actions for flag in action.option_strings}

    added: list[str] = []

    class Group:
        def addoption(self, *names: str, **kwargs: object) -> None:
            added.extend(names)

    class Parser:
        def getgroup(self, *args: object) -> Group:
            return Group()

        def addini(self, *args: object, **kwargs: object) -> None:
            pass

    pytest_addoption(Parser())  # type: ignore[arg-type]
    for option, _ in declared_options(current().libraries):
        assert option.flag() in cli_flags
        assert option.flag("rlconform-") in added


def test_choices_are_written_once() -> None:
    """The seeding schemes and the autoreset modes come from one declaration (they were written
    three and seven times)."""
    from rlconform.libraries.gymnasium import options as gym_options
    from rlconform.libraries.gymnasium.releases import ALL_MODES

    by_name = {option.name: option for option, _ in declared_options(current().libraries)}
    assert by_name["seeding"].choices is gym_options.SEEDINGS
    assert by_name["autoreset_mode"].choices is gym_options.MODES
    assert ALL_MODES is gym_options.MODES
    source = Path(__file__).resolve().parents[2] / "rlconform"
    spelled = [
        path
        for path in source.rglob("*.py")
        if '("seed+i", "shared", "construction")' in path.read_text()
        or '("NextStep", "SameStep", "Disabled")' in path.read_text()
    ]
    assert [p.name for p in spelled] == ["options.py"]


def test_an_option_of_another_api_or_a_bad_value_is_bad_input() -> None:
    session = Session()
    given = {"single_env": None, "seeding": "per-env", "autoreset_mode": None}
    with pytest.raises(BadInput, match=r"--seeding 'per-env' is not one of seed\+i, shared, construction"):
        session.family_options("gymnasium.VectorEnv", lambda name: given.get(name))
    with pytest.raises(BadInput, match=r"--seeding does not apply to --api gymnasium.vector \(it takes no options\)"):
        session.family_options("gymnasium.vector", lambda name: {"seeding": "shared"}.get(name))
    with pytest.raises(BadInput, match=r"--stacks does not apply to --api isaaclab \(it takes: num_envs, device\)"):
        session.family_options("isaaclab", lambda name: {"stacks": ["sb3.*"]}.get(name))
    assert session.family_options("gymnasium.VectorEnv", lambda name: {"seeding": "shared"}.get(name)) == {
        "single_env": None,
        "seeding": "shared",
        "autoreset_mode": None,
    }


def test_parametrize_with_checks_and_replay_take_the_same_keys() -> None:
    pytest.importorskip("gymnasium")
    from rlconform.testing import parametrize_with_checks

    def make(num_envs: int) -> object:
        raise AssertionError("never built: the options are checked first")

    with pytest.raises(BadInput, match=r"option 'single_env_factory' does not apply to --api gymnasium.VectorEnv"):
        parametrize_with_checks([make], api="gymnasium.VectorEnv", options={"single_env_factory": "m:f"})
    with pytest.raises(BadInput, match=r"'sometimes' is not one of"):
        parametrize_with_checks([make], api="gymnasium.VectorEnv", options={"seeding": "sometimes"})
    family = current().family_for_api("gymnasium.VectorEnv")
    assert family is not None
    with pytest.raises(OptionError):
        mapping_options(family, {"num_envs": 4})


NEW_OPTION = FamilyOption("horizon", "how many steps each episode of your simulator runs", metavar="T", convert=int)


def test_a_new_family_with_options_touches_no_front_end() -> None:
    """A library that declares an option for its API gets the flag in ``rlconform check``, in the
    plugin and in the docs' table, with no front-end change."""
    from rlconform.cli import build_parser
    from rlconform.core.options import markdown_table

    library = Library(name="mysim", title="my simulator", modules=(), options={"mysim.Env": (NEW_OPTION,)})
    previous = use(Catalog([*LIBRARIES, library]))
    try:
        parser = build_parser()
        args = parser.parse_args(["check", "m:f", "--api", "mysim.Env", "--horizon", "7"])
        assert args.horizon == 7
        assert "`--horizon T` | `--rlconform-horizon T` | `horizon` | `mysim.Env`" in markdown_table(
            current().libraries
        )
    finally:
        use(previous)
