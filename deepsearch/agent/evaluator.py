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


class DefinitiveEval(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    think: str = Field("", max_length=500)
    passed: bool = Field(alias="pass")


class FreshnessEval(BaseModel):
    think: str = Field("", max_length=500)
    days_ago: float = Field(ge=0, description="age in days of the newest information used")
    max_age_days: float | None = Field(None, ge=0, description="allowed age; omit if timeless")


class PluralityEval(BaseModel):
    think: str = Field("", max_length=500)
    minimum_count_required: int = Field(ge=0)
    actual_count_provided: int = Field(ge=0)


class CompletenessEval(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    think: str = Field("", max_length=500)
    aspects_expected: list[str] = Field(default_factory=list)
    aspects_provided: list[str] = Field(default_factory=list)
    passed: bool = Field(alias="pass")


class StrictEval(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    think: str = Field("", max_length=800)
    passed: bool = Field(alias="pass")
    improvement_plan: str = Field("", max_length=1200)


class ErrorAnalysis(BaseModel):
    recap: str = Field(max_length=800)
    blame: str = Field(max_length=800)
    improvement: str = Field(max_length=800)


class Verdict(BaseModel):
    passed: bool
    type: EvalType | None = None  # the failed check
    think: str = ""
    improvement_plan: str = ""


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
        msgs = _qa(question, answer)
        if kind == "definitive":
            d = (
                await self.llm.generate_object(
                    "evaluator", DefinitiveEval, render("eval_definitive"), msgs
                )
            ).value
            return Verdict(passed=d.passed, type=kind, think=d.think)
        if kind == "freshness":
            system = render("eval_freshness", now=now.isoformat(timespec="minutes"))
            dated = _source_dates(knowledge)
            if dated:  # the model judges the age from the sources' dates, not a guess
                msgs = _qa(question, answer + "\n\n<source-dates>\n" + dated + "\n</source-dates>")
            f = (await self.llm.generate_object("evaluator", FreshnessEval, system, msgs)).value
            ok = f.max_age_days is None or f.days_ago <= f.max_age_days
            why = f"{f.think} (information ~{f.days_ago:g} days old; allowed {f.max_age_days if f.max_age_days is not None else 'any'})"
            return Verdict(passed=ok, type=kind, think=why.strip())
        if kind == "plurality":
            p = (
                await self.llm.generate_object(
                    "evaluator", PluralityEval, render("eval_plurality"), msgs
                )
            ).value
            ok = p.actual_count_provided >= p.minimum_count_required
            why = f"{p.think} (needs {p.minimum_count_required}, gives {p.actual_count_provided})"
            return Verdict(passed=ok, type=kind, think=why.strip())
        if kind == "completeness":
            c = (
                await self.llm.generate_object(
                    "evaluator", CompletenessEval, render("eval_completeness"), msgs
                )
            ).value
            return Verdict(passed=c.passed, type=kind, think=c.think)
        system = render("eval_strict", knowledge=self._knowledge_text(knowledge))
        s = (await self.llm.generate_object("evaluator", StrictEval, system, msgs)).value
        return Verdict(
            passed=s.passed, type=kind, think=s.think, improvement_plan=s.improvement_plan
        )

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
