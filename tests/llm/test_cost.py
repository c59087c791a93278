"""Prices and the cost limit (issue 34): the table and its lookups, a local server at
$0, the user's prices, cached input, an unknown model (null, never 0), and the
tracker's dollar rules (a call sized to the dollars left, holds for calls in flight,
the 85% line), which are the token budget's own."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from deepsearch.config import ModelPrice, load_config
from deepsearch.errors import BudgetExceeded, ConfigError, CostLimitReached
from deepsearch.llm.base import Usage
from deepsearch.llm.prices import FREE, Price, PriceBook, shipped_table, unpriced_models
from deepsearch.llm.tracker import BudgetStop, TokenTracker
from tests.fakes.gemini_server import FakeGeminiServer, GeminiReply
from tests.fakes.openai_server import FakeOpenAIServer, Reply
from tests.fakes.scripted_llm import offline_settings
from tests.llm.helpers import ASK, Answer, gemini_client, openai_client

MINI = Price(0.15, 0.60, 0.075)
GOOD = {"answer": "42", "confidence": 0.9}


def test_the_table_knows_each_providers_defaults_with_a_date_and_a_source() -> None:
    table = shipped_table()
    assert table.as_of and "openai" in table.source
    settings = offline_settings()
    for provider in ("openai", "gemini"):
        book = PriceBook(table=table)
        assert unpriced_models(settings, provider, book) == [], provider  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "name", ["gpt-4o-mini", "GPT-4o-mini", "openai/gpt-4o-mini", "gpt-4o-mini-2024-07-18"]
)
def test_a_model_is_found_by_its_usual_spellings(name: str) -> None:
    assert PriceBook().price_of(name) == MINI


def test_an_unknown_model_has_no_price_and_a_local_server_costs_nothing() -> None:
    assert PriceBook().price_of("acme-large-2") is None
    assert PriceBook(local=True).price_of("acme-large-2") == FREE
    assert PriceBook(local=True).price_of("gpt-4o-mini") == FREE  # served locally
    for provider, url in [("ollama", None), ("openai", "http://127.0.0.1:8080/v1"),
                          ("openai", "http://gpu.lan:8000/v1")]:  # fmt: skip
        settings = offline_settings(**{"llm.openai_base_url": url})
        assert PriceBook.for_run(settings, provider).local, (provider, url)  # type: ignore[arg-type]
    hosted = offline_settings(**{"llm.openai_base_url": "https://openrouter.ai/api/v1"})
    assert not PriceBook.for_run(hosted, "openai").local


def test_the_users_price_wins_over_the_table_and_over_local(tmp_path: Path) -> None:
    user = tmp_path / "c.json"
    price = {"model": "gpt-4o-mini", "input": 1.0, "output": 2.0, "cached_input": 0.5}
    extra = {"model": "acme-large-2", "input": 3.0, "output": 4.0}
    user.write_text(json.dumps({"llm": {"prices": [price, extra]}}), "utf-8")
    settings = load_config(environ={}, config_file=user).settings
    book = PriceBook.for_run(settings, "openai")
    assert book.price_of("gpt-4o-mini") == Price(1.0, 2.0, 0.5)
    assert book.price_of("acme-large-2") == Price(3.0, 4.0)
    assert book.price_of("gpt-4o") == shipped_table().models["gpt-4o"]
    local = PriceBook([ModelPrice(model="acme-large-2", input=3, output=4)], local=True)
    assert local.price_of("acme-large-2") == Price(3.0, 4.0)


def test_a_bad_price_in_the_config_is_one_line_naming_the_key(tmp_path: Path) -> None:
    user = tmp_path / "c.json"
    user.write_text(json.dumps({"llm": {"prices": [{"model": "m", "input": -1, "output": 1}]}}))
    with pytest.raises(ConfigError, match=r"llm\.prices") as info:
        load_config(environ={}, config_file=user)
    assert "\n" not in str(info.value)


def test_cached_input_is_billed_at_its_own_price() -> None:
    usage = Usage(prompt_tokens=1_000_000, completion_tokens=100_000, cached_prompt_tokens=600_000)
    assert MINI.cost(usage) == pytest.approx(0.4 * 0.15 + 0.6 * 0.075 + 0.1 * 0.60)
    no_discount = Price(0.10, 0.40)
    assert no_discount.cost(usage) == pytest.approx(1.0 * 0.10 + 0.1 * 0.40)


async def test_the_servers_cached_tokens_are_priced_as_cached(
    openai_server: FakeOpenAIServer,
) -> None:
    usage = {"prompt_tokens": 10_000, "completion_tokens": 1_000, "total_tokens": 11_000,
             "prompt_tokens_details": {"cached_tokens": 8_000}}  # fmt: skip
    openai_server.enqueue(Reply(content=json.dumps(GOOD), usage=usage))  # type: ignore[arg-type]
    client, _ = openai_client(openai_server.base_url)
    result = await client.generate_object("agent", Answer, "s", ASK)
    assert result.usage.cached_prompt_tokens == 8_000
    expected = (2_000 * 0.15 + 8_000 * 0.075 + 1_000 * 0.60) / 1_000_000
    assert client.tracker.cost_usd == pytest.approx(expected)
    assert client.tracker.by_tool()["agent"].cost_usd == pytest.approx(expected)


def test_an_unpriced_call_makes_the_cost_unknown_never_zero() -> None:
    tracker = TokenTracker(100_000)
    tracker.record("agent", Usage(prompt_tokens=100, completion_tokens=10), cost=0.001)
    assert tracker.cost_usd == pytest.approx(0.001)
    tracker.record("evaluator", Usage(prompt_tokens=100, completion_tokens=10), cost=None)
    assert tracker.cost_usd is None
    assert tracker.by_tool()["agent"].cost_usd == pytest.approx(0.001)
    assert tracker.by_tool()["evaluator"].cost_usd is None


def test_a_call_is_sized_to_the_dollars_left() -> None:
    tracker = TokenTracker(1_000_000, max_cost=0.001)
    # 1,000 prompt tokens (x1.1 margin, +16) at $0.15/M leave ~$0.000832: ~1,386 output tokens
    cap = tracker.reserve(prompt_estimate=1_000, wanted_output=8_192, price=MINI)
    prompt = int(1_000 * tracker.prompt_ratio) + 16
    assert cap == int((0.001 - prompt * 0.15 / 1e6) / 0.60 * 1e6)
    assert tracker.call_hold(1_000, cap, MINI) <= 0.001
    # without a cost limit the token budget alone decides
    assert TokenTracker(1_000_000).reserve(prompt_estimate=1_000, wanted_output=8_192) == 8_192


def test_a_call_that_cannot_fit_the_dollars_left_is_not_made() -> None:
    tracker = TokenTracker(1_000_000, max_cost=0.0001)
    with pytest.raises(CostLimitReached, match=r"cost limit of \$0.0001") as info:
        tracker.reserve(prompt_estimate=1_000, wanted_output=8_192, price=MINI)
    assert isinstance(info.value, BudgetExceeded)  # the budget's handling applies to it
    with pytest.raises(CostLimitReached):  # under a cost limit, no price: no call
        TokenTracker(1_000_000, max_cost=1.0).reserve(
            prompt_estimate=10, wanted_output=300, price=None
        )


def test_calls_in_flight_hold_their_worst_case() -> None:
    tracker = TokenTracker(1_000_000, max_cost=0.001)
    first = tracker.reserve(prompt_estimate=1_000, wanted_output=8_192, price=MINI)
    with tracker.hold(tracker.call_hold(1_000, first, MINI)):
        with pytest.raises(CostLimitReached):  # the same remainder cannot be spent twice
            tracker.reserve(prompt_estimate=1_000, wanted_output=8_192, price=MINI)
    assert tracker.remaining_usd == pytest.approx(0.001)
    assert tracker.reserve(prompt_estimate=1_000, wanted_output=8_192, price=MINI) == first


def test_research_stops_before_a_step_like_the_last_would_cross_85_percent() -> None:
    tracker = TokenTracker(1_000_000, max_cost=0.01)
    with tracker.measure_step():
        tracker.record("agent", Usage(prompt_tokens=10, completion_tokens=1), cost=0.004)
    tracker.check_room_for_step()  # 0.004 + 0.004 <= 0.0085
    with tracker.measure_step():
        tracker.record("agent", Usage(prompt_tokens=10, completion_tokens=1), cost=0.001)
    with pytest.raises(BudgetStop, match=r"85% of the \$0.0100 cost limit"):
        tracker.check_room_for_step()  # 0.005 + the costliest recent step (0.004) > 0.0085


def test_beast_modes_knowledge_fits_the_dollars_left() -> None:
    tracker = TokenTracker(1_000_000, max_cost=0.001)
    # half of $0.001 at $0.15/M (x1.1 margin) is ~3,030 tokens, less the prompt around it
    assert tracker.beast_room(800, MINI) == int(0.0005 / (0.15 * 1.1) * 1e6) - 800
    assert TokenTracker(1_000_000).beast_room(800, MINI) == 500_000 - 800


async def test_embeddings_are_priced_and_skipped_when_the_dollars_left_cannot_pay() -> None:
    from tests.fakes.scripted_llm import scripted_client
    from tests.llm.test_client import CountingEmbedder

    settings = offline_settings(**{"llm.embedding_model": "text-embedding-3-small"})
    client, _ = scripted_client(lambda request: "{}", settings=settings)
    embedder = CountingEmbedder()
    client.embedder = embedder  # type: ignore[assignment]
    texts = ["a few words of a passage"] * 3
    await client.embed(texts)
    usage = client.tracker.by_tool()["embedding"]
    assert usage.cost_usd == pytest.approx(usage.prompt_tokens * 0.02 / 1_000_000)
    spent = client.tracker.cost_usd
    assert spent is not None
    client.tracker.max_cost = spent + usage.prompt_tokens * 0.02 / 1_000_000 / 2
    embedder.batches.clear()
    assert await client.embed(texts) is None and embedder.batches == [], "not sent"
    client.tracker.max_cost = spent + 1.0
    assert await client.embed(texts) is not None


async def test_geminis_cached_tokens_are_priced_as_cached(gemini_server: FakeGeminiServer) -> None:
    usage = {"promptTokenCount": 10_000, "candidatesTokenCount": 1_000,
             "cachedContentTokenCount": 8_000, "totalTokenCount": 11_000}  # fmt: skip
    gemini_server.enqueue(GeminiReply(text=json.dumps(GOOD), usage=usage))
    client, _ = gemini_client(gemini_server.url)
    await client.generate_object("agent", Answer, "s", ASK)
    expected = (2_000 * 0.30 + 8_000 * 0.075 + 1_000 * 2.50) / 1_000_000  # gemini-2.5-flash
    assert client.tracker.cost_usd == pytest.approx(expected)


def test_every_tool_a_run_calls_is_priced_the_follow_up_rewrite_too() -> None:
    """A model set for one tool alone (here the follow-up rewrite of `-c`) must be priced
    before a cost limit can hold: the list of a run's tools is the config's own."""
    settings = offline_settings()
    table = settings.llm.providers["openai"]
    tools = {**table.tools, "follow_up": table.default.model_copy(update={"model": "x-rare-1"})}
    priced = settings.model_copy(deep=True)
    priced.llm.providers["openai"] = table.model_copy(update={"tools": tools})
    assert unpriced_models(priced, "openai", PriceBook()) == ["x-rare-1"]
