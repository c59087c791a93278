"""Progress is new information about an open hop (issue 32): a run that reads a new page
of the chain each step never stalls, pages that only share the question's words are no
step of the chain, and the numbers the docs print are the rule's. The pins of issue 37
for the read watch are here too."""

from __future__ import annotations

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
# Later hops: each page names the next, sharing no content word with the question.
NAMES = ["Greta Gorrin", "Jost Brell", "Saul Ivell", "Emil Zarin", "Mira Odell", "Orm Quist"]


def read_page(state: AgentState, url: str, text: str) -> None:
    item = KnowledgeItem(question=f"page {url}", answer=text, type="url", references=[url])
    state.add_knowledge(item)
    state.add_evidence(PageEvidence(url=url, title=url, chunks=evidence_chunks(text), item=item))


def hop_page(n: int) -> str:
    return f"{NAMES[n]} learned the trade in the workshop of {NAMES[n + 1]}, far to the south."


def watched(state: AgentState) -> ProgressWatch:
    watch = ProgressWatch()
    assert not watch.stalled(state)  # the first call takes stock
    return watch


def test_a_run_reading_a_new_page_of_the_chain_each_step_never_stalls() -> None:
    """search the name, read its page, search the next name...: the weak model never
    reflects, and no page after the first shares more than one word with the question."""
    state = AgentState.start(QUESTION)
    watch = watched(state)
    read_page(state, "https://w.org/bridge", FIRST)
    assert not watch.stalled(state)
    for n in range(len(NAMES) - 1):
        state.record_queries([NAMES[n].lower()])  # a step that only searched (no result)
        assert not watch.stalled(state), f"stalled after searching hop {n + 2}"
        read_page(state, f"https://w.org/hop{n}", hop_page(n))
        assert not watch.stalled(state), f"stalled after reading hop {n + 2}"
        assert watch.steps_since_hop == 0  # the page of the chain was the step's hop
    assert watch.reason() == "no new evidence in 0 steps"  # never stopped: nothing to say


def test_the_agent_steps_own_words_name_the_hop_when_a_page_holds_them() -> None:
    state = AgentState.start(QUESTION)
    watch = watched(state)
    read_page(state, "https://w.org/bridge", FIRST)
    assert watch.judge(state)
    state.record_step("visit", "The bridge page says Greta Gorrin designed it.", "read 1")
    watch.judge(state)
    assert "gorrin" in state.focus.bridges
    state.record_step("search", "Maybe Tomas Quist taught her?", "0 results")  # on no page
    assert not watch.judge(state) and "quist" not in state.focus.bridges


def test_pages_that_only_share_the_questions_words_are_no_step_of_the_chain() -> None:
    """Distractors ("... Society", "Journal of ...") each bring a new passage in the
    question's words: evidence, but no hop; the chain rule ends the run at 8 steps."""
    state = AgentState.start(QUESTION)
    watch = watched(state)
    read_page(state, "https://w.org/bridge", FIRST)
    assert not watch.stalled(state)  # the first page of the question is the first hop
    for n, name in enumerate(["Society", "Trust", "Journal", "Friends", "Survey", "Guild"]):
        read_page(
            state,
            f"https://w.org/d{n}",
            f"The Harlow Mill Bridge {name} was first recorded in {1900 + n}; its architects "
            "and mentors meet every year.",
        )
        assert not watch.stalled(state)
        assert watch.idle_steps == 0  # new evidence all the same
    state.record_queries(["harlow mill bridge mentor"])  # nothing new either
    assert not watch.stalled(state)
    assert watch.stalled(state)  # the 8th step without a hop
    assert watch.reason() == "no new step of the chain in 8 steps"


def test_four_steps_without_anything_new_end_research_as_the_readme_says() -> None:
    state = AgentState.start(QUESTION)
    watch = watched(state)
    assert [watch.stalled(state) for _ in range(4)] == [False, False, False, True]
    assert watch.reason() == "no new evidence in 4 steps"


def test_a_pages_later_relevant_passages_are_recorded_as_seen() -> None:
    state = AgentState.start(QUESTION)
    watch = watched(state)
    padding = " The river runs fast under its three arches, and carts crossed it daily." * 4
    first = FIRST + padding
    second = "The Harlow Mill Bridge deed was first recorded by the mentor's clerk." + padding
    read_page(state, "https://w.org/bridge", f"{first}\n\n{second}")
    assert len(state.evidence["https://w.org/bridge"].chunks) == 2
    assert watch.judge(state)
    read_page(state, "https://mirror.org/bridge", second)  # only the page's second passage
    assert not watch.judge(state)


# ----------------------------------------------------------------- the read watch (issue 37)

GUARD = "blocked: host '127.0.0.1' resolves to a non-public address (127.0.0.1)"


def test_http_407_and_451_are_refused_reads() -> None:
    assert refusal("http_status: HTTP 407 Proxy Authentication Required") == "http"
    assert refusal("http_status: HTTP 451 Unavailable For Legal Reasons") == "http"
    assert refusal("http_status: HTTP 410 Gone") is None


def test_guard_and_network_refusals_together_are_no_configuration_error() -> None:
    state = AgentState.start(QUESTION)
    state.add_knowledge(KnowledgeItem(question="results", answer="x", type="side-info"))
    watch = ReadWatch()
    for n in range(2):
        urls = {f"http://127.0.0.1/{n}": GUARD, f"https://a.org/{n}": "network: ConnectError"}
        state.mark_visiting(list(urls))
        for url, reason in urls.items():
            state.mark_failed(url, reason)
        if n == 0:
            watch.check(state)
            continue
        try:
            watch.check(state)
        except WebUnreadable as exc:
            assert not exc.configuration
        else:
            raise AssertionError("every read refused twice in a row must end the run")


def test_a_model_that_only_clicks_the_link_in_the_prose_follows_the_chain() -> None:
    """No query, no think: the model picks the link the first page's prose holds. The
    same name in a navbox link it read teaches nothing: a stuck model reads menus."""
    state = AgentState.start(QUESTION)
    watch = watched(state)
    read_page(state, "https://w.org/bridge", FIRST)
    assert not watch.stalled(state)
    state.pool_link("https://w.org/nav/Greta_Gorrin", "Greta Gorrin", 0.1)  # navigation
    state.mark_visiting(["https://w.org/nav/Greta_Gorrin"])
    assert watch.news(state) is None and not state.focus.bridges
    state.pool_link("https://w.org/Greta_Gorrin", "Greta Gorrin", 0.1)
    state.url_pool["https://w.org/Greta_Gorrin"].passage = True  # inline in FIRST's prose
    state.mark_visiting(["https://w.org/Greta_Gorrin"])
    read_page(state, "https://w.org/Greta_Gorrin", hop_page(0))
    assert watch.news(state) == "hop"
    assert "gorrin" in state.focus.bridges


def test_each_part_of_a_multi_part_question_is_a_hop_of_its_own() -> None:
    """ "Compare Alpha, Beta and Gamma": the first passage about each part is a hop; a
    second one about the same part, or one about no part, is evidence only."""
    state = AgentState.start("Compare the 2020 populations of Alpha, Beta and Gamma.")
    watch = watched(state)
    for part in ("Alpha", "Beta", "Gamma"):
        read_page(state, f"https://s.org/{part}", f"{part} had a population of 9,000 in 2020.")
        assert watch.news(state) == "hop", part
    read_page(state, "https://s.org/beta2", "In 2020 the population of Beta grew by a tenth.")
    assert watch.news(state) == "lead"
    read_page(state, "https://s.org/all", "Alpha, Beta and Gamma: populations compared in 2020.")
    assert watch.news(state) == "lead"
