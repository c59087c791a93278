"""One research, assembled and run the same way for every front end: the CLI, `serve`,
`eval`, `mcp` and the library (`deepsearch.research`). Each adds only its own output.

A session owns the run's parts — the --trace writer, the cassette, the dependencies
(runtime.build_deps, which also runs the sandbox probe off the event loop: it starts
processes) and the ResearchRun — and turns every failure into a result the same way:

- a ConfigError before the run (no provider, an empty corpus) is raised: the front end
  decides (the CLI prints one line and exits 2; serve and mcp answer with a
  configuration result; eval stops; the library raises it);
- any other failure becomes a failed result: what the run found so far when it had
  started, an empty result (`empty_result`) when it had not (both built by
  agent/result.result_so_far, the one builder of an unfinished result), whose
  `error_kind` is "fatal" (the run could not go on) unless only the user can fix it;
- cancellation (a client gone, an MCP cancel) is never caught: it must reach the call
  in flight. `cut_short` then reports what was found.

Every result leaves through the cassette (`runtime.finish_cassette`): a recording gets
its result.json, a replay miss fails the run. Then it gets the session's `run_id` and
is kept in the run history (deepsearch/history/), with what the run gathered; a file
that cannot take it adds a line to `warnings`, never fails the run.

A follow-up (`earlier`: a run of the history, agent/handover.py) is made standalone by
one LLM call on the run's own client (agent/steps/follow_up.py) and starts from the
earlier run's knowledge and URL list: the pages it read are not fetched again.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AsyncExitStack
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from deepsearch import collector
from deepsearch.agent.result import ErrorKind, ResearchResult, Status, failure_kind
from deepsearch.errors import ConfigError

if TYPE_CHECKING:
    from deepsearch.agent.deps import AgentDeps
    from deepsearch.agent.events import AgentEvent
    from deepsearch.agent.handover import Carryover
    from deepsearch.agent.loop import ResearchRun
    from deepsearch.agent.types import KnowledgeItem
    from deepsearch.cassettes import CassetteSpec
    from deepsearch.config import Settings
    from deepsearch.runtime import CassetteSession

Emit = Callable[["AgentEvent"], None]


def _ignore(_: object) -> None:
    return None


class ResearchSession:
    """One question's run. `run` (once built) is readable from outside, so a front end
    can tell what was spent; `cut_short` reports what was found when it is stopped."""

    def __init__(
        self,
        question: str,
        settings: Settings,
        *,
        emit: Emit = _ignore,
        trace_path: Path | None = None,
        trace_tags: Mapping[str, Any] | None = None,
        cassette: CassetteSpec | None = None,
        knowledge: Sequence[KnowledgeItem] = (),
        adapt: Callable[[AgentDeps], None] | None = None,
        earlier: Carryover | None = None,
        keep: bool = True,
        present: Callable[[ResearchResult], ResearchResult] | None = None,
    ) -> None:
        self.question, self.settings, self.emit = question, settings, emit
        self.trace_path, self.trace_tags = trace_path, trace_tags
        self.cassette_spec = cassette
        self.knowledge = list(knowledge)  # earlier turns of a conversation (serve)
        self.adapt = adapt  # a last change to the parts (eval blocks answer-key sites)
        self.run: ResearchRun | None = None
        self.cassette: CassetteSession | None = None
        self.asked = question  # as the user wrote it (a follow-up is made standalone)
        self.earlier = earlier  # the run this one continues (deepsearch -c)
        # Kept in the history unless the front end (eval) or the settings say not;
        # `present`: the result as the front end will print it (the CLI cleans it).
        self.keep = keep and settings.history.enabled
        self.present = present
        self.started_at = datetime.now(UTC)
        from deepsearch.history import new_run_id

        self.run_id = new_run_id(self.started_at)
        self.warnings: list[str] = []  # one line each: the history could not keep the run

    async def execute(self) -> ResearchResult:
        """The run's result, failures included (see the module docstring)."""
        try:
            result = await self._go()
        except ConfigError:
            raise
        except OSError as exc:  # e.g. the trace file cannot be created
            result = self._failed(self._file_error(exc), exc)
        except Exception as exc:  # a RunError; a bug must still return what was found
            from deepsearch.errors import DeepsearchError

            why = str(exc) if isinstance(exc, DeepsearchError) else _internal(exc)
            result = self._failed(why, exc)
        return self.finish(result)

    def refused(self, exc: ConfigError) -> ResearchResult:
        """The result for a configuration that cannot work (for the front ends that
        answer with a result rather than stop: serve, mcp)."""
        return self.finish(self._snapshot("failed", str(exc), exc, kind="configuration"))

    def cut_short(self, status: Status, error: str | None = None) -> ResearchResult:
        """What was found so far (interrupted, cancelled), through the cassette."""
        return self.finish(self._snapshot(status, error, None))

    def finish(self, result: ResearchResult) -> ResearchResult:
        from deepsearch.runtime import finish_cassette

        result = finish_cassette(self.cassette, result)
        continued = self.earlier.run_id if self.earlier is not None else None
        result = result.model_copy(update={"run_id": self.run_id, "continued_from": continued})
        if self.keep:
            try:
                self._keep(result)
            except Exception as exc:  # a bug in keeping it must not cost the run either
                self.warnings.append(f"run not kept in the history: {_internal(exc)}")
        return result

    def _keep(self, result: ResearchResult) -> None:
        """The run into the history (a warning when the file cannot take it)."""
        from deepsearch.agent.handover import capture
        from deepsearch.history import keep_run

        shown = self.present(result) if self.present is not None else result
        if self.run is not None:
            carry: Carryover | None = capture(self.run.state, result.answer, run_id=self.run_id)
        else:  # never started: a follow-up of it starts where this one would have
            carry = self.earlier
        warning = keep_run(
            self.settings, result, output_json=shown.json_text(), asked=self.asked,
            started_at=self.started_at, finished_at=datetime.now(UTC), carry=carry,
        )  # fmt: skip
        if warning is not None:
            self.warnings.append(warning)

    async def _go(self) -> ResearchResult:
        from deepsearch.agent.loop import ResearchRun
        from deepsearch.runtime import build_deps, build_trace, open_cassette, run_options

        settings, question = self.settings, self.question
        if (note := question_share(question, settings.agent.token_budget)) is not None:
            from deepsearch.agent.events import Notice, safe_emit

            safe_emit(self.emit, Notice(text=note, once="question-share"))
        trace = build_trace(self.trace_path, settings, question, tags=self.trace_tags)
        async with AsyncExitStack() as stack:
            if trace is not None:
                stack.callback(trace.close)
            self.cassette = open_cassette(self.cassette_spec, settings)
            if (note := foreign_cassette(self.cassette, question)) is not None:
                from deepsearch.agent.events import Notice, safe_emit

                safe_emit(self.emit, Notice(text=note, once="foreign-cassette"))
            deps = await build_deps(
                settings, stack=stack, emit=self.emit, trace=trace, cassette=self.cassette,
                question=question,
            )  # fmt: skip
            if self.adapt is not None:
                self.adapt(deps)
            if self.earlier is not None:
                question = self.question = await self._standalone(deps)
            run = self.run = ResearchRun(question, deps, run_options(settings))
            for item in self.knowledge:
                run.state.add_knowledge(item.model_copy())
            if self.earlier is not None:
                from deepsearch.agent.handover import seed

                seed(run.state, self.earlier)
            collector.settle()  # start-up is over (the console script's collector.hold)
            from deepsearch.agent.stalls import with_timeout_cause

            # A time limit that cut a stalled or rate-limited LLM call says so (stalls.py).
            return with_timeout_cause(await run.run(), run)

    async def _standalone(self, deps: AgentDeps) -> str:
        """The follow-up as a question of its own (one LLM call, in the budget)."""
        from deepsearch.agent.events import Notice, safe_emit
        from deepsearch.agent.steps.follow_up import standalone_question

        assert self.earlier is not None
        earlier = self.earlier
        question = await standalone_question(
            deps.llm, earlier.question, earlier.answer, self.question
        )
        said = f"continuing run {earlier.run_id}"
        if question != self.question:
            said += f": researching {question!r}"
        safe_emit(self.emit, Notice(text=said))
        return question

    def _failed(self, error: str, exc: BaseException) -> ResearchResult:
        # Before the run: it could not go on at all ("fatal"), unless only the user can
        # fix the cause (a rejected key). A started run keeps its own account.
        kind: ErrorKind = "configuration" if failure_kind(exc) == "configuration" else "fatal"
        return self._snapshot("failed", error, exc, kind=kind)

    def _snapshot(
        self,
        status: Status,
        error: str | None,
        failure: BaseException | None,
        *,
        kind: ErrorKind | None = None,
    ) -> ResearchResult:
        if self.run is not None:
            return self.run.snapshot(status, error=error, failure=failure)
        return empty_result(self.question, self.settings, status, error, kind)

    def _file_error(self, exc: OSError) -> str:
        where = exc.filename or (f"--trace {self.trace_path}" if self.trace_path else "a file")
        return f"{where}: {exc.strerror or exc}"


def foreign_cassette(cassette: CassetteSession | None, question: str) -> str | None:
    """A notice when a lenient replay's cassette was recorded for another question:
    its answers are that question's (a strict replay misses at once and says so)."""
    if cassette is None:
        return None
    from deepsearch.cassettes import Player

    if not isinstance(cassette, Player) or not cassette.lenient:
        return None
    recorded = str(cassette.run.get("question") or "")
    asked = cassette.redactor.text(question)
    if not recorded or " ".join(recorded.split()) == " ".join(asked.split()):
        return None
    return (
        f"--replay-lenient: this cassette was recorded for another question ({recorded!r}); "
        "its answers are that question's, not this one's"
    )


# The question is resent with every step: past this share of the budget it alone
# leaves few steps (a 90 kB question cost 213k tokens in 3 steps).
QUESTION_SHARE_WARNED = 0.1


def question_share(question: str, budget: int) -> str | None:
    """A notice when the question alone (~4 characters a token) takes a large share of
    the token budget; None otherwise."""
    tokens = len(question) // 4
    if budget <= 0 or tokens < budget * QUESTION_SHARE_WARNED:
        return None
    return (
        f"the question alone is ~{tokens:,} tokens, {tokens / budget:.0%} of the "
        f"{budget:,}-token budget, and every step sends it again: shorten it or raise --budget"
    )


def _internal(exc: BaseException) -> str:
    return f"internal error: {type(exc).__name__}: {exc}"


def empty_result(
    question: str,
    settings: Settings,
    status: Status,
    error: str | None = None,
    kind: ErrorKind | None = None,
) -> ResearchResult:
    """The result of a run that found nothing (it never started): nothing spent."""
    from deepsearch.agent.result import UsageReport, result_so_far
    from deepsearch.llm.tracker import TokenTracker

    usage = UsageReport.from_tracker(TokenTracker(settings.agent.token_budget))
    return result_so_far(question, status, usage, error=error, kind=kind or "fatal")
