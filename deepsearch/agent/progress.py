"""Is the run still learning anything? Steps that add no query, no URL, no page and
no knowledge only spend tokens: after a few in a row the research phase ends early
(Beast Mode then answers from what there is) instead of running to the step limit."""

from __future__ import annotations

from dataclasses import dataclass

from deepsearch.agent.state import AgentState

NO_PROGRESS_LIMIT = 4


def progress_mark(state: AgentState) -> tuple[int | str | None, ...]:
    """What grows when a step achieves anything (a new query, URL, page, fact, gap,
    improvement plan or candidate answer); equal marks mean nothing happened."""
    return (
        len(state.searched_queries),
        len(state.url_pool),
        len(state.visited),
        len(state.knowledge),
        len(state.all_questions),
        len(state.improvement_plans),
        state.candidate_answer,
    )


@dataclass
class ProgressWatch:
    """Counts consecutive steps whose end state equals their start state."""

    limit: int = NO_PROGRESS_LIMIT
    _last: tuple[int | str | None, ...] | None = None
    idle_steps: int = 0

    def stalled(self, state: AgentState) -> bool:
        """Call before each step: True once `limit` steps in a row changed nothing."""
        mark = progress_mark(state)
        if mark == self._last:
            self.idle_steps += 1
        else:
            self._last, self.idle_steps = mark, 0
        return self.idle_steps >= self.limit

    def reason(self) -> str:
        return f"{self.idle_steps} steps in a row found no new query, URL or knowledge"
