"""Where the research stands (retrieval/focus.py): the edges `make mutate` found
unpinned (issue 37): a question without content words, an open sub-question that
makes nothing else relevant, the score before and after the first hop, and the links
near the focus."""

from __future__ import annotations

from deepsearch.agent.progress import ProgressWatch
from deepsearch.agent.retrieval.evidence import PageEvidence, evidence_chunks, stems_of
from deepsearch.agent.retrieval.focus import Focus
from deepsearch.agent.state import AgentState
from deepsearch.agent.types import KnowledgeItem

QUESTION = "In which year was the mentor of the architect of the Harlow Mill Bridge first recorded?"
HOP = (
    "The Harlow Mill Bridge, first recorded in a deed, was designed by the architect Greta Gorrin."
)
OFF_TOPIC = "The coat of arms of Berlin shows a black bear on a silver shield."


def page(url: str, text: str, links: list[tuple[str, str]] = []) -> PageEvidence:  # noqa: B006
    item = KnowledgeItem(question=f"page {url}", answer=text, type="url", references=[url])
    ev = PageEvidence(url=url, title=url, chunks=evidence_chunks(text), item=item)
    ev.links = list(links)
    return ev


def test_a_question_without_content_words_takes_every_new_passage_and_only_the_first_rule() -> None:
    """ "Who?" cannot tell a relevant passage from another: novelty alone decides, and
    the chain rule (8 steps without a hop) does not apply (docs/chain.md)."""
    state = AgentState.start("Who?")
    watch = ProgressWatch()
    assert not watch.stalled(state)
    for n in range(10):
        text = f"Passage {n}: the weather in the valley was mild in spring number {n}."
        ev = page(f"https://w.org/{n}", text)
        state.add_knowledge(ev.item)
        state.add_evidence(ev)
        assert not watch.stalled(state), n
    assert watch.steps_since_hop >= 8


def test_an_open_sub_question_makes_its_passages_relevant_not_every_passage() -> None:
    focus = Focus.of(QUESTION)
    focus.set_open(["When was Hedda Marr born?"])
    assert focus.touches(stems_of("Hedda Marr was born in Graz in 1921.")) == "sub"
    assert focus.touches(stems_of(OFF_TOPIC)) is None


def test_no_title_scores_before_a_hop_and_the_first_hops_name_scores_full() -> None:
    focus = Focus.of(QUESTION)
    assert focus.score("Greta Gorrin") == 0.0  # nothing learned yet
    assert focus.score("Harlow Mill Bridge") == 0.0
    focus.learn("Greta Gorrin", [page("https://w.org/bridge", HOP)])
    assert focus.score("Greta Gorrin: a biography") == 1.0
    assert focus.score("Jost Brell") == 0.0


def test_links_in_a_passage_that_names_a_bridge_are_near_the_focus() -> None:
    focus = Focus.of(QUESTION)
    focus.learn("Greta Gorrin", [page("https://w.org/bridge", HOP)])
    gorrin = page(
        "https://w.org/gorrin",
        "Greta Gorrin trained with Jost Brell in Kessel.",
        [("Jost Brell", "https://w.org/Jost_Brell")],
    )
    assert focus.near_links([gorrin]) == {"https://w.org/Jost_Brell"}


def test_every_read_page_the_chain_links_to_leads_on_not_only_the_first() -> None:
    """Both pages the first hop's prose links to were read: each one's own links are
    near, whichever is looked at first and whatever unread link comes between."""
    focus = Focus.of(QUESTION)
    hop = page(
        "https://w.org/bridge",
        "The Harlow Mill Bridge, first recorded in a deed, was designed by Greta Gorrin "
        "and Jost Brell.",
        [
            ("Greta Gorrin", "https://w.org/Greta_Gorrin"),
            ("Jost Brell", "https://w.org/Jost_Brell"),
        ],
    )
    gorrin = page(
        "https://w.org/Greta_Gorrin",
        "A quiet life in the hills, far from any town.",
        [("Kessel", "https://w.org/Kessel")],
    )
    brell = page(
        "https://w.org/Jost_Brell",
        "He kept bees and wrote letters every winter.",
        [("Delft", "https://w.org/Delft")],
    )
    assert focus.near_links([hop, gorrin, brell]) == {
        "https://w.org/Greta_Gorrin",
        "https://w.org/Jost_Brell",
        "https://w.org/Kessel",
        "https://w.org/Delft",
    }
