"""Honest outcomes: which answer a run reports and with what status, its confidence,
and `--min-confidence` turning a weak forced answer into `not_found`.

A run reports, in order: the accepted (or Beast Mode) answer; else the best rejected
candidate (forced) when it says something (`content.answers_something`: no "I don't
know", no `},`); else the model's own "not found" report (not_found); else nothing
(the loop then reports not_found, or failed when an error ended the run). Beast Mode
saying "not found" clears the candidate (see the loop).
"""

from __future__ import annotations

from deepsearch.agent.judging.confidence import (
    Checks,
    ConfidenceBasis,
    confidence,
    distinct_sources,
)
from deepsearch.agent.judging.content import answers_something
from deepsearch.agent.result import ResearchResult, Status
from deepsearch.agent.state import AgentState

MAX_QUERIES_SHOWN = 5


def reported_answer(state: AgentState, status: Status) -> tuple[str | None, Status]:
    """The answer text the run reports and its status (None: there is none)."""
    if state.final_answer is not None:
        return state.final_answer, status
    if state.candidate_answer is not None and answers_something(state.candidate_answer):
        return state.candidate_answer, status
    if state.not_found_note is not None:
        return state.not_found_note, "not_found"
    return None, status


def confidence_basis(state: AgentState, result: ResearchResult) -> ConfidenceBasis:
    """The run's own signals about the answer it reports."""
    has_answer = bool(state.final_answer or state.candidate_answer)
    checks: Checks = "none"
    if result.status == "answered":
        checks = "direct" if state.trivial else "passed"
    return ConfidenceBasis(
        supported=has_answer and result.status not in ("not_found", "failed"),
        checks=checks,
        forced=result.status in ("forced", "interrupted"),
        sources=distinct_sources(ref.url for ref in result.references),
        uncertain=state.answer_uncertain,
    )


def with_confidence(state: AgentState, result: ResearchResult) -> ResearchResult:
    result.confidence_basis = confidence_basis(state, result)
    result.confidence = confidence(result.confidence_basis)
    return result


def apply_min_confidence(
    state: AgentState, result: ResearchResult, threshold: float | None
) -> ResearchResult:
    """A forced answer below `threshold` becomes `not_found`; its text then says what
    was looked for and what was found (the unconfirmed answer, references kept)."""
    if threshold is None or result.status != "forced" or result.confidence >= threshold:
        return result
    result.answer = not_confirmed_text(state, result.confidence, threshold) + result.answer
    result.status = "not_found"
    return result


def what_was_searched(state: AgentState) -> str:
    """ "Looked for: "q1", "q2"; read 3 pages." — from the run's record, not the model's."""
    queries = state.searched_queries[:MAX_QUERIES_SHOWN]
    looked = ", ".join(f'"{q}"' for q in queries) if queries else "no searches were run"
    pages = len(state.read_urls)
    return f"Looked for: {looked}; read {pages} page{'' if pages == 1 else 's'}."


def with_search_record(state: AgentState, result: ResearchResult) -> ResearchResult:
    """A not-found answer always says what was looked for and what was read, whatever
    the model wrote (a bare "I could not find it" tells a reader nothing)."""
    if result.status == "not_found":
        note = result.answer.strip()
        result.answer = f"**Not found.** {what_was_searched(state)}" + (
            f"\n\n{note}" if note else ""
        )
    return result


def not_confirmed_text(state: AgentState, value: float, threshold: float) -> str:
    return (
        f"**Not found with enough confidence** ({value:.2f}, below --min-confidence "
        f"{threshold:g}). {what_was_searched(state)} "
        "The best unconfirmed answer found:\n\n"
    )
