"""Where the research stands (retrieval/focus.py): bridge terms are learned only when
the model's words and a relevant passage's names agree, and they make the next hop's
passages, titles and links relevant (issue 32)."""

from __future__ import annotations

from deepsearch.agent.retrieval.evidence import PageEvidence, evidence_chunks, stems_of
from deepsearch.agent.retrieval.focus import Focus, covers
from deepsearch.agent.types import KnowledgeItem

QUESTION = "In which year was the architect of the Harlow Mill Bridge first recorded in a deed?"
HOP_1 = (
    "The Harlow Mill Bridge, first recorded in a town deed, was designed by the architect "
    "Greta Gorrin.\n\nLocal fishermen walk along the shore at dawn."
)
HOP_2 = "Greta Gorrin is first named in a parish register of 1814."


def page(url: str, text: str) -> PageEvidence:
    item = KnowledgeItem(question=url, answer=text, type="url", references=[url])
    return PageEvidence(url=url, title=url, chunks=evidence_chunks(text), item=item)


def test_a_passage_with_exactly_the_relevance_bar_counts_one_word_less_does_not() -> None:
    question = frozenset({"harlow", "mill", "bridge", "archit", "deed"})  # bar: 2 of 5
    assert covers(question, frozenset({"harlow", "mill", "other"}))
    assert not covers(question, frozenset({"harlow", "other"}))
    ten = frozenset(f"w{i}" for i in range(10))  # bar: 4 of 10 (40%)
    assert covers(ten, frozenset(f"w{i}" for i in range(4)))
    assert not covers(ten, frozenset(f"w{i}" for i in range(3)))
    assert covers(frozenset({"single"}), frozenset({"single"}))  # 1 of 1: min(2, 1)


def test_a_bridge_needs_the_model_and_a_relevant_passage_to_agree() -> None:
    focus, hop1 = Focus.of(QUESTION), page("https://w.org/bridge", HOP_1)
    assert focus.learn("Tomas Quist", [hop1]) == []  # a name on no page: not trusted
    assert focus.learn("bridge architect harlow", [hop1]) == []  # the question's own words
    learned = focus.learn("greta gorrin birth", [hop1])  # a weak model's lowercase query
    assert {b.stem for b in learned} == {"greta", "gorrin"}
    assert {b.word for b in learned} == {"Greta", "Gorrin"}  # the page's spelling
    assert hop1.chain == {0} and hop1.item.pinned  # the passage that answered the hop
    assert focus.hop_queries() == ["Greta Gorrin"]
    off_topic = page("https://w.org/coat", "The Coldry coat of arms shows a black bear.")
    assert focus.learn("Coldry", [off_topic]) == []  # a name on an irrelevant page only


def test_the_next_hop_is_relevant_by_its_name_and_generic_words_carry_nothing() -> None:
    focus, hop1 = Focus.of(QUESTION), page("https://w.org/bridge", HOP_1)
    hop2 = stems_of(HOP_2)
    assert focus.touches(hop2, stems_of("Greta Gorrin")) is None  # before the model follows
    focus.learn("Greta Gorrin", [hop1])
    assert focus.touches(hop2, stems_of("Greta Gorrin")) == "bridge"
    # The page it was learned on is no next hop of itself.
    assert focus.touches(hop2, stems_of("Greta"), away_from="https://w.org/bridge") != "bridge"
    shore = "The Western Shore, by the Harlow Mill Bridge, was first recorded in a deed."
    focus.learn("Shore", [page("https://w.org/b2", shore)])
    assert "shore" in focus.bridges
    lowercase = "a walk along the shore"  # written as a word, not as a name
    assert focus.touches(stems_of(lowercase), frozenset()) is None


def test_titles_naming_the_newest_hop_score_highest() -> None:
    focus = Focus.of(QUESTION)
    focus.learn("Greta Gorrin", [page("https://w.org/bridge", HOP_1)])
    hop2 = page("https://w.org/gorrin", f"{HOP_2} She trained with Jost Brell in Kessel.")
    focus.learn("Jost Brell", [hop2])
    assert focus.score("Jost Brell") == 1.0
    assert 0.5 < focus.score("Greta Gorrin") < 1.0
    assert focus.score("Harlow Mill Bridge Society") == 0.0  # the question's words only
    assert focus.score("Aldmere Lighthouse") == 0.0
    assert focus.names_bridge("List of works by Jost Brell")
    assert not focus.names_bridge("jost brell")  # not written as a name
    assert focus.hop_queries() == ["Greta Gorrin", "Jost Brell"]


def test_an_open_sub_question_makes_its_passages_relevant() -> None:
    focus = Focus.of(QUESTION)
    bio = stems_of("Hedda Marr was born in Graz in 1921.")
    assert focus.touches(bio) is None
    focus.set_open(["When was Hedda Marr born?"])
    assert focus.touches(bio) == "sub"


def test_a_word_opening_a_sentence_is_no_name() -> None:
    """Any word opens a sentence capitalised ("Local records ...", "Now I search ..."):
    such words would carry relevance from page to page."""
    from deepsearch.agent.retrieval.focus import names_in

    said = "Now I search for Greta Gorrin. Local records say 1814 | Harlow Mill Bridge"
    assert names_in(said).split() == ["I", "Greta", "Gorrin", "1814", "Mill", "Bridge"]
    focus = Focus.of(QUESTION)
    hop1 = page("https://w.org/bridge", f"Local records of the Harlow Mill Bridge. {HOP_1}")
    learned = focus.learn("Local records: Greta Gorrin", [hop1])
    assert {b.stem for b in learned} == {"greta", "gorrin"}  # not "local", not "record"
