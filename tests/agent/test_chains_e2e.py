"""Issue 32's "done when", end to end on link-dense loopback pages (tests/fakes/chains.py):
a weak model that never reflects follows a 4-hop chain among distractors to the
answer, reaches a last hop that only a link leads to, ends a dead end early and
honestly, and with --effort low's limits Beast Mode still sees every hop."""

from __future__ import annotations

from typing import Any

import pytest

from deepsearch.agent.deps import RunOptions
from deepsearch.agent.loop import ResearchRun
from deepsearch.agent.result import ResearchResult
from deepsearch.config import ReaderConfig
from deepsearch.web.reader import LocalReader
from tests.agent.helpers import make_deps, options
from tests.fakes.chains import Chain, ChainModel, chain_world
from tests.fakes.clock import FakeClock
from tests.fakes.dead_end import CountingSandbox
from tests.fakes.web_server import LoopbackServer, wiki_slug

BUDGET = 500_000


async def research(
    chain: Chain, *, budget: int = BUDGET, opts: RunOptions | None = None
) -> tuple[ResearchResult, ChainModel, list[Any]]:
    model = ChainModel(chain)
    with LoopbackServer(routes=chain.routes()) as wiki:
        reader = LocalReader(ReaderConfig(allow_private_urls=True), clock=FakeClock())
        search = chain.engine(wiki)
        try:
            deps, _ = make_deps(
                model,
                budget=budget,
                search=search,
                reader=reader,  # type: ignore[arg-type]
                sandbox=CountingSandbox(),
            )
            result = await ResearchRun(chain.question, deps, opts or options()).run()
        finally:
            await reader.aclose()
    return result, model, search.queries


@pytest.mark.timeout(60)
async def test_a_weak_model_follows_a_four_hop_chain_among_distractors() -> None:
    chain = chain_world(3, 4)
    result, _, _ = await research(chain)
    assert result.status == "answered" and chain.gold in result.answer
    assert result.stop_reason == "answer accepted"
    read = {u.rsplit("/", 1)[-1] for u in result.read_urls}
    assert {wiki_slug(t) for t in chain.titles} <= read
    assert read & {wiki_slug(t) for t in chain.distractors}  # they were read, and cost nothing


@pytest.mark.timeout(60)
async def test_the_last_hop_only_a_link_leads_to_is_read() -> None:
    chain = chain_world(5, 4, link_only=True)
    result, _, queries = await research(chain)
    last = chain.titles[-1]
    assert any(last in q.q for q in queries), "the model looked for it by name first"
    assert result.status == "answered" and chain.gold in result.answer
    assert any(u.endswith(f"/wiki/{wiki_slug(last)}") for u in result.read_urls)


@pytest.mark.timeout(60)
async def test_a_dead_end_ends_early_and_honestly() -> None:
    chain = chain_world(2, 5, dead_end=True)
    result, _, _ = await research(chain)
    assert result.status == "not_found" and result.exit_code == 4
    assert len(result.steps) <= 20 and result.usage.total_tokens <= BUDGET // 4
    assert result.stop_reason in (
        "no new evidence in 4 steps",
        "no new step of the chain in 8 steps",
    )


@pytest.mark.timeout(60)
async def test_beast_mode_sees_every_hop_at_effort_low() -> None:
    """--effort low: 10 steps, the 5th hop's page is read at the last step;
    the prompt that answers is Beast Mode's, and it holds every hop."""
    chain = chain_world(1, 5)
    low = options(max_steps=10, max_bad_attempts=1, reflect=False)
    result, model, _ = await research(chain, budget=100_000, opts=low)
    assert result.stop_reason == "step limit of 10 reached"
    assert all(model.in_view(model.prompts[-1])), "Beast Mode's prompt lost a hop"
    assert result.status == "forced" and chain.gold in result.answer


@pytest.mark.timeout(60)
async def test_at_a_tiny_budget_beast_mode_still_sees_every_hop_read() -> None:
    """--budget 15000: research ends (85%) right after the search for hop 3's name; Beast
    Mode's knowledge allowance is its 200-token floor, and the two hops read stay in it."""
    chain = chain_world(0, 4)
    result, model, _ = await research(chain, budget=15_000)
    assert result.stop_reason == "85% of the 15k-token budget used"
    assert model.in_view(model.prompts[-1])[:2] == [True, True], "Beast Mode lost a hop"
    assert result.status == "not_found"  # hops 3 and 4 were never read: honestly so


@pytest.mark.timeout(60)
async def test_a_model_that_never_searches_a_name_follows_the_links() -> None:
    chain = chain_world(0, 3)
    model = ChainModel(chain, clicks_only=True)
    with LoopbackServer(routes=chain.routes()) as wiki:
        reader = LocalReader(ReaderConfig(allow_private_urls=True), clock=FakeClock())
        search = chain.engine(wiki)
        try:
            deps, _ = make_deps(model, search=search, reader=reader)  # type: ignore[arg-type]
            result = await ResearchRun(chain.question, deps, options()).run()
        finally:
            await reader.aclose()
    assert not any(
        t.split()[-1].lower() in q.q.lower() for t in chain.titles[1:] for q in search.queries
    )
    assert result.status == "answered" and chain.gold in result.answer


@pytest.mark.timeout(60)
async def test_a_three_part_comparison_of_two_hops_each_is_answered() -> None:
    """bench/team_world.py, one agent: each part's census page names a yearbook the
    model then searches; the yearbook pages answer. Twelve research steps, and no
    step of the chain is missed: each part's first page is a hop."""
    from bench import team

    figures = await team.measure(team.world.QUESTION, 1, hops=2, scale=0.0)
    assert figures.status == "answered" and figures.correct
