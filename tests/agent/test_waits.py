"""No wait with nothing in flight that a call the run makes anyway could cover (issue 21):
the token vocabulary is built while the query rewriter thinks, when the next prompt
will need exact counts, and never when it will not; the reader's one-time set-up
starts as soon as a search found pages to visit, through the run's reader wrappers."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from deepsearch.agent import context
from deepsearch.agent.actions.search import handle_search
from deepsearch.agent.context import knowledge_allowance, needs_exact_counts, select_knowledge
from deepsearch.agent.prefetch import warm_reader
from deepsearch.agent.schema import SearchPayload
from deepsearch.agent.state import AgentState
from deepsearch.agent.types import KnowledgeItem
from deepsearch.llm import tokens
from deepsearch.web.types import SearchQuery, SearchResult
from tests.agent.helpers import make_deps, step_context
from tests.fakes.memory_web import FakeReader, FakeSearch
from tests.fakes.scripted_llm import offline_settings

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


class WarmingReader(FakeReader):
    """A reader with a one-time set-up: each `warm()` lands in `log`."""

    def __init__(self, log: list[str]) -> None:
        super().__init__({})
        self.log = log

    def warm(self) -> None:
        self.log.append("warm")


async def test_the_reader_warms_up_once_a_search_found_something_to_visit() -> None:
    log: list[str] = []
    for search, expected in (
        (thin_search(), ["warm", "rewrite sent", "rewrite done"]),
        (FakeSearch(lambda q: []), []),  # nothing found: no visit is coming
    ):
        log.clear()
        deps, _ = make_deps(lambda r: None, search=search, reader=WarmingReader(log))
        deps.rewrite_queries = rewriter(log)
        state = AgentState.start(QUESTION)
        await handle_search(SearchPayload(queries=["leland 1986 film"]), step_context(state, deps))
        assert log == expected


async def test_the_run_s_reader_wrappers_pass_warm_on(monkeypatch: pytest.MonkeyPatch) -> None:
    from deepsearch.runtime import ActivityReader, RoutingReader
    from deepsearch.tracing import TracedReader
    from deepsearch.web import warmup
    from deepsearch.web.reader import LocalReader

    started: list[int] = []
    monkeypatch.setattr(warmup, "start", lambda: started.append(1))
    local = LocalReader(offline_settings().reader)
    chain = ActivityReader(TracedReader(RoutingReader(local, None), trace=None), lambda e: None)  # type: ignore[arg-type]
    warm_reader(chain)
    warm_reader(chain)  # once a process is enough
    assert started == [1]
    await local.fetch_raw("not a url")  # the fetch's own trigger finds it started
    assert started == [1]
    await local.aclose()
