"""A small JSON Schema (draft 2020-12) validator for the subset of keywords rlconform's schemas use.

The results schema ships with the package so that other tools can validate results documents
with any JSON Schema implementation; rlconform itself must read them without adding a runtime
dependency, so it validates with this. A keyword outside the subset is a ``SchemaError`` (a bug
in the schema, found by the tests), never silently ignored.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from typing import Any

#: keywords that only annotate: they never make an instance invalid
ANNOTATIONS = frozenset({"$schema", "$id", "$comment", "$defs", "title", "description", "format", "default"})
#: keywords this validator checks
ASSERTIONS = frozenset(
    {"$ref", "type", "const", "enum", "required", "properties", "additionalProperties", "items", "minimum"}
)

_TYPES = ("null", "boolean", "integer", "number", "string", "array", "object")


class SchemaError(Exception):
    """The schema itself uses something this validator does not implement."""


def _is_type(value: Any, name: str) -> bool:
    # JSON has no bool/int overlap; Python's bool is an int, so it is excluded explicitly
    if name == "null":
        return value is None
    if name == "boolean":
        return isinstance(value, bool)
    if name == "integer":
        if isinstance(value, bool):
            return False
        return isinstance(value, int) or (isinstance(value, float) and math.isfinite(value) and value.is_integer())
    if name == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if name == "string":
        return isinstance(value, str)
    if name == "array":
        return isinstance(value, list)
    if name == "object":
        return isinstance(value, dict)
    raise SchemaError(f"unknown type {name!r}")


def _json_type(value: Any) -> str:
    for name in _TYPES:
        if name != "integer" and _is_type(value, name):
            return name
    return type(value).__name__


def _equal(a: Any, b: Any) -> bool:
    """JSON equality: 1 == 1.0, but True != 1."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    return bool(a == b)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _child(path: str, key: str | int) -> str:
    return f"{path}[{key}]" if isinstance(key, int) else f"{path}.{key}"


class Validator:
    """Validates instances against one root schema; ``$ref`` resolves JSON pointers into it."""

    def __init__(self, schema: Mapping[str, Any]) -> None:
        self.root = schema
        self.check_schema(schema)

    def check_schema(self, schema: Any, path: str = "#") -> None:
        """Raise SchemaError for any keyword outside the subset, anywhere in the schema."""
        if isinstance(schema, bool):
            return
        if not isinstance(schema, Mapping):
            raise SchemaError(f"{path}: a schema must be an object or a boolean")
        unknown = set(schema) - ANNOTATIONS - ASSERTIONS
        if unknown:
            raise SchemaError(f"{path}: unsupported keywords {sorted(unknown)}")
        for name, sub in schema.get("$defs", {}).items():
            self.check_schema(sub, f"{path}/$defs/{name}")
        for name, sub in schema.get("properties", {}).items():
            self.check_schema(sub, f"{path}/properties/{name}")
        for keyword in ("additionalProperties", "items"):
            if keyword in schema:
                self.check_schema(schema[keyword], f"{path}/{keyword}")
        if "$ref" in schema:
            self.resolve(schema["$ref"])

    def resolve(self, ref: str) -> Any:
        if not ref.startswith("#"):
            raise SchemaError(f"only local references are supported, not {ref!r}")
        node: Any = self.root
        for part in filter(None, ref[1:].split("/")):
            part = part.replace("~1", "/").replace("~0", "~")
            if not isinstance(node, Mapping) or part not in node:
                raise SchemaError(f"unresolvable reference {ref!r}")
            node = node[part]
        return node

    def errors(self, instance: Any, schema: Any = None, path: str = "$") -> Iterator[str]:
        """Every way ``instance`` breaks the schema, each as ``PATH: reason``."""
        schema = self.root if schema is None else schema
        if schema is True:
            return
        if schema is False:
            yield f"{path}: no value is allowed here"
            return
        if "$ref" in schema:
            yield from self.errors(instance, self.resolve(schema["$ref"]), path)
        if "type" in schema:
            names = [schema["type"]] if isinstance(schema["type"], str) else list(schema["type"])
            if not any(_is_type(instance, name) for name in names):
                yield f"{path}: expected {' or '.join(names)}, got {_json_type(instance)} {_short(instance)}"
                return
        if "const" in schema and not _equal(instance, schema["const"]):
            yield f"{path}: expected {_short(schema['const'])}, got {_short(instance)}"
        if "enum" in schema and not any(_equal(instance, option) for option in schema["enum"]):
            yield f"{path}: {_short(instance)} is not one of {', '.join(map(repr, schema['enum']))}"
        if "minimum" in schema and _is_type(instance, "number") and instance < schema["minimum"]:
            yield f"{path}: {instance!r} is less than the minimum {schema['minimum']!r}"
        if isinstance(instance, dict):
            yield from self._object_errors(instance, schema, path)
        if isinstance(instance, list) and "items" in schema:
            for index, item in enumerate(instance):
                yield from self.errors(item, schema["items"], _child(path, index))

    def _object_errors(self, instance: dict[str, Any], schema: Mapping[str, Any], path: str) -> Iterator[str]:
        for name in schema.get("required", ()):
            if name not in instance:
                yield f"{path}: required field {name!r} is missing"
        properties = schema.get("properties", {})
        for name, value in instance.items():
            if name in properties:
                yield from self.errors(value, properties[name], _child(path, name))
            elif "additionalProperties" in schema:
                yield from self.errors(value, schema["additionalProperties"], _child(path, name))

    def first_error(self, instance: Any) -> str | None:
        return next(self.errors(instance), None)
