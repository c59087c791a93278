"""Pydantic JSON schemas rewritten into the subsets the providers enforce.

Callers keep plain pydantic models (optional fields, defaults, length limits); this
module turns their JSON schema into what a provider's constrained decoding accepts:

* OpenAI strict mode (`response_format.json_schema.strict: true`): every object
  closed (`additionalProperties: false`) and listing EVERY property in `required`;
  a property that was optional becomes nullable (`anyOf [..., {"type": "null"}]`),
  and a null received for it is turned back into "absent" by `drop_null_defaults`,
  so pydantic fills in the default. Keywords outside the documented subset
  (`minLength`, `maxLength`, `default`, `examples`, `title`, ...) are stripped and
  their intent written into `description`: the model still reads them, and the
  pydantic model still enforces them after parsing.
* Gemini `responseJsonSchema`: its documented subset (no `const`, `default`,
  `pattern`, string lengths or exclusive bounds); optional fields stay optional.
* `GRAMMAR`, for every other OpenAI-compatible server (llama.cpp, vLLM, Ollama, LM
  Studio), which turns the schema into a grammar: plain JSON Schema that keeps
  `minLength`/`maxLength`, `minimum`/`maximum` and `minItems`/`maxItems`.

`$ref`s are inlined and `$defs` dropped (every schema here is small and acyclic,
and both providers handle plain nesting more uniformly than references). A schema
that cannot be expressed (a free-form object, a recursive model, `allOf`/`not`)
raises `UnsupportedSchema`; the provider then sends it without constraints.
"""

from __future__ import annotations

import json
from copy import deepcopy
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

# Annotations every dialect keeps (`title` is dropped: pydantic's titles are
# noise the model pays tokens for).
_ANNOTATIONS = frozenset({"description"})
_COMPOSITION = frozenset({"anyOf", "oneOf", "allOf", "$ref", "not", "if", "then", "else"})


class UnsupportedSchema(ValueError):
    """The schema has a construct the dialect cannot express."""


@dataclass(frozen=True, eq=False)  # hashed by identity: dialects are constants
class Dialect:
    name: str
    # Type -> the validation keywords the provider accepts for it.
    keywords: dict[str, frozenset[str]]
    formats: frozenset[str]
    all_required: bool
    # The longest `maxLength` sent; a longer one is sent as this (stricter than the
    # validator, so every schema-valid reply still validates). None: as given.
    longest_string: int | None = None


OPENAI_STRICT = Dialect(
    name="openai-strict",
    keywords={
        "string": frozenset({"enum", "pattern", "format"}),
        "number": frozenset(
            {"enum", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"}
        ),
        "integer": frozenset(
            {"enum", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"}
        ),
        "boolean": frozenset({"enum"}),
        "array": frozenset({"items", "minItems", "maxItems"}),
        "object": frozenset({"properties", "required", "additionalProperties"}),
        "null": frozenset(),
    },
    formats=frozenset(
        {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
    ),
    all_required=True,
)

GEMINI = Dialect(
    name="gemini",
    keywords={
        "string": frozenset({"enum", "format"}),
        "number": frozenset({"enum", "minimum", "maximum"}),
        "integer": frozenset({"enum", "minimum", "maximum"}),
        "boolean": frozenset(),
        "array": frozenset({"items", "prefixItems", "minItems", "maxItems"}),
        "object": frozenset({"properties", "required", "additionalProperties"}),
        "null": frozenset(),
    },
    formats=frozenset({"date-time", "date", "time"}),
    all_required=False,
)

# llama.cpp's grammar parser refuses a repetition of about 2,000 (tried on the real
# servers: `maxLength: 2000` made llama-cpp-python 0.3.36's server fail to parse the
# grammar and crash; 1,000 and below were accepted by it and by llama-server).
GRAMMAR_LONGEST_STRING = 1000

# Any other server (llama.cpp's grammars, vLLM, Ollama, LM Studio): full JSON Schema
# less what grammar converters handle unevenly. The length and count limits stay: a
# grammar that enforces them is what stops a weak model's runaway strings.
GRAMMAR = Dialect(
    name="grammar",
    keywords={
        "string": frozenset({"enum", "minLength", "maxLength"}),
        "number": frozenset({"enum", "minimum", "maximum"}),
        "integer": frozenset({"enum", "minimum", "maximum"}),
        "boolean": frozenset({"enum"}),
        "array": frozenset({"items", "minItems", "maxItems"}),
        "object": frozenset({"properties", "required", "additionalProperties"}),
        "null": frozenset(),
    },
    formats=frozenset(),
    all_required=False,
    longest_string=GRAMMAR_LONGEST_STRING,
)

# How a stripped keyword's intent is worded in the description.
_WORDING: dict[str, str] = {
    "minLength": "at least {} characters",
    "maxLength": "at most {} characters",
    "pattern": "matching the regular expression {}",
    "format": "in {} format",
    "minimum": "at least {}",
    "maximum": "at most {}",
    "exclusiveMinimum": "greater than {}",
    "exclusiveMaximum": "less than {}",
    "multipleOf": "a multiple of {}",
    "minItems": "at least {} items",
    "maxItems": "at most {} items",
    "uniqueItems": "no repeated items",
}
# Dropped without a word: annotations the model gains nothing from.
_SILENT = frozenset(
    {"title", "examples", "default", "$schema", "$id", "readOnly", "writeOnly", "discriminator"}
)


def inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """A copy with every local `$ref` replaced by its definition and `$defs` dropped."""
    defs = {**schema.get("definitions", {}), **schema.get("$defs", {})}

    def resolve(node: Any, seen: tuple[str, ...]) -> Any:
        if isinstance(node, list):
            return [resolve(v, seen) for v in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str):
            name = ref.rsplit("/", 1)[-1]
            if name in seen or name not in defs or not ref.startswith("#/"):
                raise UnsupportedSchema(f"cannot inline $ref {ref!r} (recursive or unknown)")
            target = resolve(defs[name], (*seen, name))
            siblings = {k: resolve(v, seen) for k, v in node.items() if k != "$ref"}
            return {**target, **siblings}
        return {k: resolve(v, seen) for k, v in node.items() if k not in ("$defs", "definitions")}

    return resolve(schema, ())


def _describe(node: dict[str, Any], notes: list[str]) -> dict[str, Any]:
    if not notes:
        return node
    text = node.get("description", "")
    extra = "; ".join(notes)
    node["description"] = f"{text} ({extra})" if text else extra
    return node


def _accepts_null(node: dict[str, Any]) -> bool:
    kind = node.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind):
        return True
    return any(_accepts_null(b) for b in node.get("anyOf", []) if isinstance(b, dict))


def _convert_object(node: dict[str, Any], dialect: Dialect) -> dict[str, Any]:
    props = node.get("properties")
    extra = node.get("additionalProperties", False)
    if not isinstance(props, dict) or not props or extra not in (False, None):
        raise UnsupportedSchema("a free-form object (no fixed properties) cannot be constrained")
    required = [name for name in props if name in set(node.get("required", []))]
    out_props: dict[str, Any] = {}
    for name, sub in props.items():
        converted = _convert(sub, dialect)
        if dialect.all_required and name not in required:
            converted = _nullable(converted, sub)
        out_props[name] = converted
    out = {"type": "object", "properties": out_props, "additionalProperties": False}
    out["required"] = list(props) if dialect.all_required else required
    return out


def _nullable(converted: dict[str, Any], original: dict[str, Any]) -> dict[str, Any]:
    """An optional property as strict mode expresses it: present, possibly null."""
    if _accepts_null(converted):
        return converted
    note = "null means the default"
    if "default" in original:
        note = f"null means the default, {json.dumps(original['default'])}"
    description = converted.pop("description", None)
    out: dict[str, Any] = {"anyOf": [converted, {"type": "null"}]}
    if description:
        out["description"] = description
    return _describe(out, [note])


def _desugar(node: Any) -> dict[str, Any]:
    """A copy of `node` with the keywords both subsets lack spelled as ones they have."""
    if not isinstance(node, dict):
        raise UnsupportedSchema(f"a schema must be an object, not {type(node).__name__}")
    node = dict(node)
    if "const" in node:  # neither subset lists `const`; a one-value enum says the same
        node["enum"] = [node.pop("const")]
    if "oneOf" in node:  # the values of a pydantic union never match two branches
        node["anyOf"] = node.pop("oneOf")
    if "allOf" in node and len(node["allOf"]) == 1:
        node = {**node.pop("allOf")[0], **node}
    blocked = _COMPOSITION.intersection(node) - {"anyOf"}
    if blocked:
        raise UnsupportedSchema(f"unsupported keyword(s): {', '.join(sorted(blocked))}")
    return node


def _convert(node: Any, dialect: Dialect) -> dict[str, Any]:
    node = _desugar(node)
    out: dict[str, Any] = {k: node[k] for k in _ANNOTATIONS if k in node}
    if "anyOf" in node:
        out["anyOf"] = [_convert(b, dialect) for b in node["anyOf"]]
        return _describe(out, _stripped(node, frozenset({"anyOf"})))
    kind = node.get("type")
    if kind is None and "enum" in node:
        kind = _enum_type(node["enum"])
    if not isinstance(kind, str) or kind not in dialect.keywords:
        raise UnsupportedSchema(f"unsupported or missing type {kind!r}")
    if kind == "object":
        out.update(_convert_object(node, dialect))
    else:
        out["type"] = kind
        out.update(_convert_keywords(node, dialect.keywords[kind], dialect))
    return _describe(out, _stripped(node, frozenset(out) | {"type"}))


def _convert_keywords(
    node: dict[str, Any], allowed: frozenset[str], dialect: Dialect
) -> dict[str, Any]:
    """The keywords of a non-object node that `dialect` keeps for its type."""
    out: dict[str, Any] = {}
    for key in sorted(allowed & set(node)):  # the same schema text in every process
        if key == "items":
            out["items"] = _convert(node["items"], dialect)
        elif key == "prefixItems":
            out["prefixItems"] = [_convert(i, dialect) for i in node["prefixItems"]]
        elif key == "format" and node["format"] not in dialect.formats:
            continue
        elif key == "maxLength" and dialect.longest_string is not None:
            out[key] = min(node[key], dialect.longest_string)
        else:
            out[key] = node[key]
    return out


def _enum_type(values: list[Any]) -> str | None:
    if all(isinstance(v, str) for v in values):
        return "string"
    if all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return "integer"
    return None


def _stripped(node: dict[str, Any], kept: frozenset[str]) -> list[str]:
    """Descriptions of the constraints being dropped, so their intent survives."""
    notes = []
    for key, value in node.items():
        if key in kept or key in _ANNOTATIONS or key in _SILENT:
            continue
        wording = _WORDING.get(key)
        if wording is None:
            raise UnsupportedSchema(f"unsupported keyword {key!r}")
        notes.append(wording.format(value))
    return notes


@lru_cache(maxsize=256)
def _cached(text: str, dialect: Dialect) -> str:
    schema = json.loads(text)
    converted = _convert(inline_refs(schema), dialect)
    if converted.get("type") != "object":
        raise UnsupportedSchema("the root must be an object")
    return json.dumps(converted)


def to_dialect(schema: dict[str, Any], dialect: Dialect) -> dict[str, Any]:
    """`schema` rewritten into `dialect`'s subset (a fresh copy, cached per schema)."""
    result: dict[str, Any] = json.loads(_cached(json.dumps(schema), dialect))
    return result


def distill_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """Drop descriptions and length limits: a simpler target for a weaker model."""
    dropped = {"description", "maxLength", "minLength", "maxItems", "minItems", "title", "examples"}

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: walk(v) for k, v in node.items() if k not in dropped}
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    return walk(deepcopy(schema))


def drop_null_defaults(schema: dict[str, Any], data: Any) -> Any:
    """`data` without the nulls strict mode forced on optional, non-nullable fields.

    Strict mode makes the model send `"think": null` where the pydantic field was
    `think: str = ""`; dropping the key lets pydantic apply the default instead of
    failing. A null for a field whose own type allows null is left alone (it is a
    real value), and so is a null for a required field (a genuine error).
    """
    return drop_inlined_nulls(inline_refs_lenient(schema), data)


def drop_inlined_nulls(inlined: dict[str, Any], data: Any) -> Any:
    """`drop_null_defaults` against a schema already inlined (`inline_refs_lenient`):
    what a caller uses that keeps the inlined schema rather than inline it per reply."""
    return _drop(inlined, data)


def inline_refs_lenient(schema: dict[str, Any]) -> dict[str, Any]:
    try:
        return inline_refs(schema)
    except UnsupportedSchema:
        return schema


def _drop(node: Any, data: Any) -> Any:
    if not isinstance(node, dict):
        return data
    if isinstance(data, list) and isinstance(node.get("items"), dict):
        return [_drop(node["items"], item) for item in data]
    if not isinstance(data, dict):
        return data
    union = node.get("anyOf") or node.get("oneOf") or []
    branches = [b for b in union if isinstance(b, dict)]
    if branches:
        return _drop(_branch_for(branches, data), data)
    props = node.get("properties")
    if not isinstance(props, dict):
        return data
    required = set(node.get("required", []))
    out = {}
    for key, value in data.items():
        sub = props.get(key)
        if value is None and sub is not None and key not in required and not _accepts_null(sub):
            continue
        out[key] = _drop(sub, value) if isinstance(sub, dict) else value
    return out


def _branch_for(branches: list[dict[str, Any]], data: dict[str, Any]) -> dict[str, Any]:
    """The union branch whose properties hold every key of `data` (else the first)."""
    for branch in branches:
        props = branch.get("properties")
        if isinstance(props, dict) and set(data) <= set(props):
            return branch
    return branches[0]
