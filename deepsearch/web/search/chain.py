"""A chain of search providers that is itself a SearchProvider.

For each query the providers are tried in order:

* a cached answer (keyed by provider + query + parameters) is used when present;
* an error, a 429 or an empty answer moves on to the next provider;
* a provider that fails `max_failures` times in a row (or once with an auth error)
  is disabled for the rest of the run;
* each provider has its own rate limit (a minimum interval between calls), applied
  from the start to the providers in `paced` (a per-provider limit the user set) and
  to any other only once it answers 429: until then one step's queries run at once;
* `site:` goes into the query for engines that understand the operator, and results
  are filtered by host in every case, so a restriction is never silently ignored.

If at least one provider answered but found nothing, the answer is simply `[]`. If
every provider errored, the query is tried once more after a pause; when every
provider errors again, `SearchUnavailable` (an `AllProvidersFailed`, one line per
provider) says searching cannot work in this run, and the agent stops instead of
burning its budget. A 429 is not retried this way: it proves the service is alive.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Collection, Iterable, Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from deepsearch.clock import Clock, SystemClock
from deepsearch.errors import SearchError
from deepsearch.web.cache import WebCache, cache_key
from deepsearch.web.search.base import SearchProviderError, query_with_sites
from deepsearch.web.tls import CABundleError
from deepsearch.web.types import SearchProvider, SearchQuery, SearchResult
from deepsearch.web.urls import host_matches, hostname_of

ProviderState = Literal["ready", "disabled", "unconfigured"]


class ProviderStatus(BaseModel):
    """What `deepsearch doctor` shows per provider."""

    name: str
    state: ProviderState
    reason: str = ""
    calls: int = 0
    failures: int = 0
    consecutive_failures: int = 0
    cache_hits: int = 0


class ProbeResult(BaseModel):
    """One provider asked one query directly (no cache, no failover): for doctor."""

    # built at first use: a typical run never validates one (issue 21)
    model_config = ConfigDict(defer_build=True)

    name: str
    ok: bool
    results: int = 0
    detail: str = ""
    elapsed_s: float = 0.0


class ProviderFailure(BaseModel):
    """Why one provider could not answer; `configuration` when only the user can fix it."""

    # built at first use: a typical run never validates one (issue 21)
    model_config = ConfigDict(defer_build=True)

    name: str
    detail: str
    kind: str = ""
    configuration: bool = False


class AllProvidersFailed(SearchError):
    """Every provider in the chain errored on one query (none merely found nothing)."""

    def __init__(self, failures: Sequence[ProviderFailure]) -> None:
        self.failures = list(failures)
        lines = [f"{f.name}: {f.detail}" for f in self.failures] or [
            "no search provider is configured"
        ]
        super().__init__("every search provider failed:\n  " + "\n  ".join(lines))


class SearchUnavailable(AllProvidersFailed):
    """Every provider errored on a search and again on the next try: stop the run.

    `configuration` is True when every failure is one the user must fix (exit 2)."""

    fatal = True

    def __init__(self, failures: Sequence[ProviderFailure]) -> None:
        super().__init__(failures)
        self.configuration = bool(self.failures) and all(f.configuration for f in self.failures)
        named = "; ".join(f"{f.name}: {f.detail}" for f in self.failures)
        self.args = (f"search is not working, so the run stopped ({named})",)


def _failure(name: str, exc: SearchError) -> ProviderFailure:
    typed = exc if isinstance(exc, SearchProviderError) else None
    return ProviderFailure(
        name=name,
        detail=str(exc).removeprefix(f"{name}: "),
        kind=typed.kind if typed else "",
        configuration=typed is not None and typed.configuration,
    )


class MinIntervalLimiter:
    """At most one call per `1/per_s` seconds once armed; callers queue in arrival
    order. Unarmed, it lets every call through at once (no provider pays a pause it
    never asked for); `arm()` switches the pacing on for the rest of the run."""

    def __init__(self, per_s: float, *, clock: Clock | None = None, armed: bool = True) -> None:
        self.interval = 1.0 / per_s
        self.armed = armed
        self._clock = clock or SystemClock()
        self._next = float("-inf")
        self._lock = asyncio.Lock()

    def arm(self) -> None:
        self.armed = True

    async def acquire(self) -> None:
        if not self.armed:
            return
        async with self._lock:
            now = self._clock.monotonic()
            if self._next > now:
                await self._clock.sleep(self._next - now)
                now = self._next
            self._next = now + self.interval


def filter_by_sites(results: Iterable[SearchResult], sites: Sequence[str]) -> list[SearchResult]:
    """Keep results on one of `sites` (subdomains included); non-web URLs are kept."""
    wanted = [s for s in sites if s.strip()]
    if not wanted:
        return list(results)
    kept = []
    for result in results:
        host = hostname_of(result.url)
        if host is None or any(host_matches(host, site) for site in wanted):
            kept.append(result)
    return kept


class _Slot:
    """One provider plus its run-time bookkeeping."""

    def __init__(self, provider: SearchProvider, limiter: MinIntervalLimiter | None) -> None:
        self.provider = provider
        self.limiter = limiter
        self.status = ProviderStatus(name=provider.name, state="ready")
        self.last_failure: ProviderFailure | None = None

    def record_failure(self, exc: SearchError, max_failures: int) -> None:
        self.status.failures += 1
        self.status.consecutive_failures += 1
        self.status.reason = str(exc)
        self.last_failure = _failure(self.provider.name, exc)
        auth = isinstance(exc, SearchProviderError) and exc.kind == "auth"
        if auth or self.status.consecutive_failures >= max_failures:
            self.status.state = "disabled"
            why = (
                "auth rejected" if auth else f"{self.status.consecutive_failures} failures in a row"
            )
            self.status.reason = f"{why}; last: {exc}"

    def record_success(self) -> None:
        self.status.consecutive_failures = 0


def _identity(provider: SearchProvider) -> str:
    """Which instance answered (two SearXNG servers must not share cached results)."""
    for attr in ("base_url", "url", "_url"):
        value = getattr(provider, attr, None)
        if isinstance(value, str) and value:
            return value
    return ""


class SearchChain:
    """Failover over providers, with a cache, rate limits and per-provider status."""

    name = "chain"
    supports_site_operator = True

    def __init__(
        self,
        providers: Sequence[SearchProvider],
        *,
        cache: WebCache | None = None,
        ttl_s: float = 3600,
        rate_limits: Mapping[str, float] | None = None,
        paced: Collection[str] | None = None,
        max_failures: int = 3,
        unconfigured: Mapping[str, str] | None = None,
        clock: Clock | None = None,
        on_close: Sequence[Callable[[], Awaitable[Any]]] = (),
        retry_pause_s: float = 1.0,
    ) -> None:
        limits = rate_limits or {}
        self._clock = clock or SystemClock()
        self.rate_limits = {p.name: limits[p.name] for p in providers if limits.get(p.name)}
        # Without `paced`, every limit applies from the start (as before issue 21).
        always = set(self.rate_limits) if paced is None else set(paced)
        self._slots = [
            _Slot(
                p,
                MinIntervalLimiter(limits[p.name], clock=self._clock, armed=p.name in always)
                if limits.get(p.name)
                else None,
            )
            for p in providers
        ]
        self._cache = cache
        self._ttl_s = ttl_s
        self._max_failures = max_failures
        self._unconfigured = dict(unconfigured or {})
        self._on_close = list(on_close)
        self._retry_pause_s = retry_pause_s

    @property
    def providers(self) -> list[SearchProvider]:
        return [slot.provider for slot in self._slots]

    def status(self) -> list[ProviderStatus]:
        rows = [slot.status.model_copy() for slot in self._slots]
        rows += [
            ProviderStatus(name=name, state="unconfigured", reason=reason)
            for name, reason in self._unconfigured.items()
        ]
        return rows

    def _provider_query(self, provider: SearchProvider, query: SearchQuery) -> SearchQuery:
        if query.sites and getattr(provider, "supports_site_operator", False):
            return query.model_copy(update={"q": query_with_sites(query)})
        return query

    def _cached(self, key: str) -> list[SearchResult] | None:
        if self._cache is None:
            return None
        rows = self._cache.get(key)
        if not isinstance(rows, list) or not rows:
            return None
        try:
            return [SearchResult.model_validate(row) for row in rows]
        except ValueError:  # a row from an older schema: treat as a miss
            return None

    def _store(self, key: str, results: list[SearchResult]) -> None:
        if self._cache is not None:
            self._cache.set(key, [r.model_dump() for r in results], ttl_s=self._ttl_s)

    async def _call(self, slot: _Slot, query: SearchQuery) -> list[SearchResult]:
        if slot.limiter is not None:
            await slot.limiter.acquire()
        slot.status.calls += 1
        try:
            return await slot.provider.search(query)
        except SearchError as exc:
            if slot.limiter is not None and getattr(exc, "kind", "") == "rate_limited":
                slot.limiter.arm()  # the provider asked: pace its calls from now on
            raise
        except CABundleError as exc:  # e.g. a mistyped SSL_CERT_FILE: the user must fix it
            name = slot.provider.name
            raise SearchProviderError(name, "network", str(exc), configuration=True) from None
        except Exception as exc:  # a provider bug must not end the run
            raise SearchProviderError(slot.provider.name, "network", type(exc).__name__) from None

    async def search(self, query: SearchQuery) -> list[SearchResult]:
        try:
            return await self._search(query)
        except AllProvidersFailed as exc:
            if any(f.kind == "rate_limited" for f in exc.failures):
                raise  # a 429 says the service works: the failover and back-off handle it
            if exc.failures and all(f.configuration for f in exc.failures):
                raise SearchUnavailable(exc.failures) from None  # a retry cannot fix a setup
            first = exc
        await self._clock.sleep(self._retry_pause_s)  # the next try, after a pause
        try:
            return await self._search(query)
        except AllProvidersFailed as exc:
            raise SearchUnavailable(exc.failures or first.failures) from None

    async def _search(self, query: SearchQuery) -> list[SearchResult]:
        failures: list[ProviderFailure] = []
        answered = False
        for slot in self._slots:
            name = slot.provider.name
            if slot.status.state == "disabled":
                last = slot.last_failure
                failures.append(
                    ProviderFailure(
                        name=name,
                        detail=f"skipped ({slot.status.reason})",
                        kind=last.kind if last is not None else "",
                        configuration=last is not None and last.configuration,
                    )
                )
                continue
            provider_query = self._provider_query(slot.provider, query)
            # The local corpus has its own persistent index and changes with its files:
            # caching it would serve one folder's (or a stale) result to another run.
            cacheable = name != "local"
            key = cache_key(
                "search", name, _identity(slot.provider), provider_query.model_dump(mode="json")
            )
            cached = self._cached(key) if cacheable else None
            if cached is not None:
                slot.status.cache_hits += 1
                return cached
            try:
                results = await self._call(slot, provider_query)
            except SearchError as exc:
                slot.record_failure(exc, self._max_failures)
                failures.append(_failure(name, exc))
                continue
            slot.record_success()
            answered = True
            results = filter_by_sites(results, query.sites)[: query.limit]
            if not results:
                continue
            if cacheable:
                self._store(key, results)
            return results
        if answered:
            return []
        raise AllProvidersFailed(failures)

    async def probe(self, q: str = "python programming language") -> list[ProbeResult]:
        """Ask every configured provider `q` once, bypassing cache and failover.

        Failures are reported, not raised, and do not count towards disabling.
        """
        probes: list[ProbeResult] = []
        for slot in self._slots:
            name = slot.provider.name
            started = self._clock.monotonic()
            try:
                found = await self._call(slot, SearchQuery(q=q, limit=3))
            except SearchError as exc:
                elapsed = round(self._clock.monotonic() - started, 3)
                probes.append(ProbeResult(name=name, ok=False, detail=str(exc), elapsed_s=elapsed))
                continue
            elapsed = round(self._clock.monotonic() - started, 3)
            # A web engine with nothing for a common query is broken; a private corpus
            # simply may not mention it — that it answered at all is the check.
            ok = bool(found) or name == "local"
            detail = "" if found else "answered, but with no results"
            probe = ProbeResult(
                name=name, ok=ok, results=len(found), detail=detail, elapsed_s=elapsed
            )
            probes.append(probe)
        return probes

    async def aclose(self) -> None:
        for close in self._on_close:
            await close()
        self._on_close.clear()
