"""Shared builders for agent tests: a scripted LLM routed by tool and a tiny web."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from deepsearch.agent.deps import AgentDeps, RunOptions
from deepsearch.agent.judging.evaluator import QuestionEval
from deepsearch.agent.state import AgentState
from deepsearch.agent.step import StepContext
from deepsearch.agent.steps.evaluator import Evaluator
from deepsearch.clock import FakeClock
from deepsearch.llm.base import CompletionRequest, Usage
from deepsearch.llm.client import LLMClient
from deepsearch.llm.testing import (
    ScriptedProvider,
    ToolQueues,
    offline_settings,
    scripted_client,
)
from deepsearch.llm.tracker import TokenTracker
from deepsearch.web.testing import FakeReader, FakeSearch
from deepsearch.web.types import SearchResult
from tests.fakes.steps import StepScript

PASS = {"think": "fine", "pass": True}
CLASSIFY_SIMPLE = QuestionEval().model_dump()  # definitive only: a plain fact


def evaluator_reply(request: CompletionRequest, *, strict_pass: bool = True) -> dict[str, Any]:
    props = (request.json_schema or {}).get("properties", {})
    if "needs_definitive" in props:
        return CLASSIFY_SIMPLE
    if "improvement_plan" in props:
        return {
            "think": "ok" if strict_pass else "too thin",
            "pass": strict_pass,
            "improvement_plan": ""
            if strict_pass
            else "For the best answer, you must cite the year.",
        }
    if "days_ago" in props:
        return {"think": "recent", "days_ago": 1, "max_age_days": 30}
    if "minimum_count_required" in props:
        return {"think": "count", "minimum_count_required": 1, "actual_count_provided": 1}
    return PASS


STRICT_PASS = {"think": "ok", "pass": True, "improvement_plan": ""}


def scripted(
    agent: list[dict[str, Any]], *, beast: list[dict[str, Any]] | None = None, checks: int = 0
) -> ToolQueues:
    """A strict script (no call beyond it, every reply used): the question's
    classification (a plain fact), the agent's steps, Beast Mode's, and `checks`
    accepted answers (each one definitive + strict check)."""
    evaluator: list[Any] = [CLASSIFY_SIMPLE] + [PASS, STRICT_PASS] * checks
    queues: dict[str, list[Any]] = {"agent": list(agent), "evaluator": evaluator}
    if beast:
        queues["agent_beast"] = list(beast)
    return ToolQueues(queues)


def router(
    agent_replies: list[dict[str, Any]], **eval_kwargs: Any
) -> Callable[[CompletionRequest], Any]:
    """Agent steps from the list, each once (a strict `StepScript`: end it with
    `forever(step)` for a step that repeats); evaluators answer by schema."""
    script = StepScript(agent_replies)

    def reply(request: CompletionRequest) -> Any:
        if request.tool in ("agent", "agent_beast"):
            return script.next()
        if request.tool == "evaluator":
            return evaluator_reply(request, **eval_kwargs)
        if request.tool == "error_analyzer":
            return {"recap": "r", "blame": "b", "improvement": "i"}
        if request.tool == "finalizer":
            return request.messages[-1].content
        if request.tool == "query_rewriter":
            return {"think": "", "queries": []}
        raise AssertionError(f"unexpected tool {request.tool}")

    return reply


def tiny_web() -> tuple[FakeSearch, FakeReader]:
    results = [
        SearchResult(
            title="Eiffel Tower",
            url="https://en.wikipedia.org/wiki/eiffel_tower",
            snippet="The Eiffel Tower was completed in 1889.",
            provider="fake",
        ),
        SearchResult(
            title="Tower history",
            url="https://history.example.org/eiffel",
            snippet="Construction finished in March 1889.",
            provider="fake",
        ),
    ]
    search = FakeSearch(lambda q: results)
    reader = FakeReader(
        {
            "https://en.wikipedia.org/wiki/eiffel_tower": "The Eiffel Tower is in Paris. It was completed in 1889 for the World's Fair.",
            "https://history.example.org/eiffel": "Construction of the tower finished in March 1889.",
        }
    )
    return search, reader


class LatencyProvider(ScriptedProvider):
    """A scripted provider that takes `latency_s` per call (as an API would) and
    records each call's (tool, start, end), so tests can see calls overlap."""

    def __init__(self, fn: Callable[[CompletionRequest], Any], latency_s: float) -> None:
        super().__init__(fn)
        self.latency_s = latency_s
        self.intervals: list[tuple[str, float, float]] = []

    async def complete(self, request: CompletionRequest) -> Any:
        start = time.monotonic()
        await asyncio.sleep(self.latency_s)
        try:
            return await super().complete(request)
        finally:
            self.intervals.append((request.tool, start, time.monotonic()))


def max_overlap(intervals: list[tuple[str, float, float]]) -> int:
    """The most calls that were in flight at one moment."""
    edges = sorted([(s, 1) for _, s, _ in intervals] + [(e, -1) for _, _, e in intervals])
    best = live = 0
    for _, step in edges:
        live += step
        best = max(best, live)
    return best


def latency_client(
    fn: Callable[[CompletionRequest], Any], latency_s: float, *, budget: int = 200_000
) -> tuple[LLMClient, LatencyProvider]:
    provider = LatencyProvider(fn, latency_s)
    client = LLMClient(
        provider=provider,
        provider_name="openai",
        settings=offline_settings(),  # concurrency 4, as shipped
        tracker=TokenTracker(budget),
    )
    return client, provider


def make_deps(
    reply_fn: Callable[[CompletionRequest], Any],
    *,
    budget: int = 200_000,
    search: FakeSearch | None = None,
    reader: FakeReader | None = None,
    usage: Usage | None = None,
    clock: FakeClock | None = None,
    sandbox: Any = None,
    events: list[Any] | None = None,
) -> tuple[AgentDeps, ScriptedProvider]:
    client, provider = scripted_client(reply_fn, budget=budget, usage=usage)
    default_search, default_reader = tiny_web()
    deps = AgentDeps(
        llm=client,
        search=search or default_search,
        reader=reader or default_reader,
        clock=clock or FakeClock(),
        sandbox=sandbox,
        emit=(events.append if events is not None else (lambda e: None)),
    )
    return deps, provider


def options(**kwargs: Any) -> RunOptions:
    return RunOptions(**kwargs)


def step_context(state: AgentState, deps: AgentDeps, opts: RunOptions | None = None) -> StepContext:
    """The context a handler gets from the loop, for calling one handler alone."""
    return StepContext(
        state=state, deps=deps, options=opts or RunOptions(), evaluator=Evaluator(deps.llm)
    )
