"""Another process holding the cache's lock (a run suspended with Ctrl-Z) costs a run
one short wait, then the run goes truly without the cache (issue 36, item 22); the
warning names the folder and the cause. A second SQLite connection holding a write
transaction stands for that process."""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from deepsearch.web.cache import WebCache

QUICK_S = 0.05


@pytest.fixture
def held(tmp_path: Path) -> Iterator[Path]:
    """A cache folder whose database another connection holds locked for writing."""
    WebCache(tmp_path, lock_timeout_s=QUICK_S).close()  # the database exists
    other = sqlite3.connect(tmp_path / "cache.db", isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        yield tmp_path
    finally:
        other.execute("ROLLBACK")
        other.close()


def test_opening_a_locked_cache_waits_the_lock_timeout_not_a_minute(
    held: Path, caplog: pytest.LogCaptureFixture
) -> None:
    opened: list[WebCache] = []
    worker = threading.Thread(target=lambda: opened.append(WebCache(held, lock_timeout_s=QUICK_S)))
    worker.daemon = True  # diskcache's own opening waited 60 s: not joined for that long
    with caplog.at_level(logging.WARNING, logger="deepsearch.web.cache"):
        worker.start()
        worker.join(timeout=10)
    assert opened, "the cache opening still waited on the lock"
    cache = opened[0]
    assert cache.get("k") is None
    cache.set("k", 1, ttl_s=60)  # a no-op, at once
    assert f"cache at {held}: open failed (OperationalError: database is locked)" in caplog.text


def test_a_lock_taken_mid_run_costs_one_wait_then_no_more(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    cache = WebCache(tmp_path, lock_timeout_s=QUICK_S)
    cache.set("a", 1, ttl_s=60)
    other = sqlite3.connect(tmp_path / "cache.db", isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        with caplog.at_level(logging.WARNING, logger="deepsearch.web.cache"):
            cache.set("b", 2, ttl_s=60)  # waits QUICK_S once, then the cache is dropped
            started = time.monotonic()
            for i in range(20):
                cache.set(f"k{i}", i, ttl_s=60)
            later = time.monotonic() - started
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert later < 20 * QUICK_S / 2, "every later write waited on the lock again"
    assert caplog.text.count("continuing without it") == 1
    assert cache.get("a") is None, "truly without the cache from then on"
    cache.close()
