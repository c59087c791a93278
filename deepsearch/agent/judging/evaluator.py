"""The strict multi-metric evaluator and the error analyzer.

The LLM supplies judgements and numbers; where a check is numeric (freshness,
plurality) the code, not the model, compares them.

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

from pydantic import BaseModel, ConfigDict, Field

from deepsearch.agent.context import format_item
from deepsearch.agent.state import EvalMetric, EvalType
from deepsearch.agent.types import KnowledgeItem
from deepsearch.llm.base import Message
from deepsearch.llm.client import LLMClient
from deepsearch.llm.tokens import count_tokens, upper_bound_tokens
from deepsearch.prompts import render

# Headroom on the worst-case estimate of concurrent checks (schemas as sent may be
# larger than pydantic's own, and provider tokenizers count differently).
CONCURRENT_MARGIN = 1.25

CHECK_ORDER: tuple[EvalType, ...] = (
    "definitive",
    "freshness",
    "plurality",
    "completeness",
    "strict",
)


class QuestionEval(BaseModel):
    think: str = Field("", max_length=500)
    needs_definitive: bool = True
    needs_freshness: bool = False
    needs_plurality: bool = False
    needs_completeness: bool = False


class Verdict(BaseModel):
    passed: bool
    type: EvalType | None = None  # the failed check
    think: str = ""
    improvement_plan: str = ""


class _CheckReply(BaseModel):
    """One check's reply; it knows how to read itself as a verdict."""

    def to_verdict(self) -> Verdict:
        raise NotImplementedError


class DefinitiveEval(_CheckReply):
    model_config = ConfigDict(populate_by_name=True)

    think: str = Field("", max_length=500)
    passed: bool = Field(alias="pass")

    def to_verdict(self) -> Verdict:
        return Verdict(passed=self.passed, type="definitive", think=self.think)


class FreshnessEval(_CheckReply):
    think: str = Field("", max_length=500)
    days_ago: float = Field(ge=0, description="age in days of the newest information used")
    max_age_days: float | None = Field(None, ge=0, description="allowed age; omit if timeless")

    def to_verdict(self) -> Verdict:
        # The model gives the numbers; the code compares them.
        ok = self.max_age_days is None or self.days_ago <= self.max_age_days
        allowed = self.max_age_days if self.max_age_days is not None else "any"
        why = f"{self.think} (information ~{self.days_ago:g} days old; allowed {allowed})"
        return Verdict(passed=ok, type="freshness", think=why.strip())


class PluralityEval(_CheckReply):
    think: str = Field("", max_length=500)
    minimum_count_required: int = Field(ge=0)
    actual_count_provided: int = Field(ge=0)

    def to_verdict(self) -> Verdict:
        ok = self.actual_count_provided >= self.minimum_count_required
        why = f"{self.think} (needs {self.minimum_count_required}, gives {self.actual_count_provided})"
        return Verdict(passed=ok, type="plurality", think=why.strip())


class CompletenessEval(_CheckReply):
    model_config = ConfigDict(populate_by_name=True)

    think: str = Field("", max_length=500)
    aspects_expected: list[str] = Field(default_factory=list)
    aspects_provided: list[str] = Field(default_factory=list)
    passed: bool = Field(alias="pass")

    def to_verdict(self) -> Verdict:
        return Verdict(passed=self.passed, type="completeness", think=self.think)


class StrictEval(_CheckReply):
    model_config = ConfigDict(populate_by_name=True)

    think: str = Field("", max_length=800)
    passed: bool = Field(alias="pass")
    improvement_plan: str = Field("", max_length=1200)

    def to_verdict(self) -> Verdict:
        return Verdict(
            passed=self.passed,
            type="strict",
            think=self.think,
            improvement_plan=self.improvement_plan,
        )


# Each check's reply schema (its prompt: `Evaluator._check_prompt`).
CHECKS: dict[EvalType, type[_CheckReply]] = {
    "definitive": DefinitiveEval,
    "freshness": FreshnessEval,
    "plurality": PluralityEval,
    "completeness": CompletenessEval,
    "strict": StrictEval,
}


class ErrorAnalysis(BaseModel):
    recap: str = Field(max_length=800)
    blame: str = Field(max_length=800)
    improvement: str = Field(max_length=800)


def metrics_for(question_eval: QuestionEval, max_bad_attempts: int) -> list[EvalMetric]:
    wanted: list[EvalType] = []
    if question_eval.needs_definitive:
        wanted.append("definitive")
    if question_eval.needs_freshness:
        wanted.append("freshness")
    if question_eval.needs_completeness:
        wanted.append("completeness")
    elif question_eval.needs_plurality:
        wanted.append("plurality")
    wanted.append("strict")
    return [EvalMetric(type=t, attempts_left=max_bad_attempts) for t in wanted]


def not_found_verdict(pending: Sequence[EvalType]) -> Verdict:
    """The failure of an answer that says it did not find the answer: charged to the
    definitive check (an "I could not find it" is not definitive) when it is pending."""
    kind: EvalType = "definitive" if "definitive" in pending or not pending else pending[0]
    return Verdict(
        passed=False,
        type=kind,
        think="the answer says the question was not answered from the evidence (not found)",
    )


def _qa(question: str, answer: str) -> list[Message]:
    return [Message(role="user", content=render("eval_input", question=question, answer=answer))]


def _source_dates(knowledge: Sequence[KnowledgeItem], limit: int = 20) -> str:
    lines = [
        render(
            "eval_source_date",
            source=", ".join(item.references[:1]) or item.question[:80],
            date=item.updated,
        )
        for item in knowledge
        if item.type == "url" and item.updated
    ]
    return "\n".join(lines[-limit:])


class Evaluator:
    def __init__(self, llm: LLMClient, *, knowledge_tokens: int = 20_000) -> None:
        self.llm = llm
        self.knowledge_tokens = knowledge_tokens

    async def classify(self, question: str) -> QuestionEval:
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
    ) -> Verdict:
        """Run the checks (concurrently when the budget allows); the first failure
        in CHECK_ORDER is the verdict. An answer its author marked as not supported
        (not found) is never accepted, and no check is paid for it."""
        kinds = [
            m.type
            for m in sorted(metrics, key=lambda m: CHECK_ORDER.index(m.type))
            if m.attempts_left > 0
        ]
        if not supported:
            return not_found_verdict(kinds)
        requests = [self._request(kind, question, answer, knowledge, now) for kind in kinds]
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
        now: datetime,
    ) -> tuple[type[_CheckReply], str, list[Message]]:
        schema = CHECKS[kind]
        system = self._check_prompt(kind, knowledge, now)
        if kind == "freshness" and (dated := _source_dates(knowledge)):
            # The model judges the age from the sources' dates, not a guess.
            answer += "\n\n" + render("eval_source_dates", dates=dated)
        return schema, system, _qa(question, answer)

    async def _ask(
        self, schema: type[_CheckReply], system: str, messages: list[Message]
    ) -> Verdict:
        reply = await self.llm.generate_object("evaluator", schema, system, messages)
        return reply.value.to_verdict()

    def _fits_at_once(
        self, requests: Sequence[tuple[type[_CheckReply], str, list[Message]]]
    ) -> bool:
        """All checks' worst case together fits the remaining budget."""
        tracker = self.llm.tracker
        max_out = self.llm.settings.tool_settings(self.llm.provider_name, "evaluator").max_tokens
        texts = [
            system + "".join(m.content for m in messages) + json.dumps(schema.model_json_schema())
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
        self, kind: EvalType, knowledge: Sequence[KnowledgeItem], now: datetime
    ) -> str:
        """A check's system prompt, with what its template needs besides the
        question and answer (those are the user message)."""
        if kind == "freshness":
            return render("eval_freshness", now=now.isoformat(timespec="minutes"))
        if kind == "strict":
            return render("eval_strict", knowledge=self._knowledge_text(knowledge))
        if kind == "plurality":
            return render("eval_plurality")
        if kind == "completeness":
            return render("eval_completeness")
        return render("eval_definitive")

    def _knowledge_text(self, knowledge: Sequence[KnowledgeItem]) -> str:
        """Pinned items (what the answer rests on) first, then the newest, within
        the allowance; shown in their original order."""
        blocks = [format_item(i + 1, item) for i, item in enumerate(knowledge)]
        if sum(map(upper_bound_tokens, blocks)) <= self.knowledge_tokens:  # all fit
            return "\n".join(blocks) or render("eval_no_knowledge")
        order = sorted(range(len(knowledge)), key=lambda i: (not knowledge[i].pinned, -i))
        chosen: list[int] = []
        spent = 0
        for i in order:
            cost = count_tokens(format_item(i + 1, knowledge[i]))
            if spent + cost > self.knowledge_tokens:
                continue
            chosen.append(i)
            spent += cost
        blocks = [format_item(n + 1, knowledge[i]) for n, i in enumerate(sorted(chosen))]
        return "\n".join(blocks) or render("eval_no_knowledge")

    async def analyze_errors(self, diary: Sequence[str], verdict: Verdict) -> ErrorAnalysis:
        content = render(
            "error_analyzer_input", diary="\n".join(diary[-20:]), verdict=verdict.think
        )
        result = await self.llm.generate_object(
            "error_analyzer",
            ErrorAnalysis,
            render("error_analyzer"),
            [Message(role="user", content=content)],
        )
        return result.value
