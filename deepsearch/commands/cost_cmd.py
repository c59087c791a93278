"""`deepsearch cost ["question"] [research flags]`: before running, what a research
would cost at these settings: the measured token figures of the benchmarks, priced
at the model's price (llm/prices.py), and the ceiling the budget and `--max-cost` set.
No call is made. The figures do not depend on the question's text: a run's cost is
known only afterwards (`usage.cost_usd`).

Where the figures come from (BENCHMARKS.md; effort medium, the scripted models of the
benches over loopback, tokens counted with o200k_base as OpenAI counts them):

- answered: the 10 two-hop HotpotQA questions of "Wall time at real latency"
  (bench/latency.py): 7,388 / 8,499 / 18,124 tokens (least / median / most);
  91,709 prompt and 2,985 completion tokens over the 10 runs, so 3.2% output
  (measured again for this table; a real model writes longer thoughts than the
  scripted one, so real output shares run higher);
- not found: the unanswerable runs of the stopping bench (bench/stopping.py),
  19,200 and 24,917 tokens;
- a team (`--team-size` > 1, and effort high's team of 2): bench/team.py with a team
  of 3, 13,975 to 29,676 tokens, median 18,968 (one hop a part).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Annotated, Any

import typer

from deepsearch.commands.common import ConfigOption
from deepsearch.commands.stdout import guarded_stdout

HELP = (
    "Estimate what a research would cost at these settings (from the benchmarks' "
    "measured tokens and the model's price), before running it. Accepts the research flags."
)
ANSWERED = (7_388, 8_499, 18_124)  # least, median, most tokens: bench/latency.py
NOT_FOUND_MOST = 24_917  # bench/stopping.py, the unanswerable runs
TEAM = (13_975, 18_968, 29_676)  # least, median (1 hop a part), most: bench/team.py, team of 3
OUTPUT_SHARE = 2_985 / (91_709 + 2_985)  # bench/latency.py's 10 runs
SOURCE = "BENCHMARKS.md (bench/latency.py, bench/stopping.py, bench/team.py; effort medium)"


@dataclass(frozen=True)
class Estimate:
    model: str
    price: dict[str, float | None] | None  # dollars per 1M tokens; None: unknown
    price_source: str
    tokens: tuple[int, int, int]  # least, typical, most
    budget: int
    max_cost: float | None

    def dollars(self, tokens: int) -> float | None:
        if self.price is None:
            return None
        rate_in, rate_out = self.price["input"] or 0.0, self.price["output"] or 0.0
        share = OUTPUT_SHARE
        return round(tokens * ((1 - share) * rate_in + share * rate_out) / 1_000_000, 8)

    def as_json(self) -> dict[str, Any]:
        low, typical, high = self.tokens
        ceiling = self.dollars(self.budget)
        if self.max_cost is not None:
            ceiling = self.max_cost if ceiling is None else min(ceiling, self.max_cost)
        return {
            "model": self.model,
            "price_per_million": self.price,
            "price_source": self.price_source,
            "tokens": {"least": low, "typical": typical, "most": high, "budget": self.budget},
            "cost_usd": {
                "least": self.dollars(low),
                "typical": self.dollars(typical),
                "most": self.dollars(high),
                "ceiling": ceiling,
            },
            "max_cost": self.max_cost,
            "figures_from": SOURCE,
        }


def cost_command(
    ctx: typer.Context,
    config: ConfigOption = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print one JSON object instead of lines.")
    ] = False,
) -> None:
    from deepsearch.commands.flags import overrides_of, parse_research_args
    from deepsearch.config import load_config
    from deepsearch.frontend.options import FLAG_OF

    params = parse_research_args(ctx.args, "cost")
    loaded = load_config(
        config_file=config or params.get("config"),
        overrides=overrides_of(params),
        override_labels=FLAG_OF,
    )
    estimate = estimate_for(loaded.settings)
    with guarded_stdout():
        if as_json:
            typer.echo(json.dumps(estimate.as_json()))
        else:
            for line in lines(estimate):
                typer.echo(line)


def estimate_for(settings: Any) -> Estimate:
    from deepsearch.llm.factory import resolve_provider
    from deepsearch.llm.prices import PriceBook

    provider = resolve_provider(settings)
    model = settings.tool_settings(provider, "agent").model
    book = PriceBook.for_run(settings, provider)
    price = book.price_of(model)
    user = {p.model.strip().lower() for p in settings.llm.prices}
    if price is None:
        source = "unknown"
    elif model.strip().lower() in user:
        source = "llm.prices (your configuration)"
    elif book.local:
        source = "a local server: $0"
    else:
        source = f"the shipped table, as of {book.table.as_of}"
    team = settings.agent.team_size > 1
    low, typical, most = ANSWERED
    tokens = TEAM if team else (low, typical, max(most, NOT_FOUND_MOST))
    budget = settings.agent.token_budget
    tokens = (min(tokens[0], budget), min(tokens[1], budget), min(tokens[2], budget))
    shown = None if price is None else {
        "input": price.input, "cached_input": price.cached_input, "output": price.output
    }  # fmt: skip
    return Estimate(model, shown, source, tokens, budget, settings.agent.max_cost)


def lines(estimate: Estimate) -> list[str]:
    from deepsearch.frontend.units import tokens as tok
    from deepsearch.llm.prices import how_to_price
    from deepsearch.llm.tracker import usd

    data = estimate.as_json()
    spent = data["cost_usd"]
    low, typical, high = estimate.tokens
    price = estimate.price
    head = f"model {estimate.model}: "
    if price is None:
        return [
            head + "no known price, so no cost can be estimated: " + how_to_price(estimate.model),
            f"tokens: {tok(low)} – {tok(high)}, typically {tok(typical)} (measured: {SOURCE})",
        ]
    out = [
        head + f"{_rate(price['input'])} / {_rate(price['output'])} per 1M input / output tokens "
        f"({estimate.price_source})",
        f"expected: {usd(spent['least'])} – {usd(spent['most'])}, typically "
        f"{usd(spent['typical'])} ({tok(low)} – {tok(high)} tokens, typically {tok(typical)})",
    ]
    ceiling = spent["ceiling"]
    if estimate.max_cost is not None and ceiling == estimate.max_cost:
        out.append(f"never more than {usd(ceiling)} (--max-cost)")
    else:
        out.append(
            f"at most about {usd(ceiling)}: the whole {tok(estimate.budget)}-token budget "
            "(set --max-cost for a hard cap in dollars)"
        )
    out.append(f"figures: {SOURCE}; 3% of tokens as output, as measured there")
    return out


def _rate(value: float | None) -> str:
    """$0.15, $0.60, $2.50, $0.075: cents always shown."""
    value = value or 0.0
    return f"${value:.2f}" if round(value, 2) == value else f"${value:g}"
