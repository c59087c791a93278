"""Finalizing as the loop runs it: the editor's LLM pass over the answer, then the
plain part (agent/citations/finalize.py: markdown repair, unseen links unlinked,
references anchored to quotes) over what the run's state saw and read."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Sequence
from typing import TYPE_CHECKING, Protocol, TypeVar

from deepsearch.agent.deps import AgentDeps, RunOptions
from deepsearch.agent.prefetch import after_sent
from deepsearch.agent.schema import AnswerPayload
from deepsearch.agent.state import AgentState
from deepsearch.agent.types import Reference
from deepsearch.errors import BudgetExceeded, ProviderError
from deepsearch.llm.base import Message
from deepsearch.prompts import render

# The citations toolkit is imported where it is used: the loop builds its EarlyAnchors
# before the first LLM request, and nothing here runs before an answer (agent/later.py).
if TYPE_CHECKING:
    from deepsearch.agent.citations.references import SourceText


def seen_urls(state: AgentState) -> set[str]:
    """Every URL the run saw: pooled, read or shown as a snippet."""
    return {*state.url_pool, *state.pages, *state.snippets}


def unanchored_answer(answer: str, state: AgentState) -> str:
    """An answer that gets no references (a direct answer, a team child's, a cut-short
    run's): `citations.finalize.clean_unanchored` against the URLs the run saw."""
    from deepsearch.agent.citations.finalize import clean_unanchored

    return clean_unanchored(answer, seen_urls(state))


def citation_sources(state: AgentState, banned: Sequence[str] = ()) -> list[SourceText]:
    """Full texts of every page read, plus every snippet seen (never invented text);
    none from a banned host (--bad-hostnames), whatever brought it in."""
    from deepsearch.agent.citations.references import SourceText
    from deepsearch.web.urls import host_matches_any, hostname

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
    if banned:
        return [src for src in sources if not host_matches_any(hostname(src.url), banned)]
    return sources


async def edit_answer(
    answer: str, deps: AgentDeps, *, language: str, deadline: float | None
) -> str:
    """One editor pass; any failure or a shortened result keeps the original. A short
    one-paragraph answer is kept as it is (`citations.finalize.worth_editing`)."""
    from deepsearch.agent.citations.finalize import kept_edit, worth_editing

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
    early: EarlyAnchors | None = None,
) -> tuple[str, list[Reference]]:
    """The edited answer with its references (`options.max_references` of them at most):
    `early`'s, when they were anchored for this very text over these very sources."""
    text = await edit_answer(answer, deps, language=language, deadline=deadline)
    ready = early.take(text, state) if early is not None else None
    return await (ready if ready is not None else _anchor(text, state, deps, options))


async def _anchor(
    text: str, state: AgentState, deps: AgentDeps, options: RunOptions
) -> tuple[str, list[Reference]]:
    from deepsearch.agent.citations.finalize import anchor_answer

    return await anchor_answer(
        text,
        citation_sources(state, options.bad_hostnames),
        deps.similarity,
        seen=seen_urls(state),
        max_refs=options.max_references,
        only_hostnames=options.only_hostnames,
    )


Anchored = tuple[str, list[Reference]]
_T = TypeVar("_T")


class _Parts(Protocol):  # the StepContext fields early anchoring reads
    @property
    def state(self) -> AgentState: ...
    @property
    def deps(self) -> AgentDeps: ...
    @property
    def options(self) -> RunOptions: ...


class EarlyAnchors:
    """An answer's references anchored while the evaluator judges it, so that
    finalizing an accepted answer waits on nothing after the verdict. Only for an
    answer of the original question that the editor will not touch (one short
    paragraph), with lexical similarity (CPU alone: no call, no token); finalizing
    takes them only for the same text over the same sources (the verdict's step, the
    state's pages, snippets and URL pool unchanged), else they are dropped and
    anchored anew."""

    def __init__(self) -> None:
        self._task: asyncio.Task[Anchored] | None = None
        self._key: tuple[object, ...] = ()

    def start(self, answer: str, state: AgentState, deps: AgentDeps, options: RunOptions) -> None:
        if not options.finalize or state.trivial or state.current_question != state.question:
            return
        from deepsearch.agent.citations.finalize import worth_editing

        if deps.similarity.name != "lexical" or worth_editing(answer):
            return
        self.cancel()
        self._key = _sources_key(answer, state)
        self._task = asyncio.ensure_future(_anchor(answer, state, deps, options))

    async def beside(self, action: Awaitable[_T], payload: object, ctx: _Parts) -> _T:
        """`action`'s outcome; for an answer, its anchoring starts once the action's
        first call (the evaluator's) is on the wire."""
        if not isinstance(payload, AnswerPayload):
            return await action
        answer = payload.answer.strip()
        return await after_sent(
            action, lambda: self.start(answer, ctx.state, ctx.deps, ctx.options)
        )

    def take(self, text: str, state: AgentState) -> asyncio.Task[Anchored] | None:
        """The anchoring started for `text` over the state's current sources, or None."""
        task, self._task = self._task, None
        if task is not None and self._key == _sources_key(text, state):
            return task
        if task is not None:
            task.cancel()
        return None

    def cancel(self) -> None:
        if self._task is not None:
            self._task.cancel()
            self._task = None


def _sources_key(text: str, state: AgentState) -> tuple[object, ...]:
    # Within one step the state's pools only grow: equal sizes are the same sources.
    return (text, state.step, len(state.pages), len(state.snippets), len(state.url_pool))
