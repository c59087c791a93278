"""Recompute the numbered URL list shown to the LLM, for the current question, in the
same step (the reference's rerank landed one step late)."""

from __future__ import annotations

from deepsearch.agent.deps import AgentDeps, RunOptions
from deepsearch.agent.ranking import rank_urls
from deepsearch.agent.similarity_factory import similarity_of
from deepsearch.agent.state import AgentState

TOP_K = 20
MAX_PER_HOST = 2


async def refresh_url_list(state: AgentState, deps: AgentDeps, options: RunOptions) -> None:
    candidates = [r for u, r in state.url_pool.items() if u not in state.failed_urls]
    state.shown_urls = await rank_urls(
        candidates,
        question=state.current_question,
        sim=similarity_of(deps),
        boost_hostnames=options.boost_hostnames,
        bad_hostnames=options.bad_hostnames,
        only_hostnames=options.only_hostnames,
        visited=set(state.visited),
        max_per_host=MAX_PER_HOST,
        top_k=TOP_K,
    )
