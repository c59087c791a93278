"""Token shares of a team: fixed before the children start, each a hard budget that
also charges the parent, so the parent's total can never exceed its own budget.

The reference lets its children share the parent's tracker with no split: one child
could spend everything. Here the shares come out of what the parent's research phase
has left (its 85% line), so the parent keeps its Beast Mode and finalizing reserve
whatever the children do, and TEAM_SHARE of that goes to the children: the parent
still needs tokens to read their answers, answer and be evaluated.

Under a cost limit (`--max-cost`) a child's share is in dollars too: the same part of
what the parent's research has left under its 85% line. A child's calls hold and
record on the parent's tracker as well, so concurrent children can never together
cross the parent's limit.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from deepsearch.llm.base import Usage
from deepsearch.llm.tracker import REGULAR_BUDGET_SHARE, TokenTracker

TEAM_SHARE = 0.6
# Below this a child cannot do a search, a read and an evaluated answer (a step's
# prompt is ~1-4k tokens), so it is not started at all.
MIN_CHILD_BUDGET = 8_000


def budget_shares(parent: TokenTracker, wanted: int) -> list[int]:
    """Equal shares for up to `wanted` children; fewer when a share would be under
    MIN_CHILD_BUDGET, none when not even two fit (one child is no team)."""
    left = max(0, parent.regular_budget - parent.used)
    total = int(left * TEAM_SHARE)
    count = min(wanted, total // MIN_CHILD_BUDGET)
    if count < 2:
        return []
    return [total // count] * count


def cost_share(parent: TokenTracker, share: int) -> float | None:
    """A child's dollars: the part of the parent's dollars left under its 85% line that
    its token share is of the parent's tokens left there (None: no cost limit)."""
    if parent.max_cost is None:
        return None
    left_tokens = max(1, parent.regular_budget - parent.used)
    left_usd = max(0.0, parent.max_cost * REGULAR_BUDGET_SHARE - parent.spent_usd)
    return max(1e-9, left_usd * min(1.0, share / left_tokens))


class ShareTracker(TokenTracker):
    """A child's tracker: its budget is its share, and every call it records is also
    recorded on the parent's tracker (the parent's total, by tool, includes it)."""

    def __init__(self, share: int, parent: TokenTracker) -> None:
        super().__init__(share, max_cost=cost_share(parent, share))
        self.parent = parent
        self.prompt_ratio = parent.prompt_ratio

    @property
    def remaining(self) -> int:
        # The parent's limit binds too, so no accounting slip lets a share overdraw it.
        return min(super().remaining, self.parent.remaining)

    @property
    def remaining_usd(self) -> float:
        return min(super().remaining_usd, self.parent.remaining_usd)

    @contextmanager
    def hold(self, usd: float) -> Iterator[None]:
        with super().hold(usd), self.parent.hold(usd):
            yield

    def record(self, tool: str, usage: Usage, cost: float | None = None) -> None:
        super().record(tool, usage, cost)
        self.parent.record(tool, usage, cost)

    def calibrate(self, *, prompt_estimate: int, reported: int) -> None:
        super().calibrate(prompt_estimate=prompt_estimate, reported=reported)
        self.parent.calibrate(prompt_estimate=prompt_estimate, reported=reported)
