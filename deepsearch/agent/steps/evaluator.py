"""The evaluator as the loop runs it: the question's classification, the checks of
one answer and the error analysis, each an LLM call with its prompt. Which checks,
their reply schemas and how a reply reads as a verdict are judging's
(agent/judging/evaluator.py).

The checks of one answer are independent, so they run concurrently -- but only when
the worst case of all of them at once (prompt estimates and full outputs) fits what
is left of the budget: each call reserves its share from the remaining budget as it
starts, and calls in flight together would otherwise each count the same tokens as
free. Otherwise they run one by one, stopping at the first failure. Either way the
verdict is the first failure in CHECK_ORDER, and a check that raises still fails
the answer (the caller treats the error as a failed check).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from deepsearch.agent.context import format_item
from deepsearch.agent.types import EvalMetric, EvalType, KnowledgeItem
from deepsearch.errors import StructuredOutputError
from deepsearch.llm.base import Message
from deepsearch.llm.client import LLMClient, json_schema_of
from deepsearch.llm.tokens import count_tokens, upper_bound_tokens
from deepsearch.prompts import render, untrusted

if TYPE_CHECKING:  # judging's replies and rules are imported where a call uses them:
    # the Evaluator is built before a run's first request, its first call comes after
    # that request's reply (agent/later.py imports the module meanwhile).
    from deepsearch.agent.judging.evaluator import CheckReply, ErrorAnalysis, QuestionEval, Verdict

# Headroom on the worst-case estimate of concurrent checks (schemas as sent may be
# larger than pydantic's own, and provider tokenizers count differently).
CONCURRENT_MARGIN = 1.25

# The strict check's knowledge allowance when the caller names none (the loop passes
# what the evaluator's context window leaves, context.knowledge_allowance).
DEFAULT_KNOWLEDGE_TOKENS = 20_000


def _qa(question: str, answer: str) -> list[Message]:
    # The question may be a sub-question and the answer may repeat a page: both data.
    content = render("eval_input", question=untrusted(question), answer=untrusted(answer))
    return [Message(role="user", content=content)]


def _source_dates(knowledge: Sequence[KnowledgeItem], limit: int = 20) -> str:
    lines = [
        render(
            "eval_source_date",
            source=untrusted(", ".join(item.references[:1]) or item.question[:80]),
            date=untrusted(item.updated or ""),
        )
        for item in knowledge
        if item.type == "url" and item.updated
    ]
    return "\n".join(lines[-limit:])


class Evaluator:
    def __init__(self, llm: LLMClient) -> None:
        self.llm = llm

    async def classify_or_default(self, question: str) -> QuestionEval:
        """The classification; an unusable reply leaves the question unclassified (the
        default checks apply)."""
        from deepsearch.agent.judging.evaluator import QuestionEval

        try:
            return await self.classify(question)
        except StructuredOutputError:
            return QuestionEval()

    async def classify(self, question: str) -> QuestionEval:
        from deepsearch.agent.judging.evaluator import QuestionEval

        result = await self.llm.generate_object(
            "evaluator",
            QuestionEval,
            render("eval_question"),
            [Message(role="user", content=question)],
        )
        return result.value

    async def evaluate(
        self,
        question: str,
        answer: str,
        metrics: Sequence[EvalMetric],
        knowledge: Sequence[KnowledgeItem],
        *,
        now: datetime,
        supported: bool = True,
        knowledge_tokens: int = DEFAULT_KNOWLEDGE_TOKENS,
    ) -> Verdict:
        """Run the checks (concurrently when the budget allows); the first failure
        in CHECK_ORDER is the verdict. An answer its author marked as not supported
        (not found) is never accepted, and no check is paid for it."""
        from deepsearch.agent.judging.evaluator import Verdict, not_found_verdict, pending_checks

        kinds = pending_checks(metrics)
        if not supported:
            return not_found_verdict(kinds)
        requests = [
            self._request(kind, question, answer, knowledge, knowledge_tokens, now)
            for kind in kinds
        ]
        if len(requests) > 1 and self._fits_at_once(requests):
            outcomes = await asyncio.gather(
                *(self._ask(*r) for r in requests), return_exceptions=True
            )
            for outcome in outcomes:  # in check order: an error or a failure decides
                if isinstance(outcome, BaseException):
                    raise outcome
                if not outcome.passed:
                    return outcome
            return Verdict(passed=True)
        for request in requests:
            verdict = await self._ask(*request)
            if not verdict.passed:
                return verdict
        return Verdict(passed=True)

    def _request(
        self,
        kind: EvalType,
        question: str,
        answer: str,
        knowledge: Sequence[KnowledgeItem],
        allowance: int,
        now: datetime,
    ) -> tuple[type[CheckReply], str, list[Message]]:
        """`allowance`: how many tokens of the knowledge the strict check may show."""
        from deepsearch.agent.judging.evaluator import CHECKS

        schema = CHECKS[kind]
        system = self._check_prompt(kind, knowledge, allowance, now)
        if kind == "freshness" and (dated := _source_dates(knowledge)):
            # The model judges the age from the sources' dates, not a guess.
            answer += "\n\n" + render("eval_source_dates", dates=dated)
        return schema, system, _qa(question, answer)

    async def _ask(self, schema: type[CheckReply], system: str, messages: list[Message]) -> Verdict:
        reply = await self.llm.generate_object("evaluator", schema, system, messages)
        return reply.value.to_verdict()

    def _fits_at_once(
        self, requests: Sequence[tuple[type[CheckReply], str, list[Message]]]
    ) -> bool:
        """All checks' worst case together fits the remaining budget."""
        tracker = self.llm.tracker
        max_out = self.llm.settings.tool_settings(self.llm.provider_name, "evaluator").max_tokens
        texts = [
            system + "".join(m.content for m in messages) + json.dumps(json_schema_of(schema))
            for schema, system, messages in requests
        ]

        def fits(count: Callable[[str], int]) -> bool:
            worst = sum(int(count(t) * tracker.prompt_ratio) + 16 + max_out for t in texts)
            return worst * CONCURRENT_MARGIN <= tracker.remaining

        # The byte bound never undercounts: when it fits, an exact count would too.
        if fits(upper_bound_tokens):
            return True
        self.llm.settle_calibration()
        return fits(count_tokens)

    def _check_prompt(
        self, kind: EvalType, knowledge: Sequence[KnowledgeItem], allowance: int, now: datetime
    ) -> str:
        """A check's system prompt, with what its template needs besides the
        question and answer (those are the user message)."""
        if kind == "freshness":
            return render("eval_freshness", now=now.isoformat(timespec="minutes"))
        if kind == "strict":
            return render("eval_strict", knowledge=self._knowledge_text(knowledge, allowance))
        if kind == "plurality":
            return render("eval_plurality")
        if kind == "completeness":
            return render("eval_completeness")
        return render("eval_definitive")

    @staticmethod
    def _knowledge_text(knowledge: Sequence[KnowledgeItem], allowance: int) -> str:
        """The knowledge `judging.evaluator.pinned_first` chooses within `allowance`
        tokens, numbered as shown."""
        blocks = [format_item(i + 1, item) for i, item in enumerate(knowledge)]
        if sum(map(upper_bound_tokens, blocks)) <= allowance:  # all fit: no exact count
            return "\n".join(blocks) or render("eval_no_knowledge")
        from deepsearch.agent.judging.evaluator import pinned_first

        costs = [count_tokens(block) for block in blocks]
        chosen = pinned_first(knowledge, costs, allowance)
        blocks = [format_item(n + 1, knowledge[i]) for n, i in enumerate(chosen)]
        return "\n".join(blocks) or render("eval_no_knowledge")

    async def analyze_errors(self, diary: Sequence[str], verdict: Verdict) -> ErrorAnalysis:
        from deepsearch.agent.judging.evaluator import ErrorAnalysis

        content = render(
            "error_analyzer_input",
            diary=untrusted("\n".join(diary[-20:])),
            verdict=untrusted(verdict.think),
        )
        result = await self.llm.generate_object(
            "error_analyzer",
            ErrorAnalysis,
            render("error_analyzer"),
            [Message(role="user", content=content)],
        )
        return result.value
