"""The search chain's edges (web/search/chain.py): one rejected key does not stop a
search another provider only failed in passing, a disabled provider's failure keeps its
kind, the retry reports the latest failures, and the per-provider status counts."""

from __future__ import annotations

from pathlib import Path

import pytest

from deepsearch.web.cache import WebCache
from deepsearch.web.search.base import SearchProviderError
from deepsearch.web.search.chain import (
    AllProvidersFailed,
    MinIntervalLimiter,
    SearchChain,
    SearchUnavailable,
)
from deepsearch.web.types import SearchQuery, SearchResult
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


class _Plain:
    """A provider with an identity attribute of its own choosing and no site support."""

    def __init__(self, name: str, urls: list[str], **identity: str) -> None:
        self.name = name
        self.urls = urls
        self.queries: list[SearchQuery] = []
        for attr, value in identity.items():
            setattr(self, attr, value)

    async def search(self, query: SearchQuery) -> list[SearchResult]:
        self.queries.append(query)
        return [SearchResult(title=u, url=u, provider=self.name) for u in self.urls]


async def test_a_provider_without_site_support_gets_the_query_untouched() -> None:
    plain = _Plain("p", ["https://docs.python.org/x"])
    await SearchChain([plain]).search(SearchQuery(q="asyncio", sites=["docs.python.org"]))
    assert plain.queries[0].q == "asyncio"


@pytest.mark.parametrize("attr", ["base_url", "url", "_url"])
async def test_two_instances_of_one_provider_keep_their_own_cache(
    tmp_path: Path, attr: str
) -> None:
    cache = WebCache(tmp_path / "c", clock=FakeClock())
    try:
        one = _Plain("searxng", ["https://one.org/1"], **{attr: "http://one"})
        two = _Plain("searxng", ["https://two.org/1"], **{attr: "http://two"})
        await SearchChain([one], cache=cache).search(Q)
        found = await SearchChain([two], cache=cache).search(Q)
        assert [r.url for r in found] == ["https://two.org/1"] and len(two.queries) == 1
        again = _Plain("searxng", ["https://other.org/1"], **{attr: "http://one"})
        hit = await SearchChain([again], cache=cache).search(Q)
        assert [r.url for r in hit] == ["https://one.org/1"] and again.queries == []
    finally:
        cache.close()


async def test_counts_add_up(tmp_path: Path) -> None:
    cache = WebCache(tmp_path / "c", clock=FakeClock())
    try:
        a = Scripted("a", ["https://a.org/1"])
        chain = SearchChain([a], cache=cache)
        for _ in range(3):
            await chain.search(Q)
        assert chain.status()[0].cache_hits == 2
    finally:
        cache.close()
    failing = Scripted("f", err("f", "network"), err("f", "network"), ["https://f.org/1"])
    chain = SearchChain([failing], clock=FakeClock(), retry_pause_s=0)
    with pytest.raises(SearchUnavailable):
        await chain.search(Q)  # fails, and again on the retry
    status = chain.status()[0]
    assert (status.failures, status.state) == (2, "ready")
    assert status.reason == "f: network (boom)"
    await chain.search(Q)  # answers: the streak ends, the count stays
    assert chain.status()[0].failures == 2


async def test_a_provider_failing_three_times_by_default_is_disabled_not_configuration() -> None:
    clock = FakeClock()
    a = Scripted("a", err("a", "network"))
    chain = SearchChain([a], clock=clock)
    with pytest.raises(SearchUnavailable):
        await chain.search(Q)  # two failures
    assert clock.sleeps == [1.0]  # the default pause before the retry
    with pytest.raises(SearchUnavailable) as caught:
        await chain.search(Q)  # the third disables it; the retry skips it
    assert chain.status()[0].state == "disabled" and len(a.queries) == 3
    assert not caught.value.configuration
    assert caught.value.failures[0].kind == "network"


async def test_a_plain_search_error_and_a_provider_bug_are_named() -> None:
    from deepsearch.errors import SearchError

    class _Bug:
        name = "buggy"

        async def search(self, query: SearchQuery) -> list[SearchResult]:
            raise KeyError("oops")

    plain = Scripted("plain", SearchError("plain: went wrong"))
    chain = SearchChain(
        [plain, _Bug()], clock=FakeClock(), retry_pause_s=0, rate_limits={"plain": 100.0}
    )
    with pytest.raises(SearchUnavailable) as caught:
        await chain.search(Q)
    failures = [(f.name, f.detail, f.kind, f.configuration) for f in caught.value.failures]
    assert failures == [
        ("plain", "went wrong", "", False),
        ("buggy", "network (KeyError)", "network", False),
    ]


async def test_no_provider_at_all_is_unavailable() -> None:
    with pytest.raises(SearchUnavailable) as caught:
        await SearchChain([], clock=FakeClock()).search(Q)
    assert caught.value.failures == []


async def test_a_limiter_at_its_next_slot_does_not_wait_and_is_armed_by_default() -> None:
    clock = FakeClock()
    limiter = MinIntervalLimiter(2.0, clock=clock)
    await limiter.acquire()
    await limiter.acquire()
    assert clock.sleeps == [0.5]
    clock.advance(0.5)  # exactly the next slot
    await limiter.acquire()
    assert clock.sleeps == [0.5]


async def test_probe_asks_a_common_query_by_default() -> None:
    a = Scripted("a", ["https://a.org/1"])
    [probe] = await SearchChain([a]).probe()
    assert a.queries[0].q == "python programming language" and a.queries[0].limit == 3
    assert probe.ok and probe.results == 1
