"""Search providers behind one async interface, and the chain built from settings.

    build_search(settings) -> SearchChain      # the agent's SearchProvider

Providers: duckduckgo (ddgs, keyless, default), searxng (SEARXNG_URL), jina, brave,
serper (with their keys) and local (a folder of documents, --corpus DIR).
Heavy libraries (httpx, ddgs, bm25s) are imported only when a chain is built/used.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from deepsearch.config import KeysConfig
from deepsearch.errors import ConfigError
from deepsearch.web.search.base import SearchProviderError
from deepsearch.web.search.chain import ProbeResult, ProviderStatus, SearchChain

if TYPE_CHECKING:
    import httpx

    from deepsearch.config import Settings
    from deepsearch.web.cache import WebCache
    from deepsearch.web.search.fused import FusedSearch
    from deepsearch.web.search.local import LocalCorpus
    from deepsearch.web.types import SearchProvider

__all__ = [
    "ProbeResult",
    "ProviderStatus",
    "SearchChain",
    "SearchProviderError",
    "build_search",
    "local_corpus",
]

_KEY_ENV = KeysConfig.env_vars()  # provider -> the environment variable of its key


def _secret(settings: Settings, provider: str) -> str | None:
    value = getattr(settings.keys, f"{provider}_api_key", None)
    return value.get_secret_value() if value is not None else None


def local_corpus(settings: Settings) -> LocalCorpus | None:
    """The corpus named by settings.search.corpus_dir (index under the cache dir), or None."""
    if not settings.search.corpus_dir:
        return None
    from pathlib import Path

    from deepsearch.web.cache import default_cache_dir
    from deepsearch.web.search.local import LocalCorpus

    base = Path(settings.cache.dir).expanduser() if settings.cache.dir else default_cache_dir()
    return LocalCorpus(settings.search.corpus_dir, index_root=base / "corpus-index")


def _make_provider(
    name: str,
    settings: Settings,
    client: Callable[[], httpx.AsyncClient],
    ddgs_factory: Callable[[], Any] | None,
    corpus: LocalCorpus | None,
) -> SearchProvider | str:
    """The provider, or the reason it cannot be used (a str)."""
    cfg = settings.search
    timeout = cfg.timeout_s
    if name == "duckduckgo":
        from deepsearch.web.search.duckduckgo import DuckDuckGoSearch

        return DuckDuckGoSearch(ddgs_factory=ddgs_factory, timeout_s=timeout)
    if name == "searxng":
        if not cfg.searxng_url:
            return "no URL: set SEARXNG_URL or --searxng-url"
        from deepsearch.web.search.searxng import SearxngSearch

        return SearxngSearch(client(), cfg.searxng_url, timeout_s=timeout)
    if name == "local":
        corpus = corpus or local_corpus(settings)
        if corpus is None:
            return "no corpus folder: pass --corpus DIR"
        from deepsearch.web.search.local import LocalSearch

        return LocalSearch(corpus)
    key = _secret(settings, name)
    if not key:
        return f"no API key: set {_KEY_ENV[name]}"
    if name == "jina":
        from deepsearch.web.search.jina import JinaSearch

        return JinaSearch(client(), cfg.jina_url, key, timeout_s=timeout)
    if name == "brave":
        from deepsearch.web.search.brave import BraveSearch

        return BraveSearch(client(), cfg.brave_url, key, timeout_s=timeout)
    if name == "serper":
        from deepsearch.web.search.serper import SerperSearch

        return SerperSearch(client(), cfg.serper_url, key, timeout_s=timeout)
    return f"unknown provider {name!r}"


def build_search(
    settings: Settings,
    *,
    cache: WebCache | None = None,
    http_client: httpx.AsyncClient | None = None,
    ddgs_factory: Callable[[], Any] | None = None,
    corpus: LocalCorpus | None = None,
    max_failures: int = 3,
) -> SearchChain | FusedSearch:
    """The provider chain named by settings.search.providers, in that order; with
    `local` next to web providers, a FusedSearch of the web chain and the corpus.

    Providers lacking a key or URL are left out with the reason recorded (see
    `SearchChain.status()`); ConfigError if none is left. When no `http_client` is
    given, one is created on first need and closed by `SearchChain.aclose()`.
    Pass `corpus` to share one `LocalCorpus` with the reader that serves its
    `file://` URLs (otherwise one is made from settings.search.corpus_dir).
    """
    client = _SharedClient(http_client)
    providers: list[SearchProvider] = []
    unconfigured: dict[str, str] = {}
    for name in dict.fromkeys(settings.search.providers):  # order kept, repeats dropped
        made = _make_provider(name, settings, client.get, ddgs_factory, corpus)
        if isinstance(made, str):
            unconfigured[name] = made
        else:
            providers.append(made)
    if not providers:
        reasons = "; ".join(f"{n}: {why}" for n, why in unconfigured.items()) or "none listed"
        raise ConfigError(f"no usable search provider ({reasons})")
    web = [p for p in providers if p.name != "local"]
    local = [p for p in providers if p.name == "local"]

    def chain(members: list[SearchProvider]) -> SearchChain:
        """The web providers' chain: the cache, rate limits, the shared client."""
        rate = settings.search.rate_limit_per_s
        limits: dict[str, float] = {str(k): v for k, v in settings.search.rate_limits.items()}
        return SearchChain(
            members,
            cache=cache,
            ttl_s=settings.cache.search_ttl_s,
            rate_limits={p.name: limits.get(p.name, rate) for p in members if p.name != "local"},
            # A limit set for one provider paces it from the start; the general
            # rate_limit_per_s only once a provider answers 429.
            paced=set(limits),
            max_failures=max_failures,
            unconfigured=unconfigured,
            on_close=[client.aclose],
        )

    if web and local:  # the web and the corpus: both searched, results fused
        from deepsearch.web.search.fused import FusedSearch

        return FusedSearch(chain(web), SearchChain(local, max_failures=max_failures))
    return chain(providers)


class _SharedClient:
    """One HTTP client for every provider that needs one: the caller's, or one made on
    first need and closed with the chain."""

    def __init__(self, given: httpx.AsyncClient | None) -> None:
        self._given = given
        self._owned: httpx.AsyncClient | None = None

    def get(self) -> httpx.AsyncClient:
        if self._given is not None:
            return self._given
        if self._owned is None:
            import httpx

            from deepsearch.web.tls import client_context

            self._owned = httpx.AsyncClient(follow_redirects=True, verify=client_context())
        return self._owned

    async def aclose(self) -> None:
        if self._owned is not None:
            await self._owned.aclose()
