"""What --json says about each team child (`team: [...]`)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

# A child's status: a ResearchResult status (a child still running when the parent is
# cut short is "interrupted").
ChildStatus = Literal["answered", "forced", "not_found", "interrupted", "failed"]


class TeamMember(BaseModel):
    id: str  # "1", "2", ...: the `agent` of its steps and events
    question: str  # the sub-problem it researched
    status: ChildStatus
    answer: str = ""
    tokens: int = Field(0, ge=0, description="tokens the child spent (all tools)")
    budget_share: int = Field(ge=0, description="its token budget, fixed before it started")
    # Why a child that did not answer ended as it did (its run's error, or its limit).
    error: str | None = None
