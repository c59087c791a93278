"""What every search provider shares: typed errors, result cleaning, HTTP JSON calls.

Providers raise `SearchProviderError` (a `deepsearch.errors.SearchError`) with a
`kind`; the chain decides from the kind whether to fail over, back off or give up on
a provider. Messages name the provider and the HTTP status, never a key or a URL
that could hold credentials.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Literal

from deepsearch.errors import SearchError
from deepsearch.web.types import SearchQuery, SearchResult, TimeFilter
from deepsearch.web.urls import normalize_url

if TYPE_CHECKING:
    import httpx

ErrorKind = Literal["auth", "rate_limited", "timeout", "http", "network", "bad_response"]


class SearchProviderError(SearchError):
    """One provider failed one query."""

    def __init__(self, provider: str, kind: ErrorKind, detail: str = "") -> None:
        self.provider = provider
        self.kind = kind
        self.detail = detail
        super().__init__(f"{provider}: {kind}" + (f" ({detail})" if detail else ""))


# Block-level tags separate words; inline ones (<b>, <em> ...) sit inside a sentence.
_BLOCK_TAG = re.compile(
    r"</?(?:br|p|div|li|ul|ol|tr|td|th|table|h[1-6]|blockquote|section|article)\b[^>]{0,2000}>",
    re.IGNORECASE,
)
_TAG = re.compile(r"<(?:/?[A-Za-z][^<>]{0,2000}|!--.*?--)>", re.DOTALL)  # not "a < b > c"
_SPACE = re.compile(r"\s+")


def clean_text(text: Any) -> str:
    """Strip HTML tags and entities, collapse whitespace (snippets and titles)."""
    if not isinstance(text, str):
        return ""
    stripped = _TAG.sub("", _BLOCK_TAG.sub(" ", text))
    return _SPACE.sub(" ", html.unescape(stripped)).strip()


def make_results(
    provider: str, items: Iterable[tuple[Any, Any, Any, Any]], limit: int
) -> list[SearchResult]:
    """(title, url, snippet, date) tuples -> normalized, deduplicated results.

    Results whose URL does not normalize (non-http, search-engine pages, junk) are
    dropped; so are repeats of a URL already seen in this answer.
    """
    results: list[SearchResult] = []
    seen: set[str] = set()
    for title, url, snippet, date in items:
        normalized = normalize_url(url) if isinstance(url, str) else None
        if normalized is None or normalized in seen:
            continue
        seen.add(normalized)
        results.append(
            SearchResult(
                title=clean_text(title) or normalized,
                url=normalized,
                snippet=clean_text(snippet),
                date=str(date) if date else None,
                provider=provider,
            )
        )
        if len(results) >= limit:
            break
    return results


def query_with_sites(query: SearchQuery) -> str:
    """`q site:a` or `q (site:a OR site:b)` for engines that understand the operator."""
    sites = [s.strip() for s in query.sites if s.strip()]
    if not sites:
        return query.q
    if len(sites) == 1:
        return f"{query.q} site:{sites[0]}"
    return f"{query.q} ({' OR '.join(f'site:{s}' for s in sites)})"


def region_country(query: SearchQuery) -> str | None:
    """Two-letter country from a ddgs-style region ("us-en" -> "us")."""
    if query.region and "-" in query.region:
        country = query.region.split("-", 1)[0].lower()
        return country if len(country) == 2 and country != "wt" else None
    if query.region and len(query.region) == 2:
        return query.region.lower()
    return None


def query_language(query: SearchQuery) -> str | None:
    if query.language:
        return query.language.split("-")[0].lower()
    if query.region and "-" in query.region:
        return query.region.split("-", 1)[1].lower() or None
    return None


# Providers without an hour granularity get the day (the closest wider window).
TIME_WORDS: dict[TimeFilter, str] = {"h": "day", "d": "day", "w": "week", "m": "month", "y": "year"}


async def request_json(
    client: httpx.AsyncClient,
    provider: str,
    method: str,
    url: str,
    *,
    params: dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
    json_body: dict[str, Any] | None = None,
    timeout_s: float,
) -> Any:
    """One HTTP call whose failure modes all become `SearchProviderError`."""
    import httpx

    try:
        response = await client.request(
            method, url, params=params, headers=headers, json=json_body, timeout=timeout_s
        )
    except httpx.TimeoutException:
        raise SearchProviderError(
            provider, "timeout", f"no answer within {timeout_s:g} s"
        ) from None
    except httpx.HTTPError as exc:
        raise SearchProviderError(provider, "network", type(exc).__name__) from None
    status = response.status_code
    if status in (401, 403):
        raise SearchProviderError(provider, "auth", f"HTTP {status}: check the API key")
    if status == 429:
        raise SearchProviderError(provider, "rate_limited", "HTTP 429")
    if status >= 400:
        raise SearchProviderError(provider, "http", f"HTTP {status}")
    try:
        return response.json()
    except ValueError:
        raise SearchProviderError(provider, "bad_response", "the body is not JSON") from None


def expect_list(provider: str, value: Any, what: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise SearchProviderError(provider, "bad_response", f"{what} is not a list")
    return [item for item in value if isinstance(item, dict)]
