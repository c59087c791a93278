"""Benchmark questions: JSON Lines `{"id", "question", "answer", "aliases"?}` or a CSV with
SimpleQA's `problem,answer` columns; shards of them.

An id missing from the input is derived from the question text (a hash), so the same
question has the same id in every run, on every machine: resume and shards rely on it.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
from pathlib import Path

from pydantic import BaseModel, Field, ValidationError

from deepsearch.errors import ConfigError


class EvalItem(BaseModel):
    id: str = Field(min_length=1)
    question: str = Field(min_length=1)
    answer: str = Field(min_length=1, description="the gold answer")
    aliases: list[str] = Field(default_factory=list, description="other accepted answers")


def derived_id(question: str) -> str:
    """A stable id from the question text (whitespace-insensitive)."""
    text = " ".join(question.split()).encode("utf-8")
    return "q" + hashlib.sha256(text).hexdigest()[:12]


def load_items(path: Path) -> list[EvalItem]:
    """The questions of `path`; any problem is a ConfigError naming the file and line."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        reason = getattr(exc, "strerror", None) or type(exc).__name__
        raise ConfigError(f"{path}: cannot read the questions ({reason})") from None
    items = _csv_items(path, text) if path.suffix.lower() == ".csv" else _jsonl_items(path, text)
    if not items:
        raise ConfigError(f"{path}: no questions in the file")
    seen: set[str] = set()
    for item in items:
        if item.id in seen:
            raise ConfigError(f"{path}: duplicate id {item.id!r}")
        seen.add(item.id)
    return items


def _item(path: Path, where: str, data: dict[str, object]) -> EvalItem:
    if isinstance(data.get("question"), str) and not data.get("id"):
        data = {**data, "id": derived_id(str(data["question"]))}
    if isinstance(data.get("id"), int):
        data = {**data, "id": str(data["id"])}
    try:
        return EvalItem.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err["loc"]) or "item"
        raise ConfigError(f"{path}: {where}: {field}: {err['msg']}") from None


def _jsonl_items(path: Path, text: str) -> list[EvalItem]:
    items = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{path}: line {number}: invalid JSON ({exc.msg})") from None
        if not isinstance(data, dict):
            raise ConfigError(f"{path}: line {number}: expected a JSON object")
        items.append(_item(path, f"line {number}", data))
    return items


def _csv_items(path: Path, text: str) -> list[EvalItem]:
    reader = csv.DictReader(io.StringIO(text))
    columns = set(reader.fieldnames or [])
    if not {"problem", "answer"} <= columns:
        raise ConfigError(
            f"{path}: a CSV needs the columns problem,answer (has: {sorted(columns)})"
        )
    items = []
    for number, row in enumerate(reader, start=2):  # line 1 is the header
        data: dict[str, object] = {"question": row["problem"], "answer": row["answer"]}
        if row.get("id"):
            data["id"] = row["id"]
        items.append(_item(path, f"line {number}", data))
    return items


def parse_shard(value: str) -> tuple[int, int]:
    """`I/N` (0 <= I < N): this shard runs the questions at positions I, I+N, I+2N, ..."""
    index, sep, count = value.partition("/")
    try:
        i, n = int(index), int(count)
    except ValueError:
        i, n = -1, 0
    if not sep or n < 1 or not 0 <= i < n:
        raise ConfigError(f"--shard {value!r}: expected I/N with 0 <= I < N (like 0/4)")
    return i, n


def shard(items: list[EvalItem], index: int, count: int) -> list[EvalItem]:
    """Every `count`-th question starting at `index`, in id order: which shard runs a
    question depends on the ids only, not on the file's order."""
    ordered = sorted(items, key=lambda item: item.id)
    return ordered[index::count]
