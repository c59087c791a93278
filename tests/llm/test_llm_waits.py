"""A retry's pause is told, not silent (issue 36, item 10): "the LLM server rate
limited the call (HTTP 429), retrying in 2 s" reaches the run's listener."""

from __future__ import annotations

import pytest

from deepsearch.llm.waits import listening, retry_words
from tests.fakes.openai_server import FakeOpenAIServer, Reply
from tests.llm.helpers import ASK, openai_client, record_waits


async def test_each_retry_pause_is_told_with_its_reason(openai_server: FakeOpenAIServer) -> None:
    openai_server.enqueue(
        Reply.error(429, "slow down", headers={"retry-after": "2"}),
        Reply.error(503, "busy", headers={"retry-after": "1"}),
        "ok",
    )
    client, provider = openai_client(openai_server.base_url, max_retries=2)
    waits = record_waits(provider)
    told: list[str] = []
    with listening(told.append):
        assert (await client.generate_text("agent", "s", ASK)).text == "ok"
    assert waits == [2.0, 1.0]
    assert told == [
        "the LLM server rate limited the call (HTTP 429), retrying in 2 s",
        "the LLM server answered HTTP 503, retrying in 1 s",
    ]


async def test_without_a_listener_a_retry_is_as_before(openai_server: FakeOpenAIServer) -> None:
    openai_server.enqueue(Reply.error(429, "slow down", headers={"retry-after": "1"}), "ok")
    client, provider = openai_client(openai_server.base_url, max_retries=1)
    record_waits(provider)
    assert (await client.generate_text("agent", "s", ASK)).text == "ok"


@pytest.mark.parametrize(
    ("status", "wait", "said"),
    [
        (None, 0.5, "the LLM server could not be reached, retrying in 0.5 s"),
        (408, 8.0, "the LLM server answered HTTP 408, retrying in 8 s"),
    ],
)
def test_the_words_of_a_wait(status: int | None, wait: float, said: str) -> None:
    assert retry_words(status, wait) == said
