"""Second-pass search as the loop runs it: an LLM query rewriter expands what the raw
queries found. It fills the search action's `rewrite_queries` seam (`deps.QueryRewriter`).

The reply's schema and how queries are read from it are retrieval's
(agent/retrieval/rewrite.py). New queries are deduped against everything searched so
far by similarity, not just exact text. The search action, not the rewriter, applies
the run's host restriction and results-per-query to the follow-ups, as it does to the
raw queries.
"""

from __future__ import annotations

from deepsearch.agent import limits
from deepsearch.agent.deps import QueryRewriter
from deepsearch.agent.retrieval.rewrite import RewriteReply, proposed_queries
from deepsearch.agent.retrieval.similarity import Similarity
from deepsearch.errors import BudgetExceeded, StructuredOutputError
from deepsearch.llm.base import Message
from deepsearch.llm.client import LLMClient
from deepsearch.prompts import render, untrusted
from deepsearch.web.types import SearchQuery, SearchResult, TimeFilter


def _results_digest(results: list[SearchResult], limit: int = 20) -> str:
    return "\n".join(
        render(
            "query_rewriter_result", title=untrusted(r.title), snippet=untrusted(r.snippet[:200])
        )
        for r in results[:limit]
    )


def make_query_rewriter(llm: LLMClient, similarity: Similarity) -> QueryRewriter:
    async def rewrite(
        question: str, queries: list[str], results: list[SearchResult], needs_freshness: bool
    ) -> list[SearchQuery]:
        content = render(
            "query_rewriter_input",
            question=question,
            queries="\n".join(queries),
            results=_results_digest(results),
        )
        try:
            reply = await llm.generate_object(
                "query_rewriter",
                RewriteReply,
                render("query_rewriter", max_rewrites=limits.MAX_REWRITES),
                [Message(role="user", content=content)],
            )
        except (StructuredOutputError, BudgetExceeded):
            return []  # the raw pass already ran; rewriting is an improvement, not a must
        languages = proposed_queries(reply.value)
        candidates = list(languages)
        if candidates:
            candidates = await similarity.dedup(candidates, queries)
        time_filter: TimeFilter | None = "m" if needs_freshness else None
        return [
            SearchQuery(q=q, time_filter=time_filter, language=languages[q])
            for q in candidates[: limits.MAX_REWRITES]
        ]

    return rewrite
