"""An endpoint no retry can help is said at once (issue 36, item 9): an HTML page
answered with 200 (not an OpenAI API) and a 429 `insufficient_quota` (no credit left)
are one request each and a configuration error (exit 2); and a rate limit that outlasts
the first-token allowance is named as one, not as a slow server (item 25)."""

from __future__ import annotations

import json

import httpx
import pytest

from deepsearch.errors import EndpointUnusable, ProviderError
from deepsearch.llm.client import LLMClient
from deepsearch.llm.openai_provider import OpenAIProvider
from deepsearch.llm.tracker import TokenTracker
from tests.fakes.clock import FakeClock
from tests.fakes.scripted_llm import offline_settings
from tests.llm.helpers import ASK, record_waits

QUOTA = {
    "error": {
        "message": "You exceeded your current quota, please check your plan.",
        "type": "insufficient_quota",
        "code": "insufficient_quota",
    }
}


def _client(answer: httpx.Response, *, clock: FakeClock | None = None) -> tuple[LLMClient, list]:
    sent: list[httpx.Request] = []

    def handle(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return answer

    provider = OpenAIProvider(
        api_key="k",
        base_url="http://127.0.0.1:9/v1",
        max_retries=5,
        timeout_s=30,
        first_token_s=3,
        clock=clock,
        http_client=httpx.AsyncClient(transport=httpx.MockTransport(handle)),
    )
    if clock is not None:
        provider.wire.sleep = clock.sleep  # the backoff moves the fake clock
    else:
        record_waits(provider)
    client = LLMClient(
        provider=provider,
        provider_name="openai",
        settings=offline_settings(),
        tracker=TokenTracker(100_000),
    )
    return client, sent


async def test_an_html_page_for_an_answer_is_said_at_once_and_not_retried() -> None:
    page = httpx.Response(
        200, content=b"<html><body>Welcome</body></html>", headers={"content-type": "text/html"}
    )
    client, sent = _client(page)
    with pytest.raises(EndpointUnusable) as caught:
        await client.generate_text("agent", "s", ASK)
    await client.aclose()
    assert len(sent) == 1
    assert "does not answer like an OpenAI API (text/html)" in str(caught.value)
    assert caught.value.configuration and caught.value.fatal  # the run: exit 2, no step more


async def test_an_exhausted_quota_is_a_configuration_error_and_not_retried() -> None:
    client, sent = _client(httpx.Response(429, content=json.dumps(QUOTA).encode()))
    with pytest.raises(EndpointUnusable) as caught:
        await client.generate_text("agent", "s", ASK)
    await client.aclose()
    assert len(sent) == 1
    assert "quota is exhausted" in str(caught.value) and "exceeded your current quota" in str(
        caught.value
    )
    assert caught.value.configuration


async def test_a_rate_limit_past_the_first_token_allowance_is_named_as_one() -> None:
    busy = httpx.Response(429, content=b'{"error": {"message": "slow down"}}')
    client, sent = _client(busy, clock=FakeClock())
    with pytest.raises(ProviderError) as caught:
        await client.generate_text("agent", "s", ASK)
    await client.aclose()
    message = str(caught.value)
    assert "kept answering HTTP 429 (rate limited)" in message, message
    assert "no first token" not in message and len(sent) >= 2
