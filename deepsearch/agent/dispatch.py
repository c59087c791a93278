"""The non-answer actions, bound to a run: each adapter hands the run's parts to its
action handler and returns the step's detail line."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from deepsearch.agent.actions.coding import handle_coding
from deepsearch.agent.actions.reflect import handle_reflect
from deepsearch.agent.actions.search import handle_search
from deepsearch.agent.actions.visit import handle_visit
from deepsearch.agent.schema import CodingPayload, ReflectPayload, SearchPayload, VisitPayload

if TYPE_CHECKING:
    from deepsearch.agent.loop import ResearchRun

# The non-answer actions. The step schema guarantees the payload's type matches the
# action (its validator requires the chosen action's field), hence `Any` here.
ActionHandler = Callable[["ResearchRun", Any], Awaitable[str]]


async def _search(run: ResearchRun, payload: SearchPayload) -> str:
    return await handle_search(
        payload,
        run.state,
        run.deps,
        run.options,
        needs_freshness=run.needs_freshness,
        prefetch=run.prefetch,
    )


async def _visit(run: ResearchRun, payload: VisitPayload) -> str:
    return await handle_visit(payload, run.state, run.deps, run.options, prefetch=run.prefetch)


async def _reflect(run: ResearchRun, payload: ReflectPayload) -> str:
    return await handle_reflect(payload, run.state, run.deps, run.options)


async def _coding(run: ResearchRun, payload: CodingPayload) -> str:
    detail = await handle_coding(payload, run.state, run.deps, run.options)
    if detail.startswith("refused"):  # stop offering an action that cannot run
        run.coding_available, run.coding_reason = False, detail
    return detail


HANDLERS: dict[str, ActionHandler] = {
    "search": _search,
    "visit": _visit,
    "reflect": _reflect,
    "coding": _coding,
}
