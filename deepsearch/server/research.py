"""One request's research run, built exactly as the CLI builds one (runtime.build_deps,
runtime.run_options, agent.loop.ResearchRun): the same budget, step and time limits.

The run is an ordinary coroutine: cancelling its task (the client went away) cancels
the LLM call in flight and closes the clients, so no further call is made for it. The
earlier turns of the conversation are seeded into the run's knowledge before the first
step (see request.conversation)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

from deepsearch.agent.events import AgentEvent
from deepsearch.agent.loop import ResearchRun
from deepsearch.agent.result import ResearchResult, Status, UsageReport
from deepsearch.agent.types import KnowledgeItem
from deepsearch.config import Settings
from deepsearch.errors import ConfigError, DeepsearchError
from deepsearch.llm.tracker import TokenTracker
from deepsearch.runtime import build_deps, run_options, secret_values
from deepsearch.server.reasoning import ReasoningText
from deepsearch.tracing import TraceWriter


class RequestRun:
    def __init__(
        self,
        question: str,
        turns: list[KnowledgeItem],
        settings: Settings,
        *,
        trace_path: Path | None,
        on_text: Callable[[str], None],
        request_id: str = "",
    ) -> None:
        self.request_id = request_id
        self.question = question
        self.turns = turns
        self.settings = settings
        self.trace_path = trace_path
        self.on_text = on_text
        self.reasoning: list[str] = []
        self.run: ResearchRun | None = None
        self._text = ReasoningText()

    def emit(self, event: AgentEvent) -> None:
        text = self._text(event)
        if text:
            self.reasoning.append(text)
            self.on_text(text)

    async def execute(self) -> ResearchResult:
        """The run's result; errors become a failed (or cut-short) result, as in the
        CLI. Cancellation is not caught: it must reach every call in flight."""
        try:
            return await self._run()
        except ConfigError as exc:
            return self._cut_short("failed", str(exc), configuration=True)
        except OSError as exc:  # e.g. the trace file cannot be written
            return self._cut_short("failed", f"{exc.filename or 'file'}: {exc.strerror or exc}")
        except DeepsearchError as exc:
            return self._cut_short("failed", str(exc))
        except Exception as exc:  # a bug must still return what was found
            return self._cut_short("failed", f"internal error: {type(exc).__name__}: {exc}")

    async def _run(self) -> ResearchResult:
        trace = self._trace()
        async with AsyncExitStack() as stack:
            if trace is not None:
                stack.callback(trace.close)
            deps = await build_deps(self.settings, stack=stack, emit=self.emit, trace=trace)
            if deps.sandbox is not None:  # its probe runs processes: not on the event loop
                await asyncio.to_thread(deps.sandbox.availability)
            run = self.run = ResearchRun(self.question, deps, run_options(self.settings))
            for item in self.turns:
                run.state.add_knowledge(item.model_copy())
            return await run.run()

    def _trace(self) -> RequestTrace | None:
        """runtime.build_trace's writer, each record tagged with the request id (the
        records of concurrent requests share the file)."""
        if self.trace_path is None:
            return None
        from deepsearch.config import LoadedConfig, effective_values

        trace = RequestTrace(
            self.trace_path, secrets=secret_values(self.settings), request_id=self.request_id
        )
        shown = effective_values(LoadedConfig(settings=self.settings, sources={}))
        trace.header(self.question, {key: value for key, (value, _) in shown.items()})
        return trace

    def _cut_short(
        self, status: Status, error: str, *, configuration: bool = False
    ) -> ResearchResult:
        if self.run is not None:
            return self.run.snapshot(status, error=error)
        usage = UsageReport.from_tracker(TokenTracker(self.settings.agent.token_budget))
        return ResearchResult(
            question=self.question,
            answer="",
            status=status,
            usage=usage,
            elapsed_s=0.0,
            error=error,
            error_kind="configuration" if configuration else "fatal",
        )


class RequestTrace(TraceWriter):
    def __init__(self, path: Path, *, secrets: list[str], request_id: str) -> None:
        super().__init__(path, secrets=secrets)
        self.request_id = request_id

    def __call__(self, kind: str, payload: dict[str, Any]) -> None:
        super().__call__(kind, {"request_id": self.request_id, **payload})
