"""No wire schema the project can send admits a reply its own validation rejects for a
missing or null required part.

Walks every schema `generate_object` can send -- each tool's, the agent step for each
of the 31 combinations of allowed actions, each in its distilled (fallback) form --
through every dialect a rung can put on the wire (OpenAI strict, Gemini, the grammar
dialect of other servers, and the project's own schema that the prompted rungs show),
and builds the minimal, null-filled instances each wire schema admits: one per choice
at every union (exhaustively), null wherever null is allowed, optional properties
absent, the minimum elsewhere. Each must pass the client's own validation.
"""

from __future__ import annotations

import functools
import itertools
import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from pydantic import BaseModel

from deepsearch.agent.schema import step_schema
from deepsearch.llm.base import Completion
from deepsearch.llm.gemini_provider import gemini_schema
from deepsearch.llm.openai_provider import strict_schema
from deepsearch.llm.schema_dialects import GRAMMAR, distill_schema, inline_refs, to_dialect
from tests.fakes.scripted_llm import scripted_client
from tests.llm.test_schema_subsets import COMBOS, OTHER_SCHEMAS

MODELS: list[tuple[str, type[BaseModel]]] = [(f"step{list(c)}", step_schema(c)) for c in COMBOS] + [
    (m.__name__, m) for m in OTHER_SCHEMAS
]


# Each case converts to its one form only (not all four, three of them thrown away).
WIRE_FORMS: dict[str, Callable[[dict[str, Any]], dict[str, Any] | None]] = {
    "openai-strict": strict_schema,
    "gemini": gemini_schema,
    "grammar": lambda schema: to_dialect(schema, GRAMMAR),
    "prompted": inline_refs,
}


@functools.cache
def project_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The model's JSON schema, generated once per model (eight cases share it); the
    dialect conversions copy it, never change it."""
    return model.model_json_schema()


def minimal_instances(node: Any) -> Iterator[Any]:
    """Every minimal instance `node` admits: one per union branch (exhaustive)."""
    if not isinstance(node, dict):
        yield None
        return
    if "anyOf" in node or "oneOf" in node:
        for branch in node.get("anyOf") or node.get("oneOf"):
            yield from minimal_instances(branch)
        return
    kind = node.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind):
        yield None
    elif "enum" in node or "const" in node:
        yield node["enum"][0] if "enum" in node else node["const"]
    elif kind == "object" or "properties" in node:
        yield from _objects(node)
    elif kind == "array":
        count = node.get("minItems", 0)
        for item in minimal_instances(node.get("items", {})) if count else [None]:
            yield [item] * count
    else:
        yield _scalar(node)


def _objects(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The required properties only, each at every one of its minimal values."""
    required = [k for k in node.get("properties", {}) if k in set(node.get("required", []))]
    choices = [list(minimal_instances(node["properties"][k])) for k in required]
    for combo in itertools.product(*choices):
        yield dict(zip(required, combo, strict=True))


def _scalar(node: dict[str, Any]) -> Any:
    kind = node.get("type")
    if kind in ("integer", "number"):
        return node.get("minimum", 0)
    if kind == "boolean":
        return False
    return "x" * node.get("minLength", 0)


FORMS = [
    (form, distilled)
    for distilled in (False, True)
    for form in ("openai-strict", "gemini", "grammar", "prompted")
]


@functools.cache
def validating_client() -> Any:
    """One client for every case: `_validate` keeps no state, and building a client
    (the shipped configuration, loaded) cost more than the walk of a case."""
    return scripted_client(lambda request: "{}")[0]


def test_the_walk_covers_every_tool_and_every_action_combination() -> None:
    assert len(MODELS) == 31 + len(OTHER_SCHEMAS) and len(FORMS) == 8
    assert list(minimal_instances({"anyOf": [{"type": "string"}, {"type": "null"}]})) == ["", None]


# One test a model, its eight wire forms in a loop (each of the 328 (model, form) cases
# as a test of its own cost more in fixtures than in walking).
@pytest.mark.parametrize(("name", "model"), MODELS, ids=[n for n, _ in MODELS])
def test_no_minimal_wire_instance_is_rejected_for_a_missing_or_null_part(
    name: str, model: type[BaseModel]
) -> None:
    project = project_schema(model)
    for form, distilled in FORMS:
        label = f"{name} {form}{' distilled' if distilled else ''}"
        schema = distill_schema(project) if distilled else project
        wire = WIRE_FORMS[form](schema)
        if wire is None:  # this dialect cannot say it: sent without a schema, nothing to walk
            continue
        instances = list(itertools.islice(minimal_instances(wire), 5000))
        assert instances, label
        for instance in instances:
            completion = Completion(text=json.dumps(instance))
            value, problem = validating_client()._validate(model, completion)
            assert value is not None, f"{label}: {instance} rejected: {problem}"


def _max_lengths(node: Any) -> Iterator[int]:
    if isinstance(node, dict):
        if isinstance(node.get("maxLength"), int):
            yield node["maxLength"]
        for value in node.values():
            yield from _max_lengths(value)
    elif isinstance(node, list):
        for value in node:
            yield from _max_lengths(value)


def test_no_grammar_schema_repeats_a_string_more_than_llama_cpp_parses() -> None:
    """Tried on the real servers: the agent step's `maxLength: 2000` (a coding problem)
    made llama-cpp-python's server fail to parse the grammar and crash; it takes 1,000."""
    from deepsearch.llm.schema_dialects import GRAMMAR_LONGEST_STRING

    longest = {
        name: max(_max_lengths(to_dialect(project_schema(model), GRAMMAR)), default=0)
        for name, model in MODELS
    }
    assert {n: v for n, v in longest.items() if v > GRAMMAR_LONGEST_STRING} == {}
