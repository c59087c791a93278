"""answer: store sub-question answers; judge answers to the original question."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel

from deepsearch.agent.deps import RunOptions
from deepsearch.agent.judging.evaluator import Evaluator, Verdict
from deepsearch.agent.schema import AnswerPayload
from deepsearch.agent.state import AgentState
from deepsearch.agent.types import KnowledgeItem
from deepsearch.errors import StructuredOutputError


class AnswerOutcome(BaseModel):
    detail: str
    accepted: bool = False
    rejected: bool = False
    out_of_attempts: bool = False


def _answer_subquestion(state: AgentState, question: str, answer: str) -> AnswerOutcome:
    # An accepted sub-answer is a step of the chain: it stays in every later prompt.
    state.add_knowledge(
        KnowledgeItem(question=question, answer=answer, type="qa", updated=None, pinned=True)
    )
    if question in state.gaps:
        state.gaps.remove(question)
    state.diary.append(f'Step {state.step}: answered the sub-question "{question}": {answer[:300]}')
    return AnswerOutcome(detail=f"sub-question answered: {question}")


async def _judge(
    evaluator: Evaluator, state: AgentState, answer: str, now: datetime, *, supported: bool
) -> Verdict:
    """The evaluator's verdict on an answer to the original question."""
    try:
        return await evaluator.evaluate(
            state.question, answer, state.metrics, state.knowledge, now=now, supported=supported
        )
    except StructuredOutputError as exc:
        # As in the reference, a check that cannot be run counts as a failure of it:
        # an unevaluated answer is never accepted.
        pending = next((m for m in state.metrics if m.attempts_left > 0), None)
        return Verdict(
            passed=False,
            type=pending.type if pending else "strict",
            think=f"the evaluator gave no usable verdict ({str(exc)[:120]})",
        )


async def _learn_from_rejection(
    evaluator: Evaluator, state: AgentState, answer: str, verdict: Verdict
) -> None:
    """Turn the rejection into knowledge and restart the diary from that lesson."""
    state.diary.append(
        f"Step {state.step}: my answer was rejected ({verdict.type}): {verdict.think[:300]}"
    )
    lesson = verdict.think
    try:
        analysis = await evaluator.analyze_errors(state.diary, verdict)
        lesson += f"\nRecap: {analysis.recap}\nBlame: {analysis.blame}\nImprovement: {analysis.improvement}"
    except StructuredOutputError:
        pass  # the verdict alone is still a useful lesson
    state.add_knowledge(
        KnowledgeItem(
            question=f'Why was this answer to "{state.question}" rejected? Answer: {answer[:500]}',
            answer=lesson.strip(),
            type="qa",
        )
    )
    state.diary = []  # a fresh attempt starts from the lesson, not the old diary


def _not_found_subquestion(state: AgentState, question: str, answer: str) -> AnswerOutcome:
    # A "not found" is no step of the chain: nothing is pinned, the gap stays open.
    state.diary.append(
        f'Step {state.step}: I could not answer the sub-question "{question}": {answer[:300]}'
    )
    return AnswerOutcome(detail=f"sub-question not answered: {question}", rejected=True)


async def handle_answer(
    payload: AnswerPayload,
    state: AgentState,
    evaluator: Evaluator,
    *,
    now: datetime,
    options: RunOptions,
) -> AnswerOutcome:
    answer = payload.answer.strip()
    if not answer:
        state.diary.append(f"Step {state.step}: I gave an empty answer.")
        return AnswerOutcome(detail="empty answer", rejected=True)
    if state.current_question != state.question:
        if not payload.supported:
            return _not_found_subquestion(state, state.current_question, answer)
        return _answer_subquestion(state, state.current_question, answer)
    if not payload.supported:
        # Never accepted (the evaluator refuses it without a call); research goes on.
        state.not_found_note = answer
        state.diary.append(f"Step {state.step}: I reported that I did not find the answer.")
        verdict = await _judge(evaluator, state, answer, now, supported=False)
        return await _rejected(evaluator, state, answer, verdict, learn=False)

    state.candidate_answer = answer
    state.answer_uncertain = payload.uncertain
    if state.step == 1 and options.direct_answer:
        state.final_answer = answer
        state.trivial = True
        return AnswerOutcome(detail="answered directly at step 1", accepted=True)

    verdict = await _judge(evaluator, state, answer, now, supported=True)
    if verdict.passed:
        state.final_answer = answer
        state.diary.append(f"Step {state.step}: my answer passed every check.")
        return AnswerOutcome(detail="answer accepted", accepted=True)
    return await _rejected(evaluator, state, answer, verdict, learn=True)


async def _rejected(
    evaluator: Evaluator, state: AgentState, answer: str, verdict: Verdict, *, learn: bool
) -> AnswerOutcome:
    """Charge the failed check one attempt; out of attempts ends the research phase."""
    metric = next((m for m in state.metrics if m.type == verdict.type), None)
    if metric is not None:
        metric.attempts_left -= 1
    if verdict.improvement_plan:
        state.improvement_plans.append(verdict.improvement_plan)
    detail = f"answer rejected by the {verdict.type} check: {verdict.think[:200]}"
    if metric is not None and metric.attempts_left <= 0:
        return AnswerOutcome(
            detail=f"{detail} (no {verdict.type} attempts left)",
            rejected=True,
            out_of_attempts=True,
        )
    if learn:
        await _learn_from_rejection(evaluator, state, answer, verdict)
    return AnswerOutcome(detail=detail, rejected=True)
