"""The stop rule's edges that `make mutate` found unpinned (issue 37): which passage of
a page is a step of the chain, a question without names, a page known by its text
only, and the read watch's refusals and the one line that names their cause."""

from __future__ import annotations

import pytest

from deepsearch.agent.progress import ProgressWatch, ReadWatch, refusal
from deepsearch.agent.retrieval.evidence import PageEvidence, evidence_chunks
from deepsearch.agent.state import AgentState
from deepsearch.agent.types import KnowledgeItem
from deepsearch.errors import WebUnreadable

QUESTION = "In which year was the mentor of the architect of the Harlow Mill Bridge first recorded?"
FIRST = (
    "The Harlow Mill Bridge, first recorded in a town deed, was designed by the architect "
    "Greta Gorrin."
)
AGAIN = "The Harlow Mill Bridge deed was first recorded by the mentor's clerk."
OFF_TOPIC = "The coat of arms of Berlin shows a black bear on a silver shield."
# Long enough that each paragraph of a page is a passage of its own.
PADDING = " The river runs fast under its three arches, and carts crossed it daily." * 4


def read_page(state: AgentState, url: str, *paragraphs: str) -> None:
    text = "\n\n".join(p + PADDING for p in paragraphs)
    item = KnowledgeItem(question=f"page {url}", answer=text, type="url", references=[url])
    state.add_knowledge(item)
    evidence = PageEvidence(url=url, title=url, chunks=evidence_chunks(text), item=item)
    assert len(evidence.chunks) == len(paragraphs)
    state.add_evidence(evidence)


def watched(state: AgentState) -> ProgressWatch:
    watch = ProgressWatch()
    assert not watch.stalled(state)  # the first call takes stock
    return watch


# ----------------------------------------------------------------- steps of the chain


def test_a_relevant_passage_after_an_off_topic_one_on_the_same_page_counts() -> None:
    """Pages open with menus and banners: the passage that matters may come second."""
    state = AgentState.start(QUESTION)
    watch = watched(state)
    read_page(state, "https://w.org/bridge", OFF_TOPIC, FIRST)
    assert watch.news(state) == "hop"


def test_a_page_whose_first_passage_is_a_hop_stays_a_hop_whatever_follows() -> None:
    state = AgentState.start(QUESTION)
    watch = watched(state)
    read_page(state, "https://w.org/bridge", FIRST, AGAIN)  # the second adds no new name
    assert not watch.stalled(state)
    assert watch.steps_since_hop == 0


def test_a_passage_in_the_questions_words_but_none_of_its_names_is_no_hop() -> None:
    """The chain's first page holds one of the question's names (the bridge); a page
    about mentors and architects in general is evidence, even read first."""
    state = AgentState.start(QUESTION)
    watch = watched(state)
    general = "A mentor of an architect was first recorded in the year of the guild's charter."
    read_page(state, "https://w.org/guilds", general)
    assert watch.news(state) == "lead"
    read_page(state, "https://w.org/bridge", FIRST)
    assert watch.news(state) == "hop"


def test_without_names_in_the_question_only_the_first_covering_passage_is_a_hop() -> None:
    state = AgentState.start(
        "which year was the first suspension bridge over a tidal river opened?"
    )
    assert not state.focus.names
    watch = watched(state)
    page = "The first suspension bridge over a tidal river was opened in the year of the fair."
    read_page(state, "https://w.org/a", page)
    assert watch.news(state) == "hop"
    read_page(state, "https://w.org/b", page.replace("fair", "great flood"))
    assert watch.news(state) == "lead"
    read_page(state, "https://w.org/c", page.replace("fair", "new charter"))
    assert watch.news(state) == "lead"


def test_a_page_known_by_its_text_only_is_judged_by_that_text() -> None:
    """A knowledge item of a page with no passages kept (and no URL): its text is the
    passage."""
    state = AgentState.start(QUESTION)
    watch = watched(state)
    state.add_knowledge(KnowledgeItem(question="a page", answer=OFF_TOPIC, type="url"))
    assert watch.news(state) is None
    state.add_knowledge(KnowledgeItem(question="a page", answer=FIRST, type="url"))
    assert watch.news(state) == "hop"


def test_a_name_learned_on_a_page_makes_that_page_a_lead_not_a_hop() -> None:
    """The model names a name the page it is reading gives: a lead. The hop is the
    page found with it (docs/chain.md), not the page it came from."""
    state = AgentState.start(QUESTION)
    watch = watched(state)
    read_page(state, "https://w.org/bridge", FIRST)
    assert watch.news(state) == "hop"
    society = (
        "The Harlow Mill Bridge Society, first recorded in 1950, honours the architect Ada Lorn."
    )
    read_page(state, "https://w.org/society", society)
    state.record_step("visit", "The society page names Ada Lorn.", "read 1")
    assert watch.news(state) == "lead"
    assert state.focus.bridges["lorn"].url == "https://w.org/society"
    read_page(state, "https://w.org/lorn", "Ada Lorn trained under Piet Varga in Delft.")
    assert watch.news(state) == "hop"


def test_what_a_follow_up_starts_with_is_no_news_four_idle_steps_still_stop_it() -> None:
    """Knowledge carried in before the first step (a follow-up's pages, a conversation's
    turns) is where the run starts, not something a step found."""
    state = AgentState.start(QUESTION)
    read_page(state, "https://w.org/bridge", FIRST)
    watch = ProgressWatch()
    assert [watch.stalled(state) for _ in range(5)] == [False, False, False, False, True]
    assert watch.reason() == "no new evidence in 4 steps"


def test_judging_before_any_step_takes_stock_first() -> None:
    """Beast Mode judges the last step even when a limit ended the run before step 1."""
    state = AgentState.start(QUESTION)
    read_page(state, "https://w.org/bridge", FIRST)
    watch = ProgressWatch()
    assert not watch.judge(state)
    read_page(state, "https://w.org/bridge-2", AGAIN)
    assert watch.judge(state)


def test_a_new_sub_question_is_a_lead_an_accepted_sub_answer_a_hop() -> None:
    state = AgentState.start(QUESTION)
    watch = watched(state)
    state.open_sub_questions(["When did Piet Varga die?"])  # on no page read
    assert watch.news(state) == "lead"
    answer = "Greta Gorrin designed the bridge."
    state.add_knowledge(KnowledgeItem(question="Who?", answer=answer, type="qa", pinned=True))
    assert watch.news(state) == "hop"


def test_each_rejected_answers_lesson_is_news_once() -> None:
    state = AgentState.start(QUESTION)
    watch = watched(state)
    for answer in ("1814", "1820"):
        lesson = KnowledgeItem(question=f"rejected: {answer}?", answer="too thin", type="qa")
        state.add_knowledge(lesson)
        assert watch.news(state) == "lead", answer
        state.add_knowledge(lesson.model_copy(update={"answer": "still too thin"}))
        assert watch.news(state) is None, answer


def test_each_new_relevant_search_result_is_news_not_only_the_first() -> None:
    state = AgentState.start(QUESTION)
    watch = watched(state)
    for n in range(3):
        title = f"Harlow Mill Bridge: its architect and mentor, first recorded (part {n})"
        state.add_search_result(f"https://r.org/{n}", title, "", None)
        assert watch.news(state) == "lead", n
    state.add_search_result("https://r.org/0", "Harlow Mill Bridge", "seen again", None)
    assert watch.news(state) is None


def test_a_search_result_naming_the_bridge_is_news_though_it_shares_no_question_word() -> None:
    state = AgentState.start(QUESTION)
    watch = watched(state)
    read_page(state, "https://w.org/bridge", FIRST)
    state.record_step("visit", "The architect is Greta Gorrin.", "read 1")
    watch.news(state)
    assert "gorrin" in state.focus.bridges
    state.add_search_result("https://r.org/gg", "Greta Gorrin", "A short biography.", None)
    assert watch.news(state) == "lead"
    state.add_search_result("https://r.org/x", "Tomas Quist", "A short biography.", None)
    assert watch.news(state) is None


def test_an_accepted_sub_answers_names_are_what_the_model_said() -> None:
    state = AgentState.start(QUESTION)
    watch = watched(state)
    read_page(state, "https://w.org/bridge", FIRST)
    watch.news(state)
    assert not state.focus.bridges
    qa = KnowledgeItem(question="Who designed it?", answer="Greta Gorrin", type="qa", pinned=True)
    state.add_knowledge(qa)
    watch.news(state)
    assert {"greta", "gorrin"} <= set(state.focus.bridges)


def test_every_query_of_a_step_is_said_in_full() -> None:
    state = AgentState.start(QUESTION)
    watch = watched(state)
    read_page(state, "https://w.org/bridge", FIRST)
    watch.news(state)
    state.record_queries(["harlow bridge mentor", "greta gorrin architect"])
    watch.news(state)
    assert {"greta", "gorrin"} <= set(state.focus.bridges)


def test_a_link_the_model_chose_is_said_once_not_at_every_later_step() -> None:
    """What the model said since the last judgement, and a page read since: a name the
    model clicked three steps ago does not make a later page a hop."""
    state = AgentState.start(QUESTION)
    watch = watched(state)
    state.pool_link("https://w.org/Greta_Gorrin", "Greta Gorrin", 0.1)
    state.url_pool["https://w.org/Greta_Gorrin"].passage = True  # in a page's prose
    state.mark_visiting(["https://w.org/Greta_Gorrin"])
    state.mark_failed("https://w.org/Greta_Gorrin", "http_status: HTTP 404 Not Found")
    assert watch.news(state) is None  # no page read holds the name: nothing learned
    read_page(state, "https://w.org/bridge", FIRST)
    watch.news(state)
    assert not state.focus.bridges


# ----------------------------------------------------------------- refused reads

GUARD = "blocked: host '127.0.0.1' resolves to a non-public address (127.0.0.1)"
JINA_403 = (
    "http_status: HTTP 403 AuthenticationRequiredError: Authentication is required to use "
    "this endpoint. Please provide a valid API key via Authorization header."
)


@pytest.mark.parametrize(
    "reason",
    [
        "blocked: scheme 'ftp' is not allowed",
        "blocked: answer-key site, blocked during an eval",
        "blocked: outside the corpus folder",
    ],
)
def test_a_read_blocked_by_a_rule_other_than_the_address_guard_is_no_refusal(reason: str) -> None:
    assert refusal(reason) is None


def test_a_network_reason_with_colons_in_its_detail_is_a_network_refusal() -> None:
    assert refusal("network: ConnectError: [Errno 111] Connection refused") == "network"
    assert refusal(GUARD) == "guard"


def refused_twice(*visits: dict[str, str]) -> WebUnreadable:
    state = AgentState.start(QUESTION)
    state.add_knowledge(KnowledgeItem(question="results", answer="x", type="side-info"))
    watch = ReadWatch()
    with pytest.raises(WebUnreadable) as caught:
        for failures in visits:
            state.mark_visiting(list(failures))
            for url, reason in failures.items():
                state.mark_failed(url, reason)
            watch.check(state)
    return caught.value


def test_unreachable_reads_are_counted_by_kind_in_the_error_line() -> None:
    exc = refused_twice(
        {
            "https://a.org/1": "network: ConnectError: [Errno 111] Connection refused",
            "https://b.org/1": "network: ConnectError: [Errno 111] Connection refused",
        },
        {"https://c.org/2": "timeout: no complete answer in 10s"},
    )
    assert str(exc) == (
        "no page could be fetched (3 reads in 2 visits, network ×2, timeout ×1) while "
        "search works: check the network connection, a proxy, or the reader's URL"
    )
    assert not exc.configuration


def test_a_refusing_readers_long_message_is_cut_to_40_characters() -> None:
    exc = refused_twice(
        {"https://a.org/1": JINA_403},
        {"https://b.org/2": JINA_403, "https://c.org/2": "http_status: HTTP 401 Unauthorized"},
    )
    assert "(3 reads in 2 visits, HTTP 403 AuthenticationRequiredError: Au ×2, " in str(exc)
    assert "HTTP 401 Unauthorized ×1) while search works" in str(exc)
    assert not exc.configuration


def test_the_error_line_names_the_three_most_frequent_refusals_only() -> None:
    forbidden, unauthorized = (
        "http_status: HTTP 403 Forbidden",
        "http_status: HTTP 401 Unauthorized",
    )
    exc = refused_twice(
        {
            "https://a.org/1": forbidden,
            "https://b.org/1": forbidden,
            "https://c.org/1": unauthorized,
        },
        {
            "https://d.org/2": forbidden,
            "https://e.org/2": unauthorized,
            "https://f.org/2": "http_status: HTTP 451 Unavailable For Legal Reasons",
            "https://g.org/2": "http_status: HTTP 407 Proxy Authentication Required",
        },
    )
    assert (
        "(7 reads in 2 visits, HTTP 403 Forbidden ×3, HTTP 401 Unauthorized ×2, "
        "HTTP 451 Unavailable For Legal Reasons ×1) while search works"
    ) in str(exc)
