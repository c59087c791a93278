"""A team child's dependencies and options: the parent's web, clock and sandbox, its
own view of the LLM (a tracker holding its share), and events marked with its id."""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import replace

from deepsearch.agent.deps import AgentDeps, RunOptions
from deepsearch.agent.events import AgentEvent
from deepsearch.agent.retrieval.similarity import make_similarity
from deepsearch.agent.steps.rewrite import make_query_rewriter
from deepsearch.agent.team.budget import ShareTracker
from deepsearch.llm.client import LLMClient

# A sub-problem is narrower than the question: fewer steps, and a share of the time left.
CHILD_MAX_STEPS = 20
CHILD_TIME_SHARE = 0.7


def child_llm(parent: LLMClient, share: int) -> LLMClient:
    """The parent's client with the child's tracker. A shallow copy on purpose: the
    provider, its connection pool and the concurrency slots stay shared, so a team
    never has more LLM calls in flight than `llm.concurrency` allows."""
    llm = copy.copy(parent)
    llm.tracker = ShareTracker(share, parent.tracker)
    return llm


def _tagged(emit: Callable[[AgentEvent], None], agent: str) -> Callable[[AgentEvent], None]:
    def send(event: AgentEvent) -> None:
        emit(event.model_copy(update={"agent": agent}))

    return send


def child_deps(parent: AgentDeps, agent: str, share: int) -> AgentDeps:
    """Everything a child calls is charged to its share: the similarity backend and the
    query rewriter are rebuilt over the child's client when the parent's use the LLM."""
    llm = child_llm(parent.llm, share)
    similarity = make_similarity(llm.embed) if parent.llm.embedder is not None else None
    deps = replace(parent, llm=llm, emit=_tagged(parent.emit, agent))
    if similarity is not None:
        deps.similarity = similarity
    if parent.rewrite_queries is not None:
        deps.rewrite_queries = make_query_rewriter(llm, deps.similarity)
    return deps


def child_options(options: RunOptions, time_left_s: float | None) -> RunOptions:
    """The parent's options for a narrower job: no team of its own, no finalizing (the
    parent finalizes once), no direct answer (it was split off because it needs
    research), fewer steps and a share of the time the parent's research has left."""
    timeout = None if time_left_s is None else max(1.0, time_left_s * CHILD_TIME_SHARE)
    return options.model_copy(
        update={
            "team_size": 1,
            "finalize": False,
            "direct_answer": False,
            "recheck": False,
            "max_steps": min(options.max_steps, CHILD_MAX_STEPS),
            "timeout_s": timeout,
        }
    )
