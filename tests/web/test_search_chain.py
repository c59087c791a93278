"""Failover, skipping, rate limits, site restriction, caching and the settings factory."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from deepsearch.errors import ConfigError, SearchError
from deepsearch.web.cache import WebCache
from deepsearch.web.search import build_search
from deepsearch.web.search.base import SearchProviderError
from deepsearch.web.search.chain import MinIntervalLimiter, SearchChain, SearchUnavailable
from deepsearch.web.tls import CABundleError
from deepsearch.web.types import SearchProvider, SearchQuery, SearchResult
from tests.fakes.clock import FakeClock
from tests.fakes.scripted_llm import offline_settings
from tests.fakes.search_servers import FakeSearchServers
from tests.web.test_search_ddgs import FakeDDGS


class Scripted:
    """A provider whose answers are scripted per call: a list, or an exception."""

    def __init__(self, name: str, *answers: list[str] | Exception, sites: bool = True) -> None:
        self.name = name
        self.supports_site_operator = sites
        self.answers = list(answers)
        self.queries: list[SearchQuery] = []

    async def search(self, query: SearchQuery) -> list[SearchResult]:
        self.queries.append(query)
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        if isinstance(answer, Exception):
            raise answer
        return [SearchResult(title=u, url=u, provider=self.name) for u in answer]


def err(name: str, kind: str = "http") -> SearchProviderError:
    return SearchProviderError(name, kind, "boom")  # type: ignore[arg-type]


Q = SearchQuery(q="what is bm25")


async def test_error_moves_on_to_the_next_provider() -> None:
    a, b = Scripted("a", err("a")), Scripted("b", ["https://b.org/1"])
    results = await SearchChain([a, b]).search(Q)
    assert [r.url for r in results] == ["https://b.org/1"]
    assert len(a.queries) == len(b.queries) == 1


async def test_empty_answer_moves_on_but_is_not_a_failure() -> None:
    a, b = Scripted("a", []), Scripted("b", ["https://b.org/1"])
    chain = SearchChain([a, b])
    for _ in range(5):
        assert [r.provider for r in await chain.search(Q)] == ["b"]
    status = {s.name: s for s in chain.status()}
    assert status["a"].state == "ready" and status["a"].failures == 0
    assert status["a"].calls == 5


async def test_all_empty_is_an_empty_answer_not_an_error() -> None:
    assert await SearchChain([Scripted("a", []), Scripted("b", [])]).search(Q) == []


async def test_a_provider_failing_three_times_in_a_row_is_skipped_for_the_run() -> None:
    a, b = Scripted("a", err("a", "timeout")), Scripted("b", ["https://b.org/1"])
    chain = SearchChain([a, b], max_failures=3)
    for _ in range(5):
        await chain.search(Q)
    assert len(a.queries) == 3
    assert len(b.queries) == 5
    status = {s.name: s for s in chain.status()}
    assert status["a"].state == "disabled"
    assert "3 failures in a row" in status["a"].reason


async def test_a_success_resets_the_failure_streak() -> None:
    a = Scripted(
        "a", err("a"), err("a"), ["https://a.org/1"], err("a"), err("a"), ["https://a.org/2"]
    )
    chain = SearchChain([a, Scripted("b", ["https://b.org/1"])], max_failures=3)
    for _ in range(6):
        await chain.search(Q)
    assert chain.status()[0].state == "ready"


async def test_auth_error_disables_at_once() -> None:
    a, b = Scripted("a", err("a", "auth")), Scripted("b", ["https://b.org/1"])
    chain = SearchChain([a, b])
    await chain.search(Q)
    await chain.search(Q)
    assert len(a.queries) == 1
    assert chain.status()[0].state == "disabled"


async def test_rate_limited_moves_on() -> None:
    a, b = Scripted("a", err("a", "rate_limited")), Scripted("b", ["https://b.org/1"])
    assert [r.provider for r in await SearchChain([a, b]).search(Q)] == ["b"]


async def test_a_provider_bug_is_contained() -> None:
    a, b = Scripted("a", KeyError("oops")), Scripted("b", ["https://b.org/1"])
    assert [r.provider for r in await SearchChain([a, b]).search(Q)] == ["b"]


async def test_an_unreadable_ca_bundle_is_named_as_configuration() -> None:
    """A mistyped SSL_CERT_FILE fails the provider's TLS connection: the one line names
    the variable and its file, and counts as the user's to fix (not a provider bug)."""
    bundle = CABundleError("SSL_CERT_FILE (/x.pem) cannot be loaded for TLS: No such file")
    clock, engine = FakeClock(), Scripted("a", bundle)
    with pytest.raises(SearchUnavailable) as info:  # no retry: the run stops, exit 2
        await SearchChain([engine], clock=clock).search(Q)
    assert (clock.sleeps, len(engine.queries)) == ([], 1)  # no pause, no second try
    assert "a: network (SSL_CERT_FILE (/x.pem) cannot be loaded for TLS" in str(info.value)
    assert info.value.configuration
    assert [f.configuration for f in info.value.failures] == [True]


async def test_every_provider_failing_raises_one_line_each() -> None:
    chain = SearchChain([Scripted("a", err("a", "rate_limited")), Scripted("b", err("b", "auth"))])
    with pytest.raises(SearchError) as info:
        await chain.search(Q)
    lines = str(info.value).splitlines()
    assert lines[0] == "every search provider failed:"
    assert [line.strip().split(":")[0] for line in lines[1:]] == ["a", "b"]
    with pytest.raises(SearchError) as again:  # b is now disabled: reported as skipped
        await chain.search(Q)
    assert "b: skipped (auth rejected" in str(again.value)


async def test_site_operator_goes_into_the_query_and_results_are_filtered() -> None:
    urls = ["https://docs.python.org/3/", "https://other.org/x", "https://python.org/about"]
    engine = Scripted("engine", urls, sites=True)
    query = SearchQuery(q="asyncio", sites=["python.org", "peps.python.org"])
    results = await SearchChain([engine]).search(query)
    assert engine.queries[0].q == "asyncio (site:python.org OR site:peps.python.org)"
    assert [r.url for r in results] == ["https://docs.python.org/3/", "https://python.org/about"]


async def test_without_operator_support_the_query_is_untouched_but_filtered() -> None:
    plain = Scripted("plain", ["https://a.org/x", "https://b.org/y"], sites=False)
    results = await SearchChain([plain]).search(SearchQuery(q="x", sites=["b.org"]))
    assert plain.queries[0].q == "x"
    assert [r.url for r in results] == ["https://b.org/y"]


async def test_site_filter_leaving_nothing_fails_over() -> None:
    a = Scripted("a", ["https://a.org/x"], sites=False)
    b = Scripted("b", ["https://b.org/y"])
    results = await SearchChain([a, b]).search(SearchQuery(q="x", sites=["b.org"]))
    assert [r.provider for r in results] == ["b"]


# ------------------------------------------------------------------ rate limits


async def test_per_provider_min_interval() -> None:
    t = FakeClock()
    a = Scripted("a", ["https://a.org/1"])
    chain = SearchChain([a], rate_limits={"a": 2.0}, clock=t, cache=None)
    for _ in range(3):
        await chain.search(Q)
    assert t.sleeps == [0.5, 0.5]  # the first call is free; then one every 0.5 s
    t.advance(10)  # a long pause earns no burst beyond one call
    await chain.search(Q)
    await chain.search(Q)
    assert t.sleeps == [0.5, 0.5, 0.5]


async def test_limits_are_per_provider() -> None:
    t = FakeClock()
    a = Scripted("a", err("a"))
    b = Scripted("b", ["https://b.org/1"])
    chain = SearchChain([a, b], rate_limits={"a": 1.0}, clock=t, max_failures=99)
    await chain.search(Q)
    await chain.search(Q)
    assert t.sleeps == [1.0]  # only a is limited; b (no limit) never waits


class InFlight:
    """A provider that records how many of its searches were in flight at once."""

    def __init__(self, name: str, *, throttle_first: int = 0) -> None:
        self.name = name
        self.now = 0
        self.peak = 0
        self.throttle_first = throttle_first  # this many calls answer 429

    async def search(self, query: SearchQuery) -> list[SearchResult]:
        import asyncio

        self.now += 1
        self.peak = max(self.peak, self.now)
        try:
            await asyncio.sleep(0.01)  # a real await: others may start meanwhile
            if self.throttle_first > 0:
                self.throttle_first -= 1
                raise err(self.name, "rate_limited")
            return [
                SearchResult(
                    title="t", url=f"https://{self.name}.org/{query.q}", provider=self.name
                )
            ]
        finally:
            self.now -= 1


async def test_one_steps_queries_overlap_until_a_provider_asks_to_slow_down() -> None:
    import asyncio

    t = FakeClock()
    a = InFlight("a")
    chain = SearchChain([a], rate_limits={"a": 2.0}, paced=(), clock=t)
    queries = [SearchQuery(q=f"q{i}") for i in range(4)]
    await asyncio.gather(*(chain.search(q) for q in queries))
    assert a.peak == 4 and t.sleeps == []  # all four at once, no pause
    a.throttle_first = 1  # the provider answers 429 once: from then on it is paced
    with pytest.raises(SearchError):
        await chain.search(SearchQuery(q="x"))
    await asyncio.gather(*(chain.search(q) for q in queries))
    assert t.sleeps == [0.5, 0.5, 0.5]  # one every 0.5 s now


async def test_a_provider_given_its_own_limit_is_paced_from_the_start() -> None:
    t = FakeClock()
    a = Scripted("a", ["https://a.org/1"])
    chain = SearchChain([a], rate_limits={"a": 2.0}, paced={"a"}, clock=t)
    for _ in range(3):
        await chain.search(Q)
    assert t.sleeps == [0.5, 0.5]


def test_only_per_provider_limits_pace_from_the_start_when_built_from_config() -> None:
    from deepsearch.web.search import build_search
    from tests.fakes.scripted_llm import offline_settings

    settings = offline_settings(
        **{
            "search.providers": ["searxng", "brave"],
            "search.searxng_url": "http://127.0.0.1:9",
            "keys.brave_api_key": "k",
            "search.rate_limits": {"brave": 0.5},
        }
    )
    chain = build_search(settings)
    armed = {s.provider.name: s.limiter.armed for s in chain._slots if s.limiter}
    assert armed == {"searxng": False, "brave": True}


def test_limiter_interval() -> None:
    assert MinIntervalLimiter(4.0).interval == 0.25


# ------------------------------------------------------------------ cache


@pytest.fixture
def cache_and_time(tmp_path: Path) -> Iterator[tuple[WebCache, FakeClock]]:
    clock = FakeClock()
    cache = WebCache(tmp_path / "cache", clock=clock)
    yield cache, clock
    cache.close()


async def test_cache_hit_miss_and_expiry(cache_and_time: tuple[WebCache, FakeClock]) -> None:
    cache, clock = cache_and_time
    a = Scripted("a", ["https://a.org/1"])
    chain = SearchChain([a], cache=cache, ttl_s=3600)
    first = await chain.search(Q)
    second = await chain.search(Q)  # hit
    assert first == second and len(a.queries) == 1
    await chain.search(Q.model_copy(update={"time_filter": "d"}))  # other parameters: miss
    assert len(a.queries) == 2
    clock.advance(3601)  # expired
    await chain.search(Q)
    assert len(a.queries) == 3
    assert chain.status()[0].cache_hits == 1


async def test_cache_survives_a_new_chain(cache_and_time: tuple[WebCache, FakeClock]) -> None:
    cache, _ = cache_and_time
    await SearchChain([Scripted("a", ["https://a.org/1"])], cache=cache).search(Q)
    again = Scripted("a", err("a"))
    results = await SearchChain([again], cache=cache).search(Q)
    assert [r.url for r in results] == ["https://a.org/1"] and again.queries == []


async def test_cache_is_keyed_by_provider(cache_and_time: tuple[WebCache, FakeClock]) -> None:
    cache, _ = cache_and_time
    await SearchChain([Scripted("a", ["https://a.org/1"])], cache=cache).search(Q)
    b = Scripted("b", ["https://b.org/1"])
    results = await SearchChain([b], cache=cache).search(Q)
    assert [r.provider for r in results] == ["b"] and len(b.queries) == 1


async def test_empty_answers_and_disabled_cache_are_not_stored(tmp_path: Path) -> None:
    cache = WebCache(tmp_path / "c")
    a = Scripted("a", [], ["https://a.org/1"])
    chain = SearchChain([a], cache=cache)
    assert await chain.search(Q) == []
    assert len(await chain.search(Q)) == 1  # the empty answer was not cached
    cache.close()
    off = WebCache(enabled=False)
    b = Scripted("b", ["https://b.org/1"])
    chain = SearchChain([b], cache=off)
    await chain.search(Q)
    await chain.search(Q)
    assert len(b.queries) == 2


# ------------------------------------------------------------------ factory


def _settings(servers: FakeSearchServers, providers: list[str], **extra: object):  # type: ignore[no-untyped-def]
    return offline_settings(
        **{
            "search.providers": providers,
            "search.searxng_url": servers.base_url("searxng"),
            "search.jina_url": servers.base_url("jina"),
            "search.brave_url": servers.base_url("brave"),
            "search.serper_url": servers.base_url("serper"),
            "search.rate_limit_per_s": 1000.0,
            "keys.jina_api_key": "jina-secret-1",
            "keys.brave_api_key": "brave-secret-2",
            "keys.serper_api_key": "serper-secret-3",
            **extra,
        }
    )


async def test_factory_chain_fails_over_across_real_wire_formats(
    servers: FakeSearchServers,
) -> None:
    servers.queue("serper", 429)
    servers.queue("brave", 500)
    servers.queue("jina", 200)  # empty
    settings = _settings(servers, ["serper", "brave", "jina", "searxng"])
    chain = build_search(settings)
    results = await chain.search(SearchQuery(q="bm25 ranking"))
    assert {r.provider for r in results} == {"searxng"}
    assert [r.provider for r in servers.requests] == ["serper", "brave", "jina", "searxng"]
    results = await chain.search(SearchQuery(q="bm25 ranking"))  # serper works again
    assert {r.provider for r in results} == {"serper"}
    await chain.aclose()


async def test_persistently_failing_endpoint_is_skipped(servers: FakeSearchServers) -> None:
    servers.always("brave", 503)
    chain = build_search(_settings(servers, ["brave", "serper"]))
    for i in range(5):
        await chain.search(SearchQuery(q=f"query {i}"))
    assert len(servers.requests_for("brave")) == 3
    assert len(servers.requests_for("serper")) == 5
    await chain.aclose()


async def test_every_endpoint_failing_names_each_without_secrets(
    servers: FakeSearchServers, monkeypatch: pytest.MonkeyPatch
) -> None:
    from deepsearch.web.search import chain as chain_module

    clock = FakeClock()  # the chain's pause before its second try, recorded, not waited
    monkeypatch.setattr(chain_module, "SystemClock", lambda: clock)
    for name in ("jina", "brave", "serper"):
        servers.always(name, 401)
    chain = build_search(_settings(servers, ["jina", "brave", "serper"]))
    with pytest.raises(SearchError) as info:
        await chain.search(SearchQuery(q="x"))
    # every key refused: only the user can fix that, so no pause and no second try
    assert clock.sleeps == [], "a setup failure was retried"
    assert [len(servers.requests_for(n)) for n in ("jina", "brave", "serper")] == [1, 1, 1]
    message = str(info.value)
    assert "jina: auth" in message and "brave: auth" in message and "serper: auth" in message
    assert "secret" not in message
    await chain.aclose()


async def test_factory_with_cache_serves_repeats_without_calls(
    servers: FakeSearchServers, tmp_path: Path
) -> None:
    cache = WebCache(tmp_path / "c")
    chain = build_search(_settings(servers, ["brave"]), cache=cache)
    await chain.search(SearchQuery(q="x"))
    await chain.search(SearchQuery(q="x"))
    assert len(servers.requests_for("brave")) == 1
    await chain.aclose()
    cache.close()


def test_factory_records_why_providers_are_left_out() -> None:
    settings = offline_settings(**{"search.providers": ["brave", "searxng", "local", "duckduckgo"]})
    chain = build_search(settings, ddgs_factory=FakeDDGS)
    status = {s.name: s for s in chain.status()}
    assert [p.name for p in chain.providers] == ["duckduckgo"]
    assert status["brave"].state == "unconfigured"
    assert "BRAVE_API_KEY" in status["brave"].reason
    assert "SEARXNG_URL" in status["searxng"].reason
    assert "--corpus" in status["local"].reason
    assert status["duckduckgo"].state == "ready"


def test_factory_without_any_usable_provider_is_a_config_error() -> None:
    settings = offline_settings(**{"search.providers": ["serper", "jina"]})
    with pytest.raises(ConfigError) as info:
        build_search(settings)
    assert "SERPER_API_KEY" in str(info.value) and "JINA_API_KEY" in str(info.value)


async def test_default_settings_give_the_keyless_duckduckgo_chain() -> None:
    chain = build_search(offline_settings(), ddgs_factory=FakeDDGS)
    results = await chain.search(SearchQuery(q="python"))
    assert [p.name for p in chain.providers] == ["duckduckgo"]
    assert results and results[0].provider == "duckduckgo"


def test_chain_is_a_search_provider() -> None:
    assert isinstance(SearchChain([]), SearchProvider)


async def test_probe_asks_every_provider_and_reports() -> None:
    a = Scripted("a", err("a", "auth"))
    b = Scripted("b", [])
    c = Scripted("c", ["https://c.org/1"])
    chain = SearchChain([a, b, c])
    probes = await chain.probe("hello")
    assert [(p.name, p.ok, p.results) for p in probes] == [
        ("a", False, 0),
        ("b", False, 0),
        ("c", True, 1),
    ]
    assert "auth" in probes[0].detail and "no results" in probes[1].detail
    assert chain.status()[0].state == "ready"  # a probe does not disable anything
    assert [q.q for q in c.queries] == ["hello"]


def test_per_provider_rate_limits_come_from_config() -> None:
    from deepsearch.web.search import build_search
    from tests.fakes.scripted_llm import offline_settings

    settings = offline_settings(
        **{
            "search.providers": ["searxng", "brave"],
            "search.searxng_url": "http://127.0.0.1:9",
            "keys.brave_api_key": "k",
            "search.rate_limit_per_s": 3.0,
            "search.rate_limits": {"brave": 0.5},
        }
    )
    chain = build_search(settings)
    assert chain.rate_limits == {"searxng": 3.0, "brave": 0.5}


async def test_cache_is_keyed_by_instance_and_never_used_for_the_local_corpus(
    cache_and_time: tuple[WebCache, FakeClock],
) -> None:
    cache, _ = cache_and_time
    one = Scripted("searxng", ["https://a.org/1"])
    one.base_url = "http://one.example"  # type: ignore[attr-defined]
    await SearchChain([one], cache=cache).search(Q)
    two = Scripted("searxng", ["https://b.org/2"])
    two.base_url = "http://two.example"  # type: ignore[attr-defined]
    results = await SearchChain([two], cache=cache).search(Q)
    assert [r.url for r in results] == ["https://b.org/2"]  # not the other server's answer
    local = Scripted("local", ["file:///a.md"])
    await SearchChain([local], cache=cache).search(Q)
    await SearchChain([local], cache=cache).search(Q)
    assert len(local.queries) == 2  # the corpus answers itself, every time
