"""What a step's action came to: the value the loop matches on to decide what happens next.

Every action handler returns one of these; `detail` is the step log's line for it.
- Continue: the action ran (well or not); research goes on.
- Accepted: the answer to the original question passed (the run's answer is set).
- Rejected: an answer was refused (by the evaluator, or as empty / not found); research
  goes on, and the next step may not answer again at once.
- Stop: the research phase is over (e.g. a check ran out of attempts).
- Unavailable: the action cannot run in this run at all (e.g. no usable sandbox); it is
  no longer offered.
"""

from __future__ import annotations

from dataclasses import dataclass

from deepsearch.agent.schema import ActionName


@dataclass(frozen=True)
class Continue:
    detail: str


@dataclass(frozen=True)
class Accepted:
    detail: str


@dataclass(frozen=True)
class Rejected:
    detail: str


@dataclass(frozen=True)
class Stop:
    detail: str  # why the research phase is over


@dataclass(frozen=True)
class Unavailable:
    action: ActionName
    reason: str

    @property
    def detail(self) -> str:
        return f"refused: {self.reason}"


Outcome = Continue | Accepted | Rejected | Stop | Unavailable
