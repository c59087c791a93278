"""DuckDuckGo (and the other keyless engines ddgs fans out to) through the `ddgs` library.

ddgs is synchronous and talks through primp (not httpx), so the call runs in a
worker thread and the `DDGS` factory is injectable: tests hand in a fake that
returns result dicts of the library's real shape `{title, href, body}`.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from typing import Any

from deepsearch.web.search.base import SearchProviderError, make_results
from deepsearch.web.types import SearchQuery, SearchResult

DDGSFactory = Callable[[], Any]
# ddgs regions are "<country>-<language>"; several of its engines split on "-" and use
# each half, so a bare language is mapped to its most common region.
_LANGUAGE_REGION = {
    "en": "us-en",
    "de": "de-de",
    "fr": "fr-fr",
    "es": "es-es",
    "it": "it-it",
    "pt": "br-pt",
    "nl": "nl-nl",
    "ru": "ru-ru",
    "ja": "jp-jp",
    "zh": "cn-zh",
}
_DEFAULT_REGION = "us-en"  # the library's own default


def ddgs_region(query: SearchQuery) -> str:
    if query.region and "-" in query.region:
        return query.region.lower()
    language = (query.language or "").split("-")[0].lower()
    return _LANGUAGE_REGION.get(language, _DEFAULT_REGION)


def _default_factory(timeout_s: float) -> DDGSFactory:
    def factory() -> Any:
        from ddgs import DDGS

        return DDGS(timeout=max(1, round(timeout_s)))

    return factory


class DuckDuckGoSearch:
    name = "duckduckgo"
    supports_site_operator = True

    def __init__(self, *, ddgs_factory: DDGSFactory | None = None, timeout_s: float = 15) -> None:
        self._factory = ddgs_factory or _default_factory(timeout_s)

    def _kwargs(self, query: SearchQuery) -> dict[str, Any]:
        # ddgs has no hour window: the day is the closest wider one.
        timelimit = {"h": "d"}.get(query.time_filter or "", query.time_filter)
        return {
            "region": ddgs_region(query),
            "safesearch": "moderate",
            "timelimit": timelimit,
            "max_results": query.limit,
        }

    def _run(self, query: SearchQuery) -> list[dict[str, Any]]:
        return self._factory().text(query.q, **self._kwargs(query))

    async def search(self, query: SearchQuery) -> list[SearchResult]:
        from ddgs.exceptions import DDGSException, RatelimitException, TimeoutException

        try:
            rows = await asyncio.to_thread(self._run, query)
        except RatelimitException:
            raise SearchProviderError(self.name, "rate_limited", "ddgs rate limit") from None
        except TimeoutException:
            raise SearchProviderError(self.name, "timeout", "ddgs timed out") from None
        except DDGSException as exc:
            if "no results" in str(exc).lower():  # ddgs raises instead of returning []
                return []
            raise SearchProviderError(self.name, "network", _short(exc)) from None
        except Exception as exc:  # primp and friends: never let a raw library error escape
            raise SearchProviderError(self.name, "network", type(exc).__name__) from None
        items = (
            (row.get("title"), row.get("href") or row.get("url"), row.get("body"), row.get("date"))
            for row in rows or []
            if isinstance(row, dict)
        )
        return make_results(self.name, items, query.limit)


_NO_DNS = re.compile(r"dns|name or service not known|getaddrinfo|failed to lookup|resolve", re.I)
_NO_CONNECT = re.compile(r"connect|unreachable|refused", re.I)


def _short(exc: Exception) -> str:
    """One readable line: ddgs nests its backends' errors (reprs, long URLs of
    whichever engine it tried: yahoo, brave, ...) into one message."""
    text = str(exc)
    if _NO_DNS.search(text):
        return "cannot resolve the search hosts (no network or DNS?)"
    if _NO_CONNECT.search(text):
        return "cannot connect to the search hosts (no network?)"
    first = text.splitlines()[0] if text else type(exc).__name__
    return re.sub(r"https?://\S+", "<url>", first)[:120]
