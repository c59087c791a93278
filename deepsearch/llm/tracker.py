"""Token accounting and the budget rules the agent loop relies on."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager

from pydantic import BaseModel

from deepsearch.errors import BudgetExceeded
from deepsearch.llm.base import Usage
from deepsearch.text import short_count

REGULAR_BUDGET_SHARE = 0.85
RECENT_STEPS = 3  # steps whose costliest predicts the next (check_room_for_step)
MIN_PROMPT_RATIO = 1.1


class BudgetStop(Exception):
    """The research phase must end: the next step would eat into the Beast Mode reserve."""


class ToolUsage(BaseModel):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls: int = 0


class TokenTracker:
    """Totals and a per-tool breakdown against a hard budget.

    The loop may run while `used < 85%` of the budget (`regular_exhausted`) and a
    step like the recent ones still fits under that line (`check_room_for_step`); the
    other 15% is Beast Mode's reserve. Every call, including Beast Mode and
    finalizing, must pass `reserve()` first, which caps the call's output so the
    total never exceeds the budget.
    """

    def __init__(self, budget: int) -> None:
        if budget <= 0:
            raise ValueError("budget must be positive")
        self.budget = budget
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

    def record(self, tool: str, usage: Usage) -> None:
        entry = self._by_tool[tool]
        entry.prompt_tokens += max(0, int(usage.prompt_tokens))
        entry.completion_tokens += max(0, int(usage.completion_tokens))
        entry.calls += 1

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

    @contextmanager
    def measure_step(self) -> Iterator[None]:
        """Count what the research step inside the block spends, even if it raises."""
        before = self.used
        try:
            yield
        finally:
            self.last_step_cost = self.used - before
            self._recent_costs = [*self._recent_costs, self.last_step_cost][-RECENT_STEPS:]

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

    def beast_room(self, prompt_tokens: int) -> int:
        """Tokens Beast Mode's prompt may spend on knowledge: half of what is left (the
        answer must still fit after it), less the prompt around the knowledge."""
        return self.remaining // 2 - prompt_tokens

    def by_tool(self) -> dict[str, ToolUsage]:
        return {name: usage.model_copy() for name, usage in sorted(self._by_tool.items())}

    def reserve(self, *, prompt_estimate: int, wanted_output: int, min_output: int = 256) -> int:
        """Return the output-token cap for the next call, or raise BudgetExceeded.

        The prompt estimate is scaled by the largest provider/offline ratio seen so
        far (at least 10% margin), so a provider whose tokenizer counts more than
        tiktoken cannot push the total over the budget.
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
        return min(wanted_output, available)
