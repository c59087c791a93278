"""No wait with nothing in flight that a call the run makes anyway could cover (issue 21):
the token vocabulary is built while the query rewriter thinks, when the next prompt
will need exact counts, and never when it will not."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from deepsearch.agent import context
from deepsearch.agent.actions.search import handle_search
from deepsearch.agent.context import knowledge_allowance, needs_exact_counts, select_knowledge
from deepsearch.agent.schema import SearchPayload
from deepsearch.agent.state import AgentState
from deepsearch.agent.types import KnowledgeItem
from deepsearch.llm import tokens
from deepsearch.web.types import SearchQuery, SearchResult
from tests.agent.helpers import make_deps, step_context
from tests.fakes.memory_web import FakeSearch

QUESTION = "Who directed the film shot near Leland in 1986?"


def big_snippets(state: AgentState, chars: int) -> None:
    """A search's snippets as knowledge (side-info), `chars` long."""
    state.add_knowledge(
        KnowledgeItem(question="What did the search find?", answer="x" * chars, type="side-info")
    )


class Vocabulary:
    """tokens.is_loaded/preload as seen by the agent: records each preload in `log`."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, log: list[str]) -> None:
        self.log = log
        monkeypatch.setattr(tokens, "is_loaded", lambda name: False)
        monkeypatch.setattr(tokens, "preload", self.preload)

    def preload(self, name: str, **kw: Any) -> None:
        self.log.append(f"preload {name}")


def thin_search() -> FakeSearch:
    # Off-topic titles: the raw pass does not come back strong, so the rewriter runs.
    return FakeSearch(
        lambda q: [
            SearchResult(title=f"r{i}", url=f"https://s{i}.org/", snippet="", provider="f")
            for i in range(4)
        ]
    )


def rewriter(log: list[str]) -> Any:
    async def rewrite(
        question: str, queries: list[str], results: list[SearchResult], fresh: bool
    ) -> list[SearchQuery]:
        log.append("rewrite sent")
        for _ in range(30):  # the rewriter's latency: other work runs meanwhile
            await asyncio.sleep(0)
        log.append("rewrite done")
        return []

    return rewrite


async def run_search(state: AgentState, log: list[str]) -> None:
    deps, _ = make_deps(lambda r: None, search=thin_search())
    deps.rewrite_queries = rewriter(log)
    ctx = step_context(state, deps)
    await handle_search(SearchPayload(queries=["leland 1986 film"]), ctx)


async def test_the_vocabulary_is_built_while_the_rewriter_thinks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    log: list[str] = []
    Vocabulary(monkeypatch, log)
    state = AgentState.start(QUESTION)
    big_snippets(state, 4000)  # an earlier search's snippets: with this one's, too big
    await run_search(state, log)
    # Started once the rewrite's request was out, finished (or not) while it thinks.
    assert log == ["rewrite sent", "preload o200k_base", "rewrite done"]


async def test_no_vocabulary_when_the_knowledge_fits_by_its_bounds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    log: list[str] = []
    Vocabulary(monkeypatch, log)
    state = AgentState.start(QUESTION)
    await run_search(state, log)
    assert log == ["rewrite sent", "rewrite done"]  # nothing to count: nothing built


def test_exact_counts_are_needed_exactly_when_selection_counts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # needs_exact_counts predicts what select_knowledge will do: count (with the
    # vocabulary) or choose by byte bounds alone.
    counted: list[str] = []
    monkeypatch.setattr(context, "count_tokens", lambda text: counted.append(text) or 1)
    deps, _ = make_deps(lambda r: None)
    allowance = knowledge_allowance(deps.llm, "agent")
    for chars, needed in ((500, False), (int(allowance * 0.2) + 100, True)):
        state = AgentState.start(QUESTION)
        big_snippets(state, chars)
        counted.clear()
        assert needs_exact_counts(state.knowledge, allowance) is needed
        select_knowledge(state.knowledge, QUESTION, allowance, current_step=1)
        assert bool(counted) is needed
