"""visit: read the chosen pages (topped up by rank to 5, with pages read ahead when
there are) concurrently."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Collection
from functools import partial
from urllib.parse import unquote, urlsplit

from deepsearch.agent import diary
from deepsearch.agent.deps import AgentDeps, RunOptions
from deepsearch.agent.outcomes import Continue
from deepsearch.agent.prefetch import safe_read
from deepsearch.agent.retrieval.evidence import (
    anchor_texts,
    evidence_chunks,
    refresh_page,
)
from deepsearch.agent.schema import MAX_VISITS, VisitPayload
from deepsearch.agent.state import AgentState, PageText
from deepsearch.agent.step import StepContext
from deepsearch.agent.types import UrlRecord
from deepsearch.text import cut_at_word
from deepsearch.web.types import Page, ReadFailure
from deepsearch.web.urls import hostname, normalize_url

LINK_WEIGHT = 0.1
# Pages are capped before any CPU-bound work (passage scoring, citations): a 10 MB
# page would otherwise block the event loop, and with it --timeout, for many seconds.
MAX_PAGE_CHARS = 400_000
MAX_LINKS_PER_PAGE = 50
MAX_LINK_CANDIDATES = 150
# The step log names a read page by its title, at most this long; another by its host
# and the last part of its path, at most this long.
TITLE_CHARS = 60
ADDRESS_TAIL_CHARS = 40
# Links inside a page's evidence passages (not navigation): pooled beyond the caps above.
MAX_PASSAGE_LINKS = 100


def choose_targets(state: AgentState, indices: list[int], ahead: Collection[str] = ()) -> list[str]:
    """The LLM's picks (valid, unvisited), then the best-ranked other search results
    and chain links (links naming a term the run learned: the next hop), never other
    harvested links, which are read only when picked; up to 5. When pages are
    being read ahead for this step (`ahead`), only those top the picks up: the visit
    then waits on its picks alone, never on a top-up fetched after the decision."""
    visited = set(state.visited)
    by_index = {u.index: u.url for u in state.shown_urls}
    targets: list[str] = []
    for index in indices:
        url = by_index.get(index)
        if url and url not in visited and url not in targets:
            targets.append(url)
    for shown in state.shown_urls:
        if len(targets) >= MAX_VISITS:
            break
        if not (shown.origin == "search" or shown.chain) or (ahead and shown.url not in ahead):
            continue
        if shown.url not in visited and shown.url not in targets:
            targets.append(shown.url)
    return targets[:MAX_VISITS]


def decided_reads(state: AgentState, payload: object, ahead: Collection[str]) -> list[str]:
    """The reads a step's decision still wants: a visit's targets; none for any other."""
    if isinstance(payload, VisitPayload):
        return choose_targets(state, payload.url_indices, ahead)
    return []


def passage_links(links: list[tuple[str, str]], chunks: list[str]) -> list[tuple[str, str]]:
    """The links whose anchor text stands in the page's evidence passages (inline links
    of the prose, not menus, navboxes or footers, whose chunks were dropped)."""
    text = " ".join(" ".join(c.split()) for c in chunks).casefold()
    return [
        (anchor, url)
        for anchor, url in links
        if len(anchor.strip()) >= 3 and " ".join(anchor.split()).casefold() in text
    ][:MAX_PASSAGE_LINKS]


def _add_links(
    state: AgentState, page: Page, chunks: list[str] | None = None
) -> list[tuple[str, str]]:
    """Harvested links join the pool as their own low-weight class ("link"): at most
    MAX_LINKS_PER_PAGE per page and MAX_LINK_CANDIDATES in all -- but links inside the
    page's passages always --, never as snippets (an anchor is no evidence) and never
    counting against a new search. Returns the links of the prose (anchor, pool URL)."""
    in_pool = sum(1 for r in state.url_pool.values() if r.origin == "link")
    inline = passage_links(page.links, chunks or [])
    prose = {url for _, url in inline}
    kept: list[tuple[str, str]] = []
    for anchor, raw_link in [*inline, *page.links[:MAX_LINKS_PER_PAGE]]:
        link = normalize_url(raw_link, allow_file=True)
        if link is None:
            continue
        if raw_link in prose:
            kept.append((anchor, link))
        if link in state.url_pool:
            state.boost_url(link, LINK_WEIGHT)
            state.url_pool[link].passage |= raw_link in prose
        elif (
            (in_pool < MAX_LINK_CANDIDATES or raw_link in prose)
            and link not in state.visited
            and hostname(link) not in state.dead_hosts
        ):
            state.pool_link(link, " ".join(anchor.split())[:200], LINK_WEIGHT)
            state.url_pool[link].passage = raw_link in prose
            in_pool += 1
    return list(dict.fromkeys(kept))


async def _keep_page(
    state: AgentState, deps: AgentDeps, options: RunOptions, url: str, page: Page
) -> None:
    record = state.url_pool.get(url) or UrlRecord(url=url)
    title = page.title or record.title
    kept = PageText(url=url, title=title, text=page.text[:MAX_PAGE_CHARS], date=page.published)
    state.record_page(kept)
    chunks = await _add_evidence(state, deps, options, kept, page)
    state.evidence[url].links = _add_links(state, page, chunks)


async def _add_evidence(
    state: AgentState, deps: AgentDeps, options: RunOptions, read: PageText, page: Page
) -> list[str]:
    """The page's knowledge item: its evidence chunks (navigation dropped), shown as
    the passages relevant to the research questions (re-chosen before every prompt)."""
    chunks = evidence_chunks(read.text, anchor_texts(page.links))
    evidence = state.add_page_evidence(read, chunks)
    await refresh_page(evidence, state.focus_queries(), deps.similarity, options.page_chars)
    return chunks


def _drop_dead_host(state: AgentState, url: str) -> None:
    host = hostname(url)
    state.forget_host(host, [u for u in state.url_pool if hostname(u) == host])


async def handle_visit(payload: VisitPayload, ctx: StepContext) -> Continue:
    """Read the targets concurrently; a URL being (or already) read in the background
    by the context's prefetcher is awaited there, never read twice."""
    state, deps, options, prefetch = ctx.state, ctx.deps, ctx.options, ctx.prefetch
    targets = choose_targets(state, payload.url_indices, prefetch.ahead if prefetch else ())
    if not targets:
        state.note("nothing_to_read")
        return Continue("nothing to read")
    state.mark_visiting(targets)
    read_one = prefetch.read if prefetch is not None else partial(safe_read, deps.reader)
    outcomes = await asyncio.gather(*(read_one(url) for url in targets))
    read, failed = [], []
    labels = {url: short_address(url) for url in targets}
    for url, outcome in zip(targets, outcomes, strict=True):
        if isinstance(outcome, ReadFailure):
            status = f"HTTP {outcome.status} " if outcome.status else ""
            state.mark_failed(url, f"{outcome.kind}: {status}{outcome.detail}")
            failed.append(f"{url} ({outcome.kind})")
            if outcome.host_is_dead:
                _drop_dead_host(state, url)
            continue
        await _keep_page(state, deps, options, url, outcome)
        read.append(url)
        if outcome.title.strip():
            labels[url] = cut_at_word(" ".join(outcome.title.split()), TITLE_CHARS)
    state.note(
        "read",
        count=len(read),
        pages=diary.part("pages_read", urls=", ".join(read)) if read else "",
        failures=diary.part("read_failures", failed=", ".join(failed)) if failed else "",
    )
    # The step log names pages as people do: a read page by its title, any other by
    # its host and the end of its path (a raw URL cut at the width named none).
    shown = " | ".join(labels[u] for u in targets)
    return Continue(f"read {len(read)}{_failure_summary(state, targets)}: {shown}")


def short_address(url: str) -> str:
    """`en.wikipedia.org/…/Eiffel_Tower` for a URL, a local file's name for a path."""
    parts = urlsplit(url)
    segments = [seg for seg in unquote(parts.path).split("/") if seg]
    if parts.scheme == "file":
        return segments[-1] if segments else url
    host = (parts.hostname or url).removeprefix("www.")
    if not segments:
        return host
    last = segments[-1]
    if len(last) > ADDRESS_TAIL_CHARS:
        last = last[: ADDRESS_TAIL_CHARS - 1] + "…"
    return f"{host}/{last}" if len(segments) == 1 else f"{host}/…/{last}"


def _failure_summary(state: AgentState, targets: list[str]) -> str:
    """ ", failed 2 (blocked ×2 — private addresses need --allow-private-urls)" or ""."""
    kinds = Counter(
        state.failed_urls[u].split(":", 1)[0] for u in targets if u in state.failed_urls
    )
    if not kinds:
        return ""
    parts = ", ".join(f"{kind} ×{count}" for kind, count in kinds.most_common())
    hint = " — private addresses need --allow-private-urls" if "blocked" in kinds else ""
    return f", failed {sum(kinds.values())} ({parts}{hint})"
