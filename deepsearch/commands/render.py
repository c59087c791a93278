"""Rich output: the live step view on stderr, the answer on stdout."""

from __future__ import annotations

import json
import re
import sys
from typing import Any

from rich.console import Console
from rich.markdown import Markdown
from rich.status import Status
from rich.text import Text

from deepsearch.agent.events import AgentEvent, Notice, PhaseChanged, StepFinished, StepStarted
from deepsearch.agent.result import ResearchResult
from deepsearch.commands.output import clean_line

ACTION_STYLE = {
    "search": "cyan",
    "visit": "blue",
    "reflect": "magenta",
    "answer": "green",
    "coding": "yellow",
    "error": "red",
}


def _short(text: str, limit: int) -> str:
    text = " ".join(clean_line(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _tokens(n: int) -> str:
    if n < 1000:
        return str(n)
    return f"{n / 1000:.1f}".rstrip("0").rstrip(".") + "k"


class LiveView:
    """One line per step on stderr, plus a spinner while work is in flight.

    In a non-terminal (or with NO_COLOR) it degrades to plain lines; `quiet`
    silences it entirely.
    """

    def __init__(self, *, quiet: bool = False, console: Console | None = None) -> None:
        self.quiet = quiet
        # Piped stderr (a log) keeps whole lines; a terminal gets one line per step.
        self.console = console or Console(
            stderr=True, highlight=False, soft_wrap=not sys.stderr.isatty()
        )
        self._status: Status | None = None

    def start(self, message: str) -> None:
        """Show the spinner before the first event (classification takes a while)."""
        if not self.quiet:
            self._spin(message)

    def __call__(self, event: AgentEvent) -> None:
        if self.quiet:
            return
        if isinstance(event, StepStarted):
            self._spin(f"step {event.step}: choosing among {', '.join(event.allowed)}…")
        elif isinstance(event, StepFinished):
            self._print_step(event)
            self._spin(f"step {event.step} done; next step…")
        elif isinstance(event, Notice):
            self.console.print(Text(f"  · {clean_line(event.text)}", style="dim"))
        elif isinstance(event, PhaseChanged):
            self._phase(event)

    def _print_step(self, event: StepFinished) -> None:
        style = ACTION_STYLE.get(event.action, "white")
        line = Text()
        line.append(f"{event.step:>3} ", style="bold")
        line.append(f"{event.action:<7}", style=style)
        line.append(
            f"{_tokens(event.tokens_used):>6}/{_tokens(event.budget)} tok {event.elapsed_s:6.1f}s  ",
            style="dim",
        )
        if event.think:
            line.append(_short(event.think, 80), style="italic")
            line.append(" → ", style="dim")
        line.append(_short(event.detail, 160))
        if self.console.is_terminal:  # one line per step on screen; full lines in a log
            self.console.print(line, overflow="ellipsis", no_wrap=True)
        else:
            self.console.print(line, soft_wrap=True)

    def _phase(self, event: PhaseChanged) -> None:
        if event.phase == "beast":
            reason = clean_line(event.reason)
            self.console.print(Text(f"  ⚡ Beast Mode: {reason}", style="bold yellow"))
            self._spin("Beast Mode: forcing the best answer from all knowledge…")
        elif event.phase == "finalizing":
            self._spin("finalizing: editing and anchoring citations…")
        elif event.phase == "done":
            self.stop()

    def _spin(self, message: str) -> None:
        if not self.console.is_terminal:
            return
        if self._status is None:
            self._status = self.console.status(message, spinner="dots")
            self._status.start()
        else:
            self._status.update(message)

    def stop(self) -> None:
        if self._status is not None:
            self._status.stop()
            self._status = None


def print_answer(result: ResearchResult, *, as_json: bool) -> None:
    """The one thing on stdout: the answer (markdown) or the JSON object."""
    if as_json:
        sys.stdout.write(json.dumps(result.model_dump(mode="json"), ensure_ascii=False) + "\n")
        sys.stdout.flush()
        return
    if not result.answer:
        return  # stdout carries answers only; the stderr summary says what happened
    text = answer_markdown(result)
    out = Console(highlight=False)
    if out.is_terminal:
        body, definitions = split_definitions(text)
        out.print(Markdown(body))
        if result.references:
            out.print()
            out.print(Text("Sources", style="bold"))
            for index, ref in enumerate(result.references, start=1):
                line = Text()
                line.append(f"[{index}] ", style="bold cyan")
                line.append(f'"{_short(ref.quote, 200)}"', style="italic")
                line.append(f" — {ref.title or ref.url}\n    ")
                line.append(ref.url, style=f"link {ref.url}")
                out.print(line)
        elif definitions:
            out.print(definitions)
    else:
        sys.stdout.write(text.rstrip() + "\n")
        sys.stdout.flush()


def split_definitions(text: str) -> tuple[str, str]:
    """Separate the answer body from its trailing `[^n]: ...` definition lines."""
    lines = text.rstrip().splitlines()
    cut = len(lines)
    while cut > 0 and (lines[cut - 1].startswith("[^") or not lines[cut - 1].strip()):
        cut -= 1
    body = "\n".join(lines[:cut])
    # Rich renders [^n] literally; show markers as plain superscript-like brackets.
    return re.sub(r"\[\^(\d+)\]", r"[\1]", body), "\n".join(lines[cut:]).strip()


def answer_markdown(result: ResearchResult) -> str:
    """The answer text; reference definitions are already appended by the finalizer."""
    return result.answer or "(no answer)"


def summary_line(result: ResearchResult) -> str:
    usage: dict[str, Any] = result.usage.model_dump()
    steps = len(result.steps)
    return (
        f"{result.status} in {steps} step{'' if steps == 1 else 's'}, {result.elapsed_s:.1f}s, "
        f"{_tokens(usage['total_tokens'])}/{_tokens(usage['budget'])} tokens"
    )
