"""Which actions the next step may take: every gating rule of the reference, with one
owner. `Gate` holds every input (what the last step's outcome left, whether the question
needs fresh sources, which actions this run cannot offer) and `Gate.allowed(state)`
answers "what may the model do now"; `after_action` is the "not again next step" table.
The gate changes only through its own methods; handlers see a `GateView` (read-only).

Effort presets. What an effort preset switches off (low effort: no reflect) is
withdrawn for the whole run when the gate is made (`Gate.for_run`); the rule "never
leave the model without a move" still holds.

Search and waiting URLs. The reference stops searching while 50 unvisited URLs
wait; with in-page links in the pool that count passes 50 after one visit of a
link-dense page and search never comes back. Here only *search-result* candidates
count, and only those in this step's list that are unread and relevant to the
question being worked on (`ScoredUrl.relevant`): while MIN_GOOD_URLS_BLOCKING_SEARCH
of them wait, the model reads them first (the reference's intent); reading drains
them, so search always comes back for an unanswered question.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from deepsearch.agent.outcomes import Outcome, Rejected, Stop, Unavailable
from deepsearch.agent.schema import ActionName, AllowFlags
from deepsearch.agent.state import AgentState

if TYPE_CHECKING:
    from deepsearch.agent.deps import RunOptions, SandboxLike

MAX_PENDING_GAPS_FOR_REFLECT = 2
# Relevant unread search results that make a new search wait (the list shows 20).
MIN_GOOD_URLS_BLOCKING_SEARCH = 5
NO_REFLECT = "not offered at this effort (agent.reflect is off)"


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


@dataclass(frozen=True)
class GateView:
    """What a step's handler may know of the gate; it never changes the gate."""

    needs_freshness: bool = False
    # Step 1's action runs while the question's classification is still being asked:
    # this waits for it (and the gate takes note), giving its `needs_freshness`.
    settle: Callable[[], Awaitable[bool]] | None = None

    async def freshness(self) -> bool:
        """Does the question need fresh sources? Waits for the classification if it is
        still running; ask only where the answer is used (it may cost that wait)."""
        return await self.settle() if self.settle is not None else self.needs_freshness


@dataclass
class Gate:
    """The inputs of every gating rule, and the one answer to "what may the model do now"."""

    needs_freshness: bool = False  # from the question's classification
    withdrawn: dict[ActionName, str] = field(default_factory=dict)  # action -> why it cannot run
    last: AllowFlags = field(default_factory=AllowFlags)  # what the previous step left
    # The run's sandbox until its verdict on coding is in `withdrawn`. Coding is never
    # offered on step 1, so its probe (which starts an interpreter) need not hold back
    # step 1's request: it runs in a thread beside it (`probe_sandbox`), and step 2's
    # flags wait for it (`settle_sandbox`) (issue 21).
    sandbox: SandboxLike | None = field(default=None, repr=False)
    _probe: asyncio.Future[tuple[bool, str]] | None = field(default=None, init=False, repr=False)

    @classmethod
    def for_run(cls, sandbox: SandboxLike | None, options: RunOptions) -> Gate:
        """The sandbox (asked later) and what the options (an effort preset) switch off."""
        gate = cls(sandbox=sandbox) if sandbox is not None else cls()
        if sandbox is None:
            gate.withdrawn["coding"] = "no sandbox configured"
        if not options.reflect:
            gate.withdrawn["reflect"] = NO_REFLECT
        return gate

    def probe_sandbox(self) -> None:
        """Start asking the sandbox whether it can run code, off the event loop (once)."""
        if self.sandbox is not None and self._probe is None:
            self._probe = asyncio.ensure_future(asyncio.to_thread(self.sandbox.availability))
            self._probe.add_done_callback(_retrieved)

    async def settle_sandbox(self, state: AgentState) -> str | None:
        """From step 2 on: the sandbox's verdict taken in (coding is offered only when
        it can run code), its probe waited for if it still runs. Returns why coding is
        off, once, when the sandbox said it cannot run code (the view says it)."""
        if self.sandbox is None or state.step < 2:
            return None
        self.probe_sandbox()
        assert self._probe is not None
        try:
            usable, reason = await self._probe
        except Exception as exc:  # a broken probe must not stop research
            usable, reason = False, str(exc)
        self.sandbox = None
        if not usable:
            self.withdrawn.setdefault("coding", reason)
            return reason
        return None

    def view(self, settle: Callable[[], Awaitable[bool]] | None = None) -> GateView:
        """`settle`: how a handler waits for the classification while it still runs."""
        return GateView(needs_freshness=self.needs_freshness, settle=settle)

    def after_classification(self, *, needs_freshness: bool) -> None:
        """The question's classification: does it need fresh sources first?"""
        self.needs_freshness = needs_freshness

    def after(self, action: ActionName, outcome: Outcome) -> None:
        """What a step's outcome leaves the next step; an unavailable action is never
        offered again in this run."""
        self.last = after_action(action, answer_rejected=isinstance(outcome, Rejected | Stop))
        if isinstance(outcome, Unavailable):
            self.withdrawn[outcome.action] = outcome.reason

    def after_unusable_reply(self) -> None:
        """A step that chose nothing forbids nothing."""
        self.last = AllowFlags()

    def reopen(self) -> None:
        """Knowledge that came from outside the step (a team's accepted sub-answers)
        lifts what the last step forbade: a search bars answering next ("snippets are no
        evidence"), and with accepted sub-answers in the knowledge that reason is gone."""
        self.last = AllowFlags()

    def allowed(self, state: AgentState) -> AllowFlags:
        """Combine the previous step's flags with the state-dependent rules."""
        flags = self.last
        first_step = state.step == 1
        fresh_first = first_step and self.needs_freshness
        search_ok = good_urls_waiting(state) < MIN_GOOD_URLS_BLOCKING_SEARCH
        flags = replace(
            flags,
            reflect=flags.reflect and len(state.gaps) <= MAX_PENDING_GAPS_FOR_REFLECT,
            visit=flags.visit and bool(state.shown_urls),
            search=flags.search and search_ok,
            coding=flags.coding and not first_step,
        )
        flags = replace(flags, **dict.fromkeys(self.withdrawn, False))
        if fresh_first:
            flags = replace(flags, answer=False, reflect=False)
        if not flags.allowed():
            # Never leave the model without a move. Searching again (the last search found
            # nothing to read) beats an unsupported answer; with good URLs waiting, reading
            # them does; answering is the last resort.
            if search_ok and not fresh_first:
                return flags.only("search")
            return flags.only("visit") if state.shown_urls else flags.only("answer")
        return flags


def _retrieved(probe: asyncio.Future[tuple[bool, str]]) -> None:
    """A probe nobody waited for (the run ended on step 1) logs no unretrieved error."""
    if not probe.cancelled():
        probe.exception()
