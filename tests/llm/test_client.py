"""LLMClient recovery steps through ScriptedProvider, the tracker and the budget."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel, Field

from deepsearch.errors import BudgetExceeded, ContextLengthError, StructuredOutputError
from deepsearch.llm.base import Completion, CompletionRequest, Usage
from deepsearch.llm.client import LLMClient, distill_schema
from deepsearch.llm.provider_common import Embeddings
from deepsearch.llm.tokens import count_tokens
from deepsearch.llm.tracker import TokenTracker
from tests.fakes.openai_server import FakeOpenAIServer
from tests.fakes.scripted_llm import offline_settings, scripted_client
from tests.llm.helpers import ASK


class Short(BaseModel):
    title: str = Field(description="a title", max_length=10)
    count: int = Field(ge=0)


async def test_validation_error_is_shown_in_one_retry() -> None:
    replies = iter(['{"title": "ok", "count": -3}', '{"title": "ok", "count": 3}'])
    client, provider = scripted_client(lambda req: next(replies))
    result = await client.generate_object("agent", Short, "s", ASK)
    assert result.value == Short(title="ok", count=3) and result.attempts == 2
    retry = provider.calls[1]
    assert retry.messages[-2].role == "assistant" and "-3" in retry.messages[-2].content
    assert (
        "count" in retry.messages[-1].content
        and "greater than or equal" in retry.messages[-1].content
    )


# The fallback is another model (the shipped OpenAI table uses one model for all).
OTHER_FALLBACK = {"llm.providers.openai.tools.fallback.model": "gpt-4o"}


async def test_distilled_schema_on_the_fallback_tool() -> None:
    replies = iter(["I cannot produce JSON today.", "Nor now."])

    def reply(req: CompletionRequest) -> str:
        if req.tool == "fallback":
            return '{"title": "fine", "count": 1}'
        return next(replies)

    client, provider = scripted_client(reply, settings=offline_settings(**OTHER_FALLBACK))
    result = await client.generate_object("agent", Short, "s", ASK)
    assert result.value.title == "fine" and result.attempts == 3
    fallback = provider.calls_for("fallback")[0]
    assert "description" not in json.dumps(fallback.json_schema)
    assert "maxLength" not in json.dumps(fallback.json_schema)
    assert fallback.settings.model == client.settings.tool_settings("openai", "fallback").model
    # fallback usage is recorded under its own tool
    assert client.tracker.by_tool()["fallback"].calls == 1


async def test_never_returns_an_unvalidated_object_and_never_loops() -> None:
    replies = iter(['{"title": 5}', '{"title": 6}', '{"title": 7}'])
    settings = offline_settings(**OTHER_FALLBACK)
    client, provider = scripted_client(lambda req: next(replies), settings=settings)
    with pytest.raises(StructuredOutputError) as info:
        await client.generate_object("agent", Short, "s", ASK)
    assert len(provider.calls) == 3
    assert info.value.raw == '{"title": 7}'


async def test_the_same_invalid_reply_twice_ends_the_call_without_the_fallback() -> None:
    settings = offline_settings(**OTHER_FALLBACK)
    client, provider = scripted_client(lambda req: '{"title": 5}', settings=settings)
    with pytest.raises(StructuredOutputError, match="after a retry:") as info:
        await client.generate_object("agent", Short, "s", ASK)
    assert [c.tool for c in provider.calls] == ["agent", "agent"]
    assert info.value.raw == '{"title": 5}'


async def test_the_fallback_is_skipped_when_it_is_the_same_model() -> None:
    replies = iter(['{"title": 5}', '{"title": 6}'])
    client, provider = scripted_client(lambda req: next(replies))  # one model for all tools
    assert client.model_for("fallback") == client.model_for("agent")
    with pytest.raises(StructuredOutputError, match="after a retry:"):
        await client.generate_object("agent", Short, "s", ASK)
    assert [c.tool for c in provider.calls] == ["agent", "agent"]


async def test_the_corrective_retry_carries_the_validation_error() -> None:
    replies = iter(['{"title": "ok"}', '{"title": "ok", "count": 1}'])
    client, provider = scripted_client(lambda req: next(replies))
    await client.generate_object("agent", Short, "s", ASK)
    assert "count: Field required" in provider.calls[1].messages[-1].content


async def test_over_long_strings_are_trimmed_not_rejected() -> None:
    client, _ = scripted_client(lambda req: '{"title": "' + "x" * 50 + '", "count": 2}')
    result = await client.generate_object("agent", Short, "s", ASK)
    assert result.value.title == "x" * 10 and result.attempts == 1


async def test_over_long_strings_inside_the_step_union_are_trimmed_at_a_word() -> None:
    """The agent step's error locations carry the union branch's tag
    (`action.search.search.queries.0`): the trim must still find the string, and cut
    it at a word, not fail the call (a verbose `think`, a long query)."""
    from deepsearch.agent.limits import LONGEST_QUERY
    from deepsearch.agent.schema import step_schema

    query = " ".join(f"word{i}" for i in range(80))  # ~470 characters
    reply = {"think": "t " * 400, "action": {"search": {"queries": [query]}}}
    client, _ = scripted_client(lambda req: json.dumps(reply))
    result = await client.generate_object("agent", step_schema(("search", "answer")), "s", ASK)
    assert result.attempts == 1
    step = result.value.model_dump()
    kept = step["action"]["search"]["queries"][0]
    assert len(kept) <= LONGEST_QUERY and query.startswith(kept + " ")
    assert len(step["think"]) <= 600


def test_distill_keeps_structure() -> None:
    schema = Short.model_json_schema()
    distilled = distill_schema(schema)
    assert distilled["required"] == schema["required"]
    assert distilled["properties"]["count"]["minimum"] == 0
    assert "description" in schema["properties"]["title"], "original untouched"


async def test_reserve_caps_output_to_the_remaining_budget() -> None:
    client, provider = scripted_client(lambda req: '{"title": "t", "count": 1}', budget=2000)
    await client.generate_object("agent", Short, "s", ASK)
    cap = provider.calls[0].max_tokens
    assert cap is not None and 256 <= cap < 2000


async def test_budget_exceeded_before_calling() -> None:
    client, provider = scripted_client(lambda req: "{}", budget=1000)
    client.tracker.record("agent", Usage(prompt_tokens=800, completion_tokens=0))
    with pytest.raises(BudgetExceeded):
        await client.generate_text("agent", "s", ASK)
    assert provider.calls == []


async def test_prompt_over_the_context_window_is_typed() -> None:
    client, provider = scripted_client(lambda req: "{}")
    huge = [ASK[0].model_copy(update={"content": "word " * 140_000})]
    with pytest.raises(ContextLengthError):
        await client.generate_text("agent", "s", huge)
    assert provider.calls == []


async def test_reported_usage_wins_and_zero_usage_is_estimated() -> None:
    replies = iter(
        [
            Completion(text="hello", usage=Usage(prompt_tokens=7, completion_tokens=3)),
            Completion(text="hello", usage=Usage(prompt_tokens=0, completion_tokens=0)),
        ]
    )
    client, _ = scripted_client(lambda req: next(replies))
    first = await client.generate_text("agent", "s", ASK)
    second = await client.generate_text("agent", "s", ASK)
    assert first.usage == Usage(prompt_tokens=7, completion_tokens=3)
    assert second.usage.estimated and second.usage.completion_tokens == 1


def test_tracker_totals_and_regular_budget() -> None:
    tracker = TokenTracker(1000)
    tracker.record("agent", Usage(prompt_tokens=500, completion_tokens=100))
    tracker.record("evaluator", Usage(prompt_tokens=200, completion_tokens=49))
    assert tracker.used == 849 and tracker.remaining == 151
    assert not tracker.regular_exhausted
    tracker.record("agent", Usage(prompt_tokens=1, completion_tokens=0))
    assert tracker.regular_exhausted and tracker.by_tool()["agent"].calls == 2
    with pytest.raises(BudgetExceeded):
        tracker.reserve(prompt_estimate=10, wanted_output=1000)


async def test_embed_is_none_without_an_embedder() -> None:
    client, _ = scripted_client(lambda req: "{}")
    assert await client.embed(["a"]) is None


async def test_a_truncated_reply_asks_for_a_shorter_one() -> None:
    replies = iter(
        [
            Completion(text='{"title": "ok", "count": ', finish_reason="length"),
            Completion(text='{"title": "ok", "count": 1}', finish_reason="stop"),
        ]
    )
    client, provider = scripted_client(lambda req: next(replies))
    result = await client.generate_object("agent", Short, "s", ASK)
    assert result.value.count == 1 and result.attempts == 2
    assert "cut off" in provider.calls[1].messages[-1].content


async def test_nan_and_infinity_are_not_valid_json() -> None:
    replies = iter(['{"title": "x", "count": NaN}', '{"title": "x", "count": 2}'])
    client, provider = scripted_client(lambda req: next(replies))
    result = await client.generate_object("agent", Short, "s", ASK)
    assert result.value.count == 2 and result.attempts == 2
    assert "NaN" in provider.calls[1].messages[-1].content


class CountingEmbedder:
    """An embedder that records each request; optionally reports usage."""

    def __init__(self, reported: int | None = None) -> None:
        self.batches: list[list[str]] = []
        self.reported = reported

    async def embed(self, texts: list[str]) -> list[list[float]]:
        return (await self.embed_with_usage(texts)).vectors

    async def embed_with_usage(self, texts: list[str]) -> Embeddings:
        self.batches.append(list(texts))
        return Embeddings([[float(len(t)), 1.0] for t in texts], self.reported)


def _embedding_client(
    embedder: object, budget: int = 1_000_000
) -> tuple[LLMClient, list[tuple[str, dict]]]:
    events: list[tuple[str, dict]] = []
    client, _ = scripted_client(
        lambda req: "{}", budget=budget, trace=lambda kind, payload: events.append((kind, payload))
    )
    client.embedder = embedder  # type: ignore[assignment]
    return client, events


async def test_embeddings_are_batched_and_counted_with_estimates() -> None:
    embedder = CountingEmbedder()
    client, events = _embedding_client(embedder)
    texts = [f"text number {i}" for i in range(200)]
    vectors = await client.embed(texts)
    assert vectors is not None and len(vectors) == 200
    assert vectors[150] == [float(len(texts[150])), 1.0], "order kept across batches"
    assert [len(b) for b in embedder.batches] == [96, 96, 8]
    usage = client.tracker.by_tool()["embedding"]
    expected = sum(count_tokens(t) for t in texts)
    assert usage.calls == 3 and usage.prompt_tokens == expected and usage.completion_tokens == 0
    kinds = [kind for kind, _ in events]
    assert kinds == ["llm_embed"]
    payload = events[0][1]
    assert payload["count"] == 200 and payload["tokens"] == expected and payload["estimated"]
    assert "vectors" not in payload and "texts" not in payload


async def test_reported_embedding_usage_wins() -> None:
    client, _ = _embedding_client(CountingEmbedder(reported=7))
    await client.embed(["a"] * 100)
    assert client.tracker.by_tool()["embedding"].prompt_tokens == 14  # 7 per request, 2 requests


async def test_embedding_respects_the_budget() -> None:
    embedder = CountingEmbedder()
    client, events = _embedding_client(embedder, budget=1000)
    client.tracker.record("agent", Usage(prompt_tokens=990, completion_tokens=0))
    assert await client.embed(["many words here " * 5]) is None
    assert embedder.batches == [] and "embedding" not in client.tracker.by_tool()
    assert [kind for kind, _ in events] == ["llm_embed_skipped"]


async def test_embedding_through_the_fake_server_records_its_usage(
    openai_server: FakeOpenAIServer,
) -> None:
    from deepsearch.llm.openai_provider import OpenAIProvider

    provider = OpenAIProvider(
        api_key="k", base_url=openai_server.base_url, embedding_model="emb", max_retries=0
    )
    client, _ = _embedding_client(provider)
    vectors = await client.embed(["ab", "abcd", "x"])
    assert vectors == [[2.0, 1.0, 0.5], [4.0, 1.0, 0.5], [1.0, 1.0, 0.5]]
    usage = client.tracker.by_tool()["embedding"]
    assert usage.prompt_tokens == 3 and usage.calls == 1  # the fake reports 1 per input
    await provider.aclose()
