"""The research as it happens, as `reasoning_content` text a chat UI can show: one
paragraph per finished step, Beast Mode, notices and the finalizing phase. Spinner
activity (searches and reads in flight, LLM calls) is not sent: it is noise in a
transcript, and the step lines already say what was searched and read."""

from __future__ import annotations

from deepsearch.agent.events import AgentEvent, Notice, PhaseChanged, StepFinished


class ReasoningText:
    """Turns agent events into paragraphs of markdown; notices with a `once` key are
    said once per run, as in the live view."""

    def __init__(self) -> None:
        self._said: set[str] = set()

    def __call__(self, event: AgentEvent) -> str | None:
        if isinstance(event, StepFinished):
            return _step(event)
        if isinstance(event, Notice):
            if event.once:
                if event.once in self._said:
                    return None
                self._said.add(event.once)
            return f"_{_line(event.text)}_\n\n"
        if isinstance(event, PhaseChanged):
            return _phase(event)
        return None


def _line(text: str) -> str:
    return " ".join(text.split())


def _step(event: StepFinished) -> str:
    head = f"**Step {event.step} · {event.action}**"
    think = _line(event.think)
    detail = _line(event.detail)
    body = " ".join(part for part in (think, f"({detail})" if detail else "") if part)
    return f"{head} {body}\n\n" if body else f"{head}\n\n"


def _phase(event: PhaseChanged) -> str | None:
    if event.phase == "beast":
        reason = f": {_line(event.reason)}" if event.reason else ""
        return f"**Beast Mode**{reason}; answering with what was found.\n\n"
    if event.phase == "finalizing":
        return "Writing the answer and checking its citations.\n\n"
    return None
