"""The evaluator's checks: numeric verdicts compared by the code, run through the LLM."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from deepsearch.agent.evaluator import Evaluator, FreshnessEval
from deepsearch.agent.state import EvalMetric
from deepsearch.llm.base import CompletionRequest
from deepsearch.llm.testing import scripted_client
from tests.agent.helpers import PASS

NOW = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.mark.parametrize(
    ("days_ago", "max_age", "passed"),
    [(40, 30, False), (31, 30, False), (30, 30, True), (1, 30, True), (900, None, True)],
)
def test_freshness_verdict_compares_age_with_the_allowed_age(
    days_ago: float, max_age: float | None, passed: bool
) -> None:
    verdict = FreshnessEval(think="t", days_ago=days_ago, max_age_days=max_age).to_verdict()
    assert verdict.passed is passed
    assert verdict.type == "freshness"


def freshness_llm(days_ago: float, max_age: float) -> Any:
    def reply(request: CompletionRequest) -> Any:
        props = (request.json_schema or {}).get("properties", {})
        if "days_ago" in props:
            return {"think": "dated", "days_ago": days_ago, "max_age_days": max_age}
        return PASS

    return reply


@pytest.mark.parametrize(("days_ago", "passed"), [(400, False), (3, True)])
async def test_a_stale_answer_fails_the_freshness_check_in_evaluate(
    days_ago: float, passed: bool
) -> None:
    client, _ = scripted_client(freshness_llm(days_ago, 7))
    metrics = [EvalMetric(type="freshness", attempts_left=2)]
    verdict = await Evaluator(client).evaluate("Price today?", "42", metrics, [], now=NOW)
    assert verdict.passed is passed
    assert verdict.type == (None if passed else "freshness")
