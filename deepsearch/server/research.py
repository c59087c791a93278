"""One request's research run: a deepsearch.session.ResearchSession (built exactly as
the CLI builds one: the same budget, step and time limits), its events turned into
reasoning text, its trace records tagged with the request id.

The run is an ordinary coroutine: cancelling its task (the client went away) cancels
the LLM call in flight and closes the clients, so no further call is made for it. The
earlier turns of the conversation are seeded into the run's knowledge before the first
step (see request.conversation). When the last assistant turn is the answer of a run
the history kept (a reply of this server), the run continues that one, as `deepsearch
-c` does: the question made standalone, that run's knowledge and URL list in hand, so
nothing it read is fetched again (docs/history.md)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from deepsearch.agent.events import AgentEvent
from deepsearch.agent.handover import Carryover
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
        earlier, turns = continued(settings, turns)
        self.session = ResearchSession(
            question, settings, emit=self.emit, trace_path=trace_path,
            trace_tags={"request_id": request_id}, knowledge=turns, earlier=earlier,
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
        finally:  # the history could not keep the run: the operator's to know
            for warning in self.session.warnings:
                sys.stderr.write(f"deepsearch serve: warning: {warning}\n")


def continued(
    settings: Settings, turns: list[KnowledgeItem]
) -> tuple[Carryover | None, list[KnowledgeItem]]:
    """(the kept run whose answer is the conversation's last reply, the turns without
    that one: the run brings it back itself); (None, turns) when none is kept or the
    history cannot be read (a conversation never fails for the history)."""
    from deepsearch.history import HistoryError, store_for

    replied = [t for t in turns if t.answer.strip()]
    if not replied:
        return None, turns
    last = replied[-1]
    store = store_for(settings)
    try:
        run_id = store.find_answer(last.answer)
        carry = store.carryover(run_id) if run_id is not None else None
    except HistoryError:
        return None, turns
    if carry is None:
        return None, turns
    return carry.model_copy(update={"run_id": run_id}), [t for t in turns if t is not last]
