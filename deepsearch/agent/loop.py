"""The research loop: one gated action per step until an answer is accepted or a
limit is reached, then Beast Mode, then finalizing. Every run ends:

- the loop stops at 85% of the token budget, at --max-steps, at 85% of --timeout,
  or after repeated unusable model replies;
- every LLM call (Beast Mode and finalizing included) must fit what is left of the
  budget (TokenTracker.reserve), so the total never exceeds it;
- the wall clock is enforced with real asyncio timeouts, not only between steps.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from deepsearch.agent.actions.answer import handle_answer
from deepsearch.agent.actions.visit import choose_targets
from deepsearch.agent.citations.finalize import clean_unanchored, finalize_answer, seen_urls
from deepsearch.agent.context import build_system_prompt
from deepsearch.agent.deps import AgentDeps, RunOptions
from deepsearch.agent.dispatch import HANDLERS
from deepsearch.agent.events import (
    AgentEvent,
    Notice,
    PhaseChanged,
    StepFinished,
    StepStarted,
    omitted_knowledge_notice,
)
from deepsearch.agent.gating import GateContext, after_action, allowed_now
from deepsearch.agent.judging.evaluator import Evaluator, QuestionEval, metrics_for
from deepsearch.agent.judging.honesty import (
    apply_min_confidence,
    reported_answer,
    with_confidence,
    with_search_record,
)
from deepsearch.agent.language import answer_language
from deepsearch.agent.prefetch import Prefetcher
from deepsearch.agent.progress import ProgressWatch
from deepsearch.agent.result import ResearchResult, Status, UsageReport, error_kind
from deepsearch.agent.retrieval.evidence import pin_support, refresh_state
from deepsearch.agent.retrieval.ranking import refresh_url_list
from deepsearch.agent.schema import (
    AllowFlags,
    AnswerPayload,
    StepBase,
    step_schema,
)
from deepsearch.agent.state import AgentState
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

MAX_CONSECUTIVE_FAILURES = 3
LOOP_TIME_SHARE = 0.85
PROMPT_OVERHEAD_TOKENS = 4096
# Lean prompts: beyond this, more knowledge costs tokens every step without helping.
KNOWLEDGE_CAP_TOKENS = 24_000
BEAST_PROMPT_TOKENS = 800  # the template, question and diary around the knowledge


class LoopStopped(Exception):
    """Internal signal: the research phase is over for the given reason."""


class ResearchRun:
    """One run. `state` stays readable from outside, so a cut-short run can still report."""

    def __init__(self, question: str, deps: AgentDeps, options: RunOptions) -> None:
        self.deps = deps
        self.options = options
        self.state = AgentState.start(question)
        self.state.today = deps.clock.now().date().isoformat()
        self.evaluator = Evaluator(deps.llm)
        # --language accepts a code ("de") or a name ("German"); prompts want the name.
        self.language = answer_language(question, options.language)
        self.needs_freshness = False
        self.coding_available, self.coding_reason = self._probe_sandbox()
        self.started = deps.clock.monotonic()
        self.stop_reason = ""
        self.fatal: RunError | None = None  # the error that ended the run, if any
        self._last_step_cost = 0
        # Background reads of the top unread URLs while the model decides.
        self.prefetch = Prefetcher(deps.reader)
        self.progress = ProgressWatch()
        self.team = TeamMode(options.team_size)  # sub-researches (agent/team/)

    # ------------------------------------------------------------- driving

    async def run(self) -> ResearchResult:
        try:
            return await self._run()
        finally:
            await self.prefetch.aclose()  # no read outlives the run

    async def _run(self) -> ResearchResult:
        status: Status = "forced"
        error: str | None = None
        try:
            accepted = await self._research_phase()
            if not accepted:
                await self._beast_mode()
            status = "answered" if accepted else "forced"
            await self.prefetch.aclose()  # research is over: nothing more will be read
        except BudgetExceeded as exc:
            self.stop_reason = str(exc)
        except RunError as exc:
            self.fatal = exc
            error = str(exc)
        except Exception as exc:  # a bug must not lose what the run found
            error = f"internal error: {type(exc).__name__}: {exc}"
        answer, status = reported_answer(self.state, status)
        if answer is None:
            return self.snapshot("failed", error=error or self.stop_reason or "no answer was found")
        references: list[Reference] = []
        if not self.state.trivial and self.options.finalize:
            self._emit(PhaseChanged(phase="finalizing"))
            try:
                answer, references = await finalize_answer(
                    answer,
                    self.state,
                    self.deps,
                    self.options,
                    language=self.language,
                    deadline=self._remaining(1.0),
                )
            except Exception as exc:  # finalizing polishes; failing it must not lose the answer
                self._emit(
                    Notice(text=f"finalizing failed ({type(exc).__name__}); answer kept as is")
                )
        else:  # a direct answer has no sources: no markers, no links to unseen pages
            answer = clean_unanchored(answer, seen_urls(self.state))
        self._emit(PhaseChanged(phase="done", reason=self.stop_reason))
        result = self.snapshot(
            status if error is None or status == "not_found" else "forced", error=error
        )
        result.answer = answer
        result.references = references
        result = with_confidence(self.state, with_search_record(self.state, result))
        return apply_min_confidence(self.state, result, self.options.min_confidence)

    def snapshot(self, status: Status, *, error: str | None = None) -> ResearchResult:
        """The result as of now (also used for interrupted and failed runs)."""
        st = self.state
        raw = st.final_answer or st.candidate_answer or st.not_found_note or ""
        result = ResearchResult(
            question=self.state.question,
            # A cut-short run's answer was never finalized: no unanchored markers or
            # links to unseen pages may leave with it (run() replaces it when finalized).
            answer=clean_unanchored(raw, seen_urls(self.state)) if raw else "",
            status=status,
            steps=self.team.all_steps(self.state.steps),
            team=self.team.report(),
            visited_urls=list(self.state.visited),
            read_urls=list(self.state.read_urls),
            usage=UsageReport.from_tracker(self.deps.llm.tracker),
            elapsed_s=round(self.deps.clock.monotonic() - self.started, 3),
            error=error,
            error_kind=error_kind(self.fatal, error),
        )
        return with_confidence(st, result)

    async def _research_phase(self) -> bool:
        """True when an answer was accepted; False when the loop had to stop."""
        try:
            async with self._time_limit(LOOP_TIME_SHARE):
                while True:
                    self._check_limits()
                    if await self._step():
                        return True
                    await self.team.after_step(self)
        except LoopStopped as stop:
            self.stop_reason = str(stop)
        except TimeoutError:
            self.stop_reason = "time limit reached"
        except BudgetExceeded as exc:
            self.stop_reason = f"budget: {exc}"
        except ProviderAuthError:
            raise  # no later call can succeed either
        except RunError as exc:  # a provider failure mid-run still gets a Beast Mode answer
            if exc.fatal:  # e.g. search cannot work: Beast Mode would only guess
                self._finish_step("error", "", str(exc)[:300])  # the step it ended counts
                raise
            self.stop_reason = f"error: {exc}"
            if self._provider_unreachable(exc):
                raise  # not one step worked: asking the same dead endpoint again only waits
        self._emit(Notice(text=f"stopping research: {self.stop_reason}"))
        return False

    def _check_limits(self) -> None:
        tracker = self.deps.llm.tracker
        # Predictive: a step like the last one must still fit under the 85% line, so
        # the 15% reserve for Beast Mode is not eaten by the final research step.
        if (
            tracker.regular_exhausted
            or tracker.used + self._last_step_cost > tracker.regular_budget
        ):
            raise LoopStopped(f"85% of the {tracker.budget}-token budget used")
        if self._remaining(LOOP_TIME_SHARE) == 0:
            raise LoopStopped("time limit reached")
        if self.state.step >= self.options.max_steps:
            raise LoopStopped(f"step limit of {self.options.max_steps} reached")
        if self.state.consecutive_failures >= MAX_CONSECUTIVE_FAILURES:
            raise LoopStopped("the model gave no usable reply several times in a row")
        if self.progress.stalled(self.state):
            raise LoopStopped(self.progress.reason())

    # ------------------------------------------------------------- one step

    async def _step(self) -> bool:
        st = self.state
        st.step += 1
        used_before = self.deps.llm.tracker.used
        try:
            return await self._step_body(st)
        finally:
            self._last_step_cost = self.deps.llm.tracker.used - used_before

    async def _step_body(self, st: AgentState) -> bool:
        if not st.question_classified:
            await self._classify_question()
        await refresh_url_list(st, self.deps, self.options)
        st.flags = self.team.preset_flags(st.flags, self.options)
        flags = allowed_now(st, GateContext(self.coding_available, self.needs_freshness))
        wanted = choose_targets(st, [])[: self.prefetch.limit]  # what a visit would read
        self.prefetch.retain(wanted)
        self.prefetch.start(wanted)
        self._emit(
            StepStarted(step=st.step, question=st.current_question, allowed=list(flags.allowed()))
        )
        decision = await self._decide(flags, tool="agent", beast=False)
        if decision is None:
            return False
        accepted = await self._dispatch(decision)
        return accepted

    async def _decide(self, flags: AllowFlags, *, tool: ToolName, beast: bool) -> StepBase | None:
        st = self.state
        allowance = self._knowledge_allowance(tool)
        await refresh_state(
            st, self.deps.similarity, allowance_tokens=allowance, page_chars=self.options.page_chars
        )
        system = build_system_prompt(
            st,
            flags,
            now=self.deps.clock.now(),
            language=self.language,
            knowledge_allowance=allowance,
            beast=beast,
        )
        if st.omitted_knowledge:
            self._emit(omitted_knowledge_notice())
        messages = [Message(role="user", content=st.current_question)]
        try:
            result = await self.deps.llm.generate_object(
                tool, step_schema(flags.allowed()), system, messages
            )
        except StructuredOutputError as exc:
            st.consecutive_failures += 1
            st.flags = AllowFlags()
            st.diary.append(f"Step {st.step}: my reply could not be understood ({str(exc)[:160]}).")
            self._finish_step("error", "", f"unusable model reply: {str(exc)[:160]}")
            return None
        st.consecutive_failures = 0
        return result.value

    async def _dispatch(self, decision: StepBase) -> bool:
        """Run the chosen action; True when it was an accepted answer."""
        payload = decision.payload()
        if isinstance(payload, AnswerPayload):  # the one action that can end the run
            return await self._answer(payload, decision.think)
        detail = await HANDLERS[decision.action](self, payload)
        self.state.flags = after_action(decision.action, answer_rejected=False)
        self._finish_step(decision.action, decision.think, detail)
        return False

    async def _answer(self, payload: AnswerPayload, think: str) -> bool:
        # What the answer rests on stays in view for every later prompt.
        await pin_support(list(self.state.evidence.values()), payload.answer, self.deps.similarity)
        self.evaluator.knowledge_tokens = self._knowledge_allowance("evaluator")
        outcome = await handle_answer(
            payload, self.state, self.evaluator, now=self.deps.clock.now(), options=self.options
        )
        outcome = await self.team.recheck(self, outcome)
        self.state.flags = after_action("answer", answer_rejected=outcome.rejected)
        self._finish_step("answer", think, outcome.detail)
        if outcome.out_of_attempts:
            raise LoopStopped(outcome.detail)
        return outcome.accepted

    async def _classify_question(self) -> None:
        st = self.state
        st.question_classified = True
        try:
            verdict = await self.evaluator.classify(st.question)
        except StructuredOutputError:
            verdict = QuestionEval()  # unclassified: the default checks apply
        self.needs_freshness = verdict.needs_freshness
        st.metrics = metrics_for(verdict, self.options.max_bad_attempts)

    # ------------------------------------------------------------- Beast Mode

    async def _beast_mode(self) -> None:
        st = self.state
        self._emit(PhaseChanged(phase="beast", reason=self.stop_reason))
        st.gaps = [st.question]
        st.step += 1
        try:
            async with self._time_limit(1.0):
                decision = await self._decide(
                    AllowFlags().only("answer"), tool="agent_beast", beast=True
                )
        except (TimeoutError, BudgetExceeded) as exc:
            self.stop_reason = self.stop_reason or str(exc)
            decision = None
        payload = decision.payload() if decision is not None else None
        if decision is not None and isinstance(payload, AnswerPayload):
            if payload.supported or not payload.answer.strip():
                if payload.answer.strip():  # a new answer brings its own marks
                    st.final_answer, st.answer_uncertain = payload.answer.strip(), payload.uncertain
                else:
                    st.final_answer = st.candidate_answer
                self._finish_step("answer", decision.think, "Beast Mode answer")
            else:  # the model's last word: nothing gathered answers the question
                st.not_found_note, st.candidate_answer = payload.answer.strip(), None
                self._finish_step("answer", decision.think, "Beast Mode: not found")

    # ------------------------------------------------------------- helpers

    def _finish_step(self, action: str, think: str, detail: str) -> None:
        st = self.state
        record = st.record_step(action, think, detail)
        tracker = self.deps.llm.tracker
        self._emit(
            StepFinished(
                step=record.step,
                action=action,
                think=think,
                detail=detail,
                tokens_used=tracker.used,
                budget=tracker.budget,
                elapsed_s=round(self.deps.clock.monotonic() - self.started, 2),
            )
        )

    def _knowledge_allowance(self, tool: ToolName) -> int:
        """Tokens of knowledge the prompt may carry: bounded by the context window, by a
        share of the budget, and in Beast Mode by what is left (it must fit to answer)."""
        llm = self.deps.llm
        max_out = llm.settings.tool_settings(llm.provider_name, tool).max_tokens
        by_window = llm.context_window - max_out - PROMPT_OVERHEAD_TOKENS
        by_budget = max(4000, llm.tracker.budget // 12)
        allowance = min(by_window, by_budget, KNOWLEDGE_CAP_TOKENS)
        if tool == "agent_beast":
            allowance = min(allowance, llm.tracker.remaining // 2 - BEAST_PROMPT_TOKENS)
        return max(200, allowance)

    def _remaining(self, share: float) -> float | None:
        if self.options.timeout_s is None:
            return None
        deadline = self.started + self.options.timeout_s * share
        return max(0.0, deadline - self.deps.clock.monotonic())

    @asynccontextmanager
    async def _time_limit(self, share: float) -> AsyncIterator[None]:
        """Cancel the block when `share` of --timeout is used up. `_remaining` reads the
        injected clock but asyncio.timeout counts real (event-loop) time, so a FakeClock's
        advance() inside the block does not move this deadline; `_check_limits` does."""
        remaining = self._remaining(share)
        if remaining is None:
            yield
            return
        async with asyncio.timeout(remaining):
            yield

    def _provider_unreachable(self, exc: RunError) -> bool:
        """A transport failure before any step succeeded (dead or refusing endpoint)."""
        transport = isinstance(exc, ProviderError) and not isinstance(
            exc, StructuredOutputError | ContextLengthError
        )
        return transport and not any(s.action != "error" for s in self.state.steps)

    def _probe_sandbox(self) -> tuple[bool, str]:
        if self.deps.sandbox is None:
            return False, "no sandbox configured"
        try:
            return self.deps.sandbox.availability()
        except Exception as exc:  # a broken probe must not stop research
            return False, str(exc)

    def _emit(self, event: AgentEvent) -> None:
        try:
            self.deps.emit(event)
        except Exception:  # the view must never break the run
            pass
