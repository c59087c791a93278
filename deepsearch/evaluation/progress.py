"""The eval's progress bar on stderr, with the running accuracy."""

from __future__ import annotations

from collections.abc import Iterable

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)

from deepsearch.evaluation.results import ResultLine


class EvalProgress:
    def __init__(self, *, total: int, quiet: bool, console: Console | None = None) -> None:
        self.total = total
        self.quiet = quiet
        self.done = 0
        self.correct = 0
        self.console = console or Console(stderr=True, highlight=False)
        self._bar: Progress | None = None
        self._task: TaskID | None = None

    def describe(self) -> str:
        share = f"{self.correct / self.done:.0%}" if self.done else "-"
        return f"eval  accuracy {share} ({self.correct}/{self.done})"

    def start(self, already: Iterable[ResultLine]) -> None:
        for line in already:
            self._count(line)
        if self.quiet:
            return
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

    def advance(self, line: ResultLine) -> None:
        self._count(line)
        if self._bar is not None and self._task is not None:
            self._bar.update(self._task, completed=self.done, description=self.describe())

    def stop(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None
