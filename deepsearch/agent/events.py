"""Typed events the loop emits; the live view and the trace consume them."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel


class StepStarted(BaseModel):
    kind: Literal["step_started"] = "step_started"
    step: int
    question: str
    allowed: list[str]


class StepFinished(BaseModel):
    kind: Literal["step_finished"] = "step_finished"
    step: int
    action: str
    think: str
    detail: str
    tokens_used: int
    budget: int
    elapsed_s: float


class Notice(BaseModel):
    kind: Literal["notice"] = "notice"
    text: str


class PhaseChanged(BaseModel):
    kind: Literal["phase"] = "phase"
    phase: Literal["research", "beast", "finalizing", "done"]
    reason: str = ""


AgentEvent = StepStarted | StepFinished | Notice | PhaseChanged
