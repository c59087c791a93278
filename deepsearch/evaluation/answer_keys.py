"""Keeping published answer keys out of an eval's research.

`eval.answer_key_hosts` (config.json) lists sites that publish benchmark answers: a host
(its subdomains too) or a host/path (one repository on a code host). During an eval
their search results are dropped (the snippets too: a snippet can hold the answer) and
reads of them fail as "blocked". The host-only entries also join `agent.bad_hostnames`,
so the ranking never lists them either.
"""

from __future__ import annotations

from collections.abc import Sequence
from urllib.parse import urlsplit

from deepsearch.web.types import (
    Page,
    Reader,
    ReadFailure,
    SearchProvider,
    SearchQuery,
    SearchResult,
)
from deepsearch.web.urls import host_matches


def blocked(url: str, sites: Sequence[str]) -> bool:
    """True when `url` is on one of `sites` (host, or host/path prefix)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return False
    host = parts.hostname or ""
    path = parts.path.rstrip("/").lower()
    for site in sites:
        site_host, _, site_path = site.partition("/")
        if not host or not host_matches(host, site_host):
            continue
        if not site_path or path == f"/{site_path}" or path.startswith(f"/{site_path}/"):
            return True
    return False


def host_only(sites: Sequence[str]) -> list[str]:
    return [site for site in sites if "/" not in site]


class AnswerKeySearch:
    """Drops results on an answer-key site."""

    def __init__(self, inner: SearchProvider, sites: Sequence[str]) -> None:
        self.inner = inner
        self.name = inner.name
        self.sites = list(sites)

    async def search(self, query: SearchQuery) -> list[SearchResult]:
        results = await self.inner.search(query)
        return [r for r in results if not blocked(r.url, self.sites)]


class AnswerKeyReader:
    """Refuses to read an answer-key site (the page is never fetched)."""

    def __init__(self, inner: Reader, sites: Sequence[str]) -> None:
        self.inner = inner
        self.sites = list(sites)

    async def read(self, url: str) -> Page | ReadFailure:
        if blocked(url, self.sites):
            return ReadFailure(
                url=url, kind="blocked", detail="answer-key site, blocked during an eval"
            )
        return await self.inner.read(url)
