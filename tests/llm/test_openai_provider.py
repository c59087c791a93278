"""The OpenAI-compatible provider against a loopback fake: chat completions over its
own httpx wire (llm/openai_wire.py), embeddings through the real `openai` SDK."""

from __future__ import annotations

import json
import math

import pytest
from pydantic import BaseModel

from deepsearch.errors import (
    ContextLengthError,
    ProviderAuthError,
    ProviderError,
    StructuredOutputError,
)
from deepsearch.llm.base import CompletionRequest
from deepsearch.llm.openai_provider import strict_schema
from tests.fakes.openai_server import FakeOpenAIServer, Reply
from tests.fakes.scripted_llm import offline_settings
from tests.llm.helpers import ASK, SECRET, Answer, openai_client, record_waits

GOOD = {"answer": "42", "confidence": 0.9}


async def test_json_schema_success_sends_strict_schema(openai_server: FakeOpenAIServer) -> None:
    openai_server.enqueue(json.dumps(GOOD))
    client, _ = openai_client(openai_server.base_url)
    result = await client.generate_object("evaluator", Answer, "Be exact.", ASK)

    assert result.value == Answer(**GOOD)
    assert result.usage.prompt_tokens == 21 and not result.usage.estimated
    body = openai_server.chat_requests[0].body
    fmt = body["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["strict"] is True
    assert fmt["json_schema"]["schema"]["additionalProperties"] is False
    assert body["messages"][0] == {"role": "system", "content": "Be exact."}
    # a compatible server gets max_tokens, capped by the budget reservation
    assert body["max_tokens"] == 1024 and "max_completion_tokens" not in body
    assert openai_server.chat_requests[0].headers["authorization"] == f"Bearer {SECRET}"
    assert client.tracker.by_tool()["evaluator"].prompt_tokens == 21


def test_strict_copy_unless_strict_mode_cannot_express_it() -> None:
    class Optional_(BaseModel):
        answer: str
        note: str = ""

    class Free(BaseModel):
        data: dict[str, int]

    assert strict_schema(Answer.model_json_schema()) is not None
    assert strict_schema(Optional_.model_json_schema()) is not None  # nullable, required
    assert strict_schema(Free.model_json_schema()) is None  # a free-form map


async def test_schema_strict_mode_cannot_express_is_sent_unchanged(
    openai_server: FakeOpenAIServer,
) -> None:
    class Free(BaseModel):
        data: dict[str, int]

    openai_server.enqueue('{"data": {"a": 1}}')
    client, _ = openai_client(openai_server.base_url)
    result = await client.generate_object("agent", Free, "s", ASK)
    assert result.value.data == {"a": 1}
    sent = openai_server.chat_requests[0].body["response_format"]["json_schema"]
    assert sent["strict"] is False
    assert sent["schema"] == Free.model_json_schema()


@pytest.mark.parametrize(
    "content",
    [
        f"```json\n{json.dumps(GOOD)}\n```",
        f"<think>The user wants {{a guess}}. Hmm.</think>\n{json.dumps(GOOD)}",
        f"Sure! Here is the object you asked for:\n\n{json.dumps(GOOD)}\n\nHope it helps.",
        f"<think>plan</think>Here you go:\n```\n{json.dumps(GOOD)}\n```",
        f"reasoning that was cut off...</think>{json.dumps(GOOD)}",
    ],
    ids=["fence", "think", "prose", "think+fence", "dangling-think"],
)
async def test_wrapped_replies_are_recovered(openai_server: FakeOpenAIServer, content: str) -> None:
    openai_server.enqueue(content)
    client, _ = openai_client(openai_server.base_url)
    result = await client.generate_object("agent", Answer, "s", ASK)
    assert result.value == Answer(**GOOD)
    assert result.attempts == 1 and len(openai_server.chat_requests) == 1


async def test_the_trace_says_the_schema_was_sent_strict(openai_server: FakeOpenAIServer) -> None:
    openai_server.enqueue(json.dumps(GOOD))
    events: list[tuple[str, dict]] = []
    client, _ = openai_client(openai_server.base_url)
    client._trace = lambda kind, payload: events.append((kind, payload))
    await client.generate_object("agent", Answer, "s", ASK)
    (response,) = [p for k, p in events if k == "llm_response"]
    sent = openai_server.chat_requests[0].body["response_format"]["json_schema"]["strict"]
    assert response["mode"] == "json_schema" and response["strict"] is True is sent


async def test_truncated_json_is_not_trusted_and_length_reported(
    openai_server: FakeOpenAIServer,
) -> None:
    # Cut off at the token limit: repairing it could validate a truncated value
    # (was it 0.9 or 0.95?), so the client asks again instead.
    openai_server.enqueue(
        Reply(content='{"answer": "42", "confidence": 0.9', finish_reason="length"),
        json.dumps(GOOD),
    )
    events: list[tuple[str, dict]] = []
    client, _ = openai_client(openai_server.base_url)
    client._trace = lambda kind, payload: events.append((kind, payload))
    result = await client.generate_object("agent", Answer, "s", ASK)
    assert result.value == Answer(**GOOD) and result.attempts == 2
    responses = [p for k, p in events if k == "llm_response"]
    assert responses[0]["finish_reason"] == "length"
    retry = openai_server.chat_requests[1].body["messages"][-1]["content"]
    assert "cut off" in retry


async def test_429_with_retry_after_then_success(openai_server: FakeOpenAIServer) -> None:
    openai_server.enqueue(
        Reply.error(429, "rate limited", headers={"retry-after": "1"}), json.dumps(GOOD)
    )
    client, provider = openai_client(openai_server.base_url, max_retries=2)
    waits = record_waits(provider)
    result = await client.generate_object("agent", Answer, "s", ASK)
    assert result.value == Answer(**GOOD)
    assert len(openai_server.chat_requests) == 2
    assert waits == [1.0], "the server's Retry-After (1 s) is waited"


async def test_500_is_retried_with_backoff(openai_server: FakeOpenAIServer) -> None:
    openai_server.enqueue(Reply.error(500, "boom"), Reply.error(502, "bad gateway"), "ok")
    client, provider = openai_client(openai_server.base_url, max_retries=2)
    waits = record_waits(provider)
    assert (await client.generate_text("agent", "s", ASK)).text == "ok"
    assert len(openai_server.chat_requests) == 3
    # 0.5 s doubling, less up to 25% jitter (the SDK's backoff)
    assert 0.375 <= waits[0] <= 0.5 and 0.75 <= waits[1] <= 1.0, waits


async def test_500_without_retries_is_a_typed_one_line_error(
    openai_server: FakeOpenAIServer,
) -> None:
    openai_server.enqueue(Reply.error(500, f"internal\nerror for key {SECRET}"))
    client, _ = openai_client(openai_server.base_url, max_retries=0)
    with pytest.raises(ProviderError) as info:
        await client.generate_object("agent", Answer, "s", ASK)
    message = str(info.value)
    assert "HTTP 500" in message and "\n" not in message and SECRET not in message
    assert type(info.value) is ProviderError


async def test_missing_usage_is_estimated_never_nan(openai_server: FakeOpenAIServer) -> None:
    openai_server.enqueue(Reply(content=json.dumps(GOOD), usage=None))
    client, _ = openai_client(openai_server.base_url)
    result = await client.generate_object("agent", Answer, "s", ASK)
    usage = result.usage
    assert usage.estimated
    assert usage.prompt_tokens > 0 and usage.completion_tokens > 0
    assert not math.isnan(float(client.tracker.used)) and client.tracker.used == usage.total_tokens


async def test_json_schema_rejected_falls_back_and_remembers(
    openai_server: FakeOpenAIServer,
) -> None:
    openai_server.reject_json_schema = True
    openai_server.enqueue(json.dumps(GOOD), json.dumps(GOOD))
    client, provider = openai_client(openai_server.base_url)

    await client.generate_object("agent", Answer, "s", ASK)
    kinds = [r.body["response_format"]["type"] for r in openai_server.chat_requests]
    assert kinds == ["json_schema", "json_object"]
    # JSON mode carries the schema in the system prompt
    assert '"confidence"' in openai_server.chat_requests[1].body["messages"][0]["content"]
    assert provider.output_modes.remembered == {"gpt-4o-mini": "json_object"}

    await client.generate_object("agent", Answer, "s", ASK)
    kinds = [r.body["response_format"]["type"] for r in openai_server.chat_requests]
    assert kinds == ["json_schema", "json_object", "json_object"], "second call goes straight"


async def test_both_json_modes_rejected_uses_prompted_json(
    openai_server: FakeOpenAIServer,
) -> None:
    openai_server.reject_json_schema = openai_server.reject_json_object = True
    openai_server.enqueue(f"Here: {json.dumps(GOOD)}", json.dumps(GOOD))
    client, provider = openai_client(openai_server.base_url)
    assert (await client.generate_object("agent", Answer, "s", ASK)).value.answer == "42"
    assert (await client.generate_object("agent", Answer, "s", ASK)).value.answer == "42"
    bodies = [r.body for r in openai_server.chat_requests]
    assert len(bodies) == 4
    assert "response_format" not in bodies[2] and "response_format" not in bodies[3]
    assert "JSON schema" in bodies[3]["messages"][0]["content"]
    assert provider.output_modes.remembered == {"gpt-4o-mini": "prompted"}


async def test_401_names_the_env_var_and_hides_the_key(openai_server: FakeOpenAIServer) -> None:
    openai_server.enqueue(Reply.error(401, f"Incorrect API key provided: {SECRET}"))
    client, _ = openai_client(openai_server.base_url, max_retries=3)
    with pytest.raises(ProviderAuthError) as info:
        await client.generate_object("agent", Answer, "s", ASK)
    assert "OPENAI_API_KEY" in str(info.value) and SECRET not in str(info.value)
    assert len(openai_server.chat_requests) == 1, "401 is not retried"


async def test_401_from_ollama_says_no_key_is_needed(openai_server: FakeOpenAIServer) -> None:
    openai_server.enqueue(Reply.error(401, "unauthorized"))
    client, _ = openai_client(openai_server.base_url, name="ollama")
    with pytest.raises(ProviderAuthError, match="Ollama needs no API key"):
        await client.generate_text("agent", "s", ASK)


async def test_context_length_error_is_typed(openai_server: FakeOpenAIServer) -> None:
    openai_server.enqueue(
        Reply.error(
            400,
            "This model's maximum context length is 8192 tokens. However, your messages "
            "resulted in 9000 tokens.",
            code="context_length_exceeded",
        )
    )
    client, _ = openai_client(openai_server.base_url)
    with pytest.raises(ContextLengthError):
        await client.generate_object("agent", Answer, "s", ASK)
    assert len(openai_server.chat_requests) == 1, "not mistaken for a json_schema rejection"


async def test_empty_reply_bodies_do_not_crash(openai_server: FakeOpenAIServer) -> None:
    openai_server.enqueue({"choices": None}, Reply(content=None), {"choices": []})
    client, provider = openai_client(openai_server.base_url)
    text = await client.generate_text("agent", "s", ASK)
    assert text.text == "" and text.usage.estimated
    # structured: two identical empty replies -> typed error, no loop, no third ask
    with pytest.raises(StructuredOutputError):
        await client.generate_object("agent", Answer, "s", ASK)
    assert len(openai_server.chat_requests) == 3


async def test_router_handler_sees_the_request(openai_server: FakeOpenAIServer) -> None:
    seen: list[str] = []

    def router(body: dict) -> dict:
        seen.append(body["messages"][-1]["content"])
        return {"answer": body["model"], "confidence": 1}

    openai_server.handler = router
    client, _ = openai_client(openai_server.base_url)
    result = await client.generate_object("agent", Answer, "s", ASK)
    assert result.value.answer == "gpt-4o-mini" and seen == [ASK[0].content]


async def test_official_endpoint_uses_max_completion_tokens() -> None:
    from deepsearch.llm.openai_provider import OpenAIProvider

    provider = OpenAIProvider(api_key="k")
    request = CompletionRequest(
        tool="agent",
        settings=offline_settings().tool_settings("openai", "agent"),
        system="s",
        messages=ASK,
        max_tokens=300,
    )
    kwargs = provider._build_kwargs(request, "text")
    assert kwargs["max_completion_tokens"] == 300 and "max_tokens" not in kwargs


async def test_the_sdk_client_loads_no_ca_bundle_for_plain_http(
    openai_server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The SDK's client (embeddings, ping) shares the process's TLS context, whose CA
    bundle loads at the first TLS handshake: none on a local server over http."""
    import ssl

    from deepsearch.llm.openai_provider import OpenAIProvider

    loaded: list[object] = []
    real = ssl.SSLContext.load_verify_locations

    def recorded(self: ssl.SSLContext, *args: object, **kwargs: object) -> None:
        loaded.append(args or kwargs)
        real(self, *args, **kwargs)

    monkeypatch.setattr(ssl.SSLContext, "load_verify_locations", recorded)
    provider = OpenAIProvider(
        api_key=SECRET, base_url=openai_server.base_url, embedding_model="emb", max_retries=0
    )
    assert await provider.embed(["ab"]) == [[2.0, 1.0, 0.5]]
    await provider.aclose()
    assert loaded == []


async def test_embeddings_endpoint(openai_server: FakeOpenAIServer) -> None:
    from deepsearch.llm.openai_provider import OpenAIProvider

    provider = OpenAIProvider(
        api_key=SECRET, base_url=openai_server.base_url, embedding_model="emb", max_retries=0
    )
    vectors = await provider.embed(["ab", "abcd"])
    assert vectors == [[2.0, 1.0, 0.5], [4.0, 1.0, 0.5]]
    assert openai_server.requests_to("/embeddings")[0].body["model"] == "emb"
    await provider.aclose()


def _with_userinfo(url: str, password: str) -> str:
    return url.replace("http://", f"http://deploy:{password}@", 1)


async def test_a_password_in_the_base_url_never_reaches_the_error(
    openai_server: FakeOpenAIServer,
) -> None:
    password = "hunter2-url-password"
    # The server even echoes the URL (with its password) back in its message.
    openai_server.enqueue(Reply.error(500, f"upstream {_with_userinfo('http://x', password)} died"))
    client, _ = openai_client(_with_userinfo(openai_server.base_url, password))
    with pytest.raises(ProviderError) as info:
        await client.generate_text("agent", "s", ASK)
    message = str(info.value)
    assert "500" in message and "deploy:****@127.0.0.1" in message
    assert password not in message


async def test_keyless_server_from_settings_sends_a_placeholder(
    openai_server: FakeOpenAIServer,
) -> None:
    from deepsearch.llm.factory import build_llm_client
    from deepsearch.llm.tracker import TokenTracker

    openai_server.enqueue("hello")
    settings = offline_settings(**{"llm.openai_base_url": openai_server.base_url})
    client = build_llm_client(settings, TokenTracker(100_000), probe=lambda url: False)
    assert client.provider_name == "openai"
    assert (await client.generate_text("agent", "s", ASK)).text == "hello"
    assert openai_server.chat_requests[0].headers["authorization"] == "Bearer not-needed"
    await client.aclose()


async def test_keyless_server_that_wants_a_key_names_openai_api_key() -> None:
    from deepsearch.llm.factory import build_llm_client
    from deepsearch.llm.tracker import TokenTracker

    with FakeOpenAIServer(api_key="the-real-key") as server:
        settings = offline_settings(
            **{"llm.openai_base_url": server.base_url, "llm.max_retries": 0}
        )
        client = build_llm_client(settings, TokenTracker(100_000), probe=lambda url: False)
        with pytest.raises(ProviderAuthError, match="OPENAI_API_KEY"):
            await client.generate_text("agent", "s", ASK)
        await client.aclose()


async def test_ollama_requests_carry_no_num_ctx_option(openai_server: FakeOpenAIServer) -> None:
    # Ollama's OpenAI-compatible endpoint drops `options`, so none is sent (the window
    # is set on the server with OLLAMA_CONTEXT_LENGTH); an openai request is plain too.
    for name in ("ollama", "openai"):
        openai_server.enqueue("ok")
        client, _ = openai_client(openai_server.base_url, name=name)
        await client.generate_text("agent", "s", ASK)
    for request in openai_server.chat_requests:
        assert "options" not in request.body and "num_ctx" not in request.body


async def test_ollama_errors_keep_the_word_ollama(openai_server: FakeOpenAIServer) -> None:
    openai_server.enqueue(Reply.error(404, "model 'qwen' not found, try `ollama pull qwen`"))
    client, _ = openai_client(openai_server.base_url, name="ollama")
    with pytest.raises(ProviderError, match="ollama pull qwen"):
        await client.generate_text("agent", "s", ASK)


async def test_embeddings_report_the_servers_token_count(openai_server: FakeOpenAIServer) -> None:
    from deepsearch.llm.openai_provider import OpenAIProvider

    provider = OpenAIProvider(
        api_key=SECRET, base_url=openai_server.base_url, embedding_model="emb", max_retries=0
    )
    result = await provider.embed_with_usage(["a", "b", "c"])
    assert result.prompt_tokens == 3 and len(result.vectors) == 3  # the fake counts 1 per text
    await provider.aclose()
