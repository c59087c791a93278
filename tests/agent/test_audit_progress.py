"""Outside mutation audit (issue 37): stop-rule behaviours no other test pinned
(agent/progress.py's docstring is the rule)."""

from __future__ import annotations

import pytest

from deepsearch.agent.retrieval.evidence import PageEvidence, evidence_chunks
from deepsearch.agent.state import AgentState
from deepsearch.agent.types import KnowledgeItem
from deepsearch.errors import WebUnreadable
from tests.agent.test_progress import watched

QUESTION = "Which psychologist founded the Journal of Applied Memory Research?"
FIRST_HOP = (
    "The Journal of Applied Memory Research was founded in 1962 by the psychologist "
    "Hedda Marr, who edited it until 1980."
)
FILLER = " ".join(["The weather in the valley was mild that year and the harvest was good."] * 8)
SAME_NAMES_AGAIN = (
    "Readers of the journal say the psychologist who founded the Journal of Applied "
    "Memory Research also ran its research group for years."
)


def test_a_verdict_on_an_answer_is_a_step_of_the_chain() -> None:
    """A check's attempt spent (or a re-check run) resets the no-hop count: research
    then ends by running out of attempts, not by the hop limit."""
    state = AgentState.start(QUESTION)
    watch = watched(state)
    state.rechecks += 1
    assert watch.news(state) == "hop"


def test_a_page_whose_first_passage_is_a_hop_stays_a_hop_whatever_follows() -> None:
    """A later passage of the same page that only covers the question again (a lead)
    does not take the page's hop away."""
    state = AgentState.start(QUESTION)
    watch = watched(state)
    url = "https://example.org/journal"
    text = f"{FIRST_HOP}\n\n{FILLER}\n\n{SAME_NAMES_AGAIN}"
    item = KnowledgeItem(question=f"page {url}", answer=text, type="url", references=[url])
    state.add_knowledge(item)
    chunks = evidence_chunks(text)
    assert len(chunks) == 3
    state.add_evidence(PageEvidence(url=url, title=url, chunks=chunks, item=item))
    assert watch.news(state) == "hop"


def test_a_harvested_link_is_no_new_search_result() -> None:
    """Only search results count as new by their title and snippet: a page's links
    (origin "link") are many, and a stuck model keeps harvesting them."""
    from deepsearch.agent.types import UrlRecord

    state = AgentState.start(QUESTION)
    watch = watched(state)
    url = "https://example.org/founders"
    state.url_pool[url] = UrlRecord(url=url, title=FIRST_HOP, origin="link")
    assert watch.news(state) is None
    other = "https://example.org/journal-history"
    state.url_pool[other] = UrlRecord(url=other, title=FIRST_HOP, origin="search")
    assert watch.news(state) == "lead"


def _read(state: AgentState, url: str, text: str) -> None:
    item = KnowledgeItem(question=f"page {url}", answer=text, type="url", references=[url])
    state.add_knowledge(item)
    state.add_evidence(PageEvidence(url=url, title=url, chunks=evidence_chunks(text), item=item))


def test_a_passage_without_any_of_the_questions_names_is_no_first_hop() -> None:
    """The chain's first page holds a name of the question ("Vienna"); a passage that
    only shares its other words is new evidence, not a step of the chain."""
    state = AgentState.start("Which psychologist founded the memory journal in Vienna?")
    watch = watched(state)
    _read(state, "https://example.org/a", "A psychologist founded a memory journal in 1962.")
    assert watch.news(state) == "lead"
    _read(state, "https://example.org/b", "In Vienna a psychologist founded the memory journal.")
    assert watch.news(state) == "hop"


def test_reads_that_time_out_are_refused_reads_of_a_network_that_cannot_fetch() -> None:
    """Two visits whose every read timed out while search works end the run with the
    network cause, as connection failures do."""
    from deepsearch.agent.progress import ReadWatch, refusal

    assert refusal("timeout: no complete answer in 20s") == "network"
    state = AgentState.start(QUESTION)
    state.add_knowledge(KnowledgeItem(question="q", answer="snippet", type="side-info"))
    watch = ReadWatch()
    for n in range(2):
        url = f"https://slow{n}.example/"
        state.visited.append(url)
        state.mark_failed(url, "timeout: no complete answer in 20s")
        if n == 0:
            watch.check(state)
    with pytest.raises(WebUnreadable, match="no page could be fetched"):
        watch.check(state)


def test_only_the_address_guard_s_blocks_are_read_as_the_guard() -> None:
    """A read blocked for another reason (an eval's answer-key site, a file outside the
    corpus, a scheme) is no sign of private addresses: --allow-private-urls would not
    help, so it is no refused read at all."""
    from deepsearch.agent.progress import refusal

    assert refusal("blocked: host 'intra' resolves to a non-public address (10.0.0.7)") == "guard"
    assert refusal("blocked: host 'localhost' is local") == "guard"
    assert refusal("blocked: answer-key site, blocked during an eval") is None
    assert refusal("blocked: outside the corpus folder") is None
