"""Everything one research run knows, in one object passed explicitly (no globals)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel

from deepsearch.agent.retrieval.evidence import PageEvidence
from deepsearch.agent.schema import AllowFlags
from deepsearch.agent.types import KnowledgeItem, ScoredUrl, UrlRecord

EvalType = Literal["definitive", "freshness", "plurality", "completeness", "strict"]


class EvalMetric(BaseModel):
    type: EvalType
    attempts_left: int


class StepRecord(BaseModel):
    """One line of the run's history (shown live and in --json)."""

    step: int
    action: str
    think: str = ""
    detail: str = ""
    agent: str = "main"  # or the team child's id ("1", "2", ...) that took the step


@dataclass
class PageText:
    """A page the run read: kept whole for citations, whatever the prompt showed."""

    url: str
    title: str
    text: str
    date: str | None = None


@dataclass
class AgentState:
    question: str
    gaps: list[str] = field(default_factory=list)
    all_questions: list[str] = field(default_factory=list)
    knowledge: list[KnowledgeItem] = field(default_factory=list)
    diary: list[str] = field(default_factory=list)
    url_pool: dict[str, UrlRecord] = field(default_factory=dict)
    shown_urls: list[ScoredUrl] = field(default_factory=list)  # the numbered list of this step
    visited: list[str] = field(default_factory=list)  # attempted, in order
    read_urls: list[str] = field(default_factory=list)  # read successfully
    failed_urls: dict[str, str] = field(default_factory=dict)  # url -> reason
    dead_hosts: set[str] = field(default_factory=set)
    searched_queries: list[str] = field(default_factory=list)
    metrics: list[EvalMetric] = field(default_factory=list)
    improvement_plans: list[str] = field(default_factory=list)
    pages: dict[str, PageText] = field(default_factory=dict)
    evidence: dict[str, PageEvidence] = field(default_factory=dict)  # url -> what is shown
    snippets: dict[str, PageText] = field(default_factory=dict)
    steps: list[StepRecord] = field(default_factory=list)
    flags: AllowFlags = field(default_factory=AllowFlags)
    step: int = 0
    question_classified: bool = False
    candidate_answer: str | None = None  # best answer so far, for a cut-short run
    final_answer: str | None = None
    # The model's own marks (AnswerPayload): was the candidate flagged uncertain, and
    # its latest "not found" report (what was looked for and found), kept apart from
    # the candidate so a report never replaces a real answer.
    answer_uncertain: bool = False
    not_found_note: str | None = None
    trivial: bool = False
    consecutive_failures: int = 0
    rechecks: int = 0  # second searches an accepted answer was held against (high effort)
    omitted_knowledge: int = 0  # items left out of the last prompt (context rule)
    today: str | None = None  # ISO date of the run: the default `updated` of knowledge

    @classmethod
    def start(cls, question: str) -> AgentState:
        return cls(question=question, gaps=[question], all_questions=[question])

    @property
    def current_question(self) -> str:
        """Rotate through the gaps queue as the reference does: gaps[step % len(gaps)]."""
        if not self.gaps:
            return self.question
        return self.gaps[self.step % len(self.gaps)]

    def research_queries(self) -> list[str]:
        """What page evidence is chosen for: the original question and the pending
        sub-questions (the current one among them)."""
        return list(dict.fromkeys([self.question, *self.gaps]))

    def add_knowledge(self, item: KnowledgeItem) -> None:
        item.step = self.step
        item.id = len(self.knowledge) + 1
        if item.updated is None:
            item.updated = self.today
        self.knowledge.append(item)

    def record_step(self, action: str, think: str, detail: str) -> StepRecord:
        record = StepRecord(step=self.step, action=action, think=think, detail=detail)
        self.steps.append(record)
        return record
