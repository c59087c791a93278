"""A reply stream that ends before the reply does is never an answer (issue 36, item
19): cut at an event boundary (no `finish_reason`, no `[DONE]`), cut inside an event,
or broken mid-reply by the connection, it is sent again like a request that got no
answer, within `max_retries`; when the retries are spent the call fails, naming it."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from deepsearch.errors import ProviderError
from deepsearch.llm.client import LLMClient
from deepsearch.llm.openai_provider import OpenAIProvider
from deepsearch.llm.tracker import TokenTracker
from tests.fakes.scripted_llm import offline_settings
from tests.fakes.sse import completion_chunks
from tests.llm.helpers import ASK, openai_client, record_waits
from tests.llm.test_openai_wire import PAYLOAD, RawStreams, events

WHOLE = completion_chunks(PAYLOAD, include_usage=True)
# Content but no finish_reason and no [DONE]: the server died between two events.
CUT = events(*WHOLE[:2])


async def test_a_stream_cut_at_an_event_boundary_is_sent_again() -> None:
    with RawStreams(CUT, events(*WHOLE, "data: [DONE]\n\n")) as server:
        client, provider = openai_client(server.base_url, max_retries=2)
        waits = record_waits(provider)
        result = await client.generate_text("agent", "s", ASK)
        await client.aclose()
        assert len(server.chat_requests) == 2
    assert result.text == "Paris it is." and len(waits) == 1


async def test_a_cut_stream_with_no_retries_left_fails_and_is_never_used() -> None:
    with RawStreams(CUT, CUT) as server:
        client, provider = openai_client(server.base_url, max_retries=1)
        record_waits(provider)
        with pytest.raises(ProviderError, match="left its reply incomplete") as info:
            await client.generate_text("agent", "s", ASK)
        await client.aclose()
        assert len(server.chat_requests) == 2
    assert "no finish_reason" in str(info.value)


async def test_a_stream_cut_inside_an_event_is_sent_again() -> None:
    torn = events(*WHOLE[:2]) + [b'data: {"id": "c", "choi']
    with RawStreams(torn, events(*WHOLE)) as server:
        client, provider = openai_client(server.base_url, max_retries=1)
        record_waits(provider)
        result = await client.generate_text("agent", "s", ASK)
        await client.aclose()
    assert result.text == "Paris it is."


async def test_a_connection_dropped_mid_stream_is_retried_like_one_before_the_headers() -> None:
    sent: list[int] = []

    async def body(drop: bool) -> AsyncIterator[bytes]:
        for item in events(*WHOLE, "data: [DONE]\n\n")[: 2 if drop else None]:
            yield item
        if drop:
            raise httpx.RemoteProtocolError("peer closed connection")

    def answer(request: httpx.Request) -> httpx.Response:
        sent.append(1)
        return httpx.Response(200, content=body(drop=len(sent) == 1))

    provider = OpenAIProvider(
        api_key="k",
        base_url="http://127.0.0.1:9/v1",
        max_retries=1,
        http_client=httpx.AsyncClient(transport=httpx.MockTransport(answer)),
    )
    waits = record_waits(provider)
    client = LLMClient(
        provider=provider,
        provider_name="openai",
        settings=offline_settings(),
        tracker=TokenTracker(100_000),
    )
    result = await client.generate_text("agent", "s", ASK)
    await client.aclose()
    assert result.text == "Paris it is." and len(sent) == 2 and len(waits) == 1
