"""Which actions the next step may take: every gating rule of the reference, in one place.

`after_action` gives the flags an action leaves for the next step; `allowed_now`
adds the rules that depend on the state at the moment of choosing.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from deepsearch.agent.schema import AllowFlags
from deepsearch.agent.state import AgentState

MAX_PENDING_GAPS_FOR_REFLECT = 2
MAX_CANDIDATE_URLS_FOR_SEARCH = 50


@dataclass(frozen=True)
class GateContext:
    coding_available: bool = True
    needs_freshness: bool = False


def after_action(action: str, *, answer_rejected: bool = False) -> AllowFlags:
    """The 'not again next step' rules."""
    flags = AllowFlags()
    if action == "search":
        # Snippets alone are not evidence: read before answering.
        return replace(flags, search=False, answer=False)
    if action == "visit":
        return replace(flags, visit=False)
    if action == "reflect":
        return replace(flags, reflect=False)
    if action == "coding":
        return replace(flags, coding=False)
    if action == "answer" and answer_rejected:
        return replace(flags, answer=False, coding=False)
    return flags


def allowed_now(state: AgentState, ctx: GateContext) -> AllowFlags:
    """Combine the previous step's flags with the state-dependent rules."""
    flags = state.flags
    first_step = state.step == 1
    candidates = len([r for r in state.unvisited_candidates() if r.url not in state.failed_urls])
    flags = replace(
        flags,
        reflect=flags.reflect and len(state.gaps) <= MAX_PENDING_GAPS_FOR_REFLECT,
        visit=flags.visit and bool(state.shown_urls),
        search=flags.search and candidates < MAX_CANDIDATE_URLS_FOR_SEARCH,
        coding=flags.coding and ctx.coding_available and not first_step,
    )
    if first_step and ctx.needs_freshness:
        flags = replace(flags, answer=False, reflect=False)
    if not flags.allowed():
        # Never leave the model without a move. Searching again (the last search found
        # nothing to read) beats an unsupported answer; answering is the last resort.
        searchable = candidates < MAX_CANDIDATE_URLS_FOR_SEARCH and not (
            first_step and ctx.needs_freshness
        )
        flags = flags.only("search") if searchable else flags.only("answer")
    return flags
