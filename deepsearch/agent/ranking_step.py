"""Recompute the numbered URL list shown to the LLM, for the current question."""

from __future__ import annotations

from collections import Counter
from functools import lru_cache
from urllib.parse import urlsplit

from deepsearch.agent.deps import AgentDeps, RunOptions
from deepsearch.agent.state import AgentState
from deepsearch.agent.types import ScoredUrl

TOP_K = 20
MAX_PER_HOST = 2


@lru_cache(maxsize=65_536)
def _host(url: str) -> str:
    host = (urlsplit(url).hostname or "").lower()
    return host[4:] if host.startswith("www.") else host


async def refresh_url_list(state: AgentState, deps: AgentDeps, options: RunOptions) -> None:
    visited = set(state.visited)
    bad = {h.lower() for h in options.bad_hostnames}
    only = {h.lower() for h in options.only_hostnames}
    candidates = [
        r
        for r in state.url_pool.values()
        if r.url not in visited and _host(r.url) not in bad and (not only or _host(r.url) in only)
    ]
    candidates.sort(key=lambda r: (-r.weight, r.url))
    per_host: Counter[str] = Counter()
    shown: list[ScoredUrl] = []
    for record in candidates:
        host = _host(record.url)
        if per_host[host] >= MAX_PER_HOST:
            continue
        per_host[host] += 1
        shown.append(
            ScoredUrl(
                index=len(shown) + 1,
                url=record.url,
                title=record.title,
                snippet=record.snippet,
                score=min(5.0, record.weight),
            )
        )
        if len(shown) >= TOP_K:
            break
    state.shown_urls = shown
