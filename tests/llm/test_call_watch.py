"""Each LLM call's phase, told by the wire (llm/call_watch.py), and the calls a
cancellation cut while stalled (issue 36, item 25): one cut while it waited for its first
token or for a retry is kept, with when and why; one cut while generating, or one that
failed of itself, is not. Through the real wire over a MockTransport, on a FakeClock."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any

import httpx
import pytest

from deepsearch.errors import ProviderError
from deepsearch.llm.call_watch import (
    CallState,
    CallWatch,
    first_token,
    waiting,
    watched_call,
    watching,
)
from deepsearch.llm.client import LLMClient
from deepsearch.llm.openai_provider import OpenAIProvider
from deepsearch.llm.tracker import TokenTracker
from tests.fakes.clock import FakeClock
from tests.fakes.scripted_llm import offline_settings
from tests.fakes.sse import completion_chunks, sse
from tests.llm.helpers import ASK
from tests.llm.test_openai_wire import PAYLOAD

Handler = Callable[[httpx.Request], Coroutine[Any, Any, httpx.Response]]
CHUNKS = list(sse(completion_chunks(PAYLOAD, include_usage=True)))


def _client(clock: FakeClock, handle: Handler, *, max_retries: int = 2) -> LLMClient:
    provider = OpenAIProvider(
        api_key="k", base_url="http://127.0.0.1:9/v1", max_retries=max_retries, timeout_s=900,
        first_token_s=600, clock=clock,
        http_client=httpx.AsyncClient(transport=httpx.MockTransport(handle)),
    )  # fmt: skip
    provider.wire.sleep = clock.sleep
    return LLMClient(
        provider=provider, provider_name="openai", settings=offline_settings(),
        tracker=TokenTracker(100_000),
    )  # fmt: skip


async def _cut_when(client: LLMClient, watch: CallWatch, phase: str, *, after_s: float) -> None:
    """Start a call, and once it is in `phase`, let `after_s` pass and cancel it."""
    reached = asyncio.Event()
    watch.on_change = lambda call, moved: reached.set() if moved == phase else None
    with watching(watch):
        call = asyncio.create_task(client.generate_text("agent", "s", ASK))
    await asyncio.wait_for(reached.wait(), 5)
    watch.clock.advance(after_s)  # type: ignore[attr-defined]
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    await client.aclose()


async def _forever() -> None:
    await asyncio.Event().wait()


async def test_a_call_cut_while_it_waits_for_its_first_token_is_kept() -> None:
    async def hang(request: httpx.Request) -> httpx.Response:
        await _forever()  # the headers never come
        raise AssertionError

    clock = FakeClock()
    clock.advance(5)
    watch = CallWatch(clock)
    await _cut_when(_client(clock, hang), watch, "waiting", after_s=42)
    [cut] = watch.cut
    assert (cut.tool, cut.schema, cut.phase) == ("agent", "text", "waiting")
    assert (cut.started, cut.since, cut.cut_at, cut.limit_s) == (5.0, 5.0, 47.0, 600.0)
    assert (cut.status, cut.refused) == (None, 0)


async def test_a_call_cut_in_a_rate_limits_pause_is_kept_with_its_status() -> None:
    async def busy(request: httpx.Request) -> httpx.Response:
        body = json.dumps({"error": {"message": "slow down"}}).encode()
        return httpx.Response(429, content=body, headers={"retry-after": "30"})

    clock = FakeClock()
    client = _client(clock, busy)
    client.provider.wire.sleep = lambda seconds: _forever()  # type: ignore[attr-defined]
    watch = CallWatch(clock)
    await _cut_when(client, watch, "retrying", after_s=3)
    [cut] = watch.cut
    assert (cut.phase, cut.status, cut.refused, cut.wait_s) == ("retrying", 429, 1, 30.0)
    assert (cut.since, cut.cut_at) == (0.0, 3.0)


async def test_a_call_cut_while_it_generates_is_not_kept() -> None:
    async def body() -> AsyncIterator[bytes]:
        yield CHUNKS[0]
        await _forever()  # a model writing without end

    async def runaway(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=body(), headers={"content-type": "text/event-stream"})

    clock = FakeClock()
    watch = CallWatch(clock)
    await _cut_when(_client(clock, runaway), watch, "generating", after_s=500)
    assert watch.cut == []


async def test_the_phases_of_a_retried_call_in_order() -> None:
    answers = [httpx.Response(503, content=b"{}", headers={"retry-after": "2"})]

    async def handle(request: httpx.Request) -> httpx.Response:
        if answers:
            return answers.pop()
        return httpx.Response(200, content=b"".join(CHUNKS))

    clock = FakeClock()
    moves: list[tuple[str, int | None, float, int]] = []
    watch = CallWatch(
        clock, on_change=lambda c, moved: moves.append((moved, c.status, c.wait_s, c.refused))
    )
    client = _client(clock, handle)
    with watching(watch):
        assert (await client.generate_text("agent", "s", ASK)).text == "Paris it is."
    await client.aclose()
    assert moves == [
        ("waiting", None, 0.0, 0),
        ("retrying", 503, 2.0, 1),
        ("waiting", 503, 2.0, 1),  # the retried request: no first token yet
        ("generating", 503, 2.0, 1),
    ]
    assert watch.cut == []


async def test_a_call_that_fails_of_itself_is_not_a_cut() -> None:
    async def refused(request: httpx.Request) -> httpx.Response:
        return httpx.Response(400, content=b'{"error": {"message": "bad request"}}')

    clock = FakeClock()
    watch = CallWatch(clock)
    client = _client(clock, refused, max_retries=0)
    with watching(watch), pytest.raises(ProviderError):
        await client.generate_text("agent", "s", ASK)
    await client.aclose()
    assert watch.cut == []


def test_a_failing_listener_never_fails_the_call() -> None:
    def broken(call: CallState, phase: str) -> None:
        raise RuntimeError("the view broke")

    watch = CallWatch(FakeClock(), on_change=broken)
    with watching(watch), watched_call("agent", "AgentStep"):
        first_token()  # told, and the listener's failure dropped


def test_without_a_watch_nothing_is_told() -> None:
    with watched_call("agent", "AgentStep"):
        first_token()  # no watch, no call: nothing to do


def test_a_call_outside_the_client_is_told_to_nobody() -> None:
    """A provider used directly (doctor's check), not through LLMClient: no call state."""
    moves: list[str] = []
    with watching(CallWatch(FakeClock(), on_change=lambda c, moved: moves.append(moved))):
        waiting(600.0)
        first_token()
    assert moves == []
