"""The prompt keeps the chain (issue 32): a passage that answered a hop stays in its
page's excerpt whatever the page's share and its item comes first when knowledge must
be cut; what is cut is written to the trace, and the live view is told when the chain
itself no longer fits. Links are research too: the next hop's link in a read page's
prose ranks first and is read, navigation naming it is not."""

from __future__ import annotations

from typing import Any

from deepsearch.agent.actions.visit import MAX_LINK_CANDIDATES, _add_links, choose_targets
from deepsearch.agent.cuts import report_cut
from deepsearch.agent.events import Notice
from deepsearch.agent.retrieval.evidence import PageEvidence, evidence_chunks, refresh_page
from deepsearch.agent.retrieval.focus import Focus
from deepsearch.agent.retrieval.ranking import rank_urls
from deepsearch.agent.retrieval.similarity import LexicalSimilarity
from deepsearch.agent.state import AgentState
from deepsearch.agent.types import KnowledgeItem
from deepsearch.web.types import Page
from tests.agent.helpers import make_deps, router
from tests.fakes.web_server import NAVBOX_TITLES

LEX = LexicalSimilarity()
QUESTION = "In which year was the mentor of the architect of the Harlow Mill Bridge first recorded?"
FILLER = "Carts crossed the river here daily, and the market drew traders from far away. " * 5
HOP = (
    "The Harlow Mill Bridge, first recorded in a deed, was designed by the architect Greta Gorrin."
)


def page(url: str, text: str) -> PageEvidence:
    item = KnowledgeItem(question=f"page {url}", answer="", type="url", references=[url])
    return PageEvidence(url=url, title=url, chunks=evidence_chunks(text), item=item)


async def test_passages_that_answered_hops_are_shown_at_the_smallest_share() -> None:
    mason = "The Harlow Mill Bridge deed, first recorded in 1702, names the mason Piet Odell."
    text = f"{FILLER}\n\n{HOP} {FILLER}\n\n{FILLER}\n\n{mason} {FILLER}"
    ev = page("https://w.org/bridge", text)
    assert len(ev.chunks) == 4
    focus = Focus.of(QUESTION)
    focus.learn("Greta Gorrin Piet Odell", [ev])  # the model followed both names
    assert ev.chain == {1, 3} and ev.item.pinned
    await refresh_page(ev, ["unrelated words only"], LEX, max_chars=200)
    assert ev.shown == [1, 3]  # neither cut to 200 characters nor left out
    assert "Greta Gorrin" in ev.item.answer and ev.item.answer.endswith(ev.chunks[3])


async def test_the_evidence_choice_looks_for_the_hops_learned() -> None:
    state = AgentState.start(QUESTION)
    hop2 = page("https://w.org/gorrin", f"{FILLER}\n\n{FILLER}\n\nGreta Gorrin {FILLER}")
    state.focus.learn("Greta Gorrin", [page("https://w.org/bridge", HOP)])
    assert state.focus_queries() == [QUESTION, "Greta Gorrin"]
    await refresh_page(hop2, state.research_queries(), LEX, max_chars=600)
    assert "Greta Gorrin" not in hop2.item.answer  # the question's words find nothing
    await refresh_page(hop2, state.focus_queries(), LEX, max_chars=600)
    assert "Greta Gorrin" in hop2.item.answer


async def test_what_the_prompt_left_out_is_in_the_trace_and_a_cut_chain_is_said() -> None:
    records: list[tuple[str, dict[str, Any]]] = []
    deps, _ = make_deps(router([]))
    deps.llm._trace = lambda kind, payload: records.append((kind, payload))  # the --trace tap
    events: list[Any] = []
    deps.emit = events.append
    state = AgentState.start(QUESTION)
    for n in range(6):
        chain = n == 1
        item = KnowledgeItem(
            question=f"page {n}", answer=f"{n} " + FILLER, type="url", pinned=chain
        )
        state.add_knowledge(item)
    report_cut(state, deps, allowance=300, tool="agent_beast")
    kind, record = records[-1]
    assert kind == "knowledge_cut" and record["tool"] == "agent_beast"
    left = {entry["id"] for entry in record["left_out"]}
    assert left and 2 not in left and record["chain_left_out"] == 0  # the chain came first
    assert not any(isinstance(e, Notice) and e.once == "chain_cut" for e in events)
    report_cut(state, deps, allowance=10, tool="agent_beast")  # not even the chain fits
    assert records[-1][1]["chain_left_out"] == 1
    assert any(isinstance(e, Notice) and e.once == "chain_cut" for e in events)


def _read_hop_page(state: AgentState) -> None:
    """A read page's links: its prose names the next hop; a navbox of 120 links, one of
    them naming the next hop too ("List of works by Jost Brell"); then distractors."""
    prose = "Greta Gorrin learned the trade in the workshop of Jost Brell, far to the south."
    navbox = [(t, f"https://w.org/wiki/{t.replace(' ', '_')}") for t in NAVBOX_TITLES]
    links = [
        *navbox[:10],
        ("List of works by Jost Brell", "https://w.org/wiki/List_of_works_by_Jost_Brell"),
        *navbox[10:60],
        ("Jost Brell", "https://w.org/wiki/Jost_Brell"),
        *navbox[60:],
    ]
    page_ = Page(url="u", final_url="u", text=prose, links=links, fetched_at="2026-01-01")
    _add_links(state, page_, [prose])
    for n in range(8):
        state.add_search_result(
            f"https://w.org/wiki/Harlow_Mill_Bridge_{n}",
            f"Harlow Mill Bridge Society {n}",
            "The Harlow Mill Bridge Society was first recorded in a deed; architects meet.",
            None,
        )
    state.focus.learn("Greta Gorrin", [page("https://w.org/bridge", HOP)])
    hop2 = page("https://w.org/gorrin", "Greta Gorrin learned the trade from Jost Brell.")
    assert state.focus.learn("jost brell", [hop2])  # the weak model searched the name


def test_links_in_a_pages_prose_join_a_full_pool_navigation_does_not() -> None:
    state = AgentState.start(QUESTION)
    for n in range(MAX_LINK_CANDIDATES):
        state.pool_link(f"https://w.org/old/{n}", f"Old {n}", 0.1)
    _read_hop_page(state)
    assert state.url_pool["https://w.org/wiki/Jost_Brell"].passage  # past the cap (and 50th)
    assert "https://w.org/wiki/List_of_works_by_Jost_Brell" not in state.url_pool


async def test_the_next_hops_link_in_the_prose_ranks_first_and_is_read() -> None:
    state = AgentState.start(QUESTION)
    _read_hop_page(state)
    records = list(state.url_pool.values())
    shown = await rank_urls(records, question=QUESTION, sim=LEX, focus=state.focus)
    assert shown[0].url == "https://w.org/wiki/Jost_Brell" and shown[0].chain
    # A navbox link naming the next hop gets nothing from the focus: it ranks with the
    # rest of the navigation, at half a search result's score.
    navigation = next(u for u in shown if "List_of_works" in u.url)
    assert not navigation.chain and navigation.score < shown[0].score / 2
    state.shown_urls = shown
    # The model picks a distractor; the chain link is read beside it, not navigation.
    targets = choose_targets(state, [shown[1].index])
    assert "https://w.org/wiki/Jost_Brell" in targets
    assert not any("List_of" in t or "Lighthouse" in t for t in targets)


async def test_a_link_in_a_relevant_passage_beats_navigation_before_it_is_named() -> None:
    """The model has named nothing yet: the link the question's page gives in its prose
    ranks above a navbox link whose anchor is in the question's words."""
    state = AgentState.start(QUESTION)
    ev = page("https://w.org/bridge", HOP)
    state.add_evidence(ev)
    prose = ("Greta Gorrin", "https://w.org/wiki/Greta_Gorrin")
    nav = ("List of architects of the Harlow Mill Bridge", "https://w.org/wiki/List_Harlow")
    lone = page("https://w.org/coat", "The Coldry coat of arms shows a black bear.")
    lone.links = [("Coldry", "https://w.org/wiki/Coldry")]  # prose, but an irrelevant passage
    state.add_evidence(lone)
    text = f"{HOP} Coldry"
    page_ = Page(
        url="u", final_url="u", text=text, links=[nav, prose, lone.links[0]], fetched_at="x"
    )
    ev.links = _add_links(state, page_, [HOP])
    assert ev.links == [prose]
    state.pool_link("https://w.org/wiki/Coldry", "Coldry", 0.1)
    state.url_pool["https://w.org/wiki/Coldry"].passage = True
    near = state.focus.near_links(state.evidence.values())
    assert near == {"https://w.org/wiki/Greta_Gorrin"}
    records = list(state.url_pool.values())
    shown = await rank_urls(records, question=QUESTION, sim=LEX, focus=state.focus, near=near)
    assert [u.url for u in shown][:1] == ["https://w.org/wiki/Greta_Gorrin"]
    assert not shown[0].chain  # listed first, but not read unasked: no hop names it yet


def test_the_prose_links_of_a_page_the_chain_links_to_lead_on() -> None:
    """The third hop's page was read before the model named it (a search found it):
    the chain links to it, so its own prose links are near the focus too; a page the
    chain does not link to leads nowhere."""
    focus = Focus.of(QUESTION)
    hop1 = page("https://w.org/bridge", HOP)
    hop1.links = [("Greta Gorrin", "https://w.org/Greta_Gorrin")]
    hop2 = page("https://w.org/Greta_Gorrin", "Greta learned the trade from Jost Brell.")
    hop2.links = [("Jost Brell", "https://w.org/Jost_Brell")]
    hop3 = page("https://w.org/Jost_Brell", "Jost relied on gifts from Saul Ivell.")
    hop3.links = [("Saul Ivell", "https://w.org/Saul_Ivell")]
    stray = page("https://w.org/coat", "The Coldry coat of arms shows a black bear.")
    stray.links = [("Coldry", "https://w.org/Coldry")]
    near = focus.near_links([hop1, hop2, hop3, stray])
    assert near == {
        "https://w.org/Greta_Gorrin",
        "https://w.org/Jost_Brell",
        "https://w.org/Saul_Ivell",
    }
