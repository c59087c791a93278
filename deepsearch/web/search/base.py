"""What every search provider shares: typed errors, result cleaning, HTTP JSON calls.

`HttpSearchProvider` is the request -> JSON -> rows -> results run of the HTTP
providers (Brave, Serper, Jina, SearXNG); each subclass states only its endpoint,
payload, headers and where the result rows sit in the answer.

Providers raise `SearchProviderError` (a `deepsearch.errors.SearchError`) with a
`kind`; the chain decides from the kind whether to fail over, back off or give up on
a provider. Messages name the provider and the HTTP status, never a key or a URL
that could hold credentials.
"""

from __future__ import annotations

import html
import re
import socket
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from deepsearch.errors import SearchError
from deepsearch.web.types import SearchQuery, SearchResult, TimeFilter
from deepsearch.web.urls import normalize_url

if TYPE_CHECKING:
    import httpx

ErrorKind = Literal["auth", "rate_limited", "timeout", "http", "network", "bad_response"]


class SearchProviderError(SearchError):
    """One provider failed one query. `configuration` marks causes only the user can fix
    (a rejected key, a URL that is no URL, a host that does not exist): retrying is futile."""

    def __init__(
        self, provider: str, kind: ErrorKind, detail: str = "", *, configuration: bool = False
    ) -> None:
        self.provider = provider
        self.kind = kind
        self.detail = detail
        self.configuration = configuration or kind == "auth"
        super().__init__(f"{provider}: {kind}" + (f" ({detail})" if detail else ""))


def _unknown_host(exc: BaseException) -> bool:
    """A DNS answer that the name does not exist (not a temporary resolver failure)."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, socket.gaierror):
            return seen.errno in (socket.EAI_NONAME, getattr(socket, "EAI_NODATA", -5))
        seen = seen.__cause__ or seen.__context__
    return "Name or service not known" in str(exc)


def transport_error(provider: str, exc: Exception) -> SearchProviderError:
    """An httpx transport failure, with the causes that are configuration told apart."""
    import httpx

    name = type(exc).__name__
    if isinstance(exc, httpx.UnsupportedProtocol | httpx.InvalidURL):
        return SearchProviderError(
            provider, "network", f"{name}: not a usable URL", configuration=True
        )
    if isinstance(exc, httpx.ConnectError) and _unknown_host(exc):
        return SearchProviderError(provider, "network", f"{name}: unknown host", configuration=True)
    where = _origin(exc)
    if isinstance(exc, httpx.ConnectError) and _refused(exc):
        return SearchProviderError(provider, "network", f"{name}: connection refused by {where}")
    return SearchProviderError(provider, "network", f"{name} at {where}" if where else name)


def _origin(exc: Exception) -> str:
    """`http://127.0.0.1:8888`: where the failed request went (scheme, host and port
    only: a path or query may carry a key)."""
    try:
        url = exc.request.url  # type: ignore[attr-defined]
    except (AttributeError, RuntimeError):  # an error raised without its request
        return ""
    port = f":{url.port}" if url.port else ""
    return f"{url.scheme}://{url.host}{port}"


def _refused(exc: BaseException) -> bool:
    """Nothing listens there (ECONNREFUSED), whichever layer raised it."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, ConnectionRefusedError):
            return True
        seen = seen.__cause__ or seen.__context__
    text = str(exc).lower()
    return "connection refused" in text or "errno 111" in text


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


def locale_params(query: SearchQuery, country_key: str, language_key: str) -> dict[str, str]:
    """The query's country and language under the provider's parameter names, if known."""
    params: dict[str, str] = {}
    if country := region_country(query):
        params[country_key] = country
    if language := query_language(query):
        params[language_key] = language
    return params


def google_params(query: SearchQuery) -> dict[str, Any]:
    """Google-style `q`, `num`, `tbs=qdr:<h|d|w|m|y>`, `gl`, `hl` (Serper and Jina)."""
    params: dict[str, Any] = {"q": query.q, "num": query.limit}
    if query.time_filter:
        params["tbs"] = f"qdr:{query.time_filter}"
    params.update(locale_params(query, "gl", "hl"))
    return params


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
    except (httpx.HTTPError, httpx.InvalidURL) as exc:
        raise transport_error(provider, exc) from None
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


Row = tuple[Any, Any, Any, Any]  # (title, url, snippet, date) as the provider sent them


class HttpSearchProvider:
    """One JSON-over-HTTP search engine: `search` sends the payload, reads the rows.

    Subclasses set `name` and `rows_path` and implement `params` (or `payload`),
    `headers` and `row`; `method = "POST"` sends the payload as a JSON body instead
    of a query string.
    """

    name: str  # set by each subclass; a plain attribute, as SearchProvider declares it
    supports_site_operator = True
    method: ClassVar[str] = "GET"
    rows_path: ClassVar[tuple[str, ...]]
    """Keys leading to the list of result objects in the answer, outermost first."""

    def __init__(
        self, client: httpx.AsyncClient, base_url: str, api_key: str, *, timeout_s: float = 15
    ) -> None:
        self._client = client
        self._url = base_url
        self._key = api_key
        self._timeout = timeout_s

    def payload(self, query: SearchQuery) -> dict[str, Any]:
        """What is sent: the query string for GET providers, the JSON body for POST."""
        return self.params(query)

    def params(self, query: SearchQuery) -> dict[str, Any]:
        raise NotImplementedError

    def headers(self) -> dict[str, str]:
        raise NotImplementedError

    def row(self, item: dict[str, Any]) -> Row:
        raise NotImplementedError

    def rows(self, data: Any) -> list[dict[str, Any]]:
        """The result objects at `rows_path`; a missing level means no results."""
        if not isinstance(data, dict):
            raise SearchProviderError(self.name, "bad_response", "not a JSON object")
        node: dict[str, Any] = data
        for key in self.rows_path[:-1]:
            inner = node.get(key)
            node = inner if isinstance(inner, dict) else {}
        return expect_list(self.name, node.get(self.rows_path[-1]), ".".join(self.rows_path))

    async def search(self, query: SearchQuery) -> list[SearchResult]:
        payload = self.payload(query)
        as_body = self.method == "POST"
        data = await request_json(
            self._client,
            self.name,
            self.method,
            self._url,
            params=None if as_body else payload,
            json_body=payload if as_body else None,
            headers=self.headers(),
            timeout_s=self._timeout,
        )
        return make_results(self.name, (self.row(r) for r in self.rows(data)), query.limit)
