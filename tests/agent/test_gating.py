"""Every gating rule, as pure functions and as seen by the model in the loop."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from deepsearch.agent.gating import Gate, after_action
from deepsearch.agent.loop import ResearchRun
from deepsearch.agent.schema import AllowFlags, allowed_actions, step_schema
from deepsearch.agent.state import AgentState
from deepsearch.agent.types import ScoredUrl, UrlRecord
from deepsearch.llm.base import CompletionRequest
from tests.agent.helpers import evaluator_reply, make_deps, options


def state_at(step: int, **kw: Any) -> AgentState:
    st = AgentState.start("Q?")
    st.step = step
    for k, v in kw.items():
        setattr(st, k, v)
    return st


def shown(n: int) -> list[ScoredUrl]:
    return [
        ScoredUrl(index=i + 1, url=f"https://h{i}.org/", title="", snippet="", score=1)
        for i in range(n)
    ]


CTX = Gate()
NO_CODING = Gate(withdrawn={"coding": "no sandbox"})
FRESH = Gate(needs_freshness=True)


def allowed_now(st: AgentState, gate: Gate) -> AllowFlags:
    return gate.allowed(st)


@pytest.mark.parametrize(
    ("action", "rejected", "forbidden"),
    [
        ("search", False, {"search", "answer"}),
        ("visit", False, {"visit"}),
        ("reflect", False, {"reflect"}),
        ("coding", False, {"coding"}),
        ("answer", True, {"answer"}),
    ],
)
def test_after_action_forbids_repeats(action: str, rejected: bool, forbidden: set[str]) -> None:
    flags = after_action(action, answer_rejected=rejected)
    assert forbidden.isdisjoint(flags.allowed())


def test_accepted_or_subquestion_answer_forbids_nothing() -> None:
    assert set(after_action("answer").allowed()) == {
        "search",
        "visit",
        "reflect",
        "answer",
        "coding",
    }


def test_reflect_only_while_two_gaps_or_fewer() -> None:
    st = state_at(3, shown_urls=shown(1), gaps=["Q?", "a", "b"])
    assert "reflect" not in allowed_now(st, CTX).allowed()
    st.gaps = ["Q?", "a"]
    assert "reflect" in allowed_now(st, CTX).allowed()


def test_visit_needs_unvisited_urls() -> None:
    assert "visit" not in allowed_now(state_at(3), CTX).allowed()
    assert "visit" in allowed_now(state_at(3, shown_urls=shown(2)), CTX).allowed()


def waiting(n: int, *, origin: str = "search", relevant: bool = True) -> list[ScoredUrl]:
    return [
        ScoredUrl(
            index=i + 1,
            url=f"https://{origin}{i}.org/",
            title="",
            snippet="",
            score=1,
            origin=origin,  # type: ignore[arg-type]
            relevant=relevant,
        )
        for i in range(n)
    ]


def test_search_waits_while_five_relevant_search_results_are_unread() -> None:
    st = state_at(3, shown_urls=waiting(5))
    assert "search" not in allowed_now(st, CTX).allowed()
    st.shown_urls = waiting(4)
    assert "search" in allowed_now(st, CTX).allowed()
    st.shown_urls = waiting(5)
    st.failed_urls = {st.shown_urls[0].url: "network: x"}  # a failed URL is no longer waiting
    assert "search" in allowed_now(st, CTX).allowed()


def test_harvested_links_and_irrelevant_results_never_lock_search_out() -> None:
    # 150 link candidates in the pool and the shown list full of links: search stays.
    pool = {
        f"https://l{i}.org/": UrlRecord(url=f"https://l{i}.org/", origin="link") for i in range(150)
    }
    st = state_at(3, url_pool=pool, shown_urls=waiting(20, origin="link"))
    assert "search" in allowed_now(st, CTX).allowed()
    st.shown_urls = waiting(20, relevant=False)
    assert "search" in allowed_now(st, CTX).allowed()


def test_after_a_visit_with_good_urls_waiting_a_move_is_left() -> None:
    st = state_at(3, shown_urls=waiting(6), gaps=["Q?", "a", "b"])
    no_coding = Gate(
        withdrawn={"coding": "no sandbox"}, last=replace(after_action("visit"), answer=False)
    )
    assert allowed_now(st, no_coding).allowed() == ("visit",)  # read them, not answer blind


def test_no_coding_at_step_one_or_without_sandbox() -> None:
    assert "coding" not in allowed_now(state_at(1), CTX).allowed()
    assert "coding" in allowed_now(state_at(2), CTX).allowed()
    assert "coding" not in allowed_now(state_at(2), NO_CODING).allowed()


def test_freshness_question_cannot_answer_or_reflect_at_step_one() -> None:
    ctx = FRESH
    allowed = allowed_now(state_at(1), ctx).allowed()
    assert "answer" not in allowed and "reflect" not in allowed
    assert "answer" in allowed_now(state_at(2), ctx).allowed()


def test_never_leaves_the_model_without_a_move() -> None:
    nothing = AllowFlags(search=False, visit=False, reflect=False, answer=False, coding=False)
    # the last search found nothing to read: search again rather than answer unsupported
    assert allowed_now(state_at(3), Gate(last=nothing)).allowed() == ("search",)
    good = waiting(5)  # relevant unread results: read them rather than search or answer
    assert allowed_now(state_at(3, shown_urls=good), Gate(last=nothing)).allowed() == ("visit",)
    fresh = Gate(needs_freshness=True, last=nothing)
    assert allowed_now(state_at(1), fresh).allowed() == ("answer",)


def test_schema_accepts_exactly_the_allowed_actions() -> None:
    schema = step_schema(("search", "answer"))
    props = schema.model_json_schema()["properties"]
    assert set(props) == {"think", "action"}
    assert allowed_actions(schema.model_json_schema()) == ["search", "answer"]
    assert schema.model_validate({"think": "", "action": {"search": {"queries": ["x"]}}})
    with pytest.raises(ValueError):
        schema.model_validate({"think": "", "action": {"visit": {"url_indices": [1]}}})
    with pytest.raises(ValueError):  # chose search but gave no payload
        schema.model_validate({"think": "", "action": "search"})
    with pytest.raises(ValueError):  # a null payload is no payload
        schema.model_validate({"think": "", "action": {"search": None}})
    with pytest.raises(ValueError):  # two actions at once
        schema.model_validate(
            {"think": "", "action": {"search": {"queries": ["x"]}, "answer": {"answer": "a"}}}
        )


def _allowed_in(request: CompletionRequest) -> set[str]:
    return set(allowed_actions(request.json_schema or {}))


async def test_loop_shows_the_model_only_allowed_actions() -> None:
    """search → (no search/answer) visit → (no visit) answer rejected → (no answer) ..."""
    script = [
        {"think": "", "action": {"search": {"queries": ["eiffel"]}}},
        {"think": "", "action": {"visit": {"url_indices": [1, 99, -3]}}},
        {"think": "", "action": {"answer": {"answer": "1889"}}},
        {"think": "", "action": {"reflect": {"questions": ["when did building start?"]}}},
        {"think": "", "action": {"answer": {"answer": "Work started in 1887."}}},
        {"think": "", "action": {"answer": {"answer": "1889, finished in March"}}},
    ]
    strict_verdicts = [False, True]

    def reply(request: CompletionRequest) -> Any:
        if request.tool == "agent":
            return script.pop(0)
        if request.tool == "evaluator" and "improvement_plan" in request.json_schema["properties"]:  # type: ignore[index]
            return evaluator_reply(request, strict_pass=strict_verdicts.pop(0))
        if request.tool == "evaluator":
            return evaluator_reply(request)
        if request.tool == "finalizer":
            return request.messages[-1].content
        return {"recap": "r", "blame": "b", "improvement": "i"}

    deps, provider = make_deps(reply)
    result = await ResearchRun("When was the Eiffel Tower completed?", deps, options()).run()
    agent_calls = provider.calls_for("agent")
    allowed = [_allowed_in(c) for c in agent_calls]
    assert "coding" not in allowed[0]  # step 1, and no sandbox
    assert {"search", "answer"}.isdisjoint(allowed[1])  # after search
    assert "visit" not in allowed[2]  # after visit
    assert "answer" not in allowed[3]  # after a rejected answer
    # the sub-question rotates in: step 5 works on gaps[5 % 2] = the sub-question
    assert agent_calls[4].messages[-1].content == "when did building start?"
    assert result.status == "answered"
    assert result.answer.startswith("1889, finished in March")
    assert [s.action for s in result.steps] == [
        "search",
        "visit",
        "answer",
        "reflect",
        "answer",
        "answer",
    ]
    assert "rejected" in result.steps[2].detail
    assert "sub-question answered" in result.steps[4].detail
    # the rejection lesson and the reviewer's plan reach the next answer step
    assert "Why was this answer" in agent_calls[5].system
    assert "For the best answer, you must cite the year." in agent_calls[5].system


def test_the_url_list_tells_harvested_links_from_search_results() -> None:
    from deepsearch.agent.context import render_url_list

    link = waiting(1, origin="link")[0].model_copy(
        update={"title": "Calder Head", "snippet": "Calder Head"}
    )
    hit = waiting(1)[0].model_copy(
        update={"index": 2, "title": "Tower", "snippet": "A tall tower."}
    )
    text = render_url_list(state_at(3, shown_urls=[link, hit]))
    assert "link on a read page: Calder Head\n" in text and "Calder Head: Calder Head" not in text
    assert "Tower: A tall tower." in text
