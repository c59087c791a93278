"""Before each prompt, what the state shows is recomputed for the question being worked
on: the numbered URL list (`retrieval.ranking.rank_urls`) and each read page's excerpt
(`retrieval.evidence.refresh_all`).

These are the loop's adapters from the run's state, deps and options to the plain data
those functions take; they live with the loop so that `retrieval/` never imports the
state, the deps or the options (the layer contracts in pyproject.toml check it).
"""

from __future__ import annotations

from deepsearch.agent.deps import AgentDeps, RunOptions
from deepsearch.agent.retrieval.evidence import EVIDENCE_SHARE, refresh_all
from deepsearch.agent.retrieval.ranking import MAX_PER_HOST, TOP_K, rank_urls
from deepsearch.agent.retrieval.similarity import Similarity
from deepsearch.agent.state import AgentState


async def refresh_url_list(state: AgentState, deps: AgentDeps, options: RunOptions) -> None:
    """Recompute the numbered URL list shown to the LLM for the current question, in the
    same step (the reference's rerank landed one step late)."""
    candidates = [r for u, r in state.url_pool.items() if u not in state.failed_urls]
    state.shown_urls = await rank_urls(
        candidates,
        question=state.current_question,
        sim=deps.similarity,
        boost_hostnames=options.boost_hostnames,
        bad_hostnames=options.bad_hostnames,
        only_hostnames=options.only_hostnames,
        visited=set(state.visited),
        max_per_host=MAX_PER_HOST,
        top_k=TOP_K,
        focus=state.focus,
        near=state.focus.near_links(state.evidence.values()),
    )


async def refresh_state(
    state: AgentState, sim: Similarity, *, allowance_tokens: int, page_chars: int
) -> None:
    """Every read page's excerpt for the research questions, within its share of
    EVIDENCE_SHARE of the knowledge allowance."""
    await refresh_all(
        list(state.evidence.values()),
        state.focus_queries(),
        sim,
        evidence_tokens=int(allowance_tokens * EVIDENCE_SHARE),
        page_chars=page_chars,
    )
