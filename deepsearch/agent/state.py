"""Everything one research run knows, in one object passed explicitly (no globals).

The state changes through its named methods where a change has a rule (a diary line,
a page read, a failed URL, a rejection charged, a sub-question opened or closed);
the diary has one writer, `note`, whose wording lives in prompts/diary.toml."""

from __future__ import annotations

from dataclasses import dataclass, field

from pydantic import BaseModel

from deepsearch.agent import diary
from deepsearch.agent.retrieval.evidence import PageEvidence
from deepsearch.agent.retrieval.focus import Focus
from deepsearch.agent.types import EvalMetric, EvalType, KnowledgeItem, ScoredUrl, UrlRecord
from deepsearch.agent.wording import knowledge_question


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


def merge_snippet(old: str, new: str) -> str:
    if not old or new in old:
        return old or new
    if old in new:
        return new
    return f"{old} … {new}"[:1000]


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
    # Programs run (coding.program_key) -> their result: a repeat is not run again.
    program_results: dict[str, str] = field(default_factory=dict)
    rechecks: int = 0  # second searches an accepted answer was held against (high effort)
    today: str | None = None  # ISO date of the run: the default `updated` of knowledge
    prompt_shown: str = ""  # this step's system prompt: an answer copying it says nothing
    focus: Focus = field(default_factory=Focus)  # where the research stands (retrieval/focus.py)

    @classmethod
    def start(cls, question: str) -> AgentState:
        state = cls(question=question, gaps=[question], all_questions=[question])
        state.focus = Focus.of(question)
        return state

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

    def focus_queries(self) -> list[str]:
        """The research questions and one query per hop learned (its bridge terms)."""
        return list(dict.fromkeys([*self.research_queries(), *self.focus.hop_queries()]))

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

    # ------------------------------------------------------------- named changes

    def begin_step(self) -> None:
        self.step += 1

    def count_reply(self, *, usable: bool) -> None:
        """Unusable model replies in a row (too many end the research phase)."""
        self.consecutive_failures = 0 if usable else self.consecutive_failures + 1

    def note(self, kind: str, **values: object) -> None:
        """The one diary writer: the `kind` line of prompts/diary.toml, for this step."""
        self.diary.append(diary.line(kind, step=self.step, **values))

    def restart_diary(self) -> None:
        """A fresh attempt starts from the lesson of a rejection, not the old diary."""
        self.diary = []

    def focus_on_question(self) -> None:
        """Only the original question is left to work on (Beast Mode)."""
        self.gaps = [self.question]

    def add_search_result(
        self, url: str, title: str, snippet: str, date: str | None, *, weight: float = 1.0
    ) -> None:
        """Pool a search hit. A URL a search returns becomes (or stays) a search-result
        candidate even when it was first seen as an in-page link."""
        record = self.url_pool.get(url)
        if record is None:
            record = self.url_pool[url] = UrlRecord(
                url=url, title=title, snippet=snippet, weight=0.0, date=date
            )
        elif record.origin == "link":
            record.title = title or record.title  # the engine's title beats an anchor
            record.snippet = snippet or record.snippet
        else:
            record.snippet = merge_snippet(record.snippet, snippet)
            record.title = record.title or title
        record.weight += weight
        record.hits += 1
        record.origin = "search"
        record.date = record.date or date
        if snippet and url not in self.snippets:
            self.snippets[url] = PageText(url=url, title=title, text=snippet, date=date)

    def pool_link(self, url: str, title: str, weight: float) -> None:
        """A link harvested from a read page: its anchor is its title, never a snippet
        (an anchor is no evidence)."""
        self.url_pool[url] = UrlRecord(
            url=url, title=title, snippet=title, weight=weight, origin="link"
        )

    def boost_url(self, url: str, weight: float) -> None:
        self.url_pool[url].weight += weight

    def add_evidence(self, evidence: PageEvidence) -> None:
        """A read page's evidence: what later prompts show of it (chosen per step)."""
        self.evidence[evidence.url] = evidence

    def add_page_evidence(self, read: PageText, chunks: list[str]) -> PageEvidence:
        """A read page's knowledge item and its evidence chunks (a visit's page, or one a
        follow-up carries over): the passages later prompts show of it."""
        item = KnowledgeItem(
            question=knowledge_question("page", title=read.title or read.url),
            answer="",
            type="url",
            references=[read.url],
            updated=read.date,
        )
        self.add_knowledge(item)
        evidence = PageEvidence(url=read.url, title=read.title, chunks=chunks, item=item)
        self.add_evidence(evidence)
        return evidence

    def forget_host(self, host: str, urls: list[str]) -> None:
        """A dead host's URLs (`urls`) leave the pool, and it is never read again."""
        self.dead_hosts.add(host)
        for url in urls:
            self.url_pool.pop(url, None)

    def record_queries(self, queries: list[str]) -> None:
        self.searched_queries.extend(queries)

    def mark_visiting(self, urls: list[str]) -> None:
        self.visited.extend(urls)

    def record_page(self, page: PageText) -> None:
        self.pages[page.url] = page
        self.read_urls.append(page.url)

    def mark_failed(self, url: str, reason: str) -> None:
        self.failed_urls[url] = reason[:200]

    def open_sub_questions(self, questions: list[str]) -> None:
        self.gaps.extend(questions)
        self.all_questions.extend(questions)

    def close_sub_question(self, question: str) -> None:
        if question in self.gaps:
            self.gaps.remove(question)

    def propose_answer(self, answer: str, *, uncertain: bool) -> None:
        """The best answer so far, kept for a run cut short before one is accepted."""
        self.candidate_answer, self.answer_uncertain = answer, uncertain

    def accept_answer(
        self, answer: str | None, *, uncertain: bool | None = None, trivial: bool = False
    ) -> None:
        """The run's answer; `trivial`: given directly, from no sources."""
        self.final_answer = answer
        self.trivial = self.trivial or trivial
        if uncertain is not None:
            self.answer_uncertain = uncertain

    def retract_answer(self) -> None:
        """An accepted answer a later check overturned (high effort's re-check):
        research goes on, the candidate stays for a run cut short."""
        self.final_answer, self.trivial = None, False

    def report_not_found(self, note: str, *, drop_candidate: bool = False) -> None:
        """The model's own "not found" report, kept apart from any real answer (Beast
        Mode's last word drops the candidate too)."""
        self.not_found_note = note
        if drop_candidate:
            self.candidate_answer = None

    def record_rejection(self, check: EvalType | None, improvement_plan: str) -> EvalMetric | None:
        """Charge the failed check one attempt and keep the reviewer's plan; the
        check's metric (None for a check the run does not apply)."""
        metric = next((m for m in self.metrics if m.type == check), None)
        if metric is not None:
            metric.attempts_left -= 1
        if improvement_plan:
            self.improvement_plans.append(improvement_plan)
        return metric
