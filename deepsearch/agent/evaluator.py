"""The strict multi-metric evaluator and the error analyzer.

The LLM supplies judgements and numbers; where a check is numeric (freshness,
plurality) the code, not the model, compares them.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from deepsearch.agent.context import format_item
from deepsearch.agent.prompts import render
from deepsearch.agent.state import EvalMetric, EvalType
from deepsearch.agent.types import KnowledgeItem
from deepsearch.llm.base import Message
from deepsearch.llm.client import LLMClient
from deepsearch.llm.tokens import count_tokens

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


# Each check: the reply schema and the prompt template asking for it.
CHECKS: dict[EvalType, tuple[type[_CheckReply], str]] = {
    "definitive": (DefinitiveEval, "eval_definitive"),
    "freshness": (FreshnessEval, "eval_freshness"),
    "plurality": (PluralityEval, "eval_plurality"),
    "completeness": (CompletenessEval, "eval_completeness"),
    "strict": (StrictEval, "eval_strict"),
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


def _qa(question: str, answer: str) -> list[Message]:
    return [
        Message(
            role="user",
            content=f"<question>\n{question}\n</question>\n<answer>\n{answer}\n</answer>",
        )
    ]


def _source_dates(knowledge: Sequence[KnowledgeItem], limit: int = 20) -> str:
    lines = [
        f"- {', '.join(item.references[:1]) or item.question[:80]}: {item.updated}"
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
    ) -> Verdict:
        """Run the checks in order; stop at the first failure."""
        for metric in sorted(metrics, key=lambda m: CHECK_ORDER.index(m.type)):
            if metric.attempts_left <= 0:
                continue
            verdict = await self._check(metric.type, question, answer, knowledge, now)
            if not verdict.passed:
                return verdict
        return Verdict(passed=True)

    async def _check(
        self,
        kind: EvalType,
        question: str,
        answer: str,
        knowledge: Sequence[KnowledgeItem],
        now: datetime,
    ) -> Verdict:
        schema, prompt = CHECKS[kind]
        system = render(prompt, **self._prompt_vars(kind, knowledge, now))
        if kind == "freshness" and (dated := _source_dates(knowledge)):
            # The model judges the age from the sources' dates, not a guess.
            answer += "\n\n<source-dates>\n" + dated + "\n</source-dates>"
        reply = await self.llm.generate_object("evaluator", schema, system, _qa(question, answer))
        return reply.value.to_verdict()

    def _prompt_vars(
        self, kind: EvalType, knowledge: Sequence[KnowledgeItem], now: datetime
    ) -> dict[str, str]:
        """What a check's prompt template needs besides the question and answer."""
        if kind == "freshness":
            return {"now": now.isoformat(timespec="minutes")}
        if kind == "strict":
            return {"knowledge": self._knowledge_text(knowledge)}
        return {}

    def _knowledge_text(self, knowledge: Sequence[KnowledgeItem]) -> str:
        blocks: list[str] = []
        spent = 0
        for i, item in enumerate(reversed(knowledge)):  # newest first within the allowance
            block = format_item(i + 1, item)
            cost = count_tokens(block)
            if spent + cost > self.knowledge_tokens:
                break
            blocks.append(block)
            spent += cost
        return "\n".join(reversed(blocks)) or "(none)"

    async def analyze_errors(self, diary: Sequence[str], verdict: Verdict) -> ErrorAnalysis:
        content = (
            "<diary>\n"
            + "\n".join(diary[-20:])
            + f"\n</diary>\n<verdict>\n{verdict.think}\n</verdict>"
        )
        result = await self.llm.generate_object(
            "error_analyzer",
            ErrorAnalysis,
            render("error_analyzer"),
            [Message(role="user", content=content)],
        )
        return result.value
