"""The pocket benchmark's data: questions with gold answers (questions.jsonl, the
`deepsearch eval` input format), the loopback pages each question is researched on
(pages.json), and the research options every recording and replay uses."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel

POCKET = Path(__file__).resolve().parent
CASSETTES = POCKET / "cassettes"
# The options that decide the prompts (the budget sizes them): the same when recording
# and when replaying. Provider and network flags are recording-only.
RESEARCH_FLAGS = ["--json", "--quiet", "--budget", "200000"]
# Every recording starts at this instant (the prompts' date line), and every page is
# served from this address: re-recording changes no byte unless behaviour changed.
STARTED_AT = datetime(2026, 1, 15, 9, 30, tzinfo=UTC)
FIXED_ORIGIN = "http://127.0.0.1:8765"


class Question(BaseModel):
    id: str
    question: str
    answer: str
    aliases: list[str] = []


def questions() -> list[Question]:
    lines = (POCKET / "questions.jsonl").read_text("utf-8").splitlines()
    return [Question.model_validate_json(line) for line in lines if line.strip()]


def pages() -> dict[str, Any]:
    value: dict[str, Any] = json.loads((POCKET / "pages.json").read_text("utf-8"))
    return value


def slug(title: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")


def normalized(text: str) -> str:
    return " ".join(re.sub(r"[^\w ]+", " ", text.lower()).split())


def mentions_gold(answer: str, question: Question) -> bool:
    """The gold answer or an alias appears in the answer, as words (case, punctuation
    and spacing ignored)."""
    said = f" {normalized(answer)} "
    return any(f" {normalized(gold)} " in said for gold in [question.answer, *question.aliases])
