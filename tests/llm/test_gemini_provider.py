"""The Gemini provider through the real `google-genai` SDK against a loopback fake."""

from __future__ import annotations

import json

import pytest

from deepsearch.errors import ContextLengthError, ProviderAuthError, ProviderError
from deepsearch.llm.gemini_provider import GeminiProvider, gemini_schema
from tests.fakes.gemini_server import FakeGeminiServer, GeminiReply
from tests.llm.helpers import ASK, SECRET, Answer, gemini_client

GOOD = {"answer": "42", "confidence": 0.5}


async def test_response_schema_success(gemini_server: FakeGeminiServer) -> None:
    gemini_server.enqueue(json.dumps(GOOD))
    client, provider = gemini_client(gemini_server.url)
    result = await client.generate_object("evaluator", Answer, "Be exact.", ASK)

    assert result.value == Answer(**GOOD)
    assert (result.usage.prompt_tokens, result.usage.completion_tokens) == (17, 6)
    request = gemini_server.generate_requests[0]
    assert request.path == "/v1beta/models/gemini-2.5-flash:generateContent"
    config = request.body["generationConfig"]
    assert config["responseMimeType"] == "application/json"
    assert config["responseJsonSchema"] == gemini_schema(Answer.model_json_schema())
    assert gemini_server.schema_rejections == []
    assert config["maxOutputTokens"] == 4096 and config["temperature"] == 0.3
    assert request.body["systemInstruction"]["parts"][0]["text"] == "Be exact."
    assert request.headers["x-goog-api-key"] == SECRET
    await provider.aclose()


@pytest.mark.parametrize(
    "text",
    [
        f"```json\n{json.dumps(GOOD)}\n```",
        f"<think>hmm {{}}</think>{json.dumps(GOOD)}",
        f"The object is: {json.dumps(GOOD)} -- done.",
    ],
    ids=["fence", "think", "prose"],
)
async def test_wrapped_replies(gemini_server: FakeGeminiServer, text: str) -> None:
    gemini_server.enqueue(text)
    client, _ = gemini_client(gemini_server.url)
    assert (await client.generate_object("agent", Answer, "s", ASK)).value == Answer(**GOOD)


async def test_truncated_json_with_max_tokens(gemini_server: FakeGeminiServer) -> None:
    gemini_server.enqueue(
        GeminiReply(text='{"answer": "42", "confidence": 0.5', finish_reason="MAX_TOKENS"),
        json.dumps(GOOD),
    )
    client, provider = gemini_client(gemini_server.url)
    events: list[dict] = []
    client._trace = lambda kind, payload: events.append(payload) if kind == "llm_response" else None
    result = await client.generate_object("agent", Answer, "s", ASK)
    assert result.value == Answer(**GOOD) and result.attempts == 2  # cut off: asked again
    assert events[0]["finish_reason"] == "length"


async def test_429_then_success_is_retried_by_the_sdk(gemini_server: FakeGeminiServer) -> None:
    gemini_server.enqueue(
        GeminiReply.error(429, "RESOURCE_EXHAUSTED", "quota"),
        GeminiReply.error(503, "UNAVAILABLE", "overloaded"),
        json.dumps(GOOD),
    )
    client, _ = gemini_client(gemini_server.url, max_retries=2)
    assert (await client.generate_object("agent", Answer, "s", ASK)).value.answer == "42"
    assert len(gemini_server.generate_requests) == 3


async def test_500_without_retries_is_typed(gemini_server: FakeGeminiServer) -> None:
    gemini_server.enqueue(GeminiReply.error(500, "INTERNAL", f"broken {SECRET}"))
    client, _ = gemini_client(gemini_server.url, max_retries=0)
    with pytest.raises(ProviderError) as info:
        await client.generate_text("agent", "s", ASK)
    assert "HTTP 500" in str(info.value) and SECRET not in str(info.value)


async def test_missing_usage_is_estimated(gemini_server: FakeGeminiServer) -> None:
    gemini_server.enqueue(GeminiReply(text=json.dumps(GOOD), usage=None))
    client, _ = gemini_client(gemini_server.url)
    result = await client.generate_object("agent", Answer, "s", ASK)
    assert result.usage.estimated and result.usage.completion_tokens > 0


@pytest.mark.parametrize(
    "reply",
    [
        GeminiReply.error(401, "UNAUTHENTICATED", "bad key"),
        GeminiReply.error(403, "PERMISSION_DENIED", "denied"),
        GeminiReply.error(400, "INVALID_ARGUMENT", "API key not valid.", reason="API_KEY_INVALID"),
    ],
    ids=["401", "403", "400-API_KEY_INVALID"],
)
async def test_auth_errors_name_the_env_var(
    gemini_server: FakeGeminiServer, reply: GeminiReply
) -> None:
    gemini_server.enqueue(reply)
    client, _ = gemini_client(gemini_server.url, max_retries=2)
    with pytest.raises(ProviderAuthError, match="GEMINI_API_KEY"):
        await client.generate_object("agent", Answer, "s", ASK)
    assert len(gemini_server.generate_requests) == 1


async def test_context_length_is_typed(gemini_server: FakeGeminiServer) -> None:
    gemini_server.enqueue(
        GeminiReply.error(
            400,
            "INVALID_ARGUMENT",
            "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).",
        )
    )
    client, _ = gemini_client(gemini_server.url)
    with pytest.raises(ContextLengthError):
        await client.generate_object("agent", Answer, "s", ASK)


async def test_schema_rejected_falls_back_to_json_mode_and_remembers(
    gemini_server: FakeGeminiServer,
) -> None:
    gemini_server.reject_json_schema = True
    gemini_server.enqueue(json.dumps(GOOD), json.dumps(GOOD))
    client, _ = gemini_client(gemini_server.url)
    await client.generate_object("agent", Answer, "s", ASK)
    await client.generate_object("agent", Answer, "s", ASK)
    configs = [r.body["generationConfig"] for r in gemini_server.generate_requests]
    assert ["responseJsonSchema" in c for c in configs] == [True, False, False]
    assert all(c["responseMimeType"] == "application/json" for c in configs)
    system = gemini_server.generate_requests[1].body["systemInstruction"]["parts"][0]["text"]
    assert '"confidence"' in system


async def test_empty_candidates_give_empty_text(gemini_server: FakeGeminiServer) -> None:
    gemini_server.enqueue({"candidates": []}, {"candidates": [{"content": {"parts": []}}]})
    client, _ = gemini_client(gemini_server.url)
    assert (await client.generate_text("agent", "s", ASK)).text == ""
    assert (await client.generate_text("agent", "s", ASK)).text == ""


async def test_conversation_roles_and_embeddings(gemini_server: FakeGeminiServer) -> None:
    from deepsearch.llm.base import Message

    gemini_server.enqueue("plain words")
    client, _ = gemini_client(gemini_server.url)
    history = [*ASK, Message(role="assistant", content="a"), Message(role="user", content="b")]
    assert (await client.generate_text("agent", "s", history)).text == "plain words"
    roles = [c["role"] for c in gemini_server.generate_requests[0].body["contents"]]
    assert roles == ["user", "model", "user"]

    provider = GeminiProvider(
        api_key=SECRET, base_url=gemini_server.url, embedding_model="emb", max_retries=0
    )
    assert await provider.embed(["abc", "z"]) == [[3.0, 1.0], [1.0, 1.0]]
    await provider.aclose()


async def test_a_password_in_the_base_url_never_reaches_the_error(
    gemini_server: FakeGeminiServer,
) -> None:
    password = "hunter2-gemini-password"
    gemini_server.enqueue(GeminiReply.error(500, "INTERNAL", "backend exploded"))
    url = gemini_server.url.replace("http://", f"http://deploy:{password}@", 1)
    client, provider = gemini_client(url)
    with pytest.raises(ProviderError) as info:
        await client.generate_text("agent", "s", ASK)
    message = str(info.value)
    assert "500" in message and "deploy:****@127.0.0.1" in message
    assert password not in message
    await provider.aclose()


async def test_embeddings_report_no_usage(gemini_server: FakeGeminiServer) -> None:
    provider = GeminiProvider(
        api_key=SECRET, base_url=gemini_server.url, embedding_model="emb", max_retries=0
    )
    result = await provider.embed_with_usage(["abc", "z"])
    assert result.vectors == [[3.0, 1.0], [1.0, 1.0]] and result.prompt_tokens is None
    await provider.aclose()
