"""A server that sends no first token is paid for once, not per call (issue 36, item
25): a hung loopback server held a run 1,201 s, the 600 s local allowance twice (the
research step, then Beast Mode). After a call got no first token, later calls get at
most `StallGuard.STALLED_FIRST_TOKEN_S` until one is answered. On a FakeClock."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from deepsearch.errors import ProviderError
from deepsearch.llm.client import LLMClient
from deepsearch.llm.openai_provider import OpenAIProvider
from deepsearch.llm.streaming import StallGuard
from deepsearch.llm.tracker import TokenTracker
from tests.fakes.clock import FakeClock
from tests.fakes.scripted_llm import offline_settings
from tests.fakes.sse import completion_chunks, sse
from tests.llm.helpers import ASK
from tests.llm.test_openai_wire import PAYLOAD


async def test_a_hung_server_costs_the_full_allowance_once() -> None:
    hung = asyncio.Event()  # set: the server answers again
    clock = FakeClock()

    async def handle(request: httpx.Request) -> httpx.Response:
        if not hung.is_set():
            await asyncio.Event().wait()  # headers never come (cancelled by the limit)
        body = b"".join(sse(completion_chunks(PAYLOAD, include_usage=True)))
        return httpx.Response(200, content=body, headers={"content-type": "text/event-stream"})

    provider = OpenAIProvider(
        api_key="k", base_url="http://127.0.0.1:9/v1", max_retries=0, timeout_s=900,
        first_token_s=600, clock=clock,
        http_client=httpx.AsyncClient(transport=httpx.MockTransport(handle)),
    )  # fmt: skip
    client = LLMClient(
        provider=provider, provider_name="openai", settings=offline_settings(),
        tracker=TokenTracker(100_000),
    )  # fmt: skip

    async def cut_after(seconds: float) -> str:
        call = asyncio.create_task(client.generate_text("agent", "s", ASK))
        for _ in range(20):
            await asyncio.sleep(0)
        clock.advance(seconds)
        with pytest.raises(ProviderError) as caught:
            await asyncio.wait_for(call, 5)
        return str(caught.value)

    assert "no first token within 600s" in await cut_after(600)
    stalled = StallGuard.STALLED_FIRST_TOKEN_S
    assert f"no first token within {stalled:g}s" in await cut_after(stalled)
    hung.set()
    assert (await client.generate_text("agent", "s", ASK)).text == "Paris it is."
    assert not provider.wire.stall.stalled, "an answer ends the short allowance"
    await client.aclose()
