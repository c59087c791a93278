"""Seam between the visit action and query-aware passage selection.

A long page is cut into windows of about `WINDOW_CHARS` (6,000) characters; the
best-scoring ones against the current question are kept in page order, at most
`MAX_WINDOWS` (5) of them and never more than fit the per-page budget
`limit_chars` -- so with the default budget of 12,000 characters that is 2 windows
(windows shrink slightly so the separators between them fit too). Below 12,000
the page still gets two windows (`select_passages` always takes at least two),
each half the budget.
"""

from __future__ import annotations

from deepsearch.agent.deps import AgentDeps
from deepsearch.agent.passages import SEPARATOR, select_passages, trim_to_budget
from deepsearch.agent.similarity_factory import similarity_of

WINDOW_CHARS = 6000
MAX_WINDOWS = 5


def window_plan(limit_chars: int) -> tuple[int, int]:
    """(window size, number of windows) for a per-page budget of `limit_chars`."""
    count = max(2, min(MAX_WINDOWS, limit_chars // WINDOW_CHARS))
    room = limit_chars - (count - 1) * len(SEPARATOR)
    return max(1, min(WINDOW_CHARS, room // count)), count


async def page_passages(text: str, question: str, deps: AgentDeps, limit_chars: int) -> str:
    """The parts of a page most relevant to `question`, in page order, within `limit_chars`.

    Short pages are kept whole; long ones are cut by relevance, not by position.
    """
    if len(text) <= limit_chars:
        return text
    window, count = window_plan(limit_chars)
    selected = await select_passages(
        text,
        question,
        similarity_of(deps),
        window_chars=window,
        max_windows=count,
        keep_whole_below=limit_chars,
    )
    return trim_to_budget(selected, limit_chars)
