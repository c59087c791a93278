"""The question's classification runs beside step 1's action, not before its decision:
a first search waits under it; anything else waits for it; a question that needs fresh
sources has a first answer decided again (search only); it never outlives its step."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from deepsearch.agent.loop import ResearchRun
from deepsearch.agent.outcomes import Stop
from deepsearch.agent.schema import allowed_actions
from deepsearch.errors import StructuredOutputError
from deepsearch.llm.base import CompletionRequest
from deepsearch.web.types import SearchQuery, SearchResult
from tests.agent.helpers import (
    CLASSIFY_SIMPLE,
    InFlightProvider,
    counting_client,
    make_deps,
    options,
    router,
)

Q = "When was the Eiffel Tower completed?"
SEARCH = {"think": "look it up", "action": {"search": {"queries": ["eiffel tower completed"]}}}
VISIT = {"think": "read", "action": {"visit": {"url_indices": [1]}}}
ANSWER = {"think": "done", "action": {"answer": {"answer": "It was completed in 1889."}}}
RESULT = SearchResult(
    title="Eiffel Tower",
    url="https://en.wikipedia.org/wiki/eiffel_tower",
    snippet="The Eiffel Tower was completed in 1889.",
    provider="fake",
)


class LoggedSearch:
    """A search that writes its start and end into the LLM's log; while it runs it
    waits (a bounded number of loop turns) for an evaluator call to be in flight, so
    a classification that runs beside it is seen to, on any machine."""

    name = "logged"

    def __init__(self, provider: InFlightProvider, *, hold: bool = False) -> None:
        self.provider, self.hold = provider, hold
        self.started = asyncio.Event()

    async def search(self, query: SearchQuery) -> list[SearchResult]:
        self.provider.log.append(("start", "search"))
        self.started.set()
        try:
            if self.hold:
                await asyncio.Event().wait()  # until cancelled
            await until(lambda: self.provider.live["evaluator"] > 0)
            for _ in range(40):
                await asyncio.sleep(0)
            return [RESULT]
        finally:
            self.provider.log.append(("end", "search"))


async def until(condition: Callable[[], bool], turns: int = 2000) -> None:
    """Give the event loop up to `turns` turns for `condition` to hold (no clock)."""
    for _ in range(turns):
        if condition():
            return
        await asyncio.sleep(0)


def routed(agent: list[dict[str, Any]], *, fresh: bool = False) -> Any:
    """The shared strict router (each agent step once), with the classification saying
    whether the question needs fresh sources."""
    base = router(agent)

    def reply(request: CompletionRequest) -> Any:
        if "needs_definitive" in (request.json_schema or {}).get("properties", {}):
            return {**CLASSIFY_SIMPLE, "needs_freshness": fresh}
        return base(request)

    return reply


def deps_for(agent: list[dict[str, Any]], *, fresh: bool = False, **kw: Any) -> Any:
    client, provider = counting_client(routed(agent, fresh=fresh), **kw)
    deps, _ = make_deps(lambda r: None)
    deps.llm = client
    deps.search = LoggedSearch(provider)
    return deps, provider


def schema_names(provider: InFlightProvider) -> list[str]:
    return [str((c.json_schema or {}).get("title", c.tool)) for c in provider.calls]


async def test_the_first_search_runs_while_the_question_is_classified() -> None:
    deps, provider = deps_for([SEARCH, VISIT, ANSWER])
    result = await ResearchRun(Q, deps, options(max_steps=4)).run()
    assert result.status == "answered"
    (_, decided), *_ = provider.calls_of("agent")
    (classify_start, classify_end), *_ = provider.calls_of("evaluator")
    searches = [i for i, entry in enumerate(provider.log) if entry[1] == "search"]
    search_start, search_end = searches[0], searches[1]
    assert decided < classify_start  # step 1 was decided first, then classified
    assert classify_start < search_end and search_start < classify_end  # side by side
    # The classification is still the first evaluator call, and still step 1's tokens.
    assert schema_names(provider)[1] == "QuestionEval"
    assert result.steps[0].action == "search" and run_metrics_set(result)


def run_metrics_set(result: Any) -> bool:
    return result.confidence_basis is not None and result.confidence_basis.checks == "passed"


async def test_a_first_answer_waits_for_the_classification_and_is_judged_by_it() -> None:
    deps, provider = deps_for([ANSWER])
    result = await ResearchRun(Q, deps, options(max_steps=3)).run()
    # Decided once, classified, then taken as a direct answer (its rule needs the checks).
    assert schema_names(provider) == ["AgentStep", "QuestionEval"]
    assert result.status == "answered" and [s.action for s in result.steps] == ["answer"]


async def test_a_fresh_question_decides_a_first_answer_again_as_a_search() -> None:
    deps, provider = deps_for([ANSWER, SEARCH, VISIT, ANSWER], fresh=True)
    result = await ResearchRun(Q, deps, options(max_steps=4)).run()
    agent_calls = provider.calls_for("agent")
    assert allowed_actions(agent_calls[0].json_schema or {}) == ["search", "reflect", "answer"]
    assert allowed_actions(agent_calls[1].json_schema or {}) == ["search"]  # fresh sources first
    assert [s.action for s in result.steps] == ["search", "visit", "answer"]
    # The first answer was never judged: the evaluator's calls are the classification,
    # then the final answer's checks (freshness among them).
    evaluated = [n for n in schema_names(provider) if n.endswith("Eval")]
    assert evaluated[0] == "QuestionEval" and "FreshnessEval" in evaluated
    assert len(agent_calls) == 4 and result.status == "answered"


async def test_a_step_that_ends_research_stops_the_classification_beside_it() -> None:
    # The classification would wait (3 s) for a second evaluator call that never comes.
    gate = {"gated": lambda r: r.tool == "evaluator", "together": 2, "hold_s": 3.0}
    deps, provider = deps_for([SEARCH], **gate)  # the run stops inside step 1

    async def broken_dedup(*args: Any, **kw: Any) -> list[str]:
        await until(lambda: provider.live["evaluator"] > 0)
        raise StructuredOutputError("the similarity model gave no usable reply")

    deps.similarity.dedup = broken_dedup
    run = ResearchRun(Q, deps, options(max_steps=3))
    ended = await run._research_phase()
    assert isinstance(ended, Stop) and "error" in ended.detail
    for _ in range(5):
        await asyncio.sleep(0)
    assert provider.live["evaluator"] == 0  # cancelled before Beast Mode could start
    assert not run.state.question_classified and run.state.metrics == []
    await run.classification.aclose()


async def test_a_run_cancelled_mid_search_leaves_no_classification_running() -> None:
    gate = {"gated": lambda r: r.tool == "evaluator", "together": 2, "hold_s": 3.0}
    deps, provider = deps_for([SEARCH], **gate)
    search = LoggedSearch(provider, hold=True)
    deps.search = search
    task = asyncio.create_task(ResearchRun(Q, deps, options(max_steps=3)).run())
    await search.started.wait()
    await until(lambda: provider.live["evaluator"] > 0)
    task.cancel()  # Ctrl-C
    try:
        await task
    except asyncio.CancelledError:
        pass
    assert provider.live["evaluator"] == 0 and provider.log[-1] != ("start", "evaluator")


async def test_an_unusable_classification_leaves_the_default_checks() -> None:
    scripted = routed([SEARCH, VISIT, ANSWER])

    def reply(request: CompletionRequest) -> Any:
        if "needs_definitive" in (request.json_schema or {}).get("properties", {}):
            return "not json at all"
        return scripted(request)

    client, provider = counting_client(reply)
    deps, _ = make_deps(lambda r: None)
    deps.llm = client
    deps.search = LoggedSearch(provider)
    run = ResearchRun(Q, deps, options(max_steps=4))
    result = await run.run()
    assert result.status == "answered" and run.state.question_classified
    assert [m.type for m in run.state.metrics] == ["definitive", "strict"]
    assert {"DefinitiveEval", "StrictEval"} <= set(schema_names(provider))
