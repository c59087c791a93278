"""A checker of Gemini's documented `responseJsonSchema` subset.

From the Gemini API structured-output guide ("JSON Schema support") and the
`GenerationConfig.responseJsonSchema` reference, written independently of
`deepsearch.llm.schema_dialects`:

* types: string, number, integer, boolean, object, array, null (a type list too);
* annotations: title, description; references: $id, $defs, $ref, $anchor;
* object: properties, required, additionalProperties, (propertyOrdering);
* string: enum, format (date-time, date, time);
* number / integer: enum, minimum, maximum;
* array: items, prefixItems, minItems, maxItems;
* unions: anyOf (oneOf is read as anyOf).
Anything else (`const`, `default`, `pattern`, `minLength`/`maxLength`,
`exclusiveMinimum`, `multipleOf`, `allOf`, `not`, `if`, ...) is outside it. Enum
values are strings or numbers. The root is an object here (every schema the
project sends is), required names must be properties, and a `$ref` must resolve.

`violations(schema)` returns every broken rule as "path: why" (empty = valid).
"""

from __future__ import annotations

from typing import Any

TYPES = {"string", "number", "integer", "boolean", "object", "array", "null"}
FORMATS = {"date-time", "date", "time"}
COMMON = {"type", "title", "description", "anyOf", "oneOf", "$ref", "$id", "$anchor", "enum"}
BY_TYPE = {
    "string": {"format"},
    "number": {"minimum", "maximum"},
    "integer": {"minimum", "maximum"},
    "boolean": set(),
    "null": set(),
    "array": {"items", "prefixItems", "minItems", "maxItems"},
    "object": {"properties", "required", "additionalProperties", "propertyOrdering"},
}


def violations(schema: Any) -> list[str]:
    problems: list[str] = []
    if not isinstance(schema, dict):
        return ["$: the schema must be a JSON object"]
    if schema.get("type") != "object":
        problems.append("$: the root must be an object")
    defs = schema.get("$defs", {}) if isinstance(schema.get("$defs", {}), dict) else {}
    for name, sub in defs.items():
        _check(sub, f"$.$defs.{name}", defs, problems)
    _check({k: v for k, v in schema.items() if k != "$defs"}, "$", defs, problems)
    return problems


def _check(node: Any, path: str, defs: dict[str, Any], problems: list[str]) -> None:
    if not isinstance(node, dict):
        problems.append(f"{path}: a schema must be an object")
        return
    _check_keywords(node, path, defs, problems.append)
    _check_children(node, path, defs, problems)


def _check_keywords(node: dict[str, Any], path: str, defs: dict[str, Any], bad: Any) -> None:
    """Types, keywords, $ref, enum values and formats of one node."""
    kind = node.get("type")
    kinds = kind if isinstance(kind, list) else [kind] if isinstance(kind, str) else []
    for k in kinds:
        if k not in TYPES:
            bad(f"{path}: unsupported type {k!r}")
    allowed = COMMON.union(*(BY_TYPE.get(k, set()) for k in kinds))
    for key in sorted(set(node) - allowed - {"$defs"}):
        bad(f"{path}: keyword {key!r} is not in Gemini's schema subset")
    ref = node.get("$ref")
    if ref is not None and not (
        isinstance(ref, str) and ref.startswith("#/$defs/") and ref[8:] in defs
    ):
        bad(f"{path}: $ref {ref!r} does not resolve")
    for value in node.get("enum", []) or []:
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            bad(f"{path}: enum value {value!r} is neither a string nor a number")
    if node.get("format") is not None and node["format"] not in FORMATS:
        bad(f"{path}: format {node['format']!r} is not supported")


def _check_children(
    node: dict[str, Any], path: str, defs: dict[str, Any], problems: list[str]
) -> None:
    for union in ("anyOf", "oneOf"):
        for i, branch in enumerate(node.get(union, []) or []):
            _check(branch, f"{path}.{union}[{i}]", defs, problems)
    if "items" in node:
        _check(node["items"], f"{path}.items", defs, problems)
    for i, item in enumerate(node.get("prefixItems", []) or []):
        _check(item, f"{path}.prefixItems[{i}]", defs, problems)
    props = node.get("properties", {})
    if isinstance(props, dict):
        for name, sub in props.items():
            _check(sub, f"{path}.{name}", defs, problems)
        missing = set(node.get("required", [])) - set(props)
        if missing:
            problems.append(f"{path}: required names {sorted(missing)} are not properties")
    extra = node.get("additionalProperties")
    if isinstance(extra, dict):
        _check(extra, f"{path}.additionalProperties", defs, problems)
