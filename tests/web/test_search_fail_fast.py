"""A search setup that cannot work is told apart from one that found nothing, and a
cause only the user can fix is marked as configuration (issue 10, item 1)."""

from __future__ import annotations

import asyncio
import socket

import httpx
import pytest

from deepsearch.web.search.base import SearchProviderError
from deepsearch.web.search.chain import AllProvidersFailed, SearchChain, SearchUnavailable
from deepsearch.web.search.searxng import SearxngSearch
from deepsearch.web.types import SearchQuery
from tests.fakes.clock import FakeClock
from tests.web.test_search_chain import Scripted, err

Q = SearchQuery(q="what is bm25")


async def test_an_all_failure_is_retried_once_then_the_search_is_unavailable() -> None:
    clock = FakeClock()
    a, b = Scripted("a", err("a", "network")), Scripted("b", err("b", "timeout"))
    chain = SearchChain([a, b], clock=clock, retry_pause_s=0.5)
    with pytest.raises(SearchUnavailable) as info:
        await chain.search(Q)
    assert len(a.queries) == len(b.queries) == 2
    assert clock.sleeps == [0.5]
    assert [f.name for f in info.value.failures] == ["a", "b"]
    assert info.value.fatal and not info.value.configuration
    assert "a: network (boom)" in str(info.value) and "b: timeout (boom)" in str(info.value)


async def test_a_retry_that_works_is_an_answer() -> None:
    a = Scripted("a", err("a", "network"), ["https://a.org/1"])
    chain = SearchChain([a], retry_pause_s=0)
    assert [r.url for r in await chain.search(Q)] == ["https://a.org/1"]


async def test_nothing_found_is_not_unavailable() -> None:
    assert await SearchChain([Scripted("a", [])], retry_pause_s=0).search(Q) == []


async def test_a_rate_limit_is_not_a_broken_setup() -> None:
    a = Scripted("a", err("a", "rate_limited"))
    with pytest.raises(AllProvidersFailed) as info:
        await SearchChain([a], retry_pause_s=0).search(Q)
    assert not isinstance(info.value, SearchUnavailable)
    assert len(a.queries) == 1


async def test_configuration_only_when_every_failure_is() -> None:
    bad_url = SearchProviderError("searxng", "network", "x", configuration=True)
    key = SearchProviderError("brave", "auth", "HTTP 401")
    both = SearchChain([Scripted("searxng", bad_url), Scripted("brave", key)], retry_pause_s=0)
    with pytest.raises(SearchUnavailable) as info:
        await both.search(Q)
    assert info.value.configuration  # the rejected key is reported as skipped, still config
    mixed = SearchChain([Scripted("searxng", bad_url), Scripted("d", err("d"))], retry_pause_s=0)
    with pytest.raises(SearchUnavailable) as again:
        await mixed.search(Q)
    assert not again.value.configuration


def _searxng(handler: httpx.MockTransport, url: str = "http://searx.test") -> SearxngSearch:
    return SearxngSearch(httpx.AsyncClient(transport=handler), url)


@pytest.mark.parametrize(
    ("raised", "configuration", "words"),
    [
        (
            httpx.UnsupportedProtocol("Request URL is missing an 'http://'"),
            True,
            "not a usable URL",
        ),
        (
            httpx.ConnectError("[Errno -2] Name or service not known"),
            True,
            "unknown host",
        ),
        (httpx.ConnectError("[Errno 111] Connection refused"), False, "ConnectError"),
        (httpx.ReadError("reset"), False, "ReadError"),
    ],
)
async def test_transport_failures_name_their_cause(
    raised: Exception, configuration: bool, words: str
) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise raised

    with pytest.raises(SearchProviderError) as info:
        await _searxng(httpx.MockTransport(handler)).search(Q)
    assert info.value.configuration is configuration
    assert words in str(info.value)


async def test_unknown_host_is_read_from_the_resolver_error() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        try:
            raise socket.gaierror(socket.EAI_NONAME, "whatever the libc says")
        except socket.gaierror as exc:
            raise httpx.ConnectError("connect failed") from exc

    with pytest.raises(SearchProviderError) as info:
        await _searxng(httpx.MockTransport(handler)).search(Q)
    assert info.value.configuration and "unknown host" in str(info.value)


async def test_a_temporary_resolver_failure_is_not_configuration() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        try:
            raise socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution")
        except socket.gaierror as exc:
            raise httpx.ConnectError("connect failed") from exc

    with pytest.raises(SearchProviderError) as info:
        await _searxng(httpx.MockTransport(handler)).search(Q)
    assert not info.value.configuration


async def test_concurrent_queries_each_retry_and_stop() -> None:
    a = Scripted("a", err("a", "network"))
    chain = SearchChain([a], retry_pause_s=0)
    outcomes = await asyncio.gather(
        *(chain.search(SearchQuery(q=f"q{i}")) for i in range(3)), return_exceptions=True
    )
    assert all(isinstance(o, SearchUnavailable) for o in outcomes)
