"""Finalizing as the loop runs it: the editor's LLM pass over the answer, then the
plain part (agent/citations/finalize.py: markdown repair, unseen links unlinked,
references anchored to quotes) over what the run's state saw and read."""

from __future__ import annotations

from deepsearch.agent.citations.finalize import (
    anchor_answer,
    clean_unanchored,
    kept_edit,
    worth_editing,
)
from deepsearch.agent.citations.references import SourceText
from deepsearch.agent.deps import AgentDeps, RunOptions
from deepsearch.agent.state import AgentState
from deepsearch.agent.types import Reference
from deepsearch.errors import BudgetExceeded, ProviderError
from deepsearch.llm.base import Message
from deepsearch.prompts import render


def seen_urls(state: AgentState) -> set[str]:
    """Every URL the run saw: pooled, read or shown as a snippet."""
    return {*state.url_pool, *state.pages, *state.snippets}


def unanchored_answer(answer: str, state: AgentState) -> str:
    """An answer that gets no references (a direct answer, a team child's, a cut-short
    run's): `citations.finalize.clean_unanchored` against the URLs the run saw."""
    return clean_unanchored(answer, seen_urls(state))


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
    """One editor pass; any failure or a shortened result keeps the original. A short
    one-paragraph answer is kept as it is (`citations.finalize.worth_editing`)."""
    if not worth_editing(answer):
        return answer
    try:
        # The rest of --timeout, on the run's clock (as agent/deadline.py's limits).
        expiry = None if deadline is None else deps.clock.monotonic() + deadline
        async with deps.clock.timeout_at(expiry):
            edited = await deps.llm.generate_text(
                "finalizer",
                render("finalizer", language=language),
                [Message(role="user", content=answer)],
            )
    except (BudgetExceeded, ProviderError, TimeoutError):
        return answer
    return kept_edit(answer, edited.text)


async def finalize_answer(
    answer: str,
    state: AgentState,
    deps: AgentDeps,
    options: RunOptions,
    *,
    language: str,
    deadline: float | None,
) -> tuple[str, list[Reference]]:
    """The edited answer with its references (`options.max_references` of them at most)."""
    text = await edit_answer(answer, deps, language=language, deadline=deadline)
    return await anchor_answer(
        text,
        citation_sources(state),
        deps.similarity,
        seen=seen_urls(state),
        max_refs=options.max_references,
        only_hostnames=options.only_hostnames,
    )
