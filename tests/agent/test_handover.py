"""What a run hands a follow-up (agent/handover.py) and the follow-up's standalone
rewrite (agent/steps/follow_up.py)."""

from __future__ import annotations

from typing import Any

from deepsearch.agent.handover import Carryover, capture, seed
from deepsearch.agent.retrieval.evidence import PageEvidence
from deepsearch.agent.state import AgentState, PageText
from deepsearch.agent.steps.follow_up import standalone_question
from deepsearch.agent.types import KnowledgeItem
from deepsearch.llm.base import CompletionRequest
from tests.fakes.scripted_llm import scripted_client

URL = "https://example.org/film"


def earlier_state() -> AgentState:
    state = AgentState.start("Which film was shot in Leland in 1986?")
    state.add_search_result(URL, "Film", "a 1986 film", None)
    state.add_search_result("https://example.org/unread", "Unread", "not read", None)
    state.record_queries(["film Leland 1986"])
    state.mark_visiting([URL])
    state.record_page(PageText(url=URL, title="Film", text="Maximum Overdrive was shot there."))
    item = KnowledgeItem(question="page", answer="", type="url", references=[URL])
    state.add_knowledge(item)
    state.add_evidence(
        PageEvidence(url=URL, title="Film", chunks=["Maximum Overdrive was shot there."], item=item)
    )
    state.add_knowledge(KnowledgeItem(question="sub?", answer="a sub-answer", type="qa"))
    return state


def test_a_page_is_carried_as_its_evidence_within_a_cap() -> None:
    from deepsearch.agent import handover

    state = earlier_state()
    url = "https://example.org/long"
    state.record_page(PageText(url=url, title="Long", text="nav | menu\n\n" + "x" * 250_000))
    carry = capture(state, "", run_id="r")
    long = next(p for p in carry.pages if p.url == url)  # no evidence: the text, capped
    assert len(long.text) == handover.MAX_PAGE_CHARS
    film = next(p for p in carry.pages if p.url == URL)
    assert film.text == "Maximum Overdrive was shot there."  # its chunks, not its navigation


def test_a_follow_up_starts_with_the_pages_read_and_never_offers_them_again() -> None:
    carry = capture(earlier_state(), "Maximum Overdrive.", run_id="r1")
    assert carry.urls_read == [URL] and carry.queries == ["film Leland 1986"]
    state = AgentState.start("Who wrote it?")
    seed(state, carry)
    assert state.pages[URL].text == "Maximum Overdrive was shot there."
    assert URL in state.visited and URL in state.read_urls  # never picked, never fetched
    assert state.evidence[URL].chunks == ["Maximum Overdrive was shot there."]
    assert "https://example.org/unread" in state.url_pool  # the URL list is in hand
    assert state.snippets["https://example.org/unread"].text == "not read"  # citable
    assert state.searched_queries == ["film Leland 1986"]
    first = state.knowledge[0]
    assert first.pinned and first.answer == "Maximum Overdrive." and "Leland" in first.question
    assert [k.answer for k in state.knowledge if k.type == "qa"][1] == "a sub-answer"
    # A follow-up of the follow-up still holds the first run's page.
    again = capture(state, "Stephen King.", run_id="r2")
    assert again.urls_read == [URL] and Carryover.model_validate_json(again.model_dump_json())


def _reply(text: Any) -> Any:
    def reply(request: CompletionRequest) -> Any:
        return text

    return reply


async def test_the_rewrite_makes_the_question_standalone_within_the_budget() -> None:
    llm, provider = scripted_client(
        _reply({"think": "", "question": " Who wrote  Maximum Overdrive? "})
    )
    question = await standalone_question(llm, "Which film?", "Maximum Overdrive.", "who wrote it?")
    assert question == "Who wrote Maximum Overdrive?"
    (call,) = provider.calls_for("follow_up")
    assert "Maximum Overdrive." in str(call.messages) and "who wrote it?" in str(call.messages)
    assert llm.tracker.by_tool()["follow_up"].calls == 1


async def test_an_unusable_rewrite_keeps_the_question_as_typed() -> None:
    for reply in ("not json at all", {"think": "", "question": "   "}):
        llm, _ = scripted_client(_reply(reply))
        assert (
            await standalone_question(llm, "Which film?", "M.", "who wrote it?") == "who wrote it?"
        )
    broke, _ = scripted_client(_reply({"question": "x"}), budget=10)  # nothing left to spend
    assert await standalone_question(broke, "Which film?", "M.", "who wrote it?") == "who wrote it?"
