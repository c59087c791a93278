"""The run's outcome: the stable, versioned `--json` schema."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from deepsearch.agent.state import StepRecord
from deepsearch.agent.types import Reference
from deepsearch.llm.tracker import TokenTracker

SCHEMA_VERSION = "1"
Status = Literal["answered", "forced", "interrupted", "failed"]


class ToolUsageReport(BaseModel):
    prompt_tokens: int
    completion_tokens: int
    calls: int


class UsageReport(BaseModel):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    budget: int
    by_tool: dict[str, ToolUsageReport] = Field(default_factory=dict)

    @classmethod
    def from_tracker(cls, tracker: TokenTracker) -> UsageReport:
        return cls(
            prompt_tokens=tracker.prompt_tokens,
            completion_tokens=tracker.completion_tokens,
            total_tokens=tracker.used,
            budget=tracker.budget,
            by_tool={k: ToolUsageReport(**v.model_dump()) for k, v in tracker.by_tool().items()},
        )


class ResearchResult(BaseModel):
    schema_version: str = SCHEMA_VERSION
    question: str
    answer: str
    references: list[Reference] = Field(default_factory=list)
    status: Status
    steps: list[StepRecord] = Field(default_factory=list)
    visited_urls: list[str] = Field(default_factory=list)
    read_urls: list[str] = Field(default_factory=list)
    usage: UsageReport
    elapsed_s: float
    error: str | None = None
