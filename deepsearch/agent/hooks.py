"""High effort's re-check as a loop hook: after an accepted answer, when the options
ask for it, a second search (the search step's own pipeline) and the evaluator's
verdict on what it found (the LLM calls: agent/steps/recheck.py; the limits and
replies: agent/judging/recheck.py). A re-check that cannot be paid for, understood or
run (a provider or search failure) leaves the accepted answer accepted: the evaluator
already passed it, and an extra check that failed to happen is no evidence against
it."""

from __future__ import annotations

from deepsearch.agent.outcomes import Accepted, Outcome, Rejected
from deepsearch.agent.step import LoopHook, StepContext
from deepsearch.errors import RunError


class RecheckHook(LoopHook):
    async def after_outcome(self, ctx: StepContext, outcome: Outcome) -> Outcome:
        """`outcome` unchanged unless it accepted an answer and the options ask for a
        re-check; then Accepted with what the re-check did, or Rejected."""
        st = ctx.state
        if not isinstance(outcome, Accepted) or not ctx.options.recheck:
            return outcome
        # Only a run with a re-check imports it (agent/later.py: beside its first request).
        from deepsearch.agent.actions.search import as_queries, new_queries, run_batch
        from deepsearch.agent.judging.recheck import MAX_RECHECKS, RESULTS_SHOWN
        from deepsearch.agent.steps.recheck import (
            judge_results,
            propose_queries,
            record_contradiction,
            results_question,
        )

        if st.rechecks >= MAX_RECHECKS:
            return outcome
        answer = st.final_answer or ""
        st.rechecks += 1
        llm = ctx.deps.llm
        try:
            queries = new_queries(st, await propose_queries(st, llm, answer))
            if not queries:
                return Accepted(f"{outcome.detail}; re-check: no new query")
            batch = await run_batch(
                st,
                ctx.deps,
                as_queries(queries, ctx.options),
                options=ctx.options,
                question=results_question(queries),
                shown=RESULTS_SHOWN,
            )
            verdict = await judge_results(st, llm, answer, batch.results)
        except RunError as exc:  # the budget, the provider, the search or an unusable reply
            return Accepted(f"{outcome.detail}; re-check skipped ({type(exc).__name__})")
        if not verdict.consistent:
            return Rejected(record_contradiction(st, answer, verdict))
        shown = " | ".join(queries)
        return Accepted(
            f"{outcome.detail}; re-checked by a second search ({len(batch.results)} results: {shown})"
        )
