"""Which actions the next step may take: every gating rule of the reference, in one place.

`after_action` gives the flags an action leaves for the next step; `allowed_now`
adds the rules that depend on the state at the moment of choosing.

Search and waiting URLs. The reference stops searching while 50 unvisited URLs
wait; with in-page links in the pool that count passes 50 after one visit of a
link-dense page and search never comes back. Here only *search-result* candidates
count, and only those in this step's list that are unread and relevant to the
question being worked on (`ScoredUrl.relevant`): while MIN_GOOD_URLS_BLOCKING_SEARCH
of them wait, the model reads them first (the reference's intent); reading drains
them, so search always comes back for an unanswered question.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from deepsearch.agent.schema import AllowFlags
from deepsearch.agent.state import AgentState

MAX_PENDING_GAPS_FOR_REFLECT = 2
# Relevant unread search results that make a new search wait (the list shows 20).
MIN_GOOD_URLS_BLOCKING_SEARCH = 5


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


def good_urls_waiting(state: AgentState) -> int:
    """Search-result URLs of this step's list, unread and relevant to the current
    question. Harvested links never count."""
    done = set(state.visited) | set(state.failed_urls)
    return sum(
        1 for u in state.shown_urls if u.origin == "search" and u.relevant and u.url not in done
    )


def allowed_now(state: AgentState, ctx: GateContext) -> AllowFlags:
    """Combine the previous step's flags with the state-dependent rules."""
    flags = state.flags
    first_step = state.step == 1
    search_ok = good_urls_waiting(state) < MIN_GOOD_URLS_BLOCKING_SEARCH
    flags = replace(
        flags,
        reflect=flags.reflect and len(state.gaps) <= MAX_PENDING_GAPS_FOR_REFLECT,
        visit=flags.visit and bool(state.shown_urls),
        search=flags.search and search_ok,
        coding=flags.coding and ctx.coding_available and not first_step,
    )
    if first_step and ctx.needs_freshness:
        flags = replace(flags, answer=False, reflect=False)
    if not flags.allowed():
        # Never leave the model without a move. Searching again (the last search found
        # nothing to read) beats an unsupported answer; with good URLs waiting, reading
        # them does; answering is the last resort.
        if search_ok and not (first_step and ctx.needs_freshness):
            return flags.only("search")
        return flags.only("visit") if state.shown_urls else flags.only("answer")
    return flags
