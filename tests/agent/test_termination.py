"""Every run ends: budget, step limit, wall clock, unusable replies, and any random
sequence of schema-valid replies (hypothesis)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from deepsearch.agent.loop import ResearchRun
from deepsearch.llm.base import CompletionRequest
from deepsearch.web.testing import FakeReader, FakeSearch
from deepsearch.web.types import SearchResult
from tests.agent.helpers import evaluator_reply, make_deps, options

SEARCH = {"think": "more", "action": "search", "search": {"queries": ["q"]}}


def endless_search(counter: list[int]) -> Any:
    """A model that never answers: new queries forever (visits when search is gated)."""

    def reply(request: CompletionRequest) -> Any:
        if request.tool == "agent":
            counter[0] += 1
            spec = request.json_schema["properties"]["action"]  # type: ignore[index]
            allowed = spec.get("enum") or [spec["const"]]
            if "search" in allowed:
                return {
                    "think": "",
                    "action": "search",
                    "search": {"queries": [f"query {counter[0]}"]},
                }
            if "visit" in allowed:
                return {"think": "", "action": "visit", "visit": {"url_indices": [1]}}
            return {"think": "", "action": allowed[0], allowed[0]: _payload(allowed[0])}
        if request.tool == "agent_beast":
            return {"think": "forced", "action": "answer", "answer": {"answer": "best guess"}}
        if request.tool == "finalizer":
            return request.messages[-1].content
        return evaluator_reply(request, strict_pass=False)

    return reply


def _payload(action: str) -> dict[str, Any]:
    return {
        "search": {"queries": ["x"]},
        "visit": {"url_indices": [1]},
        "reflect": {"questions": ["why?"]},
        "answer": {"answer": "maybe"},
        "coding": {"problem": "count"},
    }[action]


def many_results(query: Any) -> list[SearchResult]:
    return [
        SearchResult(
            title=f"t{i}",
            url=f"https://site{hash(query.q) % 1000}-{i}.org/a",
            snippet="s" * 50,
            provider="fake",
        )
        for i in range(3)
    ]


async def test_budget_forces_beast_mode_and_is_never_exceeded() -> None:
    counter = [0]
    deps, provider = make_deps(
        endless_search(counter),
        budget=20_000,
        search=FakeSearch(many_results),
        reader=FakeReader({}),
    )
    result = await ResearchRun("Who?", deps, options(max_steps=1000)).run()
    assert result.status == "forced"
    assert result.answer == "best guess"
    assert result.usage.total_tokens <= 20_000
    assert provider.calls_for("agent_beast"), "Beast Mode must run"
    # the loop stopped because 85% was used, not because of the step cap
    assert result.usage.total_tokens >= 0.85 * 20_000 or counter[0] < 1000


async def test_step_limit_stops_the_loop() -> None:
    counter = [0]
    deps, _ = make_deps(
        endless_search(counter), search=FakeSearch(many_results), reader=FakeReader({})
    )
    result = await ResearchRun("Who?", deps, options(max_steps=4)).run()
    assert result.status == "forced"
    assert counter[0] == 4
    assert len(result.steps) == 5  # four research steps and the Beast Mode answer


async def test_wall_clock_timeout_stops_a_hanging_search() -> None:
    counter = [0]
    deps, _ = make_deps(
        endless_search(counter),
        search=FakeSearch(many_results, delay_s=30),
        reader=FakeReader({}),
    )
    from deepsearch.clock import SystemClock

    deps.clock = SystemClock()
    loop = asyncio.get_running_loop()
    started = loop.time()
    result = await ResearchRun("Who?", deps, options(timeout_s=1.0)).run()
    assert loop.time() - started < 5
    assert result.status == "forced"
    assert result.answer == "best guess"


async def test_unusable_replies_end_the_run_without_looping() -> None:
    deps, provider = make_deps(
        lambda r: "I refuse to speak JSON" if r.tool.startswith("agent") else evaluator_reply(r)
    )
    result = await ResearchRun("Who?", deps, options()).run()
    assert result.status == "failed"
    assert "no usable reply" in (result.error or "")
    # 3 failed steps (each: call, corrective retry, fallback) + beast (same three)
    assert len(provider.calls_for("agent")) == 3 * 2
    assert len(provider.calls_for("fallback")) == 4


async def test_missing_usage_is_estimated_never_nan() -> None:
    deps, _ = make_deps(
        endless_search([0]), usage=None, search=FakeSearch(many_results), reader=FakeReader({})
    )
    result = await ResearchRun("Who?", deps, options(max_steps=2)).run()
    assert result.usage.prompt_tokens > 0 and result.usage.completion_tokens > 0
    assert (
        json.loads(result.model_dump_json())["usage"]["total_tokens"] == result.usage.total_tokens
    )


# ---------------------------------------------------------------- property test

texts = st.text(min_size=0, max_size=40)
ACTIONS = ("search", "visit", "reflect", "answer", "coding")


def random_payload(draw: Any, action: str) -> dict[str, Any]:
    if action == "search":
        return {"queries": draw(st.lists(texts, max_size=5))}
    if action == "visit":
        return {"url_indices": draw(st.lists(st.integers(-5, 60), max_size=5))}
    if action == "reflect":
        return {"questions": draw(st.lists(texts, max_size=2))}
    if action == "answer":
        return {"answer": draw(texts)}
    return {"problem": draw(texts)}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), budget=st.integers(3_000, 60_000), max_steps=st.integers(1, 25))
def test_any_valid_reply_sequence_ends_within_limits(
    data: st.DataObject, budget: int, max_steps: int
) -> None:
    def reply(request: CompletionRequest) -> Any:
        props = (request.json_schema or {}).get("properties", {})
        if request.tool in ("agent", "agent_beast"):
            if data.draw(st.integers(0, 20), label="garbage") == 0:
                return "not json at all"
            allowed = props["action"].get("enum") or [props["action"]["const"]]
            action = data.draw(st.sampled_from(allowed), label="action")
            return {
                "think": data.draw(texts),
                "action": action,
                action: random_payload(data.draw, action),
            }
        if request.tool == "evaluator":
            base = evaluator_reply(request, strict_pass=data.draw(st.booleans(), label="strict"))
            if "pass" in base:
                base["pass"] = data.draw(st.booleans(), label="pass")
            return base
        if request.tool == "error_analyzer":
            return {"recap": "r", "blame": "b", "improvement": "i"}
        if request.tool == "coder":
            return {"think": "", "code": "result = 1"}
        return {"think": "", "queries": []}

    deps, _ = make_deps(
        reply, budget=budget, search=FakeSearch(many_results), reader=FakeReader({})
    )
    run = ResearchRun(
        "Which city hosted the 1900 Olympics?",
        deps,
        options(max_steps=max_steps, timeout_s=30),
    )
    result = asyncio.run(run.run())
    assert result.status in ("answered", "forced", "failed")
    assert result.usage.total_tokens <= budget
    research_steps = [s for s in result.steps if s.step <= max_steps]
    assert len(research_steps) <= max_steps
    assert len(result.steps) <= max_steps + 1
