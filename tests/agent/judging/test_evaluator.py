"""The evaluator's checks: numeric verdicts compared by the code, run through the LLM."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from deepsearch.agent.judging.evaluator import FreshnessEval
from deepsearch.agent.state import EvalMetric
from deepsearch.agent.steps.evaluator import Evaluator
from deepsearch.errors import StructuredOutputError
from deepsearch.llm.base import CompletionRequest
from tests.agent.helpers import PASS, counting_client
from tests.fakes.scripted_llm import scripted_client

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


def checks_llm(*, definitive_passes: bool = True, strict_raises: bool = False) -> Any:
    def reply(request: CompletionRequest) -> Any:
        props = (request.json_schema or {}).get("properties", {})
        if "days_ago" in props:
            return {"think": "dated", "days_ago": 1, "max_age_days": 30}
        if "improvement_plan" in props:
            if strict_raises:
                return "not json at all"
            return {"think": "ok", "pass": True, "improvement_plan": ""}
        return {"think": "judged", "pass": definitive_passes}

    return reply


ALL_THREE = [EvalMetric(type=t, attempts_left=2) for t in ("definitive", "freshness", "strict")]


async def test_independent_checks_run_concurrently_and_a_failing_one_still_rejects() -> None:
    # Each call waits for all three: one by one, the first would wait out its hold alone.
    client, provider = counting_client(checks_llm(definitive_passes=False), together=3)
    verdict = await Evaluator(client).evaluate("Price today?", "42", ALL_THREE, [], now=NOW)
    assert not verdict.passed and verdict.type == "definitive"
    assert len(provider.calls) == 3
    assert provider.peak_all == 3  # all three were in flight together
    client, provider = counting_client(checks_llm(), together=3)
    assert (await Evaluator(client).evaluate("Q?", "42", ALL_THREE, [], now=NOW)).passed


async def test_a_check_that_cannot_be_judged_fails_the_answer_when_concurrent() -> None:
    client, provider = counting_client(checks_llm(strict_raises=True), together=3)
    with pytest.raises(StructuredOutputError):
        await Evaluator(client).evaluate("Q?", "42", ALL_THREE, [], now=NOW)
    assert provider.peak_all == 3


async def test_checks_run_one_by_one_when_all_at_once_might_not_fit_the_budget() -> None:
    # No gate: each call yields to the loop, so checks started together would overlap.
    client, provider = counting_client(checks_llm(definitive_passes=False), budget=3000)
    verdict = await Evaluator(client).evaluate("Price today?", "42", ALL_THREE, [], now=NOW)
    assert verdict.type == "definitive"
    assert provider.peak_all == 1
    assert len(provider.calls) == 1  # one by one, stopping at the first failure
    assert client.tracker.used <= 3000


def test_the_strict_check_sees_what_the_answer_rests_on_first() -> None:
    from deepsearch.agent.types import KnowledgeItem

    client, _ = scripted_client(checks_llm())
    support = KnowledgeItem(
        question="Who designed it?", answer="Miriam Vosk", type="url", pinned=True
    )
    newer = [KnowledgeItem(question=f"n{i}", answer="word " * 400, type="qa") for i in range(5)]
    from deepsearch.agent.context import format_item
    from deepsearch.llm.tokens import count_tokens

    room = sum(count_tokens(format_item(i + 2, k)) for i, k in enumerate(newer) if i >= 3) + 3
    text = Evaluator._knowledge_text([support, *newer], room)
    assert "Miriam Vosk" in text
    assert text.index("Miriam Vosk") < text.index("n4")  # original order kept


def test_knowledge_that_fits_by_its_byte_bound_is_not_counted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The strict check's knowledge and the concurrent-checks fit count tokens only
    when the byte bound (never below a count) does not fit."""
    import deepsearch.agent.steps.evaluator as evaluator
    from deepsearch.agent.types import KnowledgeItem
    from deepsearch.llm.base import Message

    def no_count(text: str, **_: object) -> int:
        raise AssertionError("counted")

    monkeypatch.setattr(evaluator, "count_tokens", no_count)
    client, _ = scripted_client(checks_llm())
    items = [KnowledgeItem(question=f"q{i}", answer="word " * 40, type="qa") for i in range(3)]
    text = Evaluator._knowledge_text(items, evaluator.DEFAULT_KNOWLEDGE_TOKENS)
    assert all(f"q{i}" in text for i in range(3))
    check = (FreshnessEval, "system", [Message(role="user", content="question")])
    assert Evaluator(client)._fits_at_once([check, check])
    with pytest.raises(AssertionError, match="counted"):
        Evaluator._knowledge_text(items, 50)
