"""Read a results file and check it against the shipped schema before any report is made from it.

A report made from a file that is not what it claims (another tool's JSON, a newer schema, a file
cut short) would be wrong without saying so; this refuses it with a one-line reason instead. The
checks run in order of what a user most likely got wrong: not JSON, not rlconform's, a
schema_version this rlconform cannot read, then the first field that breaks the schema.

Every schema_version this rlconform ever wrote stays readable, each validated by its own shipped
schema: a committed baseline written before a change of meaning is compared with a new run as the
verdicts it holds, not as the words it used (``ResultsDocument.from_json`` maps a v1 document's
statuses to the current vocabulary).
"""

from __future__ import annotations

import functools
import gzip
import json
from importlib import resources
from os import PathLike
from typing import Any

from rlconform.reports.document import ResultsDocument
from rlconform.reports.validate import Validator

SCHEMA = "rlconform/results"
#: the schema_version this rlconform writes: 2 shows one status vocabulary (a known or inherited
#: failure has the status "known" or "inherited", its outcome "fail"); 1 wrote the outcome as the
#: status. Both are read, each through its own schema (``ResultsDocument.from_json``).
SCHEMA_VERSION = 2
SUPPORTED_VERSIONS = (1, 2)
SCHEMA_FILES = {1: "results-v1.schema.json", 2: "results-v2.schema.json"}


class ResultsError(ValueError):
    """The file is not a results document this rlconform can read; the message is one line."""


def schema_text(version: int = SCHEMA_VERSION) -> str:
    """The JSON Schema of results documents of ``schema_version`` ``version``, as shipped."""
    return (resources.files("rlconform") / "schema" / SCHEMA_FILES[version]).read_text(encoding="utf-8")


@functools.cache
def schema(version: int = SCHEMA_VERSION) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(schema_text(version))
    return loaded


@functools.cache
def _validator(version: int) -> Validator:
    return Validator(schema(version))


def validate(data: Any, source: str = "document") -> ResultsDocument:
    """Check a parsed document and build its typed view; ResultsError says what is wrong."""
    if not isinstance(data, dict):
        kind = "an array" if isinstance(data, list) else f"a JSON {type(data).__name__}"
        raise ResultsError(f"{source} is not an rlconform results document: it holds {kind}, not an object")
    if data.get("schema") != SCHEMA:
        found = f"schema {data['schema']!r}" if "schema" in data else "no 'schema' field"
        raise ResultsError(f"{source} is not an rlconform results document: {found}, expected {SCHEMA!r}")
    version = data.get("schema_version")
    if isinstance(version, bool) or version not in SUPPORTED_VERSIONS:
        supported = " and ".join(map(str, SUPPORTED_VERSIONS))
        raise ResultsError(
            f"{source} has schema_version {version!r}; this rlconform reads schema_version {supported} "
            "(a newer rlconform may read it)"
        )
    error = _validator(version).first_error(data)
    if error is not None:
        raise ResultsError(f"{source} does not match the {SCHEMA} v{version} schema: {_one_line(error)}")
    return ResultsDocument.from_json(data)


def load_results(path: str | PathLike[str]) -> ResultsDocument:
    """Read and validate a results file; a ``.gz`` name is read through gzip (committed
    baselines are stored compressed: a full run's document is about a megabyte)."""
    source = str(path)
    try:
        if source.endswith(".gz"):
            with gzip.open(path, "rt", encoding="utf-8") as handle:
                text = handle.read()
        else:
            with open(path, encoding="utf-8") as handle:
                text = handle.read()
    except (OSError, EOFError) as exc:
        raise ResultsError(f"cannot read {source}: {getattr(exc, 'strerror', None) or exc}") from None
    except UnicodeDecodeError as exc:
        raise ResultsError(f"{source} is not UTF-8 text: {exc.reason} at byte {exc.start}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ResultsError(f"{source} is not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except RecursionError:
        raise ResultsError(f"{source} is not JSON this reader can parse: nested too deeply") from None
    return validate(data, source)


def _one_line(text: str) -> str:
    return " ".join(text.split())
