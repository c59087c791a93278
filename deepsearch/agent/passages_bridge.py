"""Seam between the visit action and query-aware passage selection."""

from __future__ import annotations

from deepsearch.agent.deps import AgentDeps
from deepsearch.agent.passages import select_passages, trim_to_budget
from deepsearch.agent.similarity_factory import similarity_of


async def page_passages(text: str, question: str, deps: AgentDeps, limit_chars: int) -> str:
    """The parts of a page most relevant to `question`, in page order, within `limit_chars`.

    Short pages are kept whole; long ones are cut by relevance, not by position.
    """
    if len(text) <= limit_chars:
        return text
    window = max(1000, limit_chars // 3)
    selected = await select_passages(
        text,
        question,
        similarity_of(deps),
        window_chars=window,
        max_windows=max(2, limit_chars // window),
        keep_whole_below=limit_chars,
    )
    return trim_to_budget(selected, limit_chars)
