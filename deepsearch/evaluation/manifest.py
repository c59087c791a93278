"""DIR/eval.json: what an eval folder was asked to run, so that `eval --merge` can say
what is missing: the shard (`I/N`, or none for the whole file), how many questions the
benchmark file holds, and the ids this folder runs. Written (whole: `files`) when an
eval starts; a folder without one (an older eval) is merged without those checks."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, ValidationError

from deepsearch.evaluation.results import ResultLine
from deepsearch.files import write_atomic

MANIFEST_FILE = "eval.json"


class Manifest(BaseModel):
    shard: tuple[int, int] | None = None  # (I, N) of --shard I/N
    questions: int = 0  # in the whole benchmark file
    ids: list[str] = []  # this folder's questions


def write_manifest(out: Path, manifest: Manifest) -> None:
    write_atomic(out / MANIFEST_FILE, manifest.model_dump_json(indent=2) + "\n")


def read_manifest(folder: Path) -> Manifest | None:
    try:
        return Manifest.model_validate(json.loads((folder / MANIFEST_FILE).read_bytes()))
    except (OSError, ValueError, ValidationError):
        return None


def merge_gaps(manifests: Sequence[Manifest | None], lines: Sequence[ResultLine]) -> list[str]:
    """What a merge of these folders lacks, one sentence each (empty: nothing)."""
    gaps: list[str] = []
    known = [m for m in manifests if m is not None]
    for count in sorted({m.shard[1] for m in known if m.shard is not None}):
        seen = {m.shard[0] for m in known if m.shard is not None and m.shard[1] == count}
        absent = [f"{i}/{count}" for i in range(count) if i not in seen]
        if absent:
            gaps.append(f"shards missing: {', '.join(absent)} (their folders were not given)")
    answered = {line.id for line in lines}
    planned = {qid for m in known for qid in m.ids}
    unfinished = len(planned - answered)
    if unfinished:
        gaps.append(f"{_questions(unfinished)} of the given folders without a result yet")
    failed = sum(1 for line in lines if line.failed)
    if failed:
        gaps.append(f"{_questions(failed)} failed before any answer")
    return gaps


def _questions(count: int) -> str:
    return f"{count} question" if count == 1 else f"{count} questions"
