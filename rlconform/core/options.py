"""A family's own options, declared once: :class:`FamilyOption`.

A family that needs more than the factory to check a user's system (how many sub-envs, a single-env
twin, a seeding convention, the stacks to run an env through) declares each option on itself, once.
Every front end renders the same declaration: ``rlconform check`` as ``--single-env``, the pytest
plugin as ``--rlconform-single-env``, :func:`rlconform.testing.parametrize_with_checks` as the key
``"single_env"`` of ``options=``, and the docs list them from it (``tests/frontends/test_docs.py``).
A new family with options touches no front end.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rlconform.core.catalog import Library
    from rlconform.core.family import Family


class OptionError(ValueError):
    """An option given to a family that does not take it, or with a value it does not accept."""


@dataclass(frozen=True)
class FamilyOption:
    """One option of a family: its name (``single_env``), what it is, and how it is given. Not
    given, its value is None and the family uses its own default (which ``help`` says)."""

    name: str
    #: what it is, one sentence without the families it applies to (the front ends add them)
    help: str
    metavar: str | None = None
    #: the values it accepts (None: any)
    choices: tuple[str, ...] | None = None
    #: given more than once, its values are collected in a list (``--stacks A --stacks B``)
    repeatable: bool = False
    #: how a command-line value is converted (``int``); None: kept as a string
    convert: Callable[[str], Any] | None = None

    def flag(self, prefix: str = "") -> str:
        """The command-line flag: ``--single-env``, or ``--rlconform-single-env`` with ``prefix``."""
        return f"--{prefix}{self.name.replace('_', '-')}"

    def add_to(self, add: Callable[..., Any], *, prefix: str = "", apis: Sequence[str] = ()) -> None:
        """Add this option with ``add``: an argparse parser's ``add_argument`` or a pytest option
        group's ``addoption`` (they take the same keywords); ``apis``: the ``--api`` names that
        take it, said in the help."""
        kwargs: dict[str, Any] = {
            "dest": f"{prefix.replace('-', '_')}{self.name}",
            "default": None,
            "help": self.help + (f" ({', '.join(f'--{prefix}api {api}' for api in apis)})" if apis else ""),
        }
        if self.repeatable:
            kwargs["action"] = "append"
        if self.metavar is not None:
            kwargs["metavar"] = self.metavar
        if self.choices is not None:
            kwargs["choices"] = self.choices
        if self.convert is not None:
            kwargs["type"] = self.convert
        add(self.flag(prefix), **kwargs)

    def check(self, value: Any, api: str | None) -> Any:
        """``value`` as the family takes it; one outside :attr:`choices` raises OptionError."""
        if value is None:
            return None
        values = list(value) if self.repeatable and isinstance(value, list | tuple) else [value]
        if self.choices is not None:
            for one in values:
                if one not in self.choices:
                    raise OptionError(f"{self.flag()} {one!r} is not one of {', '.join(self.choices)} (--api {api})")
        return tuple(values) if self.repeatable else value


def every_option(declared: Iterable[tuple[str, Iterable[FamilyOption]]]) -> list[tuple[FamilyOption, list[str]]]:
    """Each option of ``declared`` (``--api`` name, its options) once, with the ``--api`` names
    that take it, in order. Two families that declare an option of the same name must declare it
    alike: a front end renders one flag for it."""
    found: dict[str, tuple[FamilyOption, list[str]]] = {}
    for api, options in declared:
        for option in options:
            if option.name in found and found[option.name][0] != option:
                raise ValueError(f"option {option.name!r} is declared differently by two families")
            found.setdefault(option.name, (option, []))[1].append(api)
    return list(found.values())


def declared_options(libraries: Iterable[Library]) -> list[tuple[FamilyOption, list[str]]]:
    """Every family option the ``libraries`` declare (``Library.options``), with the ``--api``
    names that take it: what the front ends render, read without loading any family."""
    return every_option(item for library in libraries for item in library.options.items())


def given_options(family: Family, every: Iterable[FamilyOption], value: Callable[[str], Any]) -> dict[str, Any]:
    """The options of ``family``, each read with ``value(name)`` from a front end's own flags and
    checked against its declaration; an option of another family, given, raises OptionError."""
    own = {option.name: option for option in family.options}
    for option in every:
        if option.name not in own and value(option.name) not in (None, [], ()):
            raise OptionError(f"{option.flag()} does not apply to --api {family.api}{_takes(family)}")
    return {name: option.check(value(name), family.api) for name, option in own.items()}


def mapping_options(family: Family, options: Mapping[str, Any]) -> dict[str, Any]:
    """``options`` given as a mapping (``parametrize_with_checks(options=...)``, ``replay(...)``)
    checked against ``family``'s declaration: an unknown key raises OptionError naming those it takes."""
    own = {option.name: option for option in family.options}
    unknown = sorted(set(options) - set(own))
    if unknown:
        raise OptionError(f"option {unknown[0]!r} does not apply to --api {family.api}{_takes(family)}")
    return {name: option.check(options.get(name), family.api) for name, option in own.items()}


def _takes(family: Family) -> str:
    names = [option.name for option in family.options]
    return f" (it takes: {', '.join(names)})" if names else " (it takes no options)"


def markdown_table(libraries: Iterable[Library]) -> str:
    """The options of every family as a Markdown table: what docs/cli.md lists."""
    lines = [
        "| `rlconform check` | pytest plugin | `options=` key | `--api` | what it is |",
        "|---|---|---|---|---|",
    ]
    for option, apis in declared_options(libraries):
        value = f" {option.metavar}" if option.metavar else ""
        choices = f" ({'&#124;'.join(option.choices)})" if option.choices else ""
        lines.append(
            f"| `{option.flag()}{value}` | `{option.flag('rlconform-')}{value}` | `{option.name}` | "
            f"{', '.join(f'`{api}`' for api in apis)} | {option.help}{choices} |"
        )
    return "\n".join(lines)
