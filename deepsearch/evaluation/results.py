"""DIR/results.jsonl: one line per finished question, appended as each one finishes, so a
killed eval resumes where it stopped. A line cut short by the kill (no newline at the
end, or not valid JSON) is dropped from the file before anything is appended."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, ValidationError

Grade = Literal["correct", "incorrect", "not_attempted"]
RESULTS_FILE = "results.jsonl"


class ResultLine(BaseModel):
    id: str
    question: str
    gold: str
    answer: str = ""
    status: str = "failed"
    grade: Grade = "not_attempted"
    confidence: float = 0.0
    tokens: int = 0
    llm_calls: int = 0
    cost_usd: float | None = None  # the run's usage.cost_usd (null: unknown)
    elapsed_s: float = 0.0
    references: list[str] = Field(default_factory=list)
    error: str | None = None
    grader: str = ""  # which grader gave `grade` (llm grades are reused on replay)

    @property
    def failed(self) -> bool:
        """The research failed before any answer (a dead endpoint, a missing cassette,
        a crash): nothing was judged, so a resume runs the question again. A wrong or
        not-found answer, or an answer the grader failed on, is a result."""
        return self.error is not None and not self.answer.strip()


def repair_tail(path: Path) -> int:
    """Cut a half-written last line off `path`; the number of bytes removed."""
    if not path.is_file():
        return 0
    data = path.read_bytes()
    keep = data.rfind(b"\n") + 1  # 0 when no line was ever finished
    if keep == len(data):
        return 0
    with path.open("r+b") as handle:
        handle.truncate(keep)
    return len(data) - keep


def read_results(path: Path) -> list[ResultLine]:
    """Every valid line (a broken one is skipped, not fatal); the last line per id wins."""
    if not path.is_file():
        return []
    by_id: dict[str, ResultLine] = {}
    for raw in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            line = ResultLine.model_validate(json.loads(raw))
        except (json.JSONDecodeError, ValidationError):
            continue
        by_id[line.id] = line
    return list(by_id.values())


class ResultsFile:
    """Appends whole lines, flushed one by one (a kill loses at most the line in flight)."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / RESULTS_FILE
        directory.mkdir(parents=True, exist_ok=True)
        repair_tail(self.path)

    def done(self) -> list[ResultLine]:
        return read_results(self.path)

    def append(self, line: ResultLine) -> None:
        text = json.dumps(line.model_dump(mode="json"), ensure_ascii=False) + "\n"
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
