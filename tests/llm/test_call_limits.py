"""One LLM call's limits (issue 17, item 4): a first-token allowance and a whole-call
limit, longer for a local server than for a hosted API; reaching either abandons the
call at once, closes its stream (so the server stops generating) and is not retried."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from deepsearch.config import LLMConfig, load_config
from deepsearch.errors import ProviderError
from deepsearch.llm.call_limits import HOSTED, LOCAL, call_limits, is_local_endpoint
from deepsearch.llm.client import LLMClient
from deepsearch.llm.openai_provider import OpenAIProvider
from deepsearch.llm.openai_wire import ChatWire
from deepsearch.llm.tracker import TokenTracker
from tests.fakes.clock import FakeClock
from tests.fakes.openai_server import FakeOpenAIServer, Reply
from tests.fakes.scripted_llm import offline_settings
from tests.llm.helpers import ASK, SECRET


@pytest.mark.parametrize(
    ("provider", "url", "local"),
    [
        ("ollama", None, True),
        ("openai", "http://127.0.0.1:8080/v1", True),
        ("openai", "http://localhost:1234/v1", True),
        ("openai", "http://[::1]:8000/v1", True),
        ("openai", "http://192.168.1.20:8000/v1", True),
        ("openai", "http://gpu-box.local:8000/v1", True),
        ("openai", None, False),  # api.openai.com
        ("openai", "https://api.openai.com/v1", False),
        ("openai", "https://openrouter.ai/api/v1", False),
        ("openai", "http://8.8.8.8/v1", False),
        ("gemini", None, False),
    ],
)
def test_a_local_server_is_told_from_a_hosted_api(
    provider: str, url: str | None, local: bool
) -> None:
    assert is_local_endpoint(provider, url) is local


def test_local_servers_get_longer_limits_and_configured_values_win() -> None:
    llm = load_config(environ={}).settings.llm
    assert call_limits(llm, "openai", None) == HOSTED
    assert call_limits(llm, "ollama", None) == LOCAL
    assert LOCAL.first_token_s > HOSTED.first_token_s and LOCAL.total_s > HOSTED.total_s
    mine = llm.model_copy(update={"timeout_s": 50.0, "first_token_timeout_s": 80.0})
    limits = call_limits(mine, "ollama", None)
    assert (limits.first_token_s, limits.total_s) == (50.0, 50.0)  # never above the whole


def test_the_settings_reach_the_provider() -> None:
    from deepsearch.llm.factory import build_provider

    env = {"OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}
    provider = build_provider(load_config(environ=env).settings, "openai")
    assert isinstance(provider, OpenAIProvider) and provider.limits == LOCAL
    env = {"OPENAI_API_KEY": SECRET}
    provider = build_provider(load_config(environ=env).settings, "openai")
    assert isinstance(provider, OpenAIProvider) and provider.limits == HOSTED
    assert LLMConfig.model_fields["first_token_timeout_s"].default is None
    # The transport's own read timeout never fires first: it would retry a timed-out
    # call. Chat goes over the wire's httpx client; ping and embeddings over the SDK's.
    wire_timeout = provider.wire.client.timeout
    assert wire_timeout.read is not None and wire_timeout.read > provider.limits.total_s
    assert wire_timeout.connect == 10.0
    timeout = provider.client.timeout
    assert not isinstance(timeout, float | None) and timeout.read is not None
    assert timeout.read > provider.limits.total_s


class _PacedStream:
    """The wire's real stream, each chunk taking `chunk_s` of the clock's time: a slow
    server's pace without waiting for it."""

    def __init__(self, stream: Any, clock: FakeClock, chunk_s: float) -> None:
        self._stream, self._clock, self._chunk_s = stream, clock, chunk_s

    async def __aiter__(self) -> AsyncIterator[dict[str, Any]]:
        async for chunk in self._stream:
            self._clock.advance(self._chunk_s)
            await asyncio.sleep(0)  # a limit the chunk passed cuts the call here
            yield chunk

    async def close(self) -> None:
        await self._stream.close()


def _client(
    srv: FakeOpenAIServer,
    *,
    first_token_s: float,
    total_s: float,
    clock: FakeClock | None = None,
    chunk_s: float = 0.0,
) -> LLMClient:
    """The real provider over the loopback server; with `clock`, its call limits are on
    that clock and every streamed chunk takes `chunk_s` of it."""
    provider = OpenAIProvider(
        api_key=SECRET,
        base_url=srv.base_url,
        max_retries=3,  # what a timed-out call must NOT get
        timeout_s=total_s,
        first_token_s=first_token_s,
        clock=clock,
    )
    if clock is not None:
        wire, paced = provider.wire, clock

        async def open_paced(body: dict[str, Any], attempts: Any = None) -> Any:
            return _PacedStream(await ChatWire.open(wire, body, attempts), paced, chunk_s)

        wire.open = open_paced  # type: ignore[method-assign]
    return LLMClient(
        provider=provider,
        provider_name="openai",
        settings=offline_settings(),
        tracker=TokenTracker(1_000_000),
    )


async def _fails(client: LLMClient) -> str:
    try:
        await client.generate_text("agent", "system", ASK)
    except ProviderError as exc:
        return str(exc)
    finally:
        await client.aclose()
    raise AssertionError("the call should have been cut")


def test_every_completion_is_streamed_and_assembled(openai_server: FakeOpenAIServer) -> None:
    openai_server.enqueue(Reply(content="Paris is the capital.", finish_reason="stop"))
    client = _client(openai_server, first_token_s=10, total_s=10)

    async def call() -> tuple[str, int]:
        try:
            result = await client.generate_text("agent", "system", ASK)
        finally:
            await client.aclose()
        return result.text, result.usage.completion_tokens

    text, completion_tokens = asyncio.run(call())
    body = openai_server.chat_requests[0].body
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert text == "Paris is the capital." and completion_tokens == 9  # the server's count


def test_a_server_slow_to_start_is_cut_at_the_first_token_allowance_and_not_retried() -> None:
    async def held_past_the_allowance(srv: FakeOpenAIServer, clock: FakeClock) -> str:
        call = asyncio.create_task(_fails(_client(srv, first_token_s=0.3, total_s=10, clock=clock)))
        for _ in range(3000):  # polls, 1 ms apart, until the server holds the request
            if srv.chat_requests or call.done():
                break
            await asyncio.sleep(0.001)
        clock.advance(0.3)  # the allowance passes on the call's clock, not in real time
        return await call

    with FakeOpenAIServer() as srv:
        srv.enqueue(Reply(content="late", delay_s=5))
        message = asyncio.run(held_past_the_allowance(srv, FakeClock()))
        assert len(srv.chat_requests) == 1, "a timed-out call is never retried"
    assert "no first token within 0.3s" in message and "first_token_timeout_s" in message


def test_a_runaway_generation_is_cut_at_the_call_limit_and_its_stream_closed() -> None:
    async def cut_then_look(srv: FakeOpenAIServer, client: LLMClient) -> str:
        try:
            await client.generate_text("agent", "system", ASK)
        except ProviderError as exc:
            # Before the client goes away: the call itself closed its stream, and the
            # server, whose next write fails, stops generating.
            for _ in range(3000):  # polls, 10 ms apart: what the server records
                if srv.closed_streams:
                    return str(exc)
                await asyncio.sleep(0.01)
            raise AssertionError("the stream was left open") from None
        finally:
            await client.aclose()
        raise AssertionError("the call should have been cut")

    with FakeOpenAIServer() as srv:
        srv.enqueue(Reply(content='{"answer": "', runaway=True, token_delay_s=0.002))
        # Each chunk takes 0.1 s of the clock: the first is well within the first-token
        # allowance, so the whole-call limit (1.5 s, 15 chunks) is what cuts the call.
        clock = FakeClock()
        client = _client(srv, first_token_s=1.0, total_s=1.5, clock=clock, chunk_s=0.1)
        message = asyncio.run(cut_then_look(srv, client))
        assert len(srv.chat_requests) == 1, "a timed-out call is never retried"
    assert "did not finish its reply within 1.5s" in message and "llm.timeout_s" in message
    assert 1.5 <= clock.reading() < 1.7, "cut at the limit, on the provider's clock"


def test_once_the_first_token_is_there_the_whole_call_limit_applies() -> None:
    """A reply slower in total than the first-token allowance, within the call's limit."""
    with FakeOpenAIServer() as srv:
        # Seven streamed items, each 0.6 s of the clock: 4.2 s in all, the first at 0.6 s.
        srv.enqueue(Reply(content="It was completed in 1889."))
        clock = FakeClock()
        client = _client(srv, first_token_s=3.0, total_s=30, clock=clock, chunk_s=0.6)

        async def call() -> str:
            try:
                return (await client.generate_text("agent", "system", ASK)).text
            finally:
                await client.aclose()

        assert asyncio.run(call()) == "It was completed in 1889."
    assert clock.reading() > 3.0, "the reply took longer than the first-token allowance"


def test_config_shows_the_limits_a_run_would_use_and_why() -> None:
    from tests.cli.inprocess import run_cli_in_process

    env = {"OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}
    done = run_cli_in_process("config", "--json", env=env)
    row = json.loads(done.stdout)["run"]["llm_call_limits"]
    assert row == {
        "value": {"first_token_s": 600.0, "total_s": 900.0},
        "why": "defaults for a local server",
    }
