"""One request's research run: a deepsearch.session.ResearchSession (built exactly as
the CLI builds one: the same budget, step and time limits), its events turned into
reasoning text, its trace records tagged with the request id.

The run is an ordinary coroutine: cancelling its task (the client went away) cancels
the LLM call in flight and closes the clients, so no further call is made for it. The
earlier turns of the conversation are seeded into the run's knowledge before the first
step (see request.conversation)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from deepsearch.agent.events import AgentEvent
from deepsearch.agent.loop import ResearchRun
from deepsearch.agent.result import ResearchResult
from deepsearch.agent.types import KnowledgeItem
from deepsearch.config import Settings
from deepsearch.errors import ConfigError
from deepsearch.server.reasoning import ReasoningText
from deepsearch.session import ResearchSession


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
        self.settings = settings
        self.on_text = on_text
        self.reasoning: list[str] = []
        self._text = ReasoningText()
        self.session = ResearchSession(
            question, settings, emit=self.emit, trace_path=trace_path,
            trace_tags={"request_id": request_id}, knowledge=turns,
        )  # fmt: skip

    @property
    def run(self) -> ResearchRun | None:
        return self.session.run

    def emit(self, event: AgentEvent) -> None:
        text = self._text(event)
        if text:
            self.reasoning.append(text)
            self.on_text(text)

    async def execute(self) -> ResearchResult:
        """The run's result; errors become a failed (or cut-short) result, as in the
        CLI. Cancellation is not caught: it must reach every call in flight."""
        try:
            return await self.session.execute()
        except ConfigError as exc:  # a request gets a result, the server goes on
            return self.session.refused(exc)
