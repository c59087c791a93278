"""A banned host (--bad-hostnames) is never cited (issue 36, item 3): its pages were
never read, and its search snippets, which used to be kept as side-info and cited,
are dropped when the results come in; the references builder refuses it too."""

from __future__ import annotations

from deepsearch.agent.loop import ResearchRun
from deepsearch.agent.state import AgentState
from deepsearch.agent.steps.finalize import citation_sources
from deepsearch.web.types import SearchResult
from tests.agent.actions.test_actions import scripted
from tests.agent.helpers import make_deps, options
from tests.fakes.memory_web import FakeReader, FakeSearch

Q = "When was the Eiffel Tower completed?"
ANSWER = "The Eiffel Tower was completed in 1889 for the World's Fair."
BANNED = "http://127.0.0.1:8080/eiffel"
GOOD = "https://history.example.org/eiffel"


def _hits() -> FakeSearch:
    return FakeSearch(
        lambda q: [
            SearchResult(title="Local copy", url=BANNED, snippet=ANSWER, provider="f"),
            SearchResult(title="History", url=GOOD, snippet="Built 1887-1889.", provider="f"),
        ]
    )


async def test_a_banned_hosts_snippet_is_neither_pooled_nor_cited() -> None:
    steps = [
        {"think": "", "action": {"search": {"queries": ["eiffel tower completed"]}}},
        {"think": "", "action": {"answer": {"answer": ANSWER}}},
    ]
    deps, _ = make_deps(scripted(steps), search=_hits(), reader=FakeReader({}))
    run = ResearchRun(Q, deps, options(max_steps=3, bad_hostnames=["127.0.0.1"]))
    result = await run.run()
    assert result.status == "answered"
    assert BANNED not in run.state.url_pool and BANNED not in run.state.snippets
    assert GOOD in run.state.url_pool
    assert not any(BANNED in k.references for k in run.state.knowledge)
    assert not any(ref.url == BANNED for ref in result.references)
    assert "127.0.0.1" not in result.answer


def test_the_references_builder_refuses_a_banned_host_whatever_brought_it_in() -> None:
    state = AgentState(question=Q)
    state.add_search_result(BANNED, "Local copy", ANSWER, None)
    state.add_search_result(GOOD, "History", "Built 1887-1889.", None)
    assert {s.url for s in citation_sources(state)} == {BANNED, GOOD}
    assert {s.url for s in citation_sources(state, ["127.0.0.1"])} == {GOOD}
