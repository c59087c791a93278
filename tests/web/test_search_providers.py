"""The HTTP providers against fake endpoints speaking their real JSON shapes."""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator

import httpx
import pytest

from deepsearch.web.search.base import SearchProviderError
from deepsearch.web.search.brave import BraveSearch
from deepsearch.web.search.jina import JinaSearch
from deepsearch.web.search.searxng import SearxngSearch
from deepsearch.web.search.serper import SerperSearch
from deepsearch.web.types import SearchQuery
from tests.fakes.search_servers import FakeSearchServers

KEY = "sk-test-0123456789"
_SSL = ssl.create_default_context()  # built once: loading CA certs per client is slow


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(verify=_SSL) as c:
        yield c


def _make(name: str, srv: FakeSearchServers, client: httpx.AsyncClient):  # type: ignore[no-untyped-def]
    url = srv.base_url(name)
    if name == "searxng":
        return SearxngSearch(client, url, timeout_s=5)
    cls = {"jina": JinaSearch, "brave": BraveSearch, "serper": SerperSearch}[name]
    return cls(client, url, KEY, timeout_s=5)


PROVIDERS = ["searxng", "jina", "brave", "serper"]


@pytest.mark.parametrize("name", PROVIDERS)
async def test_results_are_parsed_and_normalized(
    name: str, servers: FakeSearchServers, client: httpx.AsyncClient
) -> None:
    results = await _make(name, servers, client).search(SearchQuery(q="rust async", limit=10))
    assert [r.url for r in results] == [
        f"https://site{i}.org/{name}/rust-async?id={i}" for i in (1, 2, 3)
    ]
    first = results[0]
    assert first.title == "rust async & result 1"  # tags stripped, entities decoded
    assert first.snippet == f"About rust async: finding number 1 from {name}."
    assert first.provider == name
    assert first.date  # every shape carries a date on its first hit
    assert results[1].date is None


async def test_searxng_request_shape(servers: FakeSearchServers, client: httpx.AsyncClient) -> None:
    query = SearchQuery(q="bm25", time_filter="w", language="de")
    await _make("searxng", servers, client).search(query)
    (req,) = servers.requests_for("searxng")
    assert (req.method, req.path) == ("GET", "/searxng/search")
    assert req.param("q") == "bm25"
    assert req.param("format") == "json"
    assert req.param("time_range") == "week"
    assert req.param("language") == "de"


async def test_jina_request_shape(servers: FakeSearchServers, client: httpx.AsyncClient) -> None:
    query = SearchQuery(q="bm25", time_filter="h", region="uk-en", limit=7)
    await _make("jina", servers, client).search(query)
    (req,) = servers.requests_for("jina")
    assert (req.method, req.path) == ("GET", "/jina/")
    assert req.headers["authorization"] == f"Bearer {KEY}"
    assert req.headers["accept"] == "application/json"
    assert req.param("q") == "bm25"
    assert req.param("num") == "7"
    assert req.param("tbs") == "qdr:h"
    assert (req.param("gl"), req.param("hl")) == ("uk", "en")


async def test_brave_request_shape(servers: FakeSearchServers, client: httpx.AsyncClient) -> None:
    query = SearchQuery(q="bm25", time_filter="h", limit=50)
    await _make("brave", servers, client).search(query)
    (req,) = servers.requests_for("brave")
    assert (req.method, req.path) == ("GET", "/brave/res/v1/web/search")
    assert req.headers["x-subscription-token"] == KEY
    assert req.param("q") == "bm25"
    assert req.param("count") == "20"  # capped at the API's maximum
    assert req.param("freshness") == "pd"  # no hour window: the day


async def test_serper_request_shape(servers: FakeSearchServers, client: httpx.AsyncClient) -> None:
    query = SearchQuery(q="bm25", time_filter="m", region="de-de", limit=5)
    await _make("serper", servers, client).search(query)
    (req,) = servers.requests_for("serper")
    assert (req.method, req.path) == ("POST", "/serper/search")
    assert req.headers["x-api-key"] == KEY
    assert req.body == {"q": "bm25", "num": 5, "tbs": "qdr:m", "gl": "de", "hl": "de"}


@pytest.mark.parametrize("name", PROVIDERS)
@pytest.mark.parametrize(
    ("status", "kind"), [(401, "auth"), (403, "auth"), (429, "rate_limited"), (500, "http")]
)
async def test_http_errors_are_typed_and_keep_secrets_out(
    name: str, status: int, kind: str, servers: FakeSearchServers, client: httpx.AsyncClient
) -> None:
    servers.queue(name, status)
    with pytest.raises(SearchProviderError) as info:
        await _make(name, servers, client).search(SearchQuery(q="x"))
    assert info.value.kind == kind
    assert info.value.provider == name
    assert KEY not in str(info.value)


@pytest.mark.parametrize("name", PROVIDERS)
async def test_non_json_body_is_bad_response(
    name: str, servers: FakeSearchServers, client: httpx.AsyncClient
) -> None:
    servers.queue(name, 200, raw=b"<html>maintenance</html>")
    with pytest.raises(SearchProviderError) as info:
        await _make(name, servers, client).search(SearchQuery(q="x"))
    assert info.value.kind == "bad_response"


@pytest.mark.parametrize("name", PROVIDERS)
async def test_empty_answer_is_an_empty_list(
    name: str, servers: FakeSearchServers, client: httpx.AsyncClient
) -> None:
    servers.queue(name, 200)
    assert await _make(name, servers, client).search(SearchQuery(q="x")) == []


async def test_unreachable_endpoint_is_a_network_error(client: httpx.AsyncClient) -> None:
    with FakeSearchServers() as srv:
        url = srv.base_url("searxng")
    with pytest.raises(SearchProviderError) as info:  # the server is stopped: refused
        await SearxngSearch(client, url, timeout_s=2).search(SearchQuery(q="x"))
    assert info.value.kind == "network"


async def test_bad_urls_are_dropped_and_duplicates_merged(
    servers: FakeSearchServers, client: httpx.AsyncClient
) -> None:
    body = {
        "organic": [
            {"title": "a", "link": "https://www.a.org/x/?utm_source=1", "snippet": "one"},
            {"title": "a again", "link": "https://a.org/x", "snippet": "dup"},
            {"title": "serp", "link": "https://www.google.com/search?q=x", "snippet": ""},
            {"title": "ftp", "link": "ftp://a.org/f", "snippet": ""},
            {"title": "no link", "snippet": ""},
            "not an object",
            {"title": "b", "link": "https://b.org/", "snippet": "two"},
        ]
    }
    servers.queue("serper", 200, body)
    results = await _make("serper", servers, client).search(SearchQuery(q="x"))
    assert [(r.title, r.url) for r in results] == [
        ("a", "https://a.org/x"),
        ("b", "https://b.org/"),
    ]


async def test_limit_is_respected(servers: FakeSearchServers, client: httpx.AsyncClient) -> None:
    results = await _make("brave", servers, client).search(SearchQuery(q="x", limit=2))
    assert len(results) == 2


def test_clean_text() -> None:
    from deepsearch.web.search.base import clean_text

    assert clean_text("<b>bold</b> &amp; <em>em</em>") == "bold & em"
    assert clean_text("line<br>break<p>para</p>") == "line break para"
    assert clean_text("if x < y and y > z") == "if x < y and y > z"
    assert clean_text("a <!-- hidden --> b") == "a b"
    assert clean_text(None) == ""
