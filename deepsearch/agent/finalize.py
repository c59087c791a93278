"""After an answer is accepted (or forced): the editor pass, markdown repair, and
references anchored to verbatim quotes from what the run actually read."""

from __future__ import annotations

import asyncio

from deepsearch.agent.deps import AgentDeps, RunOptions
from deepsearch.agent.markdown import length_guard, repair_markdown
from deepsearch.agent.prompts import render
from deepsearch.agent.references import SourceText, build_references
from deepsearch.agent.similarity_factory import similarity_of
from deepsearch.agent.state import AgentState
from deepsearch.agent.types import Reference
from deepsearch.errors import BudgetExceeded, ProviderError
from deepsearch.llm.base import Message

# The editor may polish but not cut: below this share of the original, it stands.
MIN_EDIT_RATIO = 0.85


def citation_sources(state: AgentState) -> list[SourceText]:
    """Full texts of every page read, plus every snippet seen (never invented text)."""
    sources: list[SourceText] = []
    for url, page in state.pages.items():
        title = page.title or (state.url_pool[url].title if url in state.url_pool else "")
        sources.append(
            SourceText(url=url, title=title, text=page.text, date=page.date, kind="page")
        )
    for url, snippet in state.snippets.items():
        if url not in state.pages:
            sources.append(
                SourceText(
                    url=url,
                    title=snippet.title,
                    text=snippet.text,
                    date=snippet.date,
                    kind="snippet",
                )
            )
    return sources


async def edit_answer(
    answer: str, deps: AgentDeps, *, language: str, deadline: float | None
) -> str:
    """One editor pass; any failure or a shortened result keeps the original."""
    try:
        async with asyncio.timeout(deadline):
            edited = await deps.llm.generate_text(
                "finalizer",
                render("finalizer", language=language),
                [Message(role="user", content=answer)],
            )
    except (BudgetExceeded, ProviderError, TimeoutError):
        return answer
    return length_guard(answer, edited.text.strip(), min_ratio=MIN_EDIT_RATIO)


async def finalize_answer(
    answer: str,
    state: AgentState,
    deps: AgentDeps,
    options: RunOptions,
    *,
    language: str,
    deadline: float | None,
) -> tuple[str, list[Reference]]:
    text = await edit_answer(answer, deps, language=language, deadline=deadline)
    text = repair_markdown(text).strip()
    if options.max_references <= 0:
        return text, []
    return await build_references(
        text,
        citation_sources(state),
        similarity_of(deps),
        max_refs=options.max_references,
        only_hostnames=options.only_hostnames,
    )
