"""Token accounting and the budget rules the agent loop relies on, in tokens and, with
a cost limit (`--max-cost`), in dollars: one ledger, one set of rules for both."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from pydantic import BaseModel

from deepsearch.errors import BudgetExceeded, CostLimitReached
from deepsearch.llm.base import Usage
from deepsearch.text import short_count

if TYPE_CHECKING:
    from deepsearch.llm.prices import Price

REGULAR_BUDGET_SHARE = 0.85
RECENT_STEPS = 3  # steps whose costliest predicts the next (check_room_for_step)
MIN_PROMPT_RATIO = 1.1


class BudgetStop(Exception):
    """The research phase must end: the next step would eat into the Beast Mode reserve."""


class ToolUsage(BaseModel):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls: int = 0
    # Dollars, priced per call (llm/prices.py); None once one call's model had no price.
    cost_usd: float | None = 0.0
    estimated: bool = False  # some tokens were counted offline (the server gave none)


class TokenTracker:
    """Totals and a per-tool breakdown against a hard budget.

    The loop may run while `used < 85%` of the budget (`regular_exhausted`) and a
    step like the recent ones still fits under that line (`check_room_for_step`); the
    other 15% is Beast Mode's reserve. Every call, including Beast Mode and
    finalizing, must pass `reserve()` first, which caps the call's output so the
    total never exceeds the budget.
    """

    def __init__(self, budget: int, *, max_cost: float | None = None) -> None:
        if budget <= 0:
            raise ValueError("budget must be positive")
        self.budget = budget
        self.max_cost = max_cost  # US dollars, or None: no cost limit
        self._held_usd = 0.0  # dollars reserved by the calls in flight (hold)
        self._recent_usd: list[float] = []  # the last few steps' dollars, newest last
        self._by_tool: dict[str, ToolUsage] = defaultdict(ToolUsage)
        # How many tokens the provider counts per token of our offline estimate (its
        # tokenizer may differ from tiktoken's); learned from reported usage.
        self.prompt_ratio = MIN_PROMPT_RATIO
        self.last_step_cost = 0  # tokens the last research step spent (measure_step)
        self._recent_costs: list[int] = []  # the last few steps' costs, newest last

    def calibrate(self, *, prompt_estimate: int, reported: int) -> None:
        """Learn the provider/offline tokenizer ratio from a call's reported usage."""
        if prompt_estimate >= 50 and reported > 0:
            self.prompt_ratio = max(self.prompt_ratio, reported / prompt_estimate + 0.02)

    def record(self, tool: str, usage: Usage, cost: float | None = None) -> None:
        """Count a call's tokens and dollars (`cost` None: its model has no price)."""
        entry = self._by_tool[tool]
        entry.prompt_tokens += max(0, int(usage.prompt_tokens))
        entry.completion_tokens += max(0, int(usage.completion_tokens))
        entry.calls += 1
        entry.estimated = entry.estimated or usage.estimated
        entry.cost_usd = None if cost is None or entry.cost_usd is None else entry.cost_usd + cost

    @property
    def prompt_tokens(self) -> int:
        return sum(u.prompt_tokens for u in self._by_tool.values())

    @property
    def completion_tokens(self) -> int:
        return sum(u.completion_tokens for u in self._by_tool.values())

    @property
    def used(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @property
    def remaining(self) -> int:
        return max(0, self.budget - self.used)

    @property
    def regular_budget(self) -> int:
        return int(self.budget * REGULAR_BUDGET_SHARE)

    @property
    def regular_exhausted(self) -> bool:
        return self.used >= self.regular_budget

    @property
    def cost_usd(self) -> float | None:
        """Dollars spent, or None when a call's model had no price (unknown, never 0)."""
        costs = [u.cost_usd for u in self._by_tool.values()]
        return None if None in costs else sum(c for c in costs if c is not None)

    @property
    def spent_usd(self) -> float:
        """Dollars spent by the calls that had a price, and held by those in flight."""
        return sum(u.cost_usd or 0.0 for u in self._by_tool.values()) + self._held_usd

    @property
    def estimated(self) -> bool:
        return any(u.estimated for u in self._by_tool.values())

    @property
    def remaining_usd(self) -> float:
        if self.max_cost is None:
            return float("inf")
        return max(0.0, self.max_cost - self.spent_usd)

    @contextmanager
    def hold(self, usd: float) -> Iterator[None]:
        """Reserve a call's worst-case dollars while it is in flight, so calls made at
        once (a step's checks, team children) cannot each spend the same remainder.
        The call's real cost is recorded after the block."""
        self._held_usd += usd
        try:
            yield
        finally:
            self._held_usd = max(0.0, self._held_usd - usd)

    @contextmanager
    def measure_step(self) -> Iterator[None]:
        """Count what the research step inside the block spends, even if it raises."""
        before, before_usd = self.used, self.spent_usd
        try:
            yield
        finally:
            self.last_step_cost = self.used - before
            self._recent_costs = [*self._recent_costs, self.last_step_cost][-RECENT_STEPS:]
            step_usd = max(0.0, self.spent_usd - before_usd)
            self._recent_usd = [*self._recent_usd, step_usd][-RECENT_STEPS:]

    @property
    def next_step_estimate(self) -> int:
        """What the next research step may spend: the costliest of the last few. Steps
        alternate (a search, then a longer visit), so the last one alone can be the
        cheap one and let the next step cross the line."""
        return max(self._recent_costs, default=0)

    def check_room_for_step(self) -> None:
        """Raise BudgetStop unless a step like the recent ones still fits under the 85%
        line: predictive, so the final research step cannot eat Beast Mode's reserve."""
        if self.regular_exhausted or self.used + self.next_step_estimate > self.regular_budget:
            raise BudgetStop(f"85% of the {short_count(self.budget)}-token budget used")
        if self.max_cost is not None:
            line = self.max_cost * REGULAR_BUDGET_SHARE
            if self.spent_usd + max(self._recent_usd, default=0.0) > line:
                raise BudgetStop(f"85% of the {usd(self.max_cost)} cost limit used")

    def beast_room(self, prompt_tokens: int, price: Price | None = None) -> int:
        """Tokens Beast Mode's prompt may spend on knowledge: half of what is left (the
        answer must still fit after it), less the prompt around the knowledge. Under
        a cost limit, half the dollars left, at the model's input price, bind too."""
        room = self.remaining // 2 - prompt_tokens
        if self.max_cost is not None and price is not None and price.input > 0:
            tokens = self.remaining_usd / 2 / (price.input * self.prompt_ratio) * 1_000_000
            room = min(room, int(tokens) - prompt_tokens)
        return room

    def by_tool(self) -> dict[str, ToolUsage]:
        return {name: usage.model_copy() for name, usage in sorted(self._by_tool.items())}

    def reserve(
        self,
        *,
        prompt_estimate: int,
        wanted_output: int,
        min_output: int = 256,
        price: Price | None = None,
    ) -> int:
        """Return the output-token cap for the next call, or raise BudgetExceeded.

        The prompt estimate is scaled by the largest provider/offline ratio seen so
        far (at least 10% margin), so a provider whose tokenizer counts more than
        tiktoken cannot push the total over the budget. Under a cost limit the same
        prompt, at `price`, and the output cap must fit the dollars left too
        (CostLimitReached, a BudgetExceeded, when not even `min_output` would).
        """
        prompt_cost = int(prompt_estimate * self.prompt_ratio) + 16
        available = self.remaining - prompt_cost
        if available < min_output:
            raise BudgetExceeded(
                budget=self.budget,
                used=self.used,
                needed=prompt_cost + min_output,
                shown=short_count,
            )
        cap = min(wanted_output, available)
        if self.max_cost is None:
            return cap
        affordable = self.affordable_output(prompt_cost, price)
        if affordable < min_output:
            needed = (price.prompt_cost(prompt_cost) if price else 0.0) + (
                price.output_cost(min_output) if price else 0.0
            )
            raise CostLimitReached(limit=self.max_cost, spent=self.spent_usd, needed=needed)
        return min(cap, affordable)

    def affordable_output(self, prompt_tokens: int, price: Price | None) -> int:
        """Output tokens the dollars left pay for after a prompt of `prompt_tokens`
        (no price under a cost limit: nothing is affordable)."""
        if self.max_cost is None:
            return 1 << 62
        if price is None:
            return 0
        left = self.remaining_usd - price.prompt_cost(prompt_tokens)
        if left < 0:
            return 0
        if price.output <= 0:
            return 1 << 62
        return int(left / price.output * 1_000_000)

    def call_hold(self, prompt_tokens: int, max_output: int, price: Price | None) -> float:
        """A call's worst case in dollars: its prompt (with the tokenizer margin) and
        its whole output cap (0 without a cost limit or a price)."""
        if self.max_cost is None or price is None:
            return 0.0
        prompt = int(prompt_tokens * self.prompt_ratio) + 16
        return price.prompt_cost(prompt) + price.output_cost(max_output)


def usd(amount: float) -> str:
    """Dollars as the live view and messages write them: `$0.0015`, `$1.25`."""
    if amount == 0:
        return "$0"
    if amount >= 1:
        return f"${amount:,.2f}"
    return f"${amount:.4f}" if amount >= 0.0001 else f"${amount:.6f}"
