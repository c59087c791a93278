"""After acceptance: the editor pass, markdown repair and quote-anchored references."""

from __future__ import annotations

from deepsearch.agent.deps import AgentDeps, RunOptions
from deepsearch.agent.state import AgentState
from deepsearch.agent.types import Reference


async def finalize_answer(
    answer: str,
    state: AgentState,
    deps: AgentDeps,
    options: RunOptions,
    *,
    language: str,
    deadline: float | None,
) -> tuple[str, list[Reference]]:
    return answer, []
