"""The history file (deepsearch/history/): migrations from an older layout, a file it
must not write (newer, locked), atomic writes, no secret kept, ids by prefix."""

from __future__ import annotations

import json
import os
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import pytest

from deepsearch.agent.handover import Carryover
from deepsearch.agent.result import ResearchResult, UsageReport
from deepsearch.history import HistoryError, HistoryStore, RunRecord, keep_run, new_run_id
from deepsearch.history.migrations import LATEST, migrate, version_of
from tests.fakes.scripted_llm import offline_settings

SECRET = "sk-history-secret-0123456789"


def record(run_id: str, question: str = "Who?", started: str = "2026-12-04T10:00:00") -> RunRecord:
    result = ResearchResult(
        question=question, answer=f"answer to {question}", status="answered", elapsed_s=1.0,
        usage=UsageReport(prompt_tokens=1, completion_tokens=1, total_tokens=2, budget=100),
        run_id=run_id,
    )  # fmt: skip
    return RunRecord(
        run_id=run_id, started_at=started, finished_at=started, question=question,
        asked=question, status="answered", total_tokens=2, budget=100, elapsed_s=1.0,
        output_json=result.json_text(), settings={},
    )  # fmt: skip


def test_a_file_of_the_first_layout_is_migrated_and_keeps_its_runs(tmp_path: Path) -> None:
    path = tmp_path / "history.db"
    conn = sqlite3.connect(path, isolation_level=None)
    assert migrate(conn, to=1) == 1
    conn.execute(
        "INSERT INTO runs VALUES ('20250101-000000-aaaaaa', '2025-01-01T00:00:00', "
        "'2025-01-01T00:00:09', 'Old question?', 'answered', 5, 100, 9.0, "
        "'{\"answer\": \"old\"}', '{}')"
    )
    conn.close()
    store = HistoryStore(path)
    (old,) = store.runs()
    assert (old.run_id, old.question, old.asked) == ("20250101-000000-aaaaaa",) + (
        "Old question?",
    ) * 2
    with sqlite3.connect(path) as check:
        assert version_of(check) == LATEST == 2
    store.record(record("20261204-100000-bbbbbb"), Carryover(question="Who?"))
    assert [r.run_id for r in store.runs()] == ["20261204-100000-bbbbbb", "20250101-000000-aaaaaa"]
    assert store.carryover("20250101-000000-aaaaaa") is None  # the old layout kept none
    assert store.carryover("20261204-100000-bbbbbb") == Carryover(question="Who?")


def test_a_file_from_a_newer_deepsearch_is_never_written(tmp_path: Path) -> None:
    store = HistoryStore(tmp_path / "history.db")
    store.record(record("20261204-100000-aaaaaa"), None)
    with sqlite3.connect(store.path) as conn:
        conn.execute("UPDATE schema_version SET version = 99")
    with pytest.raises(HistoryError, match=r"history\.db: written by a newer deepsearch"):
        store.record(record("20261204-100001-bbbbbb"), None)
    assert [r.run_id for r in store.runs()] == ["20261204-100000-aaaaaa"]  # still read


def test_a_locked_file_is_one_line_naming_it(tmp_path: Path) -> None:
    store = HistoryStore(tmp_path / "history.db", timeout=0)
    store.record(record("20261204-100000-aaaaaa"), None)
    holder = sqlite3.connect(store.path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(HistoryError) as caught:
            store.record(record("20261204-100001-bbbbbb"), None)
    finally:
        holder.close()
    assert str(caught.value) == f"{store.path}: database is locked"


def test_a_run_and_its_knowledge_are_written_together_or_not_at_all(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = HistoryStore(tmp_path / "history.db")

    def broken(self: Carryover, **_: object) -> str:
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(Carryover, "model_dump_json", broken)
    with pytest.raises(HistoryError, match="disk I/O error"):
        store.record(record("20261204-100000-aaaaaa"), Carryover(question="Who?"))
    assert store.runs() == []


def test_runs_are_newest_first_and_found_by_a_unique_prefix(tmp_path: Path) -> None:
    store = HistoryStore(tmp_path / "history.db")
    assert store.runs() == [] and store.latest_id() is None and not store.path.exists()
    store.record(record("20261204-100000-aaaaaa", "First?", "2026-12-04T10:00:00"), None)
    store.record(record("20261204-110000-bbbbbb", "Second?", "2026-12-04T11:00:00"), None)
    store.record(record("20261204-110000-bbbccc", "Third?", "2026-12-04T11:00:00"), None)
    assert [r.question for r in store.runs()] == ["Third?", "Second?", "First?"]
    assert store.latest_id() == "20261204-110000-bbbccc"
    assert store.resolve("20261204-10") == "20261204-100000-aaaaaa"
    assert store.resolve("20261204-110000-bbb") is None  # two runs start so
    assert store.resolve("20261204-110000-bbbbbb") == "20261204-110000-bbbbbb"
    assert [r.question for r in store.runs(grep="SECOND")] == ["Second?"]
    assert [r.question for r in store.runs(grep="answer to first")] == ["First?"]
    assert store.find_answer("answer  to\nThird?") == "20261204-110000-bbbccc"


def test_no_secret_is_kept(tmp_path: Path) -> None:
    settings = offline_settings(**{"keys.openai_api_key": SECRET, "history.dir": str(tmp_path)})
    now = datetime.now(UTC)
    result = ResearchResult(
        question=f"what is {SECRET}?", answer=f"it is {SECRET}", status="answered",
        elapsed_s=1.0, run_id=new_run_id(now),
        usage=UsageReport(prompt_tokens=1, completion_tokens=1, total_tokens=2, budget=100),
    )  # fmt: skip
    carry = Carryover(question=result.question, answer=result.answer)
    warning = keep_run(
        settings, result, output_json=result.json_text(), asked=result.question,
        started_at=now, finished_at=now, carry=carry,
    )  # fmt: skip
    assert warning is None
    data = (tmp_path / "history.db").read_bytes()
    assert SECRET.encode() not in data and b"what is ****?" in data
    (run,) = HistoryStore(tmp_path / "history.db").runs()
    assert run.question == "what is ****?"
    settings_kept = (
        sqlite3.connect(tmp_path / "history.db")
        .execute("SELECT settings_json FROM runs")
        .fetchone()[0]
    )
    assert json.loads(settings_kept)["history.enabled"] is True


def test_a_file_that_cannot_be_made_is_a_warning(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x")
    settings = offline_settings(**{"history.dir": str(blocker / "data")})
    now = datetime.now(UTC)
    result = ResearchResult(
        question="q?", answer="", status="failed", elapsed_s=0.0, run_id=new_run_id(now),
        usage=UsageReport(prompt_tokens=0, completion_tokens=0, total_tokens=0, budget=100),
    )  # fmt: skip
    warning = keep_run(
        settings, result, output_json=result.json_text(), asked="q?", started_at=now,
        finished_at=now, carry=None,
    )  # fmt: skip
    assert warning is not None and "\n" not in warning
    assert warning.startswith(f"run not kept in the history: {blocker / 'data' / 'history.db'}: ")


def test_the_suite_never_touches_the_users_data_directory() -> None:
    """tests/conftest.py gives each test a history folder of its own (and a HOME)."""
    from deepsearch.config import load_config
    from deepsearch.history import history_file

    path = history_file(load_config().settings)
    assert path.parent == Path(os.environ["DEEPSEARCH_DATA_DIR"])
    assert "deepsearch-tests-" in str(path) and not str(path).startswith(str(Path.home()))
    os.environ.pop("DEEPSEARCH_DATA_DIR")  # the platform's folder: still inside the test's HOME
    assert str(history_file(load_config().settings)).startswith(os.environ["HOME"])


def test_a_failure_while_keeping_a_run_is_a_warning_never_the_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from deepsearch import history
    from deepsearch.session import ResearchSession, empty_result

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(history, "keep_run", broken)
    settings = offline_settings()
    session = ResearchSession("q?", settings)
    result = session.finish(empty_result("q?", settings, "failed", "no provider"))
    assert result.run_id == session.run_id and result.status == "failed"
    assert session.warnings == ["run not kept in the history: internal error: RuntimeError: boom"]


def test_a_full_disk_is_one_line_naming_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from deepsearch.history import store as store_module

    store = HistoryStore(tmp_path / "history.db")
    store.record(record("20261204-100000-aaaaaa"), None)
    real = sqlite3.connect

    def full(path: object, **kwargs: object) -> sqlite3.Connection:
        conn = real(path, **kwargs)  # type: ignore[arg-type]
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        conn.execute(f"PRAGMA max_page_count = {pages}")  # not one page more
        return conn

    monkeypatch.setattr(store_module.sqlite3, "connect", full)
    big = record("20261204-100001-bbbbbb", "x" * 100_000)
    with pytest.raises(HistoryError) as caught:
        store.record(big, None)
    assert str(caught.value) == f"{store.path}: database or disk is full"
    monkeypatch.undo()
    assert [r.run_id for r in store.runs()] == ["20261204-100000-aaaaaa"]
