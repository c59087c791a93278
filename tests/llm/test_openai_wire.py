"""What the openai SDK did for a chat completion, now `llm/openai_wire.py`'s: retries by
the SDK's rules, a refused mode sent once, the SSE stream read line by line, error
bodies read alike. Over loopback (tests/fakes/openai_server.py), through the provider."""

from __future__ import annotations

import email.utils
import json
from collections import deque
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from deepsearch.errors import ProviderError
from deepsearch.llm.client import LLMClient
from deepsearch.llm.openai_provider import OpenAIProvider
from deepsearch.llm.openai_wire import backoff_s, retry_after_s
from deepsearch.llm.tracker import TokenTracker
from tests.fakes.loopback import HTTPReply, RecordedRequest
from tests.fakes.openai_server import FakeOpenAIServer, Reply
from tests.fakes.scripted_llm import offline_settings
from tests.fakes.sse import completion_chunks
from tests.llm.helpers import ASK, Answer, openai_client, record_waits

GOOD = {"answer": "42", "confidence": 0.9}
PAYLOAD = {
    "id": "c",
    "created": 0,
    "model": "m",
    "choices": [
        {"index": 0, "message": {"content": "Paris it is."}, "finish_reason": "stop"},
    ],
    "usage": {"prompt_tokens": 5, "completion_tokens": 3},
}


def events(*items: dict | str) -> list[bytes]:
    """SSE events: a dict is a `data:` event, a str goes on the wire as it is."""
    return [
        f"data: {json.dumps(item)}\n\n".encode() if isinstance(item, dict) else item.encode()
        for item in items
    ]


class RawStreams(FakeOpenAIServer):
    """Answers chat completions with the given byte streams, in order."""

    def __init__(self, *streams: Iterable[bytes]) -> None:
        super().__init__()
        self.streams = deque(streams)

    def respond(self, request: RecordedRequest) -> HTTPReply:
        if request.path.endswith("/chat/completions") and self.streams:
            return HTTPReply(200, stream=self.streams.popleft())
        return super().respond(request)


async def test_429_with_retry_after_ms_is_waited_in_milliseconds(
    openai_server: FakeOpenAIServer,
) -> None:
    openai_server.enqueue(
        Reply.error(429, "slow down", headers={"retry-after-ms": "250", "retry-after": "9"}),
        "ok",
    )
    client, provider = openai_client(openai_server.base_url, max_retries=1)
    waits = record_waits(provider)
    assert (await client.generate_text("agent", "s", ASK)).text == "ok"
    assert waits == [0.25] and len(openai_server.chat_requests) == 2


async def test_retries_stop_at_max_retries(openai_server: FakeOpenAIServer) -> None:
    openai_server.enqueue(*[Reply.error(503, "busy")] * 4)
    client, provider = openai_client(openai_server.base_url, max_retries=2)
    waits = record_waits(provider)
    with pytest.raises(ProviderError, match="HTTP 503"):
        await client.generate_text("agent", "s", ASK)
    assert len(openai_server.chat_requests) == 3 and len(waits) == 2


async def test_a_client_error_is_not_retried(openai_server: FakeOpenAIServer) -> None:
    openai_server.enqueue(Reply.error(404, "no such model"), "never")
    client, provider = openai_client(openai_server.base_url, max_retries=3)
    waits = record_waits(provider)
    with pytest.raises(ProviderError, match="no such model"):
        await client.generate_text("agent", "s", ASK)
    assert len(openai_server.chat_requests) == 1 and waits == []


async def test_a_refusal_500_is_sent_once_then_the_next_rung(
    openai_server: FakeOpenAIServer,
) -> None:
    # llama-cpp-python fails request validation as a 500 naming the field.
    refusal = Reply(status=500, body={"error": {"message": "response_format: json_schema bad"}})
    openai_server.enqueue(refusal, json.dumps(GOOD))
    client, provider = openai_client(openai_server.base_url, max_retries=3, strict_subset=False)
    waits = record_waits(provider)
    result = await client.generate_object("agent", Answer, "s", ASK)
    assert result.value == Answer(**GOOD)
    kinds = [r.body["response_format"]["type"] for r in openai_server.chat_requests]
    assert kinds == ["json_schema", "json_object"], "the refused rung is sent once"
    assert waits == []


async def test_a_500_that_names_a_schema_field_on_a_plain_request_is_retried(
    openai_server: FakeOpenAIServer,
) -> None:
    # No response_format was sent: the body cannot be refusing one.
    openai_server.enqueue(Reply.error(500, "json_schema module crashed"), "ok")
    client, provider = openai_client(openai_server.base_url, max_retries=1)
    record_waits(provider)
    assert (await client.generate_text("agent", "s", ASK)).text == "ok"
    assert len(openai_server.chat_requests) == 2


async def test_a_non_json_error_body_is_a_typed_error(openai_server: FakeOpenAIServer) -> None:
    openai_server.enqueue(Reply(status=502, body="<html>Bad Gateway</html>"))
    client, _ = openai_client(openai_server.base_url, max_retries=0)
    with pytest.raises(ProviderError) as info:
        await client.generate_text("agent", "s", ASK)
    assert type(info.value) is ProviderError and "HTTP 502" in str(info.value)


async def test_keep_alive_comments_and_other_fields_are_ignored() -> None:
    chunks = completion_chunks(PAYLOAD, include_usage=True)
    stream = events(": keep-alive\n\n", "event: message\nid: 1\n", chunks[0], ":ping\n\n")
    stream += events(*chunks[1:], "data: [DONE]\n\n")
    with RawStreams(stream) as server:
        client, _ = openai_client(server.base_url)
        result = await client.generate_text("agent", "s", ASK)
        await client.aclose()
    assert result.text == "Paris it is." and result.usage.completion_tokens == 3
    assert not result.usage.estimated


async def test_a_stream_without_done_still_answers() -> None:
    chunks = completion_chunks(PAYLOAD, include_usage=True)
    with RawStreams(events(*chunks)) as server:
        client, _ = openai_client(server.base_url)
        result = await client.generate_text("agent", "s", ASK)
        await client.aclose()
    assert result.text == "Paris it is." and result.usage.prompt_tokens == 5


async def test_an_error_inside_the_stream_is_a_typed_error_and_not_retried() -> None:
    first = completion_chunks(PAYLOAD, include_usage=False)[:2]
    crash = {"error": {"message": "the model crashed", "type": "server_error"}}
    with RawStreams(events(*first, crash, "data: [DONE]\n\n"), events()) as server:
        client, _ = openai_client(server.base_url, max_retries=3)
        with pytest.raises(ProviderError, match="the model crashed") as info:
            await client.generate_text("agent", "s", ASK)
        await client.aclose()
        assert len(server.chat_requests) == 1
    assert type(info.value) is ProviderError


async def test_an_unreachable_server_is_retried_then_named() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    provider = OpenAIProvider(
        api_key="k",
        base_url="http://127.0.0.1:9/v1",
        max_retries=2,
        http_client=httpx.AsyncClient(transport=httpx.MockTransport(refuse)),
    )
    waits = record_waits(provider)
    client = LLMClient(
        provider=provider,
        provider_name="openai",
        settings=offline_settings(),
        tracker=TokenTracker(100_000),
    )
    with pytest.raises(ProviderError, match="cannot reach openai"):
        await client.generate_text("agent", "s", ASK)
    assert len(waits) == 2, "a connection error is retried max_retries times"


def test_the_backoff_and_retry_after_follow_the_sdk() -> None:
    assert retry_after_s(httpx.Headers({"retry-after": "3"})) == 3.0
    assert retry_after_s(httpx.Headers({"retry-after": "soon"})) is None
    assert retry_after_s(httpx.Headers({"retry-after-ms": "250", "retry-after": "9"})) == 0.25
    in_a_minute = email.utils.format_datetime(datetime.now(UTC) + timedelta(seconds=60), True)
    wait = retry_after_s(httpx.Headers({"retry-after": in_a_minute}))
    assert wait is not None and 55 <= wait <= 60  # an HTTP date, as the reader reads it
    assert backoff_s(0, httpx.Headers({"retry-after": "300"})) <= 0.5  # too long: backoff
    assert 6.0 <= backoff_s(10, None) <= 8.0  # capped at 8 s, less jitter
