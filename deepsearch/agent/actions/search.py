"""search: run new queries concurrently, pool every hit, keep the snippets as side-info."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from dataclasses import dataclass

from deepsearch.agent import diary
from deepsearch.agent.context import warm_vocabulary
from deepsearch.agent.deps import AgentDeps, RunOptions
from deepsearch.agent.events import Notice, safe_emit
from deepsearch.agent.gating import GateView
from deepsearch.agent.outcomes import Continue
from deepsearch.agent.prefetch import after_sent, warm_reader
from deepsearch.agent.retrieval.lexical import word_coverage
from deepsearch.agent.retrieval.similarity import Similarity
from deepsearch.agent.schema import SearchPayload
from deepsearch.agent.state import AgentState
from deepsearch.agent.step import StepContext
from deepsearch.agent.types import KnowledgeItem
from deepsearch.agent.wording import knowledge_question
from deepsearch.text import cut_at_word
from deepsearch.web.search.chain import SearchUnavailable
from deepsearch.web.types import SearchQuery, SearchResult
from deepsearch.web.urls import host_matches_any, hostname

# A raw pass with this many on-topic results needs no second (rewritten) pass.
MIN_ON_TOPIC_TO_SKIP_REWRITE = 3
ON_TOPIC_SHARE = 0.5
_TAG = re.compile(r"<[^>]+>")
_SPACE = re.compile(r"\s+")
SNIPPETS_SHOWN = 30  # search results whose snippets join the knowledge
MAX_QUERY_CHARS = 200  # a query searched (and listed in "Looked for") is at most this long


def _clean(text: str) -> str:
    return _SPACE.sub(" ", _TAG.sub(" ", text)).strip()


def _key(query: str) -> str:
    return _SPACE.sub(" ", query.strip().lower())


def new_queries(state: AgentState, queries: list[str]) -> list[str]:
    """Drop blanks, duplicates within the batch and queries already searched."""
    seen = {_key(q) for q in state.searched_queries}
    fresh: list[str] = []
    for query in queries:
        key = _key(query)
        if key and key not in seen:
            seen.add(key)
            fresh.append(clip_query(query))
    return fresh


def clip_query(query: str, limit: int = MAX_QUERY_CHARS) -> str:
    """At most `limit` characters, cut at a word boundary: the query is searched and
    shown as the run's record ("Looked for: ..."), never with half a word."""
    return cut_at_word(_SPACE.sub(" ", query.strip()), limit)


def add_to_pool(state: AgentState, result: SearchResult, weight: float = 1.0) -> None:
    """Pool a search hit (title and snippet cleaned of markup)."""
    state.add_search_result(
        result.url, _clean(result.title), _clean(result.snippet), result.date, weight=weight
    )


async def run_queries(
    deps: AgentDeps, queries: list[SearchQuery]
) -> tuple[list[SearchResult], list[str]]:
    """All queries at once; failures become short notes, never exceptions."""
    outcomes = await asyncio.gather(
        *(deps.search.search(q) for q in queries), return_exceptions=True
    )
    results: list[SearchResult] = []
    errors: list[str] = []
    for query, outcome in zip(queries, outcomes, strict=True):
        if isinstance(outcome, BaseException):
            if isinstance(outcome, asyncio.CancelledError | SearchUnavailable):
                raise outcome  # SearchUnavailable: no provider can answer; the run stops
            errors.append(f'"{query.q}": {str(outcome)[:160] or type(outcome).__name__}')
        else:
            results.extend(outcome)
    return results, errors


def as_queries(texts: list[str], options: RunOptions) -> list[SearchQuery]:
    """The queries to run: held to the run's host restriction and result count."""
    sites = list(options.only_hostnames)
    return [SearchQuery(q=q, sites=sites, limit=options.results_per_query) for q in texts]


def _pool_results(
    state: AgentState, results: list[SearchResult], question: str, shown: int
) -> None:
    """Every hit into the pool; the first `shown` snippets as side-info knowledge
    that answers `question`."""
    for result in results:
        add_to_pool(state, result)
    if results:
        snippets = "; ".join(
            f"{_clean(r.title)}: {_clean(r.snippet)}"
            for r in results[:shown]
            if r.snippet or r.title
        )
        state.add_knowledge(
            KnowledgeItem(
                question=question,
                answer=snippets[:4000],
                type="side-info",
                references=[r.url for r in results[:shown]],
            )
        )


async def _new_followups(
    state: AgentState, followups: list[SearchQuery], options: RunOptions, sim: Similarity
) -> list[SearchQuery]:
    """Rewritten queries not already searched, exactly or nearly (this step's raw
    queries included), held to the run's host restriction and result count."""
    by_text: dict[str, SearchQuery] = {}
    for query in followups:
        fresh = new_queries(state, [query.q])
        if fresh and fresh[0] not in by_text:
            by_text[fresh[0]] = query.model_copy(update={"q": fresh[0]})
    kept = await sim.dedup(list(by_text), state.searched_queries) if by_text else []
    update = {"sites": list(options.only_hostnames), "limit": options.results_per_query}
    return [by_text[q].model_copy(update=update) for q in kept[:5]]


@dataclass
class Batch:
    """What one search step ran and found, both passes together."""

    queries: list[str]
    results: list[SearchResult]
    errors: list[str]


def without_banned(results: list[SearchResult], banned: list[str]) -> list[SearchResult]:
    """The hits not on a banned host (--bad-hostnames): such a hit is never pooled nor
    kept as a snippet, so it can be neither read nor cited."""
    if not banned:
        return results
    return [r for r in results if not host_matches_any(hostname(r.url), banned)]


async def run_batch(
    state: AgentState,
    deps: AgentDeps,
    queries: list[SearchQuery],
    *,
    options: RunOptions,
    question: str | None = None,
    shown: int = SNIPPETS_SHOWN,
) -> Batch:
    """The one search pipeline (the search step's passes, the re-check's second
    search): run the queries, record them as searched, pool the hits (none from a
    banned host), keep the snippets as knowledge answering `question` (by default:
    what the results say about these queries)."""
    results, errors = await run_queries(deps, queries)
    results = without_banned(results, list(options.bad_hostnames))
    texts = [q.q for q in queries]
    state.record_queries(texts)
    if question is None:
        question = knowledge_question("search_results", label="; ".join(texts))
    _pool_results(state, results, question, shown)
    return Batch(queries=texts, results=results, errors=errors)


def came_back_strong(batch: Batch) -> bool:
    """At least MIN_ON_TOPIC_TO_SKIP_REWRITE results carry half the words of a query
    run: the raw pass found plenty to read, and a rewrite call would only add latency
    and tokens."""
    on_topic = 0
    for result in batch.results:
        text = f"{result.title} {result.snippet}"
        if any(word_coverage(q, text) >= ON_TOPIC_SHARE for q in batch.queries):
            on_topic += 1
    return on_topic >= MIN_ON_TOPIC_TO_SKIP_REWRITE


async def _second_pass(
    batch: Batch, state: AgentState, deps: AgentDeps, options: RunOptions, gate: GateView
) -> Batch:
    """The rewriter's follow-ups to what the raw queries found, run in the same step,
    unless the raw pass came back strong. On step 1 the question's classification
    runs beside the raw pass; the rewrite (its time filter) is what waits for it."""
    if deps.rewrite_queries is None or not batch.results or came_back_strong(batch):
        return batch
    fresh = await gate.freshness()
    rewrite = deps.rewrite_queries(state.current_question, batch.queries, batch.results, fresh)
    # Knowledge grew: if the next prompt must count it exactly, the vocabulary is
    # built while the rewriter thinks, not before the next step's request.
    proposed = await after_sent(rewrite, lambda: warm_vocabulary(state, deps.llm))
    followups = await _new_followups(state, proposed, options, deps.similarity)
    if not followups:
        return batch
    more = await run_batch(state, deps, followups, options=options)
    return Batch(
        queries=batch.queries + more.queries,
        results=batch.results + more.results,
        errors=batch.errors + more.errors,
    )


def _record(state: AgentState, batch: Batch, only: Sequence[str] = ()) -> Continue:
    """Write the step to the diary; the short detail for the step log."""
    errors = batch.errors
    state.note(
        "searched" if batch.results else "searched_nothing",
        queries=", ".join(repr(q) for q in batch.queries),
        results=len(batch.results),
        pool=len(state.url_pool),
        failed_count=diary.part("queries_failed", count=len(errors)) if errors else "",
        failures=diary.part("query_failures", errors=" | ".join(errors[:3])) if errors else "",
    )
    # The step log leads with what came back: a narrow terminal cuts the end of the line.
    failed = f", {len(errors)} failed" if errors else ""
    found = f"{len(batch.results)} result{'' if len(batch.results) == 1 else 's'}"
    if not batch.results and not errors and only:
        found += f" on {', '.join(only)}"
    return Continue(f"{found}{failed}: {' | '.join(batch.queries)}")


def _say_only_hosts_found_nothing(ctx: StepContext, batch: Batch) -> None:
    """A search that found nothing under a host restriction says why, once a run: the
    engines' results elsewhere were dropped, not missing."""
    only = ctx.options.only_hostnames
    if batch.results or batch.errors or not only:
        return
    hosts = ", ".join(only)
    text = (
        f"nothing found on {hosts}: only-hostnames keeps search results on these hosts "
        "and drops every other"
    )
    safe_emit(ctx.deps.emit, Notice(text=text, once="only-hostnames-empty"))


async def handle_search(payload: SearchPayload, ctx: StepContext) -> Continue:
    """Raw queries, then (unless they came back strong) the rewriter's follow-ups.
    Nothing is prefetched here: the engine's order is not the ranked list a visit
    reads from, so reads started now were mostly wasted (the next step prefetches
    from the ranked list while the model decides)."""
    state, deps, options = ctx.state, ctx.deps, ctx.options
    # Exact repeats first (cheap), then near-duplicates of anything searched before.
    queries = new_queries(state, payload.queries)
    if queries:
        queries = await deps.similarity.dedup(queries, state.searched_queries)
    if not queries:
        state.note("queries_repeated")
        return Continue("no new queries")
    batch = await run_batch(state, deps, as_queries(queries, options), options=options)
    if batch.results:  # a visit is likely next: the reader's set-up starts now
        warm_reader(deps.reader)
    batch = await _second_pass(batch, state, deps, options, ctx.gate)
    _say_only_hosts_found_nothing(ctx, batch)
    return _record(state, batch, options.only_hostnames)
