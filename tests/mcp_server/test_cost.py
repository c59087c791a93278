"""The MCP tool's cost limit and its result's dollars (issue 34)."""

from __future__ import annotations

from deepsearch.agent.result import ResearchResult, UsageReport
from deepsearch.mcp_server import tool


def test_a_calls_cost_limit_is_never_above_the_servers() -> None:
    server = {"max_cost": 0.5}
    _, knobs = tool.parse_arguments({"question": "q?", "max_cost": 2})[:2]
    assert tool.call_settings(server, knobs, 1_000_000).agent.max_cost == 0.5
    _, lower = tool.parse_arguments({"question": "q?", "max_cost": 0.1})[:2]
    assert tool.call_settings(server, lower, 1_000_000).agent.max_cost == 0.1
    assert tool.call_settings(server, {}, 1_000_000).agent.max_cost == 0.5
    assert tool.call_settings({}, knobs, 1_000_000).agent.max_cost == 2
    assert "max_cost" in tool.input_schema()["properties"]


def test_the_result_carries_the_dollars_and_the_limit() -> None:
    usage = UsageReport(prompt_tokens=10, completion_tokens=2, total_tokens=12, budget=100,
                        cost_usd=0.00123, max_cost=0.5)  # fmt: skip
    result = ResearchResult(question="q", answer="a", status="answered", usage=usage, elapsed_s=1)
    out = tool.output(result)
    assert (out.usage.cost_usd, out.usage.max_cost) == (0.00123, 0.5)
    unknown = result.model_copy(update={"usage": usage.model_copy(update={"cost_usd": None})})
    assert tool.output(unknown).model_dump()["usage"]["cost_usd"] is None
