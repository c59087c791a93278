"""The history database's layout, one migration per schema version, applied in order.

Users keep these files for years: a layout is never edited once released, only
followed by a new migration. `schema_version` holds one row, the version the file is
at; opening a file at an older version applies the missing migrations in one
transaction (all or nothing); a file from a newer deepsearch is read as far as its
known columns allow and never written.
"""

from __future__ import annotations

import sqlite3

MIGRATIONS: tuple[str, ...] = (
    # 1: one row per run: what it was asked, how it ended, what it printed.
    """
    CREATE TABLE schema_version (version INTEGER NOT NULL);
    INSERT INTO schema_version (version) VALUES (0);
    CREATE TABLE runs (
        run_id TEXT PRIMARY KEY,
        started_at TEXT NOT NULL,
        finished_at TEXT NOT NULL,
        question TEXT NOT NULL,
        status TEXT NOT NULL,
        total_tokens INTEGER NOT NULL,
        budget INTEGER NOT NULL,
        elapsed_s REAL NOT NULL,
        output_json TEXT NOT NULL,
        settings_json TEXT NOT NULL
    );
    CREATE INDEX runs_by_start ON runs (started_at);
    """,
    # 2: follow-ups (`-c`): what the user typed, the run continued, and each run's
    # gathered knowledge and URL list (agent/handover.py's Carryover, as JSON).
    """
    ALTER TABLE runs ADD COLUMN asked TEXT;
    ALTER TABLE runs ADD COLUMN continued_from TEXT;
    CREATE TABLE knowledge (
        run_id TEXT PRIMARY KEY REFERENCES runs (run_id) ON DELETE CASCADE,
        carryover_json TEXT NOT NULL
    );
    """,
)
LATEST = len(MIGRATIONS)


def version_of(conn: sqlite3.Connection) -> int:
    """The file's schema version (0: a new, empty file)."""
    found = conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'"
    ).fetchone()
    if found is None:
        return 0
    row = conn.execute("SELECT version FROM schema_version").fetchone()
    return int(row[0]) if row else 0


def migrate(conn: sqlite3.Connection, *, to: int = LATEST) -> int:
    """Bring the file up to version `to` in one transaction; the version it is at.
    A file at a newer version is left as it is."""
    current = version_of(conn)
    if current >= to:
        return current
    conn.execute("BEGIN IMMEDIATE")
    try:
        current = version_of(conn)  # another process may have migrated meanwhile
        for number in range(current + 1, to + 1):
            for statement in _statements(MIGRATIONS[number - 1]):
                conn.execute(statement)
            conn.execute("UPDATE schema_version SET version = ?", (number,))
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:  # SQLite may have rolled it back itself (a full disk)
            conn.execute("ROLLBACK")
        raise
    return max(current, to)


def _statements(script: str) -> list[str]:
    return [s.strip() for s in script.split(";") if s.strip()]
