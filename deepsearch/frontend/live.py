"""The live view on stderr: one line per step that leads with what was done, and a
spinner that names the work in flight with a ticking clock and the tokens used.

On a terminal each step is its own line cut to the width (the think goes to a dim
second line), so at 60 columns the queries and pages still show. Piped to a log,
lines are whole. `quiet` silences everything.

rich and its dependencies cost ~0.1 s of CPU at start-up (issue 21), so the view
imports them only to draw on a terminal: a quiet view never does, and on a pipe or a
file (stderr a log, a `--json` run's) the lines are written as they are, the text
rich would write there (with no colour, no spinner). When a variable tells rich to
treat the stream as a terminal (FORCE_COLOR, TTY_COMPATIBLE, TTY_INTERACTIVE), rich
draws it as before.
"""

from __future__ import annotations

import math
import sys
from collections import Counter
from typing import TYPE_CHECKING

from deepsearch.agent.events import (
    MAIN_AGENT,
    Activity,
    AgentEvent,
    LlmPhase,
    Notice,
    PhaseChanged,
    StepFinished,
    StepStarted,
)
from deepsearch.clock import Clock, SystemClock
from deepsearch.frontend.output import clean_line, paths_in_text, plain_stream
from deepsearch.frontend.units import dollars, tokens

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions, RenderResult
    from rich.measure import Measurement
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
# Columns of a terminal line the spinner text leaves free (see _Ticker).
SPINNER_ROOM = 4
# An LLM call in flight this long says what it waits for ("no first token yet after
# N s" and its limit); a retry's pause is said at once.
SLOW_CALL_S = 15.0
# What an LLM call of each tool is doing, in words. "classifier" is the evaluator's
# first call, classifying the question (runtime.llm_tap names it by its schema).
TOOL_WORDS = {
    "agent": "choosing the next step",
    "classifier": "classifying the question",
    "agent_beast": "Beast Mode: forcing the best answer",
    "evaluator": "evaluating the answer",
    "error_analyzer": "analysing the rejected answer",
    "query_rewriter": "rewriting the queries",
    "research_planner": "planning sub-questions",
    "coder": "writing code",
    "finalizer": "finalizing the answer",
    "fallback": "repairing the model's reply",
    "follow_up": "making the follow-up a question of its own",
}


def plain_stderr() -> bool:
    """stderr is a pipe or a file, as rich too would see it: its lines need no rich."""
    return plain_stream(sys.stderr)


def short(text: str, limit: int) -> str:
    text = " ".join(clean_line(paths_in_text(text)).split())
    return text if len(text) <= limit else text[: max(1, limit - 1)] + "…"


def _mark(agent: str) -> str:
    """A team child's steps, notices and spinner label lead with its id: `[2] `."""
    return "" if agent == MAIN_AGENT else f"[{clean_line(agent)}] "


def _retry_cause(status: int | None) -> str:
    """Why a call is paused before its retry, in the spinner's few words."""
    if status == 429:
        return "rate limited"
    return "no answer from the server" if status is None else f"the server answered HTTP {status}"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


class _Ticker:
    """The spinner's text, rendered afresh at every refresh: the clock ticks."""

    def __init__(self, view: LiveView) -> None:
        self.view = view

    def _text(self, width: int) -> Text:
        from rich.text import Text

        return Text(short(self.view.status_text(), max(10, width)))

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield self._text(options.max_width)  # the width its measure asked for

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        """As wide as the text, which leaves SPINNER_ROOM columns of the line free: the
        spinner's frame and a space, and 2 for the terminal's `^C` echo. Unmeasured,
        the spinner's grid padded the line to the whole width; the echo then wrapped,
        and the wrapped line is one the spinner does not erase when it stops (its last
        frame was left on the screen)."""
        from rich.measure import Measurement

        width = self._text(options.max_width - SPINNER_ROOM).cell_len
        return Measurement(width, width)


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
        self._plain = console is None and plain_stderr()  # lines written without rich
        self._clock = clock or SystemClock()
        self._started = self._clock.monotonic()
        self._status: Status | None = None
        self._in_flight: Counter[str] = Counter()
        self._label = "starting"
        self._tokens = 0
        self._budget = 0
        self._cost: float | None = None  # dollars so far (None: unknown or none yet)
        self._max_cost: float | None = None
        self._shown_once: set[str] = set()
        self._last_step = 0  # the main research's last finished step
        # The LLM calls in flight: when the oldest of each tool's started, and where
        # the latest stands (LlmPhase) since when (for "no first token yet after 40 s").
        self._llm_since: dict[str, float] = {}
        self._llm_phase: dict[str, tuple[LlmPhase, float]] = {}

    @property
    def console(self) -> Console:
        """The given console, or stderr's, made on first use (never by a quiet run that
        reports nothing)."""
        if self._console is None:
            from rich.console import Console

            # Piped stderr (a log) keeps whole lines; a terminal gets one line per step.
            self._console = Console(stderr=True, highlight=False, soft_wrap=not sys.stderr.isatty())
        return self._console

    def _write(self, line: str) -> None:
        """One whole line on a plain stderr, flushed as rich flushes each print."""
        sys.stderr.write(line + "\n")
        sys.stderr.flush()

    def _say(self, text: str, style: str) -> None:
        if self._plain:
            self._write(text)
            return
        from rich.text import Text

        self.console.print(Text(text, style=style))

    def summary(self, text: str) -> None:
        """The run's closing summary line (dim on a terminal)."""
        if self._plain:
            self._write(text)
            return
        from rich.markup import escape

        self.console.print(f"[dim]{escape(text)}[/]")

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
                self._cost, self._max_cost = event.cost_usd, event.max_cost
                self._last_step = event.step
            self._print_step(event)
        elif isinstance(event, Notice):
            self._notice(event)
        elif isinstance(event, PhaseChanged):
            self._phase(event)
        elif isinstance(event, LlmPhase):
            self._llm_phase[f"llm:{event.tool}"] = (event, self._clock.monotonic())
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
        if event.what == "llm":
            self._track_llm_call(key, event)
        if event.tokens_used is not None:
            self._tokens = event.tokens_used
            self._cost, self._max_cost = event.cost_usd, event.max_cost

    def _track_llm_call(self, key: str, event: Activity) -> None:
        if event.delta > 0:
            self._llm_since.setdefault(key, self._clock.monotonic())
        elif key not in self._in_flight:
            self._llm_since.pop(key, None)
            self._llm_phase.pop(key, None)

    def _forget_llm_calls(self) -> None:
        """No LLM call spans a step boundary; a call that failed never reported its end."""
        for key in [k for k in self._in_flight if k.startswith("llm:")]:
            del self._in_flight[key]
        self._llm_since.clear()
        self._llm_phase.clear()

    def _waiting(self, tool: str) -> str:
        """What the call waits for: a retry's pause at once (` — rate limited, retrying
        in 4 s`, counting down); once it is SLOW_CALL_S old, ` — no first token yet after
        40 s (limit 600 s)`, ` — writing its reply (40 s)`, or ` — no reply yet after 40
        s` from a provider that does not stream."""
        key, now = f"llm:{tool}", self._clock.monotonic()
        phase, phase_at = self._llm_phase.get(key, (None, now))
        if phase is not None and phase.phase == "retrying":
            left = math.ceil(max(0.0, phase.wait_s - (now - phase_at)))
            return f" — {_retry_cause(phase.status)}, retrying in {left} s"
        since = self._llm_since.get(key)
        waited = now - since if since is not None else 0.0
        if waited < SLOW_CALL_S:
            return ""
        if phase is None:
            return f" — no reply yet after {int(waited)} s"
        if phase.phase == "generating":
            return f" — writing its reply ({int(waited)} s)"
        limit = f" (limit {phase.limit_s:g} s)" if phase.limit_s else ""
        return f" — no first token yet after {int(waited)} s{limit}"

    def _notice(self, event: Notice) -> None:
        if event.once:
            if event.once in self._shown_once:
                return
            self._shown_once.add(event.once)
        self._say(f"  · {_mark(event.agent)}{clean_line(event.text)}", "dim")

    def _phase(self, event: PhaseChanged) -> None:
        if event.agent != MAIN_AGENT:  # a team child ending is not the run ending
            if event.phase == "beast":
                reason = clean_line(event.reason)
                self._say(f"  ⚡ [{event.agent}] Beast Mode: {reason}", "yellow")
            return
        if event.phase == "beast":
            self._say(f"  ⚡ {self.research_ended(event.reason)}", "bold yellow")
            self._label = "Beast Mode"
        elif event.phase == "finalizing":
            self._label = "finalizing"
        elif event.phase == "done":
            self.stop()

    # ------------------------------------------------------------ rendering

    def research_ended(self, reason: str) -> str:
        """When and why the research phase ended, and what happens now."""
        why = f": {clean_line(reason)}" if reason.strip() else ""
        when = f"after step {self._last_step}" if self._last_step else "before its first step"
        return f"research ended {when}{why} — Beast Mode answers"

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
        for tool in TOOL_WORDS:  # a stable order: the agent's own call first
            if tool in tools:
                return TOOL_WORDS[tool] + self._waiting(tool)
        return "working"

    def status_text(self) -> str:
        elapsed = self._clock.monotonic() - self._started
        spent = f"{tokens(self._tokens)}/{tokens(self._budget)} tok" if self._budget else ""
        clock = f"{int(elapsed // 60)}:{int(elapsed % 60):02d}"
        doing = self.doing()
        # "Beast Mode: forcing ..." already names the phase: not "Beast Mode: Beast Mode: ..."
        head = doing if doing.startswith(f"{self._label}:") else f"{self._label}: {doing}"
        parts = [head, clock, spent, dollars(self._cost, self._max_cost)]
        return "  ".join(p for p in parts if p)

    def step_texts(
        self, event: StepFinished, width: int | None
    ) -> tuple[str, str, str | None, str | None]:
        """(head, detail, cost (None: it does not fit), think line or None), cut to
        `width`: line 1 is step, action, what it did; line 2 the think."""
        cost = f"  {tokens(event.tokens_used)} tok {event.elapsed_s:.0f}s"
        head = f"{_mark(event.agent)}{event.step:>3} {event.action:<7} "
        room = None if width is None else max(8, width - len(head) - len(cost))
        detail = short(event.detail, room if room is not None else 400)
        fits = width is None or len(head) + len(detail) + len(cost) <= width
        think = None
        if event.think:
            think_room = None if width is None else max(8, width - 6)
            think = "    " + short(event.think, think_room or 200)
        return head, detail, cost if fits else None, think

    def step_lines(self, event: StepFinished, width: int | None) -> list[Text]:
        """The step's lines as rich draws them: line 1 in the action's colour (its cost
        dim), line 2 (dim): the think."""
        from rich.text import Text

        head, detail, cost, think = self.step_texts(event, width)
        first = Text(head, style=f"bold {ACTION_STYLE.get(event.action, 'white')}")
        first.append(detail)
        if cost is not None:
            first.append(cost, style="dim")
        lines = [first]
        if think is not None:
            lines.append(Text(think, style="dim italic"))
        return lines

    def _print_step(self, event: StepFinished) -> None:
        if self._plain:  # a log: whole lines, never wrapped
            head, detail, cost, think = self.step_texts(event, None)
            self._write(head + detail + (cost or ""))
            if think is not None:
                self._write(think)
            return
        width = self.console.width if self.console.is_terminal else None
        for line in self.step_lines(event, width):
            if width is None:  # a log: whole lines, never wrapped
                self.console.print(line, soft_wrap=True)
            else:
                self.console.print(line, no_wrap=True, overflow="ellipsis")

    def _spin(self) -> None:
        if self.quiet or self._plain or not self.console.is_terminal:
            return
        if self._status is None:
            self._status = self.console.status(_Ticker(self), spinner="dots")
            self._status.start()

    def stop(self) -> None:
        if self._status is not None:
            self._status.stop()
            self._status = None
