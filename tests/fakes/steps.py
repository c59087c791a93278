"""The agent's steps as a strict script: each step is answered once, in order; a step
nobody scripted fails the test (the loop catches broad errors to save a partial
answer, so the failure is also remembered), and so does a scripted step never asked
for. Every script a test builds is checked when the test ends (tests/conftest.py), so a
run that takes one step more or one less than the test says is caught.

A test whose point is "the model keeps doing this" (a termination property, a
fail-fast bound) ends its list with `forever(step)`: the one, explicitly named, step
that repeats.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from tests.fakes.scripted_llm import UnexpectedCall


@dataclass(frozen=True)
class forever:  # noqa: N801  (reads as a step in a list)
    """The last step of a script, answered every time the model is asked again."""

    step: Any


_open: list[StepScript] = []
_lock = threading.Lock()


class StepScript:
    def __init__(self, steps: Sequence[Any]) -> None:
        items = list(steps)
        self._forever = items.pop() if items and isinstance(items[-1], forever) else None
        if any(isinstance(step, forever) for step in items):
            raise ValueError("forever(step) can only end a script")
        self._steps = items
        self.used = 0
        self.unexpected: list[str] = []
        with _lock:
            _open.append(self)

    def next(self) -> Any:
        with _lock:
            if self._steps:
                self.used += 1
                return self._steps.pop(0)
            if self._forever is not None:
                self.used += 1
                return self._forever.step
            problem = f"agent step {self.used + 1} asked for; the script has {self.used}"
            self.unexpected.append(problem)
        raise UnexpectedCall(problem)

    def problems(self) -> list[str]:
        left = len(self._steps)
        unused = [f"{left} scripted agent step(s) never asked for"] if left else []
        return self.unexpected + unused

    def assert_complete(self) -> None:
        problems = self.problems()
        assert not problems, "; ".join(problems)


@contextmanager
def checked_scripts() -> Iterator[list[StepScript]]:
    """The scripts built inside the block (checked by the caller when it ends)."""
    with _lock:
        start = len(_open)
    built: list[StepScript] = []
    try:
        yield built
    finally:
        with _lock:
            built.extend(_open[start:])
            del _open[start:]
