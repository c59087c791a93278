"""The history file: one SQLite database (the standard `sqlite3`), one row per run.

Every operation opens the file, brings its layout up to date (migrations.py), does
its work in one transaction and closes it: a run's row and its knowledge are written
together or not at all, and two processes (a `serve` and a terminal) can share the
file (SQLite's own locking; a writer waits `timeout` seconds for another). Every
failure (locked, full, read-only, not a database, a newer layout) is a HistoryError
whose message is one line naming the file and the cause.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from deepsearch.agent.handover import Carryover
from deepsearch.history.migrations import LATEST, migrate, version_of

FILE_NAME = "history.db"
LOCK_WAIT_S = 2.0


class HistoryError(Exception):
    """The history file cannot be used: one line, the file and the cause."""


class RunRecord(BaseModel):
    """One run as the history keeps it."""

    run_id: str
    started_at: str
    finished_at: str
    question: str  # what was researched (a follow-up: made standalone)
    asked: str  # what the user typed
    status: str
    total_tokens: int
    budget: int
    elapsed_s: float
    continued_from: str | None = None
    output_json: str  # the `--json` line as printed
    settings: dict[str, Any]


class RunSummary(BaseModel):
    """A row of `deepsearch history`."""

    run_id: str
    question: str
    asked: str
    status: str
    started_at: str
    total_tokens: int
    budget: int
    continued_from: str | None = None


_SUMMARY_COLUMNS = (
    "run_id, question, COALESCE(asked, question), status, started_at, total_tokens, budget, "
    "continued_from"
)


class HistoryStore:
    def __init__(self, path: Path, *, timeout: float = LOCK_WAIT_S) -> None:
        self.path = path
        self.timeout = timeout

    # ------------------------------------------------------------------ writing

    def record(self, run: RunRecord, carry: Carryover | None) -> None:
        """Keep one run (and its knowledge), atomically."""
        row = run.model_dump(exclude={"settings"})
        row["settings_json"] = json.dumps(run.settings, ensure_ascii=False, sort_keys=True)
        with self._open(write=True) as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.execute(
                    f"INSERT OR REPLACE INTO runs ({', '.join(row)}) "
                    f"VALUES ({', '.join('?' for _ in row)})",
                    tuple(row.values()),
                )
                if carry is not None:
                    conn.execute(
                        "INSERT OR REPLACE INTO knowledge (run_id, carryover_json) VALUES (?, ?)",
                        (run.run_id, carry.model_dump_json()),
                    )
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:  # SQLite may have rolled it back itself (a full disk)
                    conn.execute("ROLLBACK")
                raise

    # ------------------------------------------------------------------ reading

    def runs(self, *, grep: str | None = None, limit: int | None = None) -> list[RunSummary]:
        """Newest first; `grep`: the question or the answer contains it (any case)."""
        sql = f"SELECT {_SUMMARY_COLUMNS} FROM runs"
        params: list[Any] = []
        if grep:
            sql += " WHERE instr(lower(question || ' ' || COALESCE(asked, '') || ' ' ||"
            sql += " json_extract(output_json, '$.answer')), lower(?)) > 0"
            params.append(grep)
        sql += " ORDER BY started_at DESC, rowid DESC"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        with self._open() as conn:
            if conn is None:
                return []
            rows = conn.execute(sql, params).fetchall()
        return [RunSummary(**dict(zip(RunSummary.model_fields, row, strict=True))) for row in rows]

    def latest_id(self) -> str | None:
        found = self.runs(limit=1)
        return found[0].run_id if found else None

    def resolve(self, run_id: str) -> str | None:
        """The full id of `run_id` or of the one run whose id starts with it."""
        with self._open() as conn:
            if conn is None:
                return None
            rows = conn.execute(
                "SELECT run_id FROM runs WHERE run_id = ? OR substr(run_id, 1, ?) = ? LIMIT 2",
                (run_id, len(run_id), run_id),
            ).fetchall()
        exact = [r[0] for r in rows if r[0] == run_id]
        if exact or len(rows) == 1:
            return str(exact[0] if exact else rows[0][0])
        return None

    def output(self, run_id: str) -> str | None:
        """The `--json` line the run printed."""
        return self._one("SELECT output_json FROM runs WHERE run_id = ?", run_id)

    def carryover(self, run_id: str) -> Carryover | None:
        """What a follow-up of `run_id` starts from (None: not kept)."""
        text = self._one("SELECT carryover_json FROM knowledge WHERE run_id = ?", run_id)
        if text is None:
            return None
        try:
            return Carryover.model_validate_json(text)
        except ValueError as exc:  # a row no layout of this version can read
            raise HistoryError(f"{self.path}: run {run_id}: unreadable knowledge") from exc

    def find_answer(self, answer: str) -> str | None:
        """The newest run whose answer is `answer` (whitespace aside): the run behind an
        assistant turn of a conversation (serve's `messages`)."""
        wanted = " ".join(answer.split())
        if not wanted:
            return None
        with self._open() as conn:
            if conn is None:
                return None
            rows = conn.execute(
                "SELECT run_id, json_extract(output_json, '$.answer') FROM runs "
                "ORDER BY started_at DESC, rowid DESC LIMIT 200"
            ).fetchall()
        return next((str(r[0]) for r in rows if " ".join(str(r[1] or "").split()) == wanted), None)

    def _one(self, sql: str, run_id: str) -> str | None:
        with self._open() as conn:
            if conn is None:
                return None
            row = conn.execute(sql, (run_id,)).fetchone()
        return str(row[0]) if row and row[0] is not None else None

    # ------------------------------------------------------------------ the file

    @contextmanager
    def _open(self, *, write: bool = False) -> Iterator[Any]:
        """A connection at the latest layout; None (reading) when there is no file
        yet. sqlite3 and OS errors become a HistoryError naming the file."""
        if not write and not self.path.is_file():
            yield None
            return
        try:
            if write:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self.path, timeout=self.timeout, isolation_level=None)
            with closing(conn):
                version = migrate(conn) if write else _readable_version(conn)
                if write and version > LATEST:
                    raise HistoryError(
                        f"{self.path}: written by a newer deepsearch (schema {version}); "
                        "not changed"
                    )
                yield conn
        except (sqlite3.Error, OSError) as exc:
            raise HistoryError(f"{self.path}: {_cause(exc)}") from exc


def _readable_version(conn: sqlite3.Connection) -> int:
    """Reading migrates too (a file from an older deepsearch), unless the file cannot
    be written: then an older layout is read as it is, where it can be."""
    try:
        return migrate(conn)
    except sqlite3.OperationalError as exc:
        if "readonly" not in str(exc):
            raise
        return version_of(conn)


def _cause(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return " ".join(str(exc).split()) or type(exc).__name__
