"""Typed events the loop emits; the live view and the trace consume them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from pydantic import BaseModel, ConfigDict

# Which research emitted an event: "main", or a team child's id ("1", "2", ...).
MAIN_AGENT = "main"


class StepStarted(BaseModel):
    kind: Literal["step_started"] = "step_started"
    agent: str = MAIN_AGENT
    step: int
    question: str
    allowed: list[str]


class StepFinished(BaseModel):
    kind: Literal["step_finished"] = "step_finished"
    agent: str = MAIN_AGENT
    step: int
    action: str
    think: str
    detail: str
    tokens_used: int
    budget: int
    elapsed_s: float
    cost_usd: float | None = None  # dollars spent so far (null: a model has no price)
    max_cost: float | None = None  # the run's cost limit, if one is set


class Notice(BaseModel):
    # built at first use: a typical run never validates one (issue 21)
    model_config = ConfigDict(defer_build=True)

    kind: Literal["notice"] = "notice"
    agent: str = MAIN_AGENT
    text: str
    once: str = ""  # a key: the view shows a notice with the same key only once per run


def omitted_knowledge_notice() -> Notice:
    """Said once per run, in plain words, when evidence had to leave the prompt."""
    return Notice(
        text="the evidence found no longer all fits the model's context: "
        "the least relevant is left out of the prompt",
        once="omitted_knowledge",
    )


class Activity(BaseModel):
    """Work that started (`delta` 1) or ended (-1): searches, page reads, LLM calls,
    index builds. The live view's spinner names what is in flight."""

    kind: Literal["activity"] = "activity"
    agent: str = MAIN_AGENT
    what: Literal["search", "read", "llm", "index"]
    delta: Literal[1, -1]
    tool: str = ""  # for "llm": which tool calls (agent, evaluator, ...)
    detail: str = ""  # e.g. "17 files, 4.2 MB" for "index"
    tokens_used: int | None = None
    cost_usd: float | None = None
    max_cost: float | None = None


class LlmPhase(BaseModel):
    """Where an LLM call in flight stands (llm/call_watch.py): `waiting` for its first
    token (within `limit_s`), `retrying` after an error status (`status`; None: no
    answer) in `wait_s`, or `generating`. The spinner says it."""

    model_config = ConfigDict(defer_build=True)

    kind: Literal["llm_phase"] = "llm_phase"
    agent: str = MAIN_AGENT
    tool: str  # as Activity's: which call (agent, classifier, evaluator, ...)
    phase: Literal["waiting", "retrying", "generating"]
    limit_s: float | None = None
    status: int | None = None
    wait_s: float = 0.0


class PhaseChanged(BaseModel):
    kind: Literal["phase"] = "phase"
    agent: str = MAIN_AGENT
    phase: Literal["research", "beast", "finalizing", "done"]
    reason: str = ""


AgentEvent = StepStarted | StepFinished | Notice | PhaseChanged | Activity | LlmPhase


def safe_emit(emit: Callable[[AgentEvent], None], event: AgentEvent) -> None:
    """Hand `event` to the view; the one guard of "the view must never break the run"
    (a broken terminal, a closed stream): whatever the view raises is dropped."""
    try:
        emit(event)
    except Exception:  # the view must never break the run
        pass
