"""Seam between the visit action and passage selection (query-aware when available)."""

from __future__ import annotations

from deepsearch.agent.deps import AgentDeps


async def page_passages(text: str, question: str, deps: AgentDeps, limit_chars: int) -> str:
    """The parts of a page worth showing the LLM, within `limit_chars`."""
    if len(text) <= limit_chars:
        return text
    return text[:limit_chars] + " […]"
