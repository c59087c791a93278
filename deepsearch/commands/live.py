"""The live view on stderr: one line per step that leads with what was done, and a
spinner that names the work in flight with a ticking clock and the tokens used.

On a terminal each step is its own line cut to the width (the think goes to a dim
second line), so at 60 columns the queries and pages still show. Piped to a log,
lines are whole. `quiet` silences everything: a quiet view imports no rich module
(rich and its dependencies cost ~0.1 s of CPU at start-up, issue 21), its console is
made on first use.
"""

from __future__ import annotations

import sys
from collections import Counter
from typing import TYPE_CHECKING

from deepsearch.agent.events import (
    MAIN_AGENT,
    Activity,
    AgentEvent,
    Notice,
    PhaseChanged,
    StepFinished,
    StepStarted,
)
from deepsearch.clock import Clock, SystemClock
from deepsearch.commands.output import clean_line, paths_in_text
from deepsearch.commands.units import tokens

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions, RenderResult
    from rich.status import Status
    from rich.text import Text

ACTION_STYLE = {
    "search": "cyan",
    "visit": "blue",
    "reflect": "magenta",
    "answer": "green",
    "coding": "yellow",
    "error": "red",
}
# What an LLM call of each tool is doing, in words.
TOOL_WORDS = {
    "agent": "choosing the next step",
    "agent_beast": "Beast Mode: forcing the best answer",
    "evaluator": "evaluating the answer",
    "error_analyzer": "analysing the rejected answer",
    "query_rewriter": "rewriting the queries",
    "research_planner": "planning sub-questions",
    "coder": "writing code",
    "finalizer": "finalizing the answer",
    "fallback": "repairing the model's reply",
}


def short(text: str, limit: int) -> str:
    text = " ".join(clean_line(paths_in_text(text)).split())
    return text if len(text) <= limit else text[: max(1, limit - 1)] + "…"


def _mark(agent: str) -> str:
    """A team child's steps, notices and spinner label lead with its id: `[2] `."""
    return "" if agent == MAIN_AGENT else f"[{clean_line(agent)}] "


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


class _Ticker:
    """The spinner's text, rendered afresh at every refresh: the clock ticks."""

    def __init__(self, view: LiveView) -> None:
        self.view = view

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        from rich.text import Text

        yield Text(short(self.view.status_text(), max(10, options.max_width - 2)))


class LiveView:
    """Consumes the run's events (see deepsearch.agent.events)."""

    def __init__(
        self,
        *,
        quiet: bool = False,
        console: Console | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.quiet = quiet
        self._console = console
        self._clock = clock or SystemClock()
        self._started = self._clock.monotonic()
        self._status: Status | None = None
        self._in_flight: Counter[str] = Counter()
        self._label = "starting"
        self._tokens = 0
        self._budget = 0
        self._shown_once: set[str] = set()
        self._last_step = 0  # the main research's last finished step

    @property
    def console(self) -> Console:
        """The given console, or stderr's, made on first use (never by a quiet run that
        reports nothing)."""
        if self._console is None:
            from rich.console import Console

            # Piped stderr (a log) keeps whole lines; a terminal gets one line per step.
            self._console = Console(stderr=True, highlight=False, soft_wrap=not sys.stderr.isatty())
        return self._console

    # ------------------------------------------------------------ events

    def start(self, message: str) -> None:
        """Show the spinner before the first event (classification takes a while)."""
        self._label = message.rstrip("…")
        if not self.quiet:
            self._spin()

    def __call__(self, event: AgentEvent) -> None:
        if self.quiet:
            return
        if isinstance(event, Activity):
            self._activity(event)
        elif isinstance(event, StepStarted):
            self._label = f"{_mark(event.agent)}step {event.step}"
            self._forget_llm_calls()
        elif isinstance(event, StepFinished):
            self._forget_llm_calls()
            if event.agent == MAIN_AGENT:  # a team child's figures are its share's
                self._tokens, self._budget = event.tokens_used, event.budget
                self._last_step = event.step
            self._print_step(event)
        elif isinstance(event, Notice):
            self._notice(event)
        elif isinstance(event, PhaseChanged):
            self._phase(event)
        self._spin()

    def _activity(self, event: Activity) -> None:
        key = f"llm:{event.tool}" if event.what == "llm" else event.what
        if event.what == "index":
            key = f"index:{event.detail}" if event.delta > 0 else key
            if event.delta < 0:  # the build is over, whatever its last progress said
                for name in [k for k in self._in_flight if k.startswith("index:")]:
                    del self._in_flight[name]
                return
            for name in [k for k in self._in_flight if k.startswith("index:")]:
                del self._in_flight[name]  # progress replaces the previous figure
        self._in_flight[key] += event.delta
        if self._in_flight[key] <= 0:
            del self._in_flight[key]
        if event.tokens_used is not None:
            self._tokens = event.tokens_used

    def _forget_llm_calls(self) -> None:
        """No LLM call spans a step boundary; a call that failed never reported its end."""
        for key in [k for k in self._in_flight if k.startswith("llm:")]:
            del self._in_flight[key]

    def _notice(self, event: Notice) -> None:
        from rich.text import Text

        if event.once:
            if event.once in self._shown_once:
                return
            self._shown_once.add(event.once)
        self.console.print(Text(f"  · {_mark(event.agent)}{clean_line(event.text)}", style="dim"))

    def _phase(self, event: PhaseChanged) -> None:
        from rich.text import Text

        if event.agent != MAIN_AGENT:  # a team child ending is not the run ending
            if event.phase == "beast":
                reason = clean_line(event.reason)
                self.console.print(
                    Text(f"  ⚡ [{event.agent}] Beast Mode: {reason}", style="yellow")
                )
            return
        if event.phase == "beast":
            self.console.print(
                Text(f"  ⚡ {self.research_ended(event.reason)}", style="bold yellow")
            )
            self._label = "Beast Mode"
        elif event.phase == "finalizing":
            self._label = "finalizing"
        elif event.phase == "done":
            self.stop()

    # ------------------------------------------------------------ rendering

    def research_ended(self, reason: str) -> str:
        """When and why the research phase ended, and what happens now."""
        why = f": {clean_line(reason)}" if reason.strip() else ""
        return f"research ended after step {self._last_step}{why} — Beast Mode answers"

    def doing(self) -> str:
        """What is in flight, most telling first (an index build, searches, reads)."""
        flight = self._in_flight
        index = next((k for k in flight if k.startswith("index:")), None)
        if index is not None:
            return f"indexing the corpus: {index.removeprefix('index:')}"
        if flight.get("search"):
            return f"searching {_plural(flight['search'], 'query')}".replace("querys", "queries")
        if flight.get("read"):
            return f"reading {_plural(flight['read'], 'page')}"
        tools = [k.removeprefix("llm:") for k in flight if k.startswith("llm:")]
        if self._label == "starting" and "evaluator" in tools:
            return "reading the question"  # the first evaluator call classifies it
        for tool in TOOL_WORDS:  # a stable order: the agent's own call first
            if tool in tools:
                return TOOL_WORDS[tool]
        return "working"

    def status_text(self) -> str:
        elapsed = self._clock.monotonic() - self._started
        spent = f"{tokens(self._tokens)}/{tokens(self._budget)} tok" if self._budget else ""
        clock = f"{int(elapsed // 60)}:{int(elapsed % 60):02d}"
        doing = self.doing()
        # "Beast Mode: forcing ..." already names the phase: not "Beast Mode: Beast Mode: ..."
        head = doing if doing.startswith(f"{self._label}:") else f"{self._label}: {doing}"
        parts = [head, clock, spent]
        return "  ".join(p for p in parts if p)

    def step_lines(self, event: StepFinished, width: int | None) -> list[Text]:
        """Line 1: step, action, what it did; line 2 (dim): the think. Cut to `width`."""
        from rich.text import Text

        style = ACTION_STYLE.get(event.action, "white")
        cost = f"  {tokens(event.tokens_used)} tok {event.elapsed_s:.0f}s"
        head = f"{_mark(event.agent)}{event.step:>3} {event.action:<7} "
        room = None if width is None else max(8, width - len(head) - len(cost))
        detail = short(event.detail, room if room is not None else 400)
        first = Text(head, style=f"bold {style}")
        first.append(detail)
        if width is None or len(head) + len(detail) + len(cost) <= width:
            first.append(cost, style="dim")
        lines = [first]
        if event.think:
            think_room = None if width is None else max(8, width - 6)
            lines.append(Text("    " + short(event.think, think_room or 200), style="dim italic"))
        return lines

    def _print_step(self, event: StepFinished) -> None:
        width = self.console.width if self.console.is_terminal else None
        for line in self.step_lines(event, width):
            if width is None:  # a log: whole lines, never wrapped
                self.console.print(line, soft_wrap=True)
            else:
                self.console.print(line, no_wrap=True, overflow="ellipsis")

    def _spin(self) -> None:
        if self.quiet or not self.console.is_terminal:
            return
        if self._status is None:
            self._status = self.console.status(_Ticker(self), spinner="dots")
            self._status.start()

    def stop(self) -> None:
        if self._status is not None:
            self._status.stop()
            self._status = None
