"""A run on a model with no known price (issue 34): its cost is null, never $0; the
live view is told once how to add the price; a cost limit is refused before any call."""

from __future__ import annotations

from typing import Any

import pytest

from deepsearch.agent.events import Notice
from deepsearch.agent.loop import ResearchRun
from deepsearch.commands.render import summary_line
from deepsearch.errors import ConfigError
from deepsearch.llm.base import CompletionRequest
from deepsearch.runtime import check_prices
from tests.agent.helpers import evaluator_reply, make_deps, options
from tests.fakes.scripted_llm import offline_settings, scripted_client

UNPRICED = {"llm.model": "acme-large-2"}


def answers_at_once(request: CompletionRequest) -> Any:
    if request.tool == "agent":
        return {"think": "known", "action": {"answer": {"answer": "Paris is in France."}}}
    return evaluator_reply(request)


def test_an_unpriced_model_is_said_once_with_how_to_add_its_price() -> None:
    settings = offline_settings(**UNPRICED)
    client, _ = scripted_client(answers_at_once, settings=settings)
    events: list[Any] = []
    check_prices(settings, client, events.append)
    (notice,) = events
    assert isinstance(notice, Notice) and notice.once == "unpriced_model"
    assert "acme-large-2" in notice.text and "llm.prices" in notice.text
    priced = offline_settings()
    check_prices(priced, scripted_client(answers_at_once, settings=priced)[0], events.append)
    assert len(events) == 1, "a priced model is not mentioned"


def test_a_cost_limit_on_an_unpriced_model_is_refused_before_any_call() -> None:
    settings = offline_settings(**UNPRICED, **{"agent.max_cost": 0.5})
    client, provider = scripted_client(answers_at_once, settings=settings)
    with pytest.raises(ConfigError, match="acme-large-2.*llm.prices") as info:
        check_prices(settings, client, lambda e: None)
    assert "\n" not in str(info.value) and "--max-cost" in str(info.value)
    assert not provider.calls


async def test_the_cost_of_a_run_on_an_unpriced_model_is_null() -> None:
    deps, _ = make_deps(answers_at_once)
    deps.llm, _ = scripted_client(answers_at_once, settings=offline_settings(**UNPRICED))
    result = await ResearchRun("Where is Paris?", deps, options()).run()
    assert result.usage.total_tokens > 0
    assert result.usage.cost_usd is None
    assert all(t.cost_usd is None for t in result.usage.by_tool.values())
    assert "cost unknown" in summary_line(result)
    dumped = result.model_dump(mode="json")["usage"]
    assert dumped["cost_usd"] is None  # null in --json, never 0
