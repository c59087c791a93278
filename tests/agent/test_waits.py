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
from deepsearch.agent.deps import RunOptions
from deepsearch.agent.prefetch import warm_reader
from deepsearch.agent.schema import SearchPayload
from deepsearch.agent.state import AgentState
from deepsearch.agent.steps.finalize import EarlyAnchors
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


ANSWER_STEPS = [
    {"think": "", "action": {"search": {"queries": ["moons of mars"]}}},
    {"think": "", "action": {"visit": {"url_indices": [1]}}},
    {"think": "", "action": {"answer": {"answer": "Text of the page about moons of Mars [^1]."}}},
]


async def anchored_run(monkeypatch: pytest.MonkeyPatch, strict_pass: bool = True) -> Any:
    """A search, a visit, an answer; the log of LLM calls and anchorings, in order."""
    from deepsearch.agent.citations import finalize as citations
    from deepsearch.agent.loop import ResearchRun
    from tests.agent.helpers import counting_client, evaluator_reply, options
    from tests.agent.test_prefetch import URLS, CountingReader, moon_search

    reader = CountingReader(delay_s=0)
    queue = list(ANSWER_STEPS)

    def reply(request: Any) -> Any:
        if request.tool in ("agent", "agent_beast"):
            return queue.pop(0) if len(queue) > 1 else queue[0]
        return evaluator_reply(request, strict_pass=strict_pass)

    client, provider = counting_client(reply, log=reader.log)
    anchor = citations.anchor_answer

    async def logged(text: str, *args: Any, **kw: Any) -> Any:
        reader.log.append(("anchor", text))
        return await anchor(text, *args, **kw)

    monkeypatch.setattr(citations, "anchor_answer", logged)  # looked up where it is used
    deps, _ = make_deps(lambda r: None, search=moon_search(), reader=reader)
    deps.llm = client
    run = ResearchRun("How many moons has Mars?", deps, options(max_steps=4))
    result = await run.run()
    assert URLS  # the shared fake web
    return result, reader.log, provider


async def test_an_answer_s_references_are_anchored_while_it_is_judged(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from deepsearch.agent.citations import finalize as citations
    from deepsearch.agent.schema import AnswerPayload
    from deepsearch.agent.steps import finalize

    log: list[str] = []
    anchor = citations.anchor_answer

    async def logged(text: str, *args: Any, **kw: Any) -> Any:
        log.append("anchor")
        return await anchor(text, *args, **kw)

    monkeypatch.setattr(citations, "anchor_answer", logged)  # looked up where it is used
    deps, _ = make_deps(lambda r: None)
    state = AgentState.start(QUESTION)
    state.add_search_result("https://moons.org/", "Moons", "Mars has two moons.", None)
    ctx = step_context(state, deps)
    answer = "Mars has two moons [^1]."
    payload = AnswerPayload(answer=answer)

    async def judged() -> str:  # the answer step: its verdict takes a while
        log.append("judging")
        for _ in range(30):
            await asyncio.sleep(0)
        log.append("verdict")
        return "accepted"

    early = EarlyAnchors()
    assert await early.beside(judged(), payload, ctx) == "accepted"
    assert log == ["judging", "anchor", "verdict"]
    text, refs = await finalize.finalize_answer(
        answer, state, deps, ctx.options, language="English", deadline=None, early=early
    )
    assert log == ["judging", "anchor", "verdict"]  # taken, not anchored again
    late = await finalize.finalize_answer(
        answer, state, deps, ctx.options, language="English", deadline=None
    )
    assert (text, refs) == late and log[-1] == "anchor"  # the same outcome


async def test_a_rejected_answer_s_early_anchoring_is_never_used(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Rejected every time: Beast Mode's answer (same text, but the run went on: more
    # sources seen) is anchored anew, after the last verdict, never from the early task.
    result, log, provider = await anchored_run(monkeypatch, strict_pass=False)
    anchors = [i for i, (edge, _) in enumerate(log) if edge == "anchor"]
    last_verdict = provider.calls_of("evaluator")[-1][1]
    assert result.answer and anchors[-1] > last_verdict


def test_early_anchors_are_taken_only_for_the_same_text_and_sources() -> None:
    async def go() -> None:
        deps, _ = make_deps(lambda r: None)
        state = AgentState.start(QUESTION)
        early = EarlyAnchors()
        for text, grow, taken in (("A.", False, True), ("A.", True, False), ("B.", False, False)):
            early.start("A.", state, deps, RunOptions())
            if grow:
                state.add_search_result("https://new.org/", "t", "s", None)
            task = early.take(text, state)
            assert (task is not None) is taken
            if task is not None:
                assert (await task)[0] == "A."
        early.start("A long answer.\n\nIn two paragraphs.", state, deps, RunOptions())
        assert early.take("A long answer.\n\nIn two paragraphs.", state) is None  # edited first

    asyncio.run(go())
