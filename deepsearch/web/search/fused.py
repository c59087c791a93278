"""The web and the local corpus searched together, their rankings fused.

When a run asks for both (`--corpus DIR` with a web `--search-provider`, or `local`
listed next to a web provider), every query goes to the web chain (its failover among
web providers kept) and to the corpus at once; the two rankings are merged by
reciprocal rank fusion (score = sum of 1 / (60 + rank)), which needs no comparable
scores between BM25 and a web engine. One side failing leaves the other's results;
the web side failing is told once (`on_web_failure`), so a run whose every web query
fails offline does not look like a web search that found only local files.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

from deepsearch.errors import SearchError
from deepsearch.web.search.chain import ProbeResult, ProviderStatus, SearchChain
from deepsearch.web.types import SearchProvider, SearchQuery, SearchResult

RRF_K = 60


def reciprocal_rank_fusion(
    rankings: Sequence[Sequence[SearchResult]], *, limit: int, k: int = RRF_K
) -> list[SearchResult]:
    """One ranking from several: by summed 1/(k + rank); ties keep first appearance."""
    scores: dict[str, float] = {}
    first: dict[str, SearchResult] = {}
    for ranking in rankings:
        for rank, result in enumerate(ranking, start=1):
            scores[result.url] = scores.get(result.url, 0.0) + 1.0 / (k + rank)
            first.setdefault(result.url, result)
    order = sorted(first, key=lambda url: -scores[url])  # sorted() is stable
    return [first[url] for url in order[:limit]]


class FusedSearch:
    """A SearchProvider (and doctor's chain interface) over a web chain and the corpus."""

    name = "fused"
    supports_site_operator = True

    def __init__(self, web: SearchChain, local: SearchChain) -> None:
        self.web = web
        self.local = local
        # Called with a one-line reason the first time the web fails while the corpus
        # answers (runtime.py makes it a notice); never again in this run.
        self.on_web_failure: Callable[[str], None] | None = None
        self._web_failure_told = False

    @property
    def providers(self) -> list[SearchProvider]:
        return [*self.web.providers, *self.local.providers]

    async def search(self, query: SearchQuery) -> list[SearchResult]:
        web, local = await asyncio.gather(
            self.web.search(query), self.local.search(query), return_exceptions=True
        )
        for outcome in (web, local):
            if isinstance(outcome, BaseException) and not isinstance(outcome, SearchError):
                raise outcome  # cancellation or a bug: not a search failure
        if isinstance(web, BaseException) and isinstance(local, BaseException):
            raise web  # both sides failed: the web's error names its providers
        if isinstance(web, BaseException):
            self._tell_web_failure(web)
        rankings = [r for r in (web, local) if not isinstance(r, BaseException)]
        return reciprocal_rank_fusion(rankings, limit=query.limit)

    def _tell_web_failure(self, error: BaseException) -> None:
        if self._web_failure_told or self.on_web_failure is None:
            return
        self._web_failure_told = True
        failures = getattr(error, "failures", None)
        if failures:
            why = "; ".join(f"{f.name}: {f.detail}" for f in failures)
        else:
            why = " ".join(str(error).split()) or type(error).__name__
        self.on_web_failure(
            f"web search failed ({why[:200]}); results come from the local corpus only"
        )

    def status(self) -> list[ProviderStatus]:
        return [*self.web.status(), *self.local.status()]

    async def probe(self, q: str = "python programming language") -> list[ProbeResult]:
        return [*await self.web.probe(q), *await self.local.probe(q)]

    async def aclose(self) -> None:
        await self.web.aclose()
        await self.local.aclose()
