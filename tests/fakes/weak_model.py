"""A "weak model" under a grammar: what a small local model sends when the server
constrains it to the schema it was given, and nothing more.

`weaken(intent, schema)` takes what the model "means" (a scripted reply) and returns
the instance a weak, grammar-constrained model produces for `schema`: null wherever
the schema allows null, nothing for a property that is not required, and the
minimum (empty string, empty list, 0, false, the first enum value) where the intent
says nothing. Only what the schema *requires* carries the intent through, so a loose
schema (a nullable payload) really produces a null payload -- as llama.cpp's and
llama-cpp-python's grammars let a 270M model do -- and a tight one cannot.
"""

from __future__ import annotations

from typing import Any


def weaken(intent: Any, schema: Any) -> Any:
    if not isinstance(schema, dict):
        return intent
    branches = schema.get("anyOf") or schema.get("oneOf")
    if branches:
        if any(_is_null(b) for b in branches):
            return None
        return weaken(intent, _branch_for(branches, intent))
    kind = schema.get("type")
    if isinstance(kind, list):
        if "null" in kind:
            return None
        kind = kind[0]
    if "enum" in schema:
        return intent if intent in schema["enum"] else schema["enum"][0]
    if kind == "object" or "properties" in schema:
        return _object(intent, schema)
    if kind == "array":
        items = intent if isinstance(intent, list) else []
        items = items[: schema.get("maxItems", len(items))]
        out = [weaken(i, schema.get("items", {})) for i in items]
        return out + [weaken(None, schema.get("items", {}))] * (
            schema.get("minItems", 0) - len(out)
        )
    if kind == "string":
        text = intent if isinstance(intent, str) else ""
        return text[: schema.get("maxLength", len(text))].ljust(schema.get("minLength", 0), "x")
    if kind in ("integer", "number"):
        ok = isinstance(intent, int | float) and not isinstance(intent, bool)
        return intent if ok else schema.get("minimum", 0)
    if kind == "boolean":
        return intent if isinstance(intent, bool) else False
    return intent


def _object(intent: Any, schema: dict[str, Any]) -> dict[str, Any]:
    given = intent if isinstance(intent, dict) else {}
    required = set(schema.get("required", []))
    return {
        name: weaken(given.get(name), sub)
        for name, sub in (schema.get("properties") or {}).items()
        if name in required
    }


def _is_null(node: Any) -> bool:
    return isinstance(node, dict) and node.get("type") == "null"


def _branch_for(branches: list[Any], intent: Any) -> Any:
    """The branch the intent fits (its keys are the branch's properties), else the first."""
    if isinstance(intent, dict):
        for branch in branches:
            props = branch.get("properties") if isinstance(branch, dict) else None
            if isinstance(props, dict) and intent and set(intent) <= set(props):
                return branch
    return branches[0]
