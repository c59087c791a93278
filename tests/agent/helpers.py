"""Shared builders for agent tests: a scripted LLM routed by tool and a tiny web."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable
from typing import Any

from deepsearch.agent.deps import AgentDeps, RunOptions
from deepsearch.agent.judging.evaluator import QuestionEval
from deepsearch.agent.state import AgentState
from deepsearch.agent.step import StepContext
from deepsearch.agent.steps.evaluator import Evaluator
from deepsearch.llm.base import CompletionRequest, Usage
from deepsearch.llm.client import LLMClient
from deepsearch.llm.tracker import TokenTracker
from deepsearch.web.types import SearchResult
from tests.fakes.clock import FakeClock
from tests.fakes.memory_web import FakeReader, FakeSearch
from tests.fakes.scripted_llm import (
    ScriptedProvider,
    ToolQueues,
    offline_settings,
    scripted_client,
)
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


class InFlightProvider(ScriptedProvider):
    """A scripted provider that counts its calls instead of timing them: each call adds
    one to `live` on entry and takes it off on exit, `peak` keeps the most at once
    (overall and per tool), and `log` records ("start"/"end", tool) in order (share it
    with a fake reader to see what ran while the model thought).

    A call for which `gated(request)` holds waits until `together` such calls are in
    flight at once, so calls that can overlap do overlap on any machine (`hold_s` only
    bounds the wait, for code that runs them one by one). Then it yields `ticks` turns
    to the event loop, as an API's latency lets other work run, without reading a clock."""

    def __init__(
        self,
        fn: Callable[[CompletionRequest], Any],
        *,
        together: int = 1,
        gated: Callable[[CompletionRequest], bool] = lambda request: True,
        ticks: int = 20,
        hold_s: float = 10.0,
        log: list[tuple[str, str]] | None = None,
    ) -> None:
        super().__init__(fn)
        self.together, self.gated, self.ticks, self.hold_s = together, gated, ticks, hold_s
        self.log: list[tuple[str, str]] = log if log is not None else []
        self.live: Counter[str] = Counter()
        self.peak: Counter[str] = Counter()
        self.peak_all = 0
        self.spans: list[tuple[str, int, int]] = []
        self._waiting = 0
        self._all_here = asyncio.Event()

    async def complete(self, request: CompletionRequest) -> Any:
        tool = request.tool
        self.live[tool] += 1
        self.peak[tool] = max(self.peak[tool], self.live[tool])
        self.peak_all = max(self.peak_all, sum(self.live.values()))
        self.log.append(("start", tool))
        start = len(self.log) - 1
        try:
            if self.gated(request):
                await self._gather()
            for _ in range(self.ticks):
                await asyncio.sleep(0)
            return await super().complete(request)
        finally:
            self.live[tool] -= 1
            self.log.append(("end", tool))
            self.spans.append((tool, start, len(self.log) - 1))

    async def _gather(self) -> None:
        self._waiting += 1
        if self._waiting >= self.together:
            self._all_here.set()
        try:
            await asyncio.wait_for(self._all_here.wait(), self.hold_s)
        except TimeoutError:
            pass  # never the passing path: the peak the test reads says what happened
        finally:
            self._waiting -= 1

    def calls_of(self, tool: str) -> list[tuple[int, int]]:
        """Each call of `tool`, in order, as (index of its start, of its end) in `log`."""
        return sorted((start, end) for name, start, end in self.spans if name == tool)


def counting_client(
    fn: Callable[[CompletionRequest], Any], *, budget: int = 200_000, **kw: Any
) -> tuple[LLMClient, InFlightProvider]:
    provider = InFlightProvider(fn, **kw)
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
