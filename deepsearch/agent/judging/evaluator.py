"""The strict multi-metric evaluator's rules: which checks an answer must pass
(`metrics_for`, in CHECK_ORDER), each check's reply schema and how it reads as a
`Verdict`, and which knowledge the strict check is shown (`pinned_first`).

The LLM supplies judgements and numbers; where a check is numeric (freshness,
plurality) the code, not the model, compares them. The LLM calls themselves, their
prompts and the budget they must fit are the loop's step (agent/steps/evaluator.py).
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field

from deepsearch.agent.types import EvalMetric, EvalType, KnowledgeItem

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


class CheckReply(BaseModel):
    """One check's reply; it knows how to read itself as a verdict."""

    # Each check's reply (and the subclasses inherit this) is built when its check first
    # runs: a run makes only some of the checks (issue 21).
    model_config = ConfigDict(defer_build=True)

    def to_verdict(self) -> Verdict:
        raise NotImplementedError


class DefinitiveEval(CheckReply):
    model_config = ConfigDict(populate_by_name=True)

    think: str = Field("", max_length=500)
    passed: bool = Field(alias="pass")

    def to_verdict(self) -> Verdict:
        return Verdict(passed=self.passed, type="definitive", think=self.think)


class FreshnessEval(CheckReply):
    think: str = Field("", max_length=500)
    days_ago: float = Field(ge=0, description="age in days of the newest information used")
    max_age_days: float | None = Field(None, ge=0, description="allowed age; omit if timeless")

    def to_verdict(self) -> Verdict:
        # The model gives the numbers; the code compares them.
        ok = self.max_age_days is None or self.days_ago <= self.max_age_days
        allowed = self.max_age_days if self.max_age_days is not None else "any"
        why = f"{self.think} (information ~{self.days_ago:g} days old; allowed {allowed})"
        return Verdict(passed=ok, type="freshness", think=why.strip())


class PluralityEval(CheckReply):
    think: str = Field("", max_length=500)
    minimum_count_required: int = Field(ge=0)
    actual_count_provided: int = Field(ge=0)

    def to_verdict(self) -> Verdict:
        ok = self.actual_count_provided >= self.minimum_count_required
        why = f"{self.think} (needs {self.minimum_count_required}, gives {self.actual_count_provided})"
        return Verdict(passed=ok, type="plurality", think=why.strip())


class CompletenessEval(CheckReply):
    model_config = ConfigDict(populate_by_name=True)

    think: str = Field("", max_length=500)
    aspects_expected: list[str] = Field(default_factory=list)
    aspects_provided: list[str] = Field(default_factory=list)
    passed: bool = Field(alias="pass")

    def to_verdict(self) -> Verdict:
        return Verdict(passed=self.passed, type="completeness", think=self.think)


class StrictEval(CheckReply):
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


# Each check's reply schema (its prompt: agent/steps/evaluator.py, `Evaluator._check_prompt`).
CHECKS: dict[EvalType, type[CheckReply]] = {
    "definitive": DefinitiveEval,
    "freshness": FreshnessEval,
    "plurality": PluralityEval,
    "completeness": CompletenessEval,
    "strict": StrictEval,
}


class ErrorAnalysis(BaseModel):
    # built at first use: a typical run never validates one (issue 21)
    model_config = ConfigDict(defer_build=True)

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


def pending_checks(metrics: Sequence[EvalMetric]) -> list[EvalType]:
    """The checks still to run, in CHECK_ORDER: those with attempts left."""
    return [
        m.type
        for m in sorted(metrics, key=lambda m: CHECK_ORDER.index(m.type))
        if m.attempts_left > 0
    ]


def pinned_first(
    knowledge: Sequence[KnowledgeItem], costs: Sequence[int], allowance: int
) -> list[int]:
    """The indices of the items the strict check is shown: pinned items (what the
    answer rests on) first, then the newest, each while its cost (`costs[i]`, in
    tokens) still fits `allowance`; in their original order."""
    order = sorted(range(len(knowledge)), key=lambda i: (not knowledge[i].pinned, -i))
    chosen: list[int] = []
    spent = 0
    for i in order:
        if spent + costs[i] > allowance:
            continue
        chosen.append(i)
        spent += costs[i]
    return sorted(chosen)
