"""The run's outcome: the stable, versioned `--json` schema."""

from __future__ import annotations

import json
from typing import Literal, TypedDict, Unpack

from pydantic import BaseModel, Field

from deepsearch.agent.judging.confidence import ConfidenceBasis
from deepsearch.agent.state import StepRecord
from deepsearch.agent.team.report import TeamMember
from deepsearch.agent.types import Reference, Status
from deepsearch.errors import (
    EXIT_FORCED,
    EXIT_INTERRUPTED,
    EXIT_NOT_FOUND,
    EXIT_OK,
    EXIT_RUNTIME,
    EXIT_USAGE,
    ConfigError,
    RunError,
)
from deepsearch.llm.tracker import TokenTracker

# 2: status "not_found" (exit 4), `confidence` and `confidence_basis` (see docs/output.md).
# A new key alone (`team`, `steps[].agent`, `stop_reason`) keeps the version: consumers ignore unknown
# keys; a new value of an existing key, a removal or a rename bumps it.
SCHEMA_VERSION = "2"
# configuration: only the user can fix it (exit 2); fatal: the run could not go on
# (exit 1); runtime: an error the run worked around (the status decides the exit).
ErrorKind = Literal["configuration", "fatal", "runtime"]
# The exit code of each way a run ends: the one table (an interrupted run's code is
# the signal's, 130 / 143 / 129; the CLI knows which signal it was).
STATUS_EXIT: dict[Status, int] = {
    "answered": EXIT_OK,
    "forced": EXIT_FORCED,
    "not_found": EXIT_NOT_FOUND,
    "failed": EXIT_RUNTIME,
    "interrupted": EXIT_INTERRUPTED,
}


def failure_kind(exc: BaseException) -> ErrorKind:
    """The kind of an error that ended a run: a ConfigError, or a RunError that says
    so, is the user's to fix; any other RunError (the LLM unreachable or failing until
    its retries ran out, search dead) means the run could not go on: "fatal". Anything
    else (a bug, a full disk) is runtime."""
    if isinstance(exc, ConfigError):
        return "configuration"
    if not isinstance(exc, RunError):
        return "runtime"
    return "configuration" if exc.configuration else "fatal"


def error_kind(fatal: BaseException | None, error: str | None) -> ErrorKind | None:
    """The kind of `error`, from the exception that ended the run (if one did)."""
    if error is None:
        return None
    return "runtime" if fatal is None else failure_kind(fatal)


class ToolUsageReport(BaseModel):
    prompt_tokens: int
    completion_tokens: int
    calls: int
    cost_usd: float | None = 0.0  # null: the tool's model has no known price


def _dollars(amount: float | None) -> float | None:
    return None if amount is None else round(amount, 8)


class UsageReport(BaseModel):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    budget: int
    by_tool: dict[str, ToolUsageReport] = Field(default_factory=dict)
    # US dollars, the token ledger priced per call (llm/prices.py, docs/cost.md); null
    # when a model had no known price, never 0 for unknown. `estimated`: some tokens
    # were counted offline because the server reported none. Additions: version "2".
    cost_usd: float | None = 0.0
    estimated: bool = False
    max_cost: float | None = None  # --max-cost, the run's cost limit in dollars

    @classmethod
    def from_tracker(cls, tracker: TokenTracker) -> UsageReport:
        by_tool = {
            name: ToolUsageReport(**entry.model_dump(exclude={"cost_usd", "estimated"}),
                                  cost_usd=_dollars(entry.cost_usd))
            for name, entry in tracker.by_tool().items()
        }  # fmt: skip
        return cls(
            prompt_tokens=tracker.prompt_tokens,
            completion_tokens=tracker.completion_tokens,
            total_tokens=tracker.used,
            budget=tracker.budget,
            by_tool=by_tool,
            cost_usd=_dollars(tracker.cost_usd),
            estimated=tracker.estimated,
            max_cost=tracker.max_cost,
        )


class ResearchResult(BaseModel):
    schema_version: str = SCHEMA_VERSION
    question: str
    answer: str
    references: list[Reference] = Field(default_factory=list)
    status: Status
    # 0-1 from the run's own signals (deepsearch/agent/judging/confidence.py); 0 without an answer.
    confidence: float = Field(0.0, ge=0.0, le=1.0)
    confidence_basis: ConfidenceBasis | None = None
    steps: list[StepRecord] = Field(default_factory=list)
    team: list[TeamMember] = Field(default_factory=list)  # --team-size: the sub-researches
    # Why `team` is empty: "team size 1", "declined: <the planner's reason>", "budget
    # too small to split", ... (docs/configuration.md, Team mode); null when a team formed.
    team_not_formed: str | None = None
    visited_urls: list[str] = Field(default_factory=list)
    read_urls: list[str] = Field(default_factory=list)
    usage: UsageReport
    elapsed_s: float
    error: str | None = None
    error_kind: ErrorKind | None = None
    # Why and after which step the research phase ended ("answer accepted", "no new
    # evidence in 4 steps", "step limit of 100 reached", a fatal error's line...);
    # None for a run cut short while researching.
    stop_reason: str | None = None
    stop_step: int | None = None
    # What a reader must know about the answer: cited pages that carry instructions to
    # the model (agent/steps/honesty.py). An addition: schema_version stays "2".
    warnings: list[str] = Field(default_factory=list)
    # The run's id in the history (docs/history.md; null for a run nobody kept an id
    # for) and, for a follow-up (`-c`), the id of the run it continued.
    run_id: str | None = None
    continued_from: str | None = None

    def json_text(self) -> str:
        """The one line `--json` prints (and the history keeps), without its newline."""
        return json.dumps(self.model_dump(mode="json"), ensure_ascii=False)

    @property
    def exit_code(self) -> int:
        """A configuration cause (rejected key, unknown model, search that cannot work)
        is 2 whatever was found; a run that could not go on is 1; else the status's."""
        if self.error_kind == "configuration":
            return EXIT_USAGE
        if self.error_kind == "fatal":
            return EXIT_RUNTIME
        return STATUS_EXIT[self.status]


class Found(TypedDict, total=False):
    """What a started run had found and spent when it was cut short."""

    steps: list[StepRecord]
    team: list[TeamMember]
    team_not_formed: str | None
    visited_urls: list[str]
    read_urls: list[str]
    stop_reason: str | None
    stop_step: int | None


def result_so_far(
    question: str,
    status: Status,
    usage: UsageReport,
    *,
    error: str | None = None,
    kind: ErrorKind | None = None,
    answer: str = "",
    elapsed_s: float = 0.0,
    **found: Unpack[Found],
) -> ResearchResult:
    """The one builder of a result a run did not finish: an empty one (the run never
    started: nothing found, nothing spent) or what a started run had found so far
    (ResearchRun.snapshot). `kind` is the error's kind, and none without an error."""
    return ResearchResult(
        question=question,
        answer=answer,
        status=status,
        usage=usage,
        elapsed_s=elapsed_s,
        error=error,
        error_kind=kind if error is not None else None,
        **found,
    )
