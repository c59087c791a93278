"""Honest endings at their edges (agent/judging/honesty.py, content.is_refusal, the
refusals data, agent/steps/honesty.py): a not-found result is never "supported", a
whole answer of "not found" is a refusal, a refusal is at most 25 words (refusals.toml's
`max_words`), and only a not-found result gets the "Not found." heading."""

from __future__ import annotations

import pytest

from deepsearch.agent.judging import honesty
from deepsearch.agent.judging.content import is_refusal
from deepsearch.agent.state import AgentState
from deepsearch.agent.steps.honesty import apply_min_confidence, with_search_record
from deepsearch.session import empty_result
from tests.test_session import settings


@pytest.mark.parametrize("status", ["not_found", "failed"])
def test_a_not_found_or_failed_result_is_never_supported(status: str) -> None:
    basis = honesty.confidence_basis(
        status,  # type: ignore[arg-type]
        has_answer=True,
        trivial=False,
        uncertain=False,
        cited_urls=["https://a.example/x"],
    )
    assert basis.supported is False and basis.checks == "none" and basis.forced is False


def test_the_confidence_signals_of_each_status() -> None:
    def basis(status: str, **kw: bool) -> object:
        args = {"has_answer": True, "trivial": False, "uncertain": False} | kw
        return honesty.confidence_basis(status, cited_urls=[], **args)  # type: ignore[arg-type]

    answered = basis("answered")
    assert answered.supported and answered.checks == "passed" and not answered.forced  # type: ignore[attr-defined]
    assert basis("answered", trivial=True).checks == "direct"  # type: ignore[attr-defined]
    for status in ("forced", "interrupted"):
        forced = basis(status)
        assert forced.forced and forced.supported and forced.checks == "none"  # type: ignore[attr-defined]
    assert basis("answered", has_answer=False).supported is False  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "answer", ["Not found.", "**not found**", "Unknown", "N/A", "I don't know."]
)
def test_an_answer_that_only_says_not_found_is_a_refusal(answer: str) -> None:
    assert is_refusal(answer)


def test_a_refusal_is_at_most_25_words() -> None:
    start = "I could not find"  # 4 words
    at_bar = f"{start} {' '.join(['it'] * 21)}"
    assert len(at_bar.split()) == 25 and is_refusal(at_bar)
    over = f"{at_bar} today"
    assert len(over.split()) == 26 and not is_refusal(over)
    assert not is_refusal("I don't know the day, but it was in 1952")


def test_a_reported_answer_prefers_the_final_then_a_real_candidate_then_the_note() -> None:
    assert honesty.reported_answer("F", "C", "N", "answered") == ("F", "answered")
    assert honesty.reported_answer(None, "Paris", "N", "forced") == ("Paris", "forced")
    assert honesty.reported_answer(None, "I don't know", "N", "forced") == ("N", "not_found")
    assert honesty.reported_answer(None, None, None, "failed") == (None, "failed")


def _result(status: str, answer: str) -> object:
    base = empty_result("Q?", settings(), "answered")
    return base.model_copy(update={"status": status, "answer": answer})


def test_only_a_not_found_result_gets_the_not_found_heading() -> None:
    state = AgentState(question="Q?", searched_queries=["a", "b"], read_urls=["u"])
    failed = with_search_record(state, _result("failed", "partial"))  # type: ignore[arg-type]
    assert failed.answer == "partial"
    forced = with_search_record(state, _result("forced", "guess"))  # type: ignore[arg-type]
    assert forced.answer == "guess"
    found = with_search_record(state, _result("not_found", "no luck"))  # type: ignore[arg-type]
    assert found.answer == '**Not found.** Looked for: "a", "b"; read 1 page.\n\nno luck'


def test_the_search_record_wording() -> None:
    queries = [f"q{i}" for i in range(7)]
    assert honesty.what_was_searched(queries, 2) == (
        'Looked for: "q0", "q1", "q2", "q3", "q4"; read 2 pages.'
    )
    assert honesty.what_was_searched([], 0) == "Looked for: no searches were run; read 0 pages."
    assert honesty.not_found_text("  ", "S.") == "**Not found.** S."


def test_min_confidence_turns_only_a_weak_forced_answer_not_found() -> None:
    state = AgentState(question="Q?")
    weak = _result("forced", "guess").model_copy(update={"confidence": 0.3})  # type: ignore[attr-defined]
    turned = apply_min_confidence(state, weak, 0.5)
    assert turned.status == "not_found"
    assert turned.answer.startswith("**Not found with enough confidence** (0.30, below")
    assert turned.answer.endswith("The best unconfirmed answer found:\n\nguess")
    at_bar = _result("forced", "g").model_copy(update={"confidence": 0.5})  # type: ignore[attr-defined]
    assert apply_min_confidence(state, at_bar, 0.5).status == "forced"
    answered = _result("answered", "a").model_copy(update={"confidence": 0.1})  # type: ignore[attr-defined]
    assert apply_min_confidence(state, answered, 0.5).status == "answered"
    again = _result("forced", "g").model_copy(update={"confidence": 0.3})  # type: ignore[attr-defined]
    assert apply_min_confidence(state, again, None).status == "forced"  # the option off
