"""answer: store sub-question answers; judge answers to the original question."""

from __future__ import annotations

from deepsearch.agent.context import knowledge_allowance
from deepsearch.agent.judging.content import answers_something, instructions_of
from deepsearch.agent.judging.evaluator import Verdict
from deepsearch.agent.outcomes import Accepted, Continue, Rejected, Stop
from deepsearch.agent.schema import AnswerPayload
from deepsearch.agent.state import AgentState
from deepsearch.agent.step import StepContext
from deepsearch.agent.steps.evaluator import Evaluator
from deepsearch.agent.types import KnowledgeItem
from deepsearch.agent.wording import knowledge_question
from deepsearch.errors import StructuredOutputError
from deepsearch.prompts import render
from deepsearch.text import has_content

# Continue: a sub-question was answered; Rejected: refused, research goes on;
# Stop: a check ran out of attempts; Accepted: the run's answer is set.
AnswerOutcome = Accepted | Continue | Rejected | Stop


def _answer_subquestion(state: AgentState, question: str, answer: str) -> Continue:
    # An accepted sub-answer is a step of the chain: it stays in every later prompt.
    state.add_knowledge(
        KnowledgeItem(question=question, answer=answer, type="qa", updated=None, pinned=True)
    )
    state.close_sub_question(question)
    state.note("sub_answered", question=question, answer=answer)
    return Continue(f"sub-question answered: {question}")


async def _judge(ctx: StepContext, answer: str, *, supported: bool) -> Verdict:
    """The evaluator's verdict on an answer to the original question; its strict check
    shows what of the knowledge fits the evaluator's own allowance."""
    state = ctx.state
    try:
        return await ctx.evaluator.evaluate(
            state.question,
            answer,
            state.metrics,
            state.knowledge,
            now=ctx.deps.clock.now(),
            supported=supported,
            knowledge_tokens=knowledge_allowance(ctx.deps.llm, "evaluator"),
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
    state.note("answer_rejected", check=verdict.type, why=verdict.think)
    lesson = verdict.think
    try:
        analysis = await evaluator.analyze_errors(state.diary, verdict)
        lesson = render(
            "rejection_lesson",
            verdict=verdict.think,
            recap=analysis.recap,
            blame=analysis.blame,
            improvement=analysis.improvement,
        )
    except StructuredOutputError:
        pass  # the verdict alone is still a useful lesson
    state.add_knowledge(
        KnowledgeItem(
            question=knowledge_question("rejected_answer", question=state.question, answer=answer),
            answer=lesson.strip(),
            type="qa",
        )
    )
    state.restart_diary()


def _not_found_subquestion(state: AgentState, question: str, answer: str) -> Rejected:
    # A "not found" is no step of the chain: nothing is pinned, the gap stays open.
    state.note("sub_not_found", question=question, answer=answer)
    return Rejected(f"sub-question not answered: {question}")


async def handle_answer(payload: AnswerPayload, ctx: StepContext) -> AnswerOutcome:
    state, evaluator = ctx.state, ctx.evaluator
    answer = payload.answer.strip()
    if not has_content(answer):  # nothing, or JSON debris such as `},`
        state.note("empty_answer")
        return Rejected("empty answer")
    # A refusal ("I don't know") is the model's "not found" whatever `supported` says:
    # never accepted, not even by a lenient judge (a weak local model judging itself).
    found = payload.supported and answers_something(
        answer, prompt=instructions_of(state.prompt_shown)
    )
    if state.current_question != state.question:
        if not found:
            return _not_found_subquestion(state, state.current_question, answer)
        return _answer_subquestion(state, state.current_question, answer)
    if not found:
        # Never accepted (the evaluator refuses it without a call); research goes on.
        state.report_not_found(answer)
        state.note("reported_not_found")
        verdict = await _judge(ctx, answer, supported=False)
        return await _rejected(evaluator, state, answer, verdict, learn=False)

    state.propose_answer(answer, uncertain=payload.uncertain)
    # Unjudged only when it says something and the model stands by it; an "I don't
    # know" or a hedge goes to the evaluator like any later answer.
    direct = not payload.uncertain and answers_something(answer, prompt=state.prompt_shown)
    if state.step == 1 and ctx.options.direct_answer and direct:
        state.accept_answer(answer, trivial=True)
        return Accepted("answered directly at step 1")

    verdict = await _judge(ctx, answer, supported=True)
    if verdict.passed:
        state.accept_answer(answer)
        state.note("answer_passed")
        return Accepted("answer accepted")
    return await _rejected(evaluator, state, answer, verdict, learn=True)


async def _rejected(
    evaluator: Evaluator, state: AgentState, answer: str, verdict: Verdict, *, learn: bool
) -> Rejected | Stop:
    """Charge the failed check one attempt; out of attempts ends the research phase."""
    metric = state.record_rejection(verdict.type, verdict.improvement_plan)
    detail = f"answer rejected by the {verdict.type} check: {verdict.think[:200]}"
    if metric is not None and metric.attempts_left <= 0:
        return Stop(f"{detail} (no {verdict.type} attempts left)")
    if learn:
        await _learn_from_rejection(evaluator, state, answer, verdict)
    return Rejected(detail)


def take_beast_answer(payload: AnswerPayload, state: AgentState) -> Accepted | Rejected:
    """Beast Mode's answer is not judged, so it must say something: Accepted as the
    run's answer when it does; one that says nothing (empty, `},`, "I don't know")
    keeps the candidate if that says something, else it is a not-found. Rejected
    too when the model's last word is that nothing gathered answers the question."""
    answer = payload.answer.strip()
    instructions = instructions_of(state.prompt_shown)
    if payload.supported and answers_something(answer, prompt=instructions):
        state.accept_answer(answer, uncertain=payload.uncertain)  # it brings its own marks
        return Accepted("Beast Mode answer")
    candidate = state.candidate_answer
    if (payload.supported or not answer) and candidate and answers_something(candidate):
        state.accept_answer(candidate)
        return Accepted("Beast Mode answer")
    # Junk is no note worth showing; the model's own "not found" wording is.
    state.report_not_found(answer if has_content(answer) else "", drop_candidate=True)
    return Rejected("Beast Mode: not found")
