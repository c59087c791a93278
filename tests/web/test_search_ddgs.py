"""The ddgs adapter, on result dicts of the library's real shape, with no network."""

from __future__ import annotations

from typing import Any

import pytest
from ddgs.exceptions import DDGSException, RatelimitException, TimeoutException

from deepsearch.web.search.base import SearchProviderError
from deepsearch.web.search.duckduckgo import DuckDuckGoSearch
from deepsearch.web.types import SearchQuery

# What ddgs 9.x `DDGS().text()` returns: a list of {title, href, body}.
REAL_ROWS: list[dict[str, Any]] = [
    {
        "title": "Python (programming language) - Wikipedia",
        "href": "https://en.wikipedia.org/wiki/Python_(programming_language)",
        "body": "Python is a high-level, general-purpose programming language.",
    },
    {
        "title": "Welcome to <b>Python</b>.org",
        "href": "https://www.python.org/?utm_source=ddg",
        "body": "The official home of the Python Programming Language &amp; docs",
    },
    {"title": "Bing result page", "href": "https://www.bing.com/search?q=python", "body": ""},
]


class FakeDDGS:
    """Stands in for `ddgs.DDGS`; records the keyword arguments of every call."""

    calls: list[tuple[str, dict[str, Any]]]

    def __init__(self, rows: list[dict[str, Any]] | None = None, exc: Exception | None = None):
        self.rows = REAL_ROWS if rows is None else rows
        self.exc = exc
        self.calls = []

    def text(self, query: str, **kwargs: Any) -> list[dict[str, Any]]:
        self.calls.append((query, kwargs))
        if self.exc is not None:
            raise self.exc
        return self.rows


def _provider(fake: FakeDDGS) -> DuckDuckGoSearch:
    return DuckDuckGoSearch(ddgs_factory=lambda: fake)


async def test_rows_become_normalized_results() -> None:
    results = await _provider(FakeDDGS()).search(SearchQuery(q="python"))
    assert [(r.title, r.url, r.snippet) for r in results] == [
        (
            "Python (programming language) - Wikipedia",
            "https://en.wikipedia.org/wiki/Python_(programming_language)",
            "Python is a high-level, general-purpose programming language.",
        ),
        (
            "Welcome to Python.org",
            "https://python.org/",
            "The official home of the Python Programming Language & docs",
        ),
    ]
    assert {r.provider for r in results} == {"duckduckgo"}


async def test_query_parameters_are_mapped() -> None:
    fake = FakeDDGS()
    await _provider(fake).search(SearchQuery(q="python", time_filter="h", region="de-de", limit=4))
    await _provider(fake).search(SearchQuery(q="python", time_filter="m"))
    await _provider(fake).search(SearchQuery(q="python", language="fr"))
    (q1, kw1), (_, kw2), (_, kw3) = fake.calls
    assert q1 == "python"
    assert kw1 == {"region": "de-de", "safesearch": "moderate", "timelimit": "d", "max_results": 4}
    assert kw2["timelimit"] == "m"
    assert kw2["region"] == "us-en"  # no hint: the library's default
    assert kw3["region"] == "fr-fr" and kw3["timelimit"] is None


@pytest.mark.parametrize(
    ("exc", "kind"),
    [
        (RatelimitException("202 Ratelimit"), "rate_limited"),
        (TimeoutException("timed out"), "timeout"),
        (DDGSException("DNSError: failed to lookup"), "network"),
        (OSError("primp connect failed"), "network"),
    ],
)
async def test_library_errors_become_typed_errors(exc: Exception, kind: str) -> None:
    with pytest.raises(SearchProviderError) as info:
        await _provider(FakeDDGS(exc=exc)).search(SearchQuery(q="python"))
    assert info.value.kind == kind
    assert info.value.provider == "duckduckgo"


async def test_no_results_exception_is_an_empty_answer() -> None:
    # ddgs raises DDGSException("No results found.") rather than returning [].
    fake = FakeDDGS(exc=DDGSException("No results found."))
    assert await _provider(fake).search(SearchQuery(q="zzqx")) == []


async def test_odd_rows_are_skipped() -> None:
    rows: list[Any] = [None, {"title": "no href"}, {"href": "https://a.org", "title": None}]
    results = await _provider(FakeDDGS(rows=rows)).search(SearchQuery(q="x"))
    assert [(r.title, r.url) for r in results] == [("https://a.org/", "https://a.org/")]


async def test_a_nested_library_error_reads_as_one_plain_line() -> None:
    """ddgs folds its backends' errors (reprs, long URLs of yahoo/brave) into one."""
    nested = DDGSException(
        "DNSError: DNSError('error sending request for url "
        "(https://search.yahoo.com/search;_ylt=Awr;_ylu=Qj?p=python&ei=UTF-8)')"
    )
    with pytest.raises(SearchProviderError) as info:
        await _provider(FakeDDGS(exc=nested)).search(SearchQuery(q="python"))
    text = str(info.value)
    assert "yahoo" not in text and "('" not in text
    assert "cannot resolve the search hosts" in text
