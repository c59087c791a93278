"""The search chain's edges (web/search/chain.py): one rejected key does not stop a
search another provider only failed in passing, a disabled provider's failure keeps its
kind, the retry reports the latest failures, and the per-provider status counts."""

from __future__ import annotations

import pytest

from deepsearch.web.search.base import SearchProviderError
from deepsearch.web.search.chain import (
    AllProvidersFailed,
    MinIntervalLimiter,
    SearchChain,
    SearchUnavailable,
)
from deepsearch.web.types import SearchQuery
from tests.fakes.clock import FakeClock
from tests.web.test_search_chain import Scripted, err

Q = SearchQuery(q="what is bm25")


def _key_refused(name: str = "brave") -> SearchProviderError:
    return SearchProviderError(name, "auth", "HTTP 401")


async def test_one_refused_key_does_not_stop_a_search_another_provider_failed_in_passing() -> None:
    clock = FakeClock()
    brave = Scripted("brave", _key_refused())
    ddg = Scripted("duckduckgo", err("duckduckgo", "network"), ["https://a.org/1"])
    chain = SearchChain([brave, ddg], clock=clock, retry_pause_s=0.5)
    assert [r.url for r in await chain.search(Q)] == ["https://a.org/1"]
    assert clock.sleeps == [0.5]
    assert len(brave.queries) == 1  # disabled at once: not asked again
    states = {s.name: (s.state, s.failures, s.calls) for s in chain.status()}
    assert states == {"brave": ("disabled", 1, 1), "duckduckgo": ("ready", 1, 2)}


async def test_every_failure_a_configuration_stops_at_once_naming_each() -> None:
    clock = FakeClock()
    chain = SearchChain(
        [Scripted("brave", _key_refused()), Scripted("serper", _key_refused("serper"))],
        clock=clock,
    )
    with pytest.raises(SearchUnavailable) as caught:
        await chain.search(Q)
    assert clock.sleeps == []  # a retry cannot fix a setup
    assert caught.value.configuration and caught.value.fatal
    assert str(caught.value) == (
        "search is not working, so the run stopped"
        " (brave: auth (HTTP 401); serper: auth (HTTP 401))"
    )
    # Asked again, the disabled providers are skipped and still the user's to fix.
    with pytest.raises(SearchUnavailable) as again:
        await chain.search(Q)
    assert again.value.configuration
    assert [f.detail.startswith("skipped (auth rejected") for f in again.value.failures] == [
        True,
        True,
    ]
    assert {f.kind for f in again.value.failures} == {"auth"}


async def test_a_rate_limit_anywhere_is_raised_without_the_retry() -> None:
    clock = FakeClock()
    chain = SearchChain(
        [Scripted("a", err("a", "network")), Scripted("b", err("b", "rate_limited"))],
        clock=clock,
    )
    with pytest.raises(AllProvidersFailed) as caught:
        await chain.search(Q)
    assert not isinstance(caught.value, SearchUnavailable)
    assert clock.sleeps == []


async def test_the_retry_reports_its_own_failures() -> None:
    a = Scripted("a", err("a", "network"), err("a", "timeout"))
    chain = SearchChain([a], clock=FakeClock(), retry_pause_s=0)
    with pytest.raises(SearchUnavailable) as caught:
        await chain.search(Q)
    assert [f.kind for f in caught.value.failures] == ["timeout"]
    assert not caught.value.configuration


def test_no_provider_is_said_so() -> None:
    assert str(AllProvidersFailed([])) == (
        "every search provider failed:\n  no search provider is configured"
    )
    assert SearchUnavailable([]).configuration is False


async def test_a_limiter_paces_only_once_armed() -> None:
    clock = FakeClock()
    limiter = MinIntervalLimiter(2.0, clock=clock, armed=False)
    await limiter.acquire()
    await limiter.acquire()
    assert clock.sleeps == []
    limiter.arm()
    await limiter.acquire()
    await limiter.acquire()
    assert clock.sleeps == [0.5]
