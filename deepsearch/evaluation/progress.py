"""The eval's progress on stderr, with the running accuracy: a bar on a terminal, and
plain lines in a log (CI, a pipe, a file), one as each question finishes, from the
start. A resume says first how many questions were already done."""

from __future__ import annotations

from collections.abc import Iterable

from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)

from deepsearch.clock import Clock, SystemClock
from deepsearch.evaluation.results import ResultLine


def _clock_text(seconds: float) -> str:
    whole = int(seconds)
    return f"{whole // 60}:{whole % 60:02d}"


class EvalProgress:
    def __init__(
        self,
        *,
        total: int,
        quiet: bool,
        console: Console | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.total = total
        self.quiet = quiet
        self.done = 0
        self.correct = 0
        self.console = console or Console(stderr=True, highlight=False)
        self.clock = clock or SystemClock()
        self._started = self.clock.monotonic()
        self._bar: Progress | None = None
        self._task: TaskID | None = None

    def describe(self) -> str:
        share = f"{self.correct / self.done:.0%}" if self.done else "-"
        return f"eval  accuracy {share} ({self.correct}/{self.done})"

    def start(self, already: Iterable[ResultLine]) -> None:
        for line in already:
            self._count(line)
        self._started = self.clock.monotonic()
        if self.quiet:
            return
        if self.done:
            self._say(f"eval: resuming, {self.done} of {self.total} already done")
        if not self.console.is_terminal:
            return  # a log: a line per finished question (advance), no bar redrawn
        self._bar = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=self.console,
        )
        self._task = self._bar.add_task(self.describe(), total=self.total, completed=self.done)
        self._bar.start()

    def _count(self, line: ResultLine) -> None:
        self.done += 1
        self.correct += line.grade == "correct"

    def line_for(self, line: ResultLine) -> str:
        """`eval  3/5  accuracy 67% (2/3)  0:12  c03 correct`: one finished question."""
        elapsed = _clock_text(self.clock.monotonic() - self._started)
        share = f"{self.correct / self.done:.0%}" if self.done else "-"
        what = line.grade if line.error is None else f"{line.grade} (error)"
        return (
            f"eval  {self.done}/{self.total}  accuracy {share} ({self.correct}/{self.done})"
            f"  {elapsed}  {line.id} {what}"
        )

    def advance(self, line: ResultLine) -> None:
        self._count(line)
        if self._bar is not None and self._task is not None:
            self._bar.update(self._task, completed=self.done, description=self.describe())
        elif not self.quiet:
            self._say(self.line_for(line))

    def _say(self, text: str) -> None:
        self.console.print(escape(text), soft_wrap=True)  # an id may hold brackets

    def stop(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None
