"""What a model costs: the price table shipped with the package, the user's prices,
and the rule that a local server costs nothing.

A model's price is, first match wins:

1. `llm.prices` in the configuration (a list of `{"model", "input", "output",
   "cached_input"}` in US dollars per million tokens);
2. $0 when the calls go to a local server (the `ollama` provider, or a base URL on
   loopback, a private address or a `.local`/`.lan`/`.internal` name:
   call_limits.is_local_endpoint);
3. the shipped table (`llm/data/prices.json`: its source and date are in the file);
4. unknown (None): the run's cost is then unknown (`null`), never $0.

A name is looked up as given, then lower-cased, without a route prefix
("openai/gpt-4o-mini" on OpenRouter, "models/gemini-2.5-flash"), then without a date
suffix ("gpt-4o-mini-2024-07-18").
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import get_args

from deepsearch.config import ModelPrice, ProviderName, Settings, ToolName
from deepsearch.llm.base import Usage
from deepsearch.llm.call_limits import is_local_endpoint

PER_MILLION = 1_000_000
_TABLE = Path(__file__).resolve().parent / "data" / "prices.json"
_DATE_SUFFIX = re.compile(r"-(\d{4}-\d{2}-\d{2}|\d{8}|\d{4})$")
# The tools a research run calls: every tool but eval's grader (on its own account),
# read from the one list of tools, so a new one (the follow-up rewrite) is priced too.
RUN_TOOLS: tuple[ToolName, ...] = tuple(t for t in get_args(ToolName) if t != "grader")


@dataclass(frozen=True)
class Price:
    """US dollars per million tokens: input, output and cached input (None: the
    provider gives no discount, the input price applies)."""

    input: float
    output: float
    cached_input: float | None = None

    def prompt_cost(self, tokens: int, cached: int = 0) -> float:
        cached = max(0, min(cached, tokens))
        cached_rate = self.input if self.cached_input is None else self.cached_input
        return ((tokens - cached) * self.input + cached * cached_rate) / PER_MILLION

    def output_cost(self, tokens: int) -> float:
        return tokens * self.output / PER_MILLION

    def cost(self, usage: Usage) -> float:
        """The dollars of one call's (or a sum's) tokens."""
        prompt = self.prompt_cost(usage.prompt_tokens, usage.cached_prompt_tokens)
        return prompt + self.output_cost(usage.completion_tokens)

    @property
    def free(self) -> bool:
        return self.input == 0 and self.output == 0


FREE = Price(0.0, 0.0)


@dataclass(frozen=True)
class PriceTable:
    as_of: str
    source: str
    models: Mapping[str, Price]


@cache
def shipped_table() -> PriceTable:
    data = json.loads(_TABLE.read_text(encoding="utf-8"))
    models = {name.lower(): Price(**entry) for name, entry in data["models"].items()}
    return PriceTable(as_of=data["as_of"], source=data["source"], models=models)


def _names(model: str) -> list[str]:
    """The names a model is looked up by, most specific first."""
    lowered = model.strip().lower()
    bare = lowered.rsplit("/", 1)[-1]
    undated = _DATE_SUFFIX.sub("", bare)
    return list(dict.fromkeys([model, lowered, bare, undated]))


class PriceBook:
    """What each model of one run's provider costs (module docstring)."""

    def __init__(
        self,
        user: Iterable[ModelPrice] = (),
        *,
        local: bool = False,
        table: PriceTable | None = None,
    ) -> None:
        self.user = {
            p.model.strip().lower(): Price(p.input, p.output, p.cached_input) for p in user
        }
        self.local = local
        self.table = table if table is not None else shipped_table()

    @classmethod
    def for_run(cls, settings: Settings, provider: ProviderName) -> PriceBook:
        base_url = {
            "openai": settings.llm.openai_base_url,
            "gemini": settings.llm.gemini_base_url,
            "ollama": settings.llm.ollama_url,
        }[provider]
        return cls(settings.llm.prices, local=is_local_endpoint(provider, base_url))

    def price_of(self, model: str) -> Price | None:
        names = _names(model)
        for name in names:
            if name.lower() in self.user:
                return self.user[name.lower()]
        if self.local:
            return FREE
        for name in names:
            if name.lower() in self.table.models:
                return self.table.models[name.lower()]
        return None


def run_models(settings: Settings, provider: ProviderName) -> list[str]:
    """Every model a research run on `provider` may call: each tool's, and the
    embedding model when embeddings are configured."""
    models = [settings.tool_settings(provider, tool).model for tool in RUN_TOOLS]
    if settings.llm.embedding_model:
        models.append(settings.llm.embedding_model)
    elif settings.llm.jina_embedding_model and settings.keys.jina_api_key is not None:
        models.append(settings.llm.jina_embedding_model)
    return list(dict.fromkeys(models))


def unpriced_models(settings: Settings, provider: ProviderName, book: PriceBook) -> list[str]:
    return [m for m in run_models(settings, provider) if book.price_of(m) is None]


def how_to_price(model: str) -> str:
    """The hint the live view and the --max-cost refusal give for an unpriced model."""
    return (
        f'add {{"model": "{model}", "input": <$ per 1M tokens>, "output": <$ per 1M tokens>}} '
        "to llm.prices in your config file (docs/cost.md)"
    )


def unpriced_notice(settings: Settings, provider: ProviderName, book: PriceBook) -> str | None:
    """What to say about the run's unpriced models (None: every one is priced).

    Raises:
        ConfigError: a cost limit is set and a model has no price (exit 2, one line
            naming the model and the config key).
    """
    from deepsearch.errors import ConfigError

    unpriced = unpriced_models(settings, provider, book)
    if not unpriced:
        return None
    if settings.agent.max_cost is not None:
        raise ConfigError(
            f"a cost limit (--max-cost, agent.max_cost) needs the price of model "
            f"{unpriced[0]!r}, which is unknown: {how_to_price(unpriced[0])}"
        )
    names = ", ".join(repr(m) for m in unpriced)
    return f"cost unknown: no price for model {names}; {how_to_price(unpriced[0])}"
