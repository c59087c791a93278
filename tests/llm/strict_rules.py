"""A checker of OpenAI's documented Structured Outputs subset (`strict: true`).

Written from the rules of OpenAI's structured-outputs guide ("Supported schemas"),
independently of `deepsearch.llm.schema_dialects`, so that a transform bug is
caught rather than mirrored:

* the root is an object, and not an `anyOf`;
* every object sets `additionalProperties: false` and lists every property in
  `required` (optional fields are expressed as a union with `null`);
* supported types: string, number, boolean, integer, object, array, null (also as
  a type list), plus enum, const and anyOf; each `anyOf` branch follows the rules;
* supported keywords: string `pattern`, `format` (date-time, time, date, duration,
  email, hostname, ipv4, ipv6, uuid); number/integer `multipleOf`, `minimum`,
  `maximum`, `exclusiveMinimum`, `exclusiveMaximum`; array `items`, `minItems`,
  `maxItems`; annotations `description` and `title`. Not supported: `allOf`,
  `oneOf`, `not`, `if/then/else`, `dependentRequired`, `dependentSchemas`,
  `patternProperties`, `minLength`/`maxLength`, `default`, `minProperties`, ...;
* `$defs` only at the root; `$ref` points into `$defs` or is `#` (recursion);
* limits: at most 5000 object properties in all, 10 levels of nesting, 1000 enum
  values in all, 120,000 characters of property names, definition names, enum and
  const values; an enum of more than 250 strings has at most 15,000 characters.

`violations(schema)` returns every broken rule as "path: why" (empty = valid).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

TYPES = {"string", "number", "boolean", "integer", "object", "array", "null"}
FORMATS = {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
COMMON = {"type", "description", "title", "enum", "const", "anyOf", "$ref"}
BY_TYPE = {
    "string": {"pattern", "format"},
    "number": {"multipleOf", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"},
    "integer": {"multipleOf", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"},
    "boolean": set(),
    "null": set(),
    "array": {"items", "minItems", "maxItems"},
    "object": {"properties", "required", "additionalProperties"},
}
MAX_PROPERTIES = 5000
MAX_DEPTH = 10
MAX_ENUM_VALUES = 1000
MAX_TOTAL_STRING = 120_000
BIG_ENUM = 250
BIG_ENUM_CHARS = 15_000


@dataclass
class _Tally:
    problems: list[str] = field(default_factory=list)
    properties: int = 0
    enum_values: int = 0
    string_chars: int = 0


def violations(schema: Any) -> list[str]:
    tally = _Tally()
    if not isinstance(schema, dict):
        return ["$: the schema must be a JSON object"]
    if schema.get("type") != "object":
        tally.problems.append("$: the root must be an object")
    if "anyOf" in schema:
        tally.problems.append("$: the root must not be anyOf")
    defs = schema.get("$defs", {})
    if not isinstance(defs, dict):
        tally.problems.append("$.$defs: must be an object")
        defs = {}
    for name, sub in defs.items():
        tally.string_chars += len(name)
        _check(sub, f"$.$defs.{name}", 1, defs, tally)
    _check({k: v for k, v in schema.items() if k != "$defs"}, "$", 1, defs, tally)
    if tally.properties > MAX_PROPERTIES:
        tally.problems.append(f"$: {tally.properties} properties (max {MAX_PROPERTIES})")
    if tally.enum_values > MAX_ENUM_VALUES:
        tally.problems.append(f"$: {tally.enum_values} enum values (max {MAX_ENUM_VALUES})")
    if tally.string_chars > MAX_TOTAL_STRING:
        tally.problems.append(f"$: {tally.string_chars} name/enum characters")
    return tally.problems


def _types(node: dict[str, Any]) -> list[str]:
    kind = node.get("type")
    return kind if isinstance(kind, list) else [kind] if isinstance(kind, str) else []


def _check(node: Any, path: str, depth: int, defs: dict[str, Any], tally: _Tally) -> None:
    bad = tally.problems.append
    if not isinstance(node, dict):
        bad(f"{path}: a schema must be an object")
        return
    if depth > MAX_DEPTH:
        bad(f"{path}: nested deeper than {MAX_DEPTH} levels")
    if "$defs" in node:
        bad(f"{path}: $defs is only allowed at the root")
    kinds = _types(node)
    _check_keywords(node, path, kinds, bad)
    _check_ref(node, path, defs, bad)
    _check_enum(node, path, tally)
    if node.get("format") is not None and node["format"] not in FORMATS:
        bad(f"{path}: format {node['format']!r} is not supported")
    _check_children(node, path, kinds, depth, defs, tally)


def _check_keywords(node: dict[str, Any], path: str, kinds: list[str], bad: Any) -> None:
    """Types and keywords of one node, against the strict subset."""
    for kind in kinds:
        if kind not in TYPES:
            bad(f"{path}: unsupported type {kind!r}")
    if not kinds and not {"anyOf", "$ref", "enum", "const"} & set(node):
        bad(f"{path}: no type, enum, anyOf or $ref")
    allowed = COMMON.union(*(BY_TYPE.get(k, set()) for k in kinds))
    for key in sorted(set(node) - allowed - {"$defs"}):
        bad(f"{path}: keyword {key!r} is not supported in strict mode")


def _check_children(
    node: dict[str, Any],
    path: str,
    kinds: list[str],
    depth: int,
    defs: dict[str, Any],
    tally: _Tally,
) -> None:
    for i, branch in enumerate(node.get("anyOf", []) or []):
        _check(branch, f"{path}.anyOf[{i}]", depth + 1, defs, tally)
    if "array" in kinds:
        if "items" not in node:
            tally.problems.append(f"{path}: an array needs items")
        else:
            _check(node["items"], f"{path}.items", depth + 1, defs, tally)
    if "object" in kinds:
        _check_object(node, path, depth, defs, tally)


def _check_ref(node: dict[str, Any], path: str, defs: dict[str, Any], bad: Any) -> None:
    ref = node.get("$ref")
    if ref is None:
        return
    if ref == "#":
        return
    name = ref.removeprefix("#/$defs/") if isinstance(ref, str) else None
    if not isinstance(ref, str) or not ref.startswith("#/$defs/") or name not in defs:
        bad(f"{path}: $ref {ref!r} does not point into $defs")


def _check_enum(node: dict[str, Any], path: str, tally: _Tally) -> None:
    values = node.get("enum")
    if "const" in node:
        tally.string_chars += len(str(node["const"]))
    if values is None:
        return
    if not isinstance(values, list) or not values:
        tally.problems.append(f"{path}: enum must be a non-empty list")
        return
    tally.enum_values += len(values)
    chars = sum(len(v) for v in values if isinstance(v, str))
    tally.string_chars += chars
    if len(values) > BIG_ENUM and chars > BIG_ENUM_CHARS:
        tally.problems.append(f"{path}: an enum of {len(values)} values has {chars} characters")


def _check_object(
    node: dict[str, Any], path: str, depth: int, defs: dict[str, Any], tally: _Tally
) -> None:
    bad = tally.problems.append
    props = node.get("properties")
    if not isinstance(props, dict):
        bad(f"{path}: an object needs properties")
        props = {}
    if node.get("additionalProperties") is not False:
        bad(f"{path}: additionalProperties must be false")
    required = node.get("required")
    if not isinstance(required, list) or set(required) != set(props):
        missing = sorted(set(props) - set(required or []))
        bad(f"{path}: required must list every property (missing {missing})")
    tally.properties += len(props)
    for name, sub in props.items():
        tally.string_chars += len(name)
        _check(sub, f"{path}.{name}", depth + 1, defs, tally)
