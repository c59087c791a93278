"""Token shares of a team: fixed before the children start, each a hard budget that
also charges the parent, so the parent's total can never exceed its own budget.

The reference lets its children share the parent's tracker with no split: one child
could spend everything. Here the shares come out of what the parent's research phase
has left (its 85% line), so the parent keeps its Beast Mode and finalizing reserve
whatever the children do, and TEAM_SHARE of that goes to the children: the parent
still needs tokens to read their answers, answer and be evaluated.
"""

from __future__ import annotations

from deepsearch.llm.base import Usage
from deepsearch.llm.tracker import TokenTracker

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


class ShareTracker(TokenTracker):
    """A child's tracker: its budget is its share, and every call it records is also
    recorded on the parent's tracker (the parent's total, by tool, includes it)."""

    def __init__(self, share: int, parent: TokenTracker) -> None:
        super().__init__(share)
        self.parent = parent
        self.prompt_ratio = parent.prompt_ratio

    @property
    def remaining(self) -> int:
        # The parent's limit binds too, so no accounting slip lets a share overdraw it.
        return min(super().remaining, self.parent.remaining)

    def record(self, tool: str, usage: Usage) -> None:
        super().record(tool, usage)
        self.parent.record(tool, usage)

    def calibrate(self, *, prompt_estimate: int, reported: int) -> None:
        super().calibrate(prompt_estimate=prompt_estimate, reported=reported)
        self.parent.calibrate(prompt_estimate=prompt_estimate, reported=reported)
