"""Every schema the project can send fits OpenAI's strict subset and Gemini's subset.

The checkers (strict_rules.py, gemini_rules.py) are written from the providers'
documentation, independently of the transform in deepsearch/llm/schema_dialects.py;
the fakes enforce the same checkers, as the real APIs do.
"""

from __future__ import annotations

import functools
import itertools
import json
from typing import Any

import pytest
from pydantic import BaseModel, Field

from deepsearch.agent.actions.coding import CodeReply
from deepsearch.agent.judging.evaluator import CHECKS, ErrorAnalysis, QuestionEval
from deepsearch.agent.retrieval.rewrite import RewriteReply
from deepsearch.agent.schema import ACTION_ORDER, AllowFlags, step_schema
from deepsearch.evaluation.grading import GraderReply
from deepsearch.llm.base import CompletionRequest
from deepsearch.llm.gemini_provider import gemini_schema
from deepsearch.llm.openai_provider import strict_schema
from deepsearch.llm.schema_dialects import distill_schema, drop_null_defaults
from tests.fakes.gemini_server import FakeGeminiServer
from tests.fakes.openai_server import FakeOpenAIServer
from tests.fakes.scripted_llm import offline_settings
from tests.llm import gemini_rules, strict_rules
from tests.llm.helpers import ASK, Answer, gemini_client, openai_client

# Every combination of allowed actions the loop can ask for (AllowFlags -> allowed()).
COMBOS = [
    AllowFlags().only(*names).allowed()
    for size in range(1, len(ACTION_ORDER) + 1)
    for names in itertools.combinations(ACTION_ORDER, size)
]
OTHER_SCHEMAS: list[type[BaseModel]] = [
    QuestionEval,
    ErrorAnalysis,
    RewriteReply,
    CodeReply,
    GraderReply,
    *CHECKS.values(),
]


@functools.cache
def all_schemas() -> list[tuple[str, dict[str, Any]]]:
    """(name, JSON schema) of every generate_object target, also in distilled form.
    Built by the first test that reads them, not at import: every xdist worker imports
    this module to collect it, and most run none of its tests (~50 ms of CPU each)."""
    models = [(f"step{list(c)}", step_schema(c)) for c in COMBOS]
    models += [(m.__name__, m) for m in OTHER_SCHEMAS]
    out = [(name, m.model_json_schema()) for name, m in models]
    return out + [(f"{name} (distilled)", distill_schema(s)) for name, s in out]


def test_every_action_combination_is_covered() -> None:
    assert len(COMBOS) == 2 ** len(ACTION_ORDER) - 1 == 31
    assert len(all_schemas()) == 2 * (31 + len(OTHER_SCHEMAS))


# Every schema in one test per dialect, every failing schema named in the one report
# (82 cases each as a test of its own cost ~3 ms apiece of fixtures, not of checking).
def test_openai_strict_subset() -> None:
    problems: dict[str, object] = {}
    for name, schema in all_schemas():
        strict = strict_schema(schema)
        found = ["sent non-strict"] if strict is None else strict_rules.violations(strict)
        if found:
            problems[name] = found
    assert problems == {}


def test_gemini_subset() -> None:
    problems: dict[str, object] = {}
    for name, schema in all_schemas():
        native = gemini_schema(schema)
        found = (
            ["sent without a response schema"]
            if native is None
            else gemini_rules.violations(native)
        )
        if found:
            problems[name] = found
    assert problems == {}


def test_the_checkers_reject_what_pydantic_emits() -> None:
    # Without the transform the checkers fail: they are not vacuous.
    raw = step_schema(ACTION_ORDER).model_json_schema()
    openai_problems = " ".join(strict_rules.violations(raw))
    assert "required must list every property" in openai_problems
    assert "additionalProperties must be false" in openai_problems
    assert "'maxLength' is not supported" in openai_problems
    assert "'default' is not supported" in openai_problems
    gemini_problems = " ".join(gemini_rules.violations(raw))
    assert "'maxLength'" in gemini_problems and "'default'" in gemini_problems
    assert "'oneOf' is not supported" in openai_problems  # the raw action union


def _obj(**props: Any) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": props,
        "required": list(props),
        "additionalProperties": False,
    }


@pytest.mark.parametrize(
    ("schema", "why"),
    [
        ({"anyOf": [_obj(a={"type": "string"})]}, "root must be an object"),
        ({**_obj(a={"type": "string"}), "required": []}, "required must list"),
        (_obj(a={"type": "string", "minLength": 1}), "'minLength' is not supported"),
        (_obj(a={"type": "string", "format": "uri"}), "format 'uri'"),
        (_obj(a={"allOf": [{"type": "string"}]}), "'allOf' is not supported"),
        (_obj(a={"$ref": "#/$defs/Missing"}), "does not point into $defs"),
        (_obj(a={"description": "no type"}), "no type, enum, anyOf or $ref"),
        (_obj(a={"type": "string", "enum": [f"v{i}" for i in range(1001)]}), "enum values"),
    ],
)
def test_strict_checker_rejects_each_documented_rule(schema: dict[str, Any], why: str) -> None:
    assert why in " ".join(strict_rules.violations(schema))


def test_strict_checker_limits_nesting_depth() -> None:
    deep: dict[str, Any] = {"type": "string"}
    for _ in range(10):
        deep = _obj(x=deep)
    assert "nested deeper than 10" in " ".join(strict_rules.violations(deep))
    assert strict_rules.violations(_obj(x=_obj(x={"type": "string"}))) == []


def test_stripped_limits_keep_their_intent_in_the_description() -> None:
    strict = strict_schema(step_schema(ACTION_ORDER).model_json_schema())
    assert strict is not None
    assert "at most 600 characters" in strict["properties"]["think"]["description"]
    gem = gemini_schema(QuestionEval.model_json_schema())
    assert gem is not None and "at most 500 characters" in gem["properties"]["think"]["description"]


def test_optional_fields_become_required_and_nullable() -> None:
    strict = strict_schema(step_schema(("search", "answer")).model_json_schema())
    assert strict is not None
    assert strict["required"] == ["think", "action"]
    # One branch per action, each requiring its own payload, which is never nullable.
    search, answer = strict["properties"]["action"]["anyOf"]
    assert search["required"] == ["search"] and search["properties"]["search"]["type"] == "object"
    assert answer["properties"]["answer"]["required"] == ["answer", "supported", "uncertain"]
    supported = answer["properties"]["answer"]["properties"]["supported"]
    assert {"type": "null"} in supported["anyOf"]  # optional: nullable, null is the default
    # An optional field whose own type excludes null is made nullable, not forced.
    evals = strict_schema(QuestionEval.model_json_schema())
    assert evals is not None and evals["required"] == list(QuestionEval.model_fields)
    think = evals["properties"]["think"]
    assert think["anyOf"] == [{"type": "string"}, {"type": "null"}]
    assert 'null means the default, ""' in think["description"]
    # Gemini keeps optional fields optional: fewer output tokens, same meaning.
    gem = gemini_schema(step_schema(("search", "answer")).model_json_schema())
    assert gem is not None and gem["required"] == ["think", "action"]


class Defaults(BaseModel):
    name: str
    note: str = Field("none", max_length=20)
    tags: list[str] = Field(default_factory=lambda: ["t"])
    limit: int | None = 5  # nullable itself: a null here is a real value


def test_a_null_for_an_optional_field_becomes_its_default() -> None:
    data = {"name": "a", "note": None, "tags": None, "limit": None}
    cleaned = drop_null_defaults(Defaults.model_json_schema(), data)
    value = Defaults.model_validate(cleaned)
    assert (value.note, value.tags, value.limit) == ("none", ["t"], None)
    # A required field's null is not a default to fill in: it stays an error.
    assert drop_null_defaults(Defaults.model_json_schema(), {"name": None})["name"] is None


def test_nulls_inside_list_items_and_nested_objects_become_defaults() -> None:
    data = {"think": None, "queries": [{"q": "x", "language": None}]}
    value = RewriteReply.model_validate(drop_null_defaults(RewriteReply.model_json_schema(), data))
    assert value.think == "" and value.queries[0].language is None


async def test_strict_nulls_validate_through_the_client(openai_server: FakeOpenAIServer) -> None:
    nulls = dict.fromkeys(QuestionEval.model_fields)
    openai_server.enqueue(json.dumps(nulls))
    client, _ = openai_client(openai_server.base_url)
    result = await client.generate_object("evaluator", QuestionEval, "s", ASK)
    assert result.value == QuestionEval() and result.attempts == 1


async def test_the_fake_rejects_strict_schemas_outside_the_subset(
    openai_server: FakeOpenAIServer,
) -> None:
    import openai

    client = openai.AsyncOpenAI(api_key="k", base_url=openai_server.base_url, max_retries=0)
    raw = step_schema(ACTION_ORDER).model_json_schema()
    fmt = {"type": "json_schema", "json_schema": {"name": "s", "schema": raw, "strict": True}}
    with pytest.raises(openai.BadRequestError) as info:
        await client.chat.completions.create(model="m", messages=[], response_format=fmt)  # type: ignore[arg-type]
    assert info.value.body["type"] == "invalid_request_error"  # type: ignore[index]
    assert "Invalid schema for response_format 's'" in info.value.body["message"]  # type: ignore[index]
    await client.close()


async def test_step_schemas_pass_the_strict_fake(openai_server: FakeOpenAIServer) -> None:
    """Each combination of allowed actions, through the client, against one server."""
    payload = {
        "search": {"queries": ["q"]},
        "visit": {"url_indices": [1]},
        "reflect": {"questions": ["why?"]},
        "answer": {"answer": "42"},
        "coding": {"problem": "1+1"},
    }
    client, _ = openai_client(openai_server.base_url)
    for number, allowed in enumerate(COMBOS):
        action = allowed[0]
        openai_server.enqueue(json.dumps({"think": "t", "action": {action: payload[action]}}))
        result = await client.generate_object("agent", step_schema(allowed), "s", ASK)
        assert result.value.payload().action == action, allowed
        assert openai_server.schema_rejections == [], allowed
        sent = openai_server.chat_requests[number].body["response_format"]["json_schema"]
        assert sent["strict"] is True, allowed
    assert len(openai_server.chat_requests) == len(COMBOS)


async def test_gemini_fake_rejects_outside_the_subset_and_provider_stays_native(
    gemini_server: FakeGeminiServer,
) -> None:
    gemini_server.enqueue('{"think": "t", "action": {"answer": {"answer": "42"}}}')
    client, provider = gemini_client(gemini_server.url)
    result = await client.generate_object("agent", step_schema(ACTION_ORDER), "s", ASK)
    assert result.value.payload().action == "answer" and gemini_server.schema_rejections == []
    assert "responseJsonSchema" in gemini_server.generate_requests[0].body["generationConfig"]
    await provider.aclose()


async def test_the_gemini_fake_rejects_schemas_outside_its_subset(
    gemini_server: FakeGeminiServer,
) -> None:
    from google import genai
    from google.genai import errors, types

    options = types.HttpOptions(base_url=gemini_server.url, api_version="v1beta")
    sdk = genai.Client(api_key="k", http_options=options)
    config = types.GenerateContentConfig(
        response_mime_type="application/json",
        response_json_schema=QuestionEval.model_json_schema(),  # has maxLength, default
    )
    with pytest.raises(errors.APIError) as info:
        await sdk.aio.models.generate_content(model="m", contents="hi", config=config)
    assert info.value.code == 400 and info.value.status == "INVALID_ARGUMENT"
    assert gemini_server.schema_rejections and "not in Gemini's schema subset" in str(info.value)
    await sdk.aio.aclose()


# Through the SDKs, one schema of each shape: the providers' request building depends on
# the schema only through the transform (checked on every schema above) and its name
# (the longest name here: 66 characters, cut to 64). Every schema took 164 requests.
def sdk_schemas() -> list[tuple[str, dict[str, Any]]]:
    return [
        (name, schema)
        for name, schema in all_schemas()
        if not name.startswith("step")
        or name.removesuffix(" (distilled)")
        in ("step['answer']", "step['search', 'answer']", f"step{list(ACTION_ORDER)}")
    ]


async def test_each_kind_of_schema_is_accepted_strict_by_the_fake_and_natively_by_gemini(
    openai_server: FakeOpenAIServer, gemini_server: FakeGeminiServer
) -> None:
    """Through the real SDKs: what the providers send, not just what the transform
    returns, passes the fakes' enforcement (no fallback to JSON mode)."""
    from deepsearch.llm.gemini_provider import GeminiProvider
    from deepsearch.llm.openai_provider import OpenAIProvider

    openai = OpenAIProvider(
        api_key="k", base_url=openai_server.base_url, max_retries=0, strict_subset=True
    )
    gemini = GeminiProvider(api_key="k", base_url=gemini_server.url, max_retries=0)
    model = offline_settings().tool_settings("openai", "agent")
    sdk_schemas_ = sdk_schemas()
    for name, schema in sdk_schemas_:
        request = CompletionRequest(
            tool="agent",
            settings=model,
            system="s",
            messages=ASK,
            json_schema=schema,
            schema_name=name,
        )
        assert (await openai.complete(request)).mode == "json_schema", name
        assert (await gemini.complete(request)).mode == "json_schema", name
    assert openai_server.schema_rejections == [] and gemini_server.schema_rejections == []
    sent = [r.body["response_format"]["json_schema"] for r in openai_server.chat_requests]
    assert len(sent) == len(sdk_schemas_) == 2 * (3 + len(OTHER_SCHEMAS))
    assert all(s["strict"] is True for s in sent)
    await openai.aclose()
    await gemini.aclose()


class Node(BaseModel):
    name: str
    children: list[Node] = Field(default_factory=list)


def test_what_no_subset_can_express_is_reported_not_mangled() -> None:
    # A recursive model and a free-form map: sent non-strict / in the prompt instead.
    class Free(BaseModel):
        data: dict[str, int]

    for schema in (Node.model_json_schema(), Free.model_json_schema()):
        assert strict_schema(schema) is None
        assert gemini_schema(schema) is None


async def test_gemini_sends_an_inexpressible_schema_in_the_prompt_without_marking_the_model(
    gemini_server: FakeGeminiServer,
) -> None:
    gemini_server.enqueue('{"name": "root"}', '{"answer": "42", "confidence": 0.5}')
    client, provider = gemini_client(gemini_server.url)
    assert (await client.generate_object("agent", Node, "s", ASK)).value.name == "root"
    await client.generate_object("agent", Answer, "s", ASK)
    configs = [r.body["generationConfig"] for r in gemini_server.generate_requests]
    assert ["responseJsonSchema" in c for c in configs] == [False, True]
    system = gemini_server.generate_requests[0].body["systemInstruction"]["parts"][0]["text"]
    assert "JSON schema" in system and '"children"' in system  # the schema went in the prompt
    assert provider.output_modes.remembered == {"gemini-2.5-flash": "json_schema"}
    await provider.aclose()
