"""The research loop: one gated action per step until an answer is accepted or a
limit is reached, then Beast Mode, then finalizing.

A step: `Gate.allowed` says what the model may do, the model picks one action (a typed
payload), `dispatch.perform` runs it with a StepContext (agent/step.py) into an
`Outcome`, the hooks may change it (the re-check); Accepted and Stop end research (the
value `_research_phase` returns), any other goes on; `Gate.after` turns it into the
next step's choices, and the hooks run after a step that went on (team mode).

Every run ends:

- the loop stops at 85% of the token budget, at --max-steps, at 85% of --timeout,
  or after repeated unusable model replies;
- every LLM call (Beast Mode and finalizing included) must fit what is left of the
  budget and of --max-cost (TokenTracker.reserve), so neither is ever exceeded;
- the wall clock is enforced with the run's Clock's timeouts, not only between steps.
"""

from __future__ import annotations

import asyncio

from deepsearch.agent import later
from deepsearch.agent.context import build_system_prompt, knowledge_allowance
from deepsearch.agent.cuts import report_cut
from deepsearch.agent.deadline import Deadline
from deepsearch.agent.deps import AgentDeps, RunOptions
from deepsearch.agent.events import (
    AgentEvent,
    Notice,
    PhaseChanged,
    StepFinished,
    StepStarted,
    safe_emit,
)
from deepsearch.agent.gating import Gate
from deepsearch.agent.hooks import RecheckHook
from deepsearch.agent.language import answer_language
from deepsearch.agent.outcomes import Accepted, Outcome, Stop
from deepsearch.agent.prefetch import Prefetcher
from deepsearch.agent.progress import ProgressWatch, ReadWatch
from deepsearch.agent.refresh import refresh_state, refresh_url_list
from deepsearch.agent.result import ResearchResult, Status, UsageReport, error_kind, result_so_far
from deepsearch.agent.schema import AllowFlags, AnswerPayload, StepBase, step_schema
from deepsearch.agent.state import AgentState
from deepsearch.agent.step import LoopHook, StepContext
from deepsearch.agent.steps import honesty
from deepsearch.agent.steps.classification import Classification
from deepsearch.agent.steps.evaluator import Evaluator
from deepsearch.agent.steps.finalize import EarlyAnchors, finalize_answer, unanchored_answer
from deepsearch.agent.team.mode import TeamMode
from deepsearch.agent.types import Reference
from deepsearch.config import ToolName
from deepsearch.errors import (
    BudgetExceeded,
    ContextLengthError,
    ProviderAuthError,
    ProviderError,
    RunError,
    StructuredOutputError,
)
from deepsearch.llm.base import Message
from deepsearch.llm.tracker import BudgetStop

MAX_CONSECUTIVE_FAILURES = 3
LOOP_TIME_SHARE = 0.85


class ResearchRun:
    """One run. `state` stays readable from outside, so a cut-short run can still report."""

    def __init__(self, question: str, deps: AgentDeps, options: RunOptions) -> None:
        self.deps, self.options = deps, options
        self.state = AgentState.start(question)
        self.state.today = deps.clock.now().date().isoformat()
        self.evaluator = Evaluator(deps.llm)
        # --language accepts a code ("de") or a name ("German"); prompts want the name.
        self.language = answer_language(question, options.language)
        # The one owner of "what may the model do now" and all its inputs.
        self.gate = Gate.for_run(deps.sandbox, options)
        # The question's, asked beside step 1's action (its search waits under it).
        self.classification = Classification(self.evaluator, self.state, self.gate, options)
        self.deadline = Deadline(deps.clock, options.timeout_s)
        self.stop_reason = ""
        self.fatal: RunError | None = None  # the error that ended the run, if any
        self.beast_unusable = False  # Beast Mode's reply could not be used at all
        # Background reads of the top unread URLs while the model decides.
        self.prefetch = Prefetcher(deps.reader)
        self.anchors = EarlyAnchors()  # an answer's references, anchored while it is judged
        self.progress = ProgressWatch()  # ends research when nothing new is found
        self.reads = ReadWatch()  # ends the run when no page can be read at all
        self.research_ended_at: int | None = None  # the research phase's last step
        # Sub-researches (agent/team/), each a run of this class, within the time left.
        time_left = lambda: self.deadline.remaining(LOOP_TIME_SHARE)  # noqa: E731
        self.team = TeamMode(options.team_size, spawn=ResearchRun, time_left=time_left)
        self.hooks: tuple[LoopHook, ...] = (self.team, RecheckHook())

    async def run(self) -> ResearchResult:
        try:
            return await self._run()
        finally:  # no read, no classification and no early anchoring outlives the run
            self.anchors.cancel()
            await asyncio.gather(self.prefetch.aclose(), self.classification.aclose())

    async def _run(self) -> ResearchResult:
        status, error = await self._research_then_beast()
        answer, status = honesty.reported_answer(self.state, status)
        if answer is None and error is None and not self.beast_unusable:
            # A limit (--timeout, the budget, the step limit) or a Beast Mode reply that
            # said nothing: the honest ending is "not found", never a failure. What the
            # model said (if anything) said nothing, so only the search record is shown.
            result = self.snapshot("not_found")
            result.answer = ""
            return honesty.with_search_record(self.state, result)
        if answer is None:  # an error, or a model that gave no usable reply at all
            return self.snapshot("failed", error=error or self.stop_reason or "no answer was found")
        answer, references = await self._finalize(answer)
        self._emit(PhaseChanged(phase="done", reason=self.stop_reason))
        result = self.snapshot(
            status if error is None or status == "not_found" else "forced", error=error
        )
        result.answer = answer
        result.references = references
        result = honesty.with_confidence(self.state, honesty.with_search_record(self.state, result))
        return honesty.apply_min_confidence(self.state, result, self.options.min_confidence)

    async def _research_then_beast(self) -> tuple[Status, str | None]:
        """The status so far and the error that ended the run early, if one did."""
        try:
            accepted = isinstance(await self._research_phase(), Accepted)
            if not accepted:
                await self._beast_mode()
            await self.prefetch.aclose()  # research is over: nothing more will be read
            return ("answered" if accepted else "forced"), None
        except BudgetExceeded as exc:
            self.stop_reason = str(exc)
            return "forced", None
        except RunError as exc:
            self.fatal = exc
            return "forced", str(exc)
        except Exception as exc:  # a bug must not lose what the run found
            return "forced", f"internal error: {type(exc).__name__}: {exc}"

    async def _finalize(self, answer: str) -> tuple[str, list[Reference]]:
        """Citations and references; finalizing polishes, so failing it keeps the answer."""
        # A direct answer has no sources (no markers, no unseen links); a team child's
        # answer goes to its parent, which finalizes once.
        if self.state.trivial or not self.options.finalize:
            return unanchored_answer(answer, self.state), []
        self._emit(PhaseChanged(phase="finalizing"))
        try:
            return await finalize_answer(
                answer,
                self.state,
                self.deps,
                self.options,
                language=self.language,
                deadline=self.deadline.remaining(1.0),
                early=self.anchors,
            )
        except Exception as exc:
            self._emit(Notice(text=f"finalizing failed ({type(exc).__name__}); answer kept as is"))
            return answer, []

    def snapshot(
        self, status: Status, *, error: str | None = None, failure: BaseException | None = None
    ) -> ResearchResult:
        """The result as of now (also used for interrupted and failed runs). Its
        `error_kind` (hence the exit code) comes from `failure`, the exception that cut
        the run short from outside, or else from the RunError that ended the run."""
        st, team = self.state, self.team
        raw = st.final_answer or st.candidate_answer or st.not_found_note or team.partial_answer()
        result = result_so_far(
            st.question,
            status,
            UsageReport.from_tracker(self.deps.llm.tracker),
            error=error,
            kind=error_kind(failure or self.fatal, error),
            # A cut-short run's answer was never finalized: no unanchored markers or
            # links to unseen pages may leave with it (run() replaces it when finalized).
            answer=unanchored_answer(raw, st) if raw else "",
            steps=self.team.all_steps(st.steps),
            team=self.team.report(),
            team_not_formed=self.team.not_formed,
            visited_urls=list(st.visited),
            read_urls=list(st.read_urls),
            elapsed_s=round(self.deadline.elapsed(), 3),
            stop_reason=self._stop_reason(),
            stop_step=self.research_ended_at,
        )
        return honesty.with_confidence(st, result)

    async def _research_phase(self) -> Accepted | Stop:
        """The outcome that ended research: Accepted (an answer was), or Stop (why the
        loop had to stop)."""
        try:
            async with self.deadline.limit(LOOP_TIME_SHARE):
                ended = await self._research_steps()
        except BudgetStop as stop:
            ended = Stop(str(stop))
        except TimeoutError:
            ended = Stop("time limit reached")
        except BudgetExceeded as exc:
            ended = Stop(f"budget: {exc}" if type(exc) is BudgetExceeded else str(exc))
        except ProviderAuthError:
            raise  # no later call can succeed either
        except RunError as exc:  # a provider failure mid-run still gets a Beast Mode answer
            if exc.fatal:  # e.g. search cannot work: Beast Mode would only guess
                self._finish_step("error", "", str(exc)[:300])  # the step it ended counts
                self.research_ended_at = self.state.step
                raise
            if self._provider_unreachable(exc):
                self.stop_reason = f"error: {exc}"
                raise  # not one step worked: asking the same dead endpoint again only waits
            ended = Stop(f"error: {exc}")
        self.research_ended_at = self.state.step
        if isinstance(ended, Stop):  # the Beast Mode phase event carries it to the view
            self.stop_reason = ended.detail
        return ended

    async def _research_steps(self) -> Accepted | Stop:
        """Step after step until one ends research or a limit does."""
        while True:
            limit = self._limit_reached()
            if limit is not None:
                return limit
            outcome = await self._step()
            if isinstance(outcome, Accepted | Stop):
                return outcome
            ctx = self._context()
            if any([await hook.after_step(ctx) for hook in self.hooks]):  # each one runs
                self.gate.reopen()

    def _limit_reached(self) -> Stop | None:
        self.deps.llm.tracker.check_room_for_step()  # BudgetStop near 85% of the budget
        if self.deadline.remaining(LOOP_TIME_SHARE) == 0:
            return Stop("time limit reached")
        if self.state.step >= self.options.max_steps:
            return Stop(f"step limit of {self.options.max_steps} reached")
        if self.state.consecutive_failures >= MAX_CONSECUTIVE_FAILURES:
            return Stop("the model gave no usable reply several times in a row")
        if self.progress.stalled(self.state):
            return Stop(self.progress.reason())
        return None

    async def _step(self) -> Outcome | None:
        """The step's outcome; None when the model gave no usable reply."""
        self.state.begin_step()
        with self.deps.llm.tracker.measure_step():  # the next step's budget check reads it
            try:
                return await self._step_body(self.state)
            except BaseException:
                self.classification.cancel()  # the step it ran beside ended research
                raise

    async def _step_body(self, st: AgentState) -> Outcome | None:
        await refresh_url_list(st, self.deps, self.options)
        if (off := await self.gate.settle_sandbox(st)) is not None:  # step 2: fails closed
            self._emit(Notice(text=f"coding action off: {off}", once="coding_off"))
        flags = self.gate.allowed(st)
        self._emit(
            StepStarted(step=st.step, question=st.current_question, allowed=list(flags.allowed()))
        )
        decide = self._decide(flags, tool="agent", beast=False)
        wanted = self._read_ahead(st, flags)
        decision = await self.prefetch.behind(decide, wanted, also=self._beside_request)
        payload = decision.payload() if decision is not None else None
        from deepsearch.agent.actions.visit import decided_reads  # (later.py)

        # Reads the model did not pick stop now (a visit's own top-ups are its picks too).
        self.prefetch.retain(decided_reads(st, payload, self.prefetch.ahead))
        if payload is not None and not await self.classification.keeps_first(payload.action):
            decision = await self._decide(self.gate.allowed(st), tool="agent", beast=False)
        if decision is None:
            await self.classification.settled()  # the next step's rules and checks
            return None
        return await self._act(decision)

    def _beside_request(self) -> None:
        """Once the request is sent: what the reply may need (later.py), the sandbox's probe."""
        later.start(self.options)
        self.gate.probe_sandbox()

    def _read_ahead(self, st: AgentState, flags: AllowFlags) -> list[str]:
        """What to fetch while the model decides, when a visit is likely: fresh search results,
        none read yet (after a visit the model mostly answers or searches again)."""
        likely = flags.visit and bool(st.steps) and st.steps[-1].action == "search"
        if not likely:
            return []
        from deepsearch.agent.actions.visit import choose_targets  # (later.py)

        return choose_targets(st, [])[: self.prefetch.limit]

    async def _decide(self, flags: AllowFlags, *, tool: ToolName, beast: bool) -> StepBase | None:
        st = self.state
        allowance = knowledge_allowance(self.deps.llm, tool)
        await refresh_state(
            st, self.deps.similarity, allowance_tokens=allowance, page_chars=self.options.page_chars
        )
        system, omitted = build_system_prompt(
            st,
            flags,
            now=self.deps.clock.now(),
            language=self.language,
            knowledge_allowance=allowance,
            beast=beast,
        )
        if omitted:
            report_cut(st, self.deps, allowance, tool)
        st.prompt_shown = system
        messages = [Message(role="user", content=st.current_question)]
        try:
            result = await self.deps.llm.generate_object(
                tool, step_schema(flags.allowed()), system, messages
            )
        except StructuredOutputError as exc:
            st.count_reply(usable=False)
            self.gate.after_unusable_reply()
            st.note("unusable_reply", error=str(exc))
            self._finish_step("error", "", f"unusable model reply: {str(exc)[:160]}")
            return None
        st.count_reply(usable=True)
        return result.value

    async def _act(self, decision: StepBase) -> Outcome:
        """Run the chosen action; its outcome (after the hooks) is the step's: Accepted
        and Stop end research, any other goes on (the gate has taken note)."""
        payload = decision.payload()
        ctx = self._context()
        from deepsearch.agent.dispatch import perform  # (later.py)

        outcome = await self.anchors.beside(perform(ctx, payload), payload, ctx)
        await self.classification.settled()  # the hooks and the next step read it
        for hook in self.hooks:
            outcome = await hook.after_outcome(ctx, outcome)
        self.reads.check(self.state)  # every read refused twice in a row: WebUnreadable
        self.gate.after(payload.action, outcome)  # what the next step may do
        self._finish_step(payload.action, decision.think, outcome.detail)
        return outcome

    def _context(self) -> StepContext:
        parts = (self.state, self.deps, self.options, self.evaluator)
        gate = self.gate.view(self.classification.waiter())
        return StepContext(*parts, gate=gate, prefetch=self.prefetch)

    async def _beast_mode(self) -> None:
        """One last answer from what was gathered, forced and unjudged."""
        st = self.state
        self.progress.judge(st)  # the last step's hop is learned: its passage stays in view
        self._emit(PhaseChanged(phase="beast", reason=self.stop_reason))
        st.focus_on_question()
        st.begin_step()
        try:
            async with self.deadline.limit(1.0):
                decision = await self._decide(
                    AllowFlags().only("answer"), tool="agent_beast", beast=True
                )
        except (TimeoutError, BudgetExceeded) as exc:
            self.stop_reason = self.stop_reason or str(exc)
            return
        self.beast_unusable = decision is None
        payload = decision.payload() if decision is not None else None
        if decision is not None and isinstance(payload, AnswerPayload):
            from deepsearch.agent.actions.answer import take_beast_answer  # (later.py)

            outcome = take_beast_answer(payload, st)
            self._finish_step("answer", decision.think, outcome.detail)

    def _emit(self, event: AgentEvent) -> None:
        safe_emit(self.deps.emit, event)

    def _finish_step(self, action: str, think: str, detail: str) -> None:
        record, tracker = self.state.record_step(action, think, detail), self.deps.llm.tracker
        self._emit(
            StepFinished(
                step=record.step,
                action=action,
                think=think,
                detail=detail,
                tokens_used=tracker.used,
                budget=tracker.budget,
                elapsed_s=round(self.deadline.elapsed(), 2),
                cost_usd=None if tracker.cost_usd is None else round(tracker.cost_usd, 8),
                max_cost=tracker.max_cost,
            )
        )

    def _stop_reason(self) -> str | None:
        """Why the research phase ended, for --json; None while it runs."""
        if self.fatal is not None:  # the error that stopped the run, its first line
            return str(self.fatal).splitlines()[0]
        if self.research_ended_at is None:
            return None
        return self.stop_reason or "answer accepted"

    def _provider_unreachable(self, exc: RunError) -> bool:
        """A transport failure before any step succeeded (dead or refusing endpoint)."""
        not_transport = StructuredOutputError | ContextLengthError
        transport = isinstance(exc, ProviderError) and not isinstance(exc, not_transport)
        return transport and not any(s.action != "error" for s in self.state.steps)
