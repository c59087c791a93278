"""Each action's effect on the state, through the loop with a scripted LLM."""

from __future__ import annotations

import re
from typing import Any

import pytest

from deepsearch.agent.loop import ResearchRun
from deepsearch.agent.schema import allowed_actions
from deepsearch.llm.base import CompletionRequest
from deepsearch.sandbox.runner import Sandbox, SandboxLimits
from deepsearch.web.types import Page, ReadFailure, SearchResult
from tests.agent.helpers import evaluator_reply, make_deps, options
from tests.fakes.memory_web import FakeReader, FakeSearch

Q = "How many moons do Mars and Jupiter have together?"


def scripted(steps: list[dict[str, Any]], coder: list[str] | None = None) -> Any:
    queue = list(steps)
    code = list(coder or [])

    def reply(request: CompletionRequest) -> Any:
        if request.tool in ("agent", "agent_beast"):
            return queue.pop(0) if len(queue) > 1 else queue[0]
        if request.tool == "coder":
            return {"think": "", "code": code.pop(0) if len(code) > 1 else code[0]}
        if request.tool == "finalizer":
            return request.messages[-1].content
        if request.tool == "error_analyzer":
            return {"recap": "r", "blame": "b", "improvement": "i"}
        return evaluator_reply(request)

    return reply


def results(urls: list[str]) -> FakeSearch:
    return FakeSearch(
        lambda q: [
            SearchResult(title=u, url=u, snippet=f"about {u}", provider="fake") for u in urls
        ]
    )


async def test_search_drops_queries_already_searched_and_pools_hits() -> None:
    search = results(["https://a.org/1", "https://b.org/2"])
    steps = [
        {"think": "", "action": {"search": {"queries": ["mars moons", "Mars  Moons", ""]}}},
        {"think": "", "action": {"reflect": {"questions": ["how many moons has mars?"]}}},
        {"think": "", "action": {"search": {"queries": ["mars moons", "jupiter moons"]}}},
        {"think": "", "action": {"answer": {"answer": "97"}}},
    ]
    deps, _ = make_deps(scripted(steps), search=search, reader=FakeReader({}))
    run = ResearchRun(Q, deps, options(max_steps=4))
    await run.run()
    assert [q.q for q in search.queries] == ["mars moons", "jupiter moons"]
    pool = run.state.url_pool
    assert pool["https://a.org/1"].weight == 2.0  # +1 per hit
    assert any(k.type == "side-info" for k in run.state.knowledge)
    # The step log leads with what came back (a narrow terminal cuts the line's end).
    search_steps = [s.detail for s in run.state.steps if s.action == "search"]
    assert search_steps[0].startswith("2 results: mars moons")


async def test_visit_detail_leads_with_the_count_and_shows_readable_addresses() -> None:
    url = "https://wiki.example.org/wiki/Al%C3%BB_(demon)"
    search = results([url])
    reader = FakeReader(
        {
            url: Page(
                url=url,
                final_url=url,
                title="Alû",
                text="Alû is a demon.",
                fetched_at="2026-01-01T00:00:00Z",
            )
        }
    )
    steps = [
        {"think": "", "action": {"search": {"queries": ["alu demon"]}}},
        {"think": "", "action": {"visit": {"url_indices": [1]}}},
        {"think": "", "action": {"answer": {"answer": "a demon"}}},
    ]
    deps, _ = make_deps(scripted(steps), search=search, reader=reader)
    run = ResearchRun(Q, deps, options(max_steps=3))
    await run.run()
    visit = next(s.detail for s in run.state.steps if s.action == "visit")
    assert visit == "read 1: Alû"  # the page's title (issue 36, item 10), not its URL


async def test_visit_tops_up_records_failures_and_drops_dead_hosts() -> None:
    urls = [f"https://h{i}.org/p" for i in range(4)] + ["https://dead.org/a", "https://dead.org/b"]
    pages: dict[str, str | Page] = {u: f"page {u} " * 20 for u in urls[:3]}

    class Reader(FakeReader):
        async def read(self, url: str) -> Page | ReadFailure:
            if url.startswith("https://dead.org"):
                self.reads.append(url)
                return ReadFailure(url=url, kind="dns", detail="no such host")
            return await super().read(url)

    reader = Reader(pages)
    steps = [
        {"think": "", "action": {"search": {"queries": ["x"]}}},
        {"think": "", "action": {"visit": {"url_indices": [42, 0, -1]}}},
        {"think": "", "action": {"answer": {"answer": "a"}}},
    ]
    deps, _ = make_deps(scripted(steps), search=results(urls), reader=reader)
    run = ResearchRun(Q, deps, options(max_steps=3))
    await run.run()
    st = run.state
    # Nonsense picks ignored, topped up by rank to five: the five read ahead.
    assert len(st.visited) == 5 and set(st.visited) == set(run.prefetch.started[:5])
    assert set(st.visited) <= set(reader.reads)
    assert len(st.read_urls) == len([u for u in st.visited if u in pages])
    assert set(st.failed_urls) == {u for u in st.visited if u not in pages}
    failed_dead = [u for u in st.failed_urls if "dead.org" in u]
    assert failed_dead and all("dns" in st.failed_urls[u] for u in failed_dead)
    assert "dead.org" in st.dead_hosts
    assert not [u for u in st.url_pool if "dead.org" in u], "a dead host leaves the pool"
    assert sum(k.type == "url" for k in st.knowledge) == len(st.read_urls)


async def test_in_page_links_join_the_pool_at_a_tenth() -> None:
    page = Page(
        url="https://a.org/1",
        final_url="https://a.org/1",
        title="A",
        text="text " * 50,
        links=[("next page", "https://c.org/next?utm_source=x"), ("mail", "mailto:x@y.z")],
        fetched_at="2026-01-01T00:00:00Z",
    )
    steps = [
        {"think": "", "action": {"search": {"queries": ["x"]}}},
        {"think": "", "action": {"visit": {"url_indices": [1]}}},
        {"think": "", "action": {"answer": {"answer": "a"}}},
    ]
    deps, _ = make_deps(
        scripted(steps),
        search=results(["https://a.org/1"]),
        reader=FakeReader({"https://a.org/1": page}),
    )
    run = ResearchRun(Q, deps, options(max_steps=3))
    await run.run()
    assert run.state.url_pool["https://c.org/next"].weight == 0.1  # normalized, tracking dropped
    assert not [u for u in run.state.url_pool if u.startswith("mailto")]


async def test_subquestion_answer_becomes_knowledge_and_leaves_the_gaps() -> None:
    steps = [  # step n works on gaps[n % len(gaps)]
        {"think": "", "action": {"search": {"queries": ["moons"]}}},
        {
            "think": "",
            "action": {"reflect": {"questions": ["How many moons has Mars?", Q]}},
        },
        {"think": "", "action": {"answer": {"answer": "Mars has two moons."}}},
        {"think": "", "action": {"answer": {"answer": "97 moons in total."}}},
    ]
    deps, provider = make_deps(scripted(steps))
    run = ResearchRun(Q, deps, options(max_steps=4, direct_answer=False))
    result = await run.run()
    st = run.state
    assert st.all_questions == [Q, "How many moons has Mars?"]  # the repeat of Q was dropped
    assert st.gaps == [Q]
    qa = [k for k in st.knowledge if k.type == "qa"]
    assert qa and qa[0].question == "How many moons has Mars?" and "two moons" in qa[0].answer
    assert qa[0].pinned  # an accepted sub-answer is always shown
    assert provider.calls_for("agent")[2].messages[-1].content == "How many moons has Mars?"
    assert result.status == "answered" and "97" in result.answer
    assert [s.action for s in result.steps] == ["search", "reflect", "answer", "answer"]


async def test_coding_runs_in_the_sandbox_with_the_error_fed_back() -> None:
    steps = [
        {"think": "", "action": {"search": {"queries": ["moons"]}}},
        {"think": "", "action": {"coding": {"problem": "count the knowledge items"}}},
        {"think": "", "action": {"answer": {"answer": "done"}}},
    ]
    bad, good = "result = undefined_name", "result = len(data['knowledge']) * 10"
    sandbox = Sandbox(SandboxLimits(cpu_s=2, wall_s=5))
    deps, provider = make_deps(
        scripted(steps, coder=[bad, good]),
        search=results(["https://a.org/1"]),
        sandbox=sandbox,
    )
    run = ResearchRun(Q, deps, options(max_steps=3))
    await run.run()
    coding = [k for k in run.state.knowledge if k.type == "coding"]
    assert coding and coding[0].answer == "10"
    coder_calls = provider.calls_for("coder")
    assert len(coder_calls) == 2
    assert "NameError" in coder_calls[1].system  # the first attempt's error was shown


async def test_coding_is_refused_without_isolation() -> None:
    from deepsearch.sandbox.isolation import IsolationPlan

    sandbox = Sandbox(probe=lambda: IsolationPlan(usable=False, reason="no namespaces here"))
    steps = [  # step 2 is the first that could offer coding (never on step 1)
        {"think": "", "action": {"search": {"queries": ["eiffel tower"]}}},
        {"think": "", "action": {"answer": {"answer": "x"}}},
    ]
    events: list[Any] = []
    deps, provider = make_deps(scripted(steps), sandbox=sandbox, events=events)
    run = ResearchRun(Q, deps, options(max_steps=3, direct_answer=False))
    await run.run()
    allowed = [allowed_actions(c.json_schema or {}) for c in provider.calls_for("agent")]
    assert len(allowed) >= 2 and all("coding" not in a for a in allowed)
    assert run.gate.withdrawn == {"coding": "no namespaces here"}
    # The view is told once, with the reason (which names how to enable it).
    said = [e.text for e in events if getattr(e, "kind", "") == "notice"]
    assert said.count("coding action off: no namespaces here") == 1


async def test_knowledge_beyond_the_context_is_left_out_and_said() -> None:
    from deepsearch.agent.types import KnowledgeItem

    events: list[Any] = []
    steps = [{"think": "", "action": {"answer": {"answer": "forced"}}}]
    deps, provider = make_deps(
        scripted(steps),
        events=events,
        budget=40_000,  # knowledge allowance: 4,000 tokens, below six 1,000-token answers
    )
    run = ResearchRun(Q, deps, options(max_steps=1, direct_answer=False))
    for n in range(6):
        run.state.add_knowledge(
            KnowledgeItem(question=f"Moons {n}?", answer="moons of Mars " * 330, type="qa")
        )
    await run.run()
    last_prompt = provider.calls_for("agent")[-1].system
    left_out = re.search(r"\((\d+) older or less relevant items not shown\)", last_prompt)
    assert left_out is not None and int(left_out.group(1)) > 0
    assert any("left out of the prompt" in getattr(e, "text", "") for e in events)
    assert len(run.state.knowledge) >= 6  # all kept in the state


async def test_harvested_links_are_their_own_capped_class_and_a_search_hit_upgrades_one() -> None:
    from deepsearch.agent.actions.search import add_to_pool
    from deepsearch.agent.actions.visit import MAX_LINK_CANDIDATES, MAX_LINKS_PER_PAGE, _add_links
    from deepsearch.agent.state import AgentState

    st = AgentState.start(Q)

    def page(n: int) -> Page:
        links = [(f"Link {n}-{i}", f"https://w.org/p{n}_{i}") for i in range(200)]
        return Page(url="u", final_url="u", text="t", links=links, fetched_at="2026-01-01")

    _add_links(st, page(0))
    assert len(st.url_pool) == MAX_LINKS_PER_PAGE
    for n in range(1, 6):
        _add_links(st, page(n))
    assert len(st.url_pool) == MAX_LINK_CANDIDATES  # pool-wide cap
    record = st.url_pool["https://w.org/p0_3"]
    assert (record.origin, record.weight, record.hits) == ("link", 0.1, 0)
    assert not st.snippets, "an anchor is not evidence"
    add_to_pool(st, SearchResult(title="P", url=record.url, snippet="real", provider="x"))
    assert (record.origin, record.hits, record.snippet) == ("search", 1, "real")
    assert record.weight == 1.1


def test_a_link_to_a_pooled_url_raises_its_weight_without_a_new_record() -> None:
    from deepsearch.agent.actions.search import add_to_pool
    from deepsearch.agent.actions.visit import LINK_WEIGHT, _add_links
    from deepsearch.agent.state import AgentState

    st = AgentState.start(Q)
    add_to_pool(st, SearchResult(title="P", url="https://w.org/p", snippet="s", provider="x"))
    links = [("P again", "https://w.org/p"), ("New", "https://w.org/new")]
    _add_links(st, Page(url="u", final_url="u", text="t", links=links, fetched_at="2026-01-01"))
    assert st.url_pool["https://w.org/p"].weight == pytest.approx(1.0 + LINK_WEIGHT)
    assert st.url_pool["https://w.org/p"].origin == "search"  # still a search result
    assert st.url_pool["https://w.org/new"].weight == pytest.approx(LINK_WEIGHT)
