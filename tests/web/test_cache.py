from __future__ import annotations

import os
from pathlib import Path

from deepsearch.web.cache import WebCache, cache_key
from tests.fakes.clock import FakeClock


def test_hit_miss_and_expiry(tmp_path: Path) -> None:
    clock = FakeClock()
    cache = WebCache(tmp_path, clock=clock)
    key = cache_key("search", "brave", {"q": "x"})
    assert cache.get(key) is None  # miss
    cache.set(key, [{"title": "t"}], ttl_s=60)
    assert cache.get(key) == [{"title": "t"}]  # hit
    clock.advance(59)
    assert cache.get(key) == [{"title": "t"}]
    clock.advance(2)
    assert cache.get(key) is None  # expired
    assert (cache.hits, cache.misses) == (2, 2)
    cache.close()


def test_values_persist_across_instances(tmp_path: Path) -> None:
    with WebCache(tmp_path) as first:
        first.set("k", {"a": 1}, ttl_s=60)
    with WebCache(tmp_path) as second:
        assert second.get("k") == {"a": 1}


def test_zero_ttl_and_disabled_cache_store_nothing(tmp_path: Path) -> None:
    cache = WebCache(tmp_path)
    cache.set("k", 1, ttl_s=0)
    assert cache.get("k") is None
    off = WebCache(tmp_path / "off", enabled=False)
    off.set("k", 1, ttl_s=60)
    assert off.get("k") is None
    assert not (tmp_path / "off").exists()
    off.close()
    cache.close()


def test_cache_key_depends_on_every_part() -> None:
    base = cache_key("search", "brave", {"q": "x", "limit": 10})
    assert base == cache_key("search", "brave", {"limit": 10, "q": "x"})  # dict order
    assert base != cache_key("search", "serper", {"q": "x", "limit": 10})
    assert base != cache_key("search", "brave", {"q": "x", "limit": 5})
    assert base.startswith("search:")


def test_a_broken_cache_is_a_miss_not_a_crash(tmp_path: Path) -> None:
    cache = WebCache(tmp_path)
    cache.close()
    cache._cache = object()  # anything that raises on use
    assert cache.get("k") is None
    cache.set("k", 1, ttl_s=60)  # no exception


def _writer(path: Path, who: str) -> int:
    """A forked child (its own process, its own SQLite connection and locks, no
    interpreter start to pay) that writes 200 entries as `who`; its pid."""
    pid = os.fork()
    if pid:
        return pid
    code = 1
    try:
        cache = WebCache(path)
        for i in range(200):
            cache.set(f"{who}-{i}", {"i": i, "who": who}, ttl_s=600)
            cache.get(f"{who}-{i}")
        cache.close()
        code = 0
    finally:
        os._exit(code)  # never back into pytest


def test_two_processes_share_one_cache_dir(tmp_path: Path) -> None:
    pids = [_writer(tmp_path, who) for who in ("a", "b")]
    # The parent writes at the same time, through a third connection.
    with WebCache(tmp_path) as mine:
        for i in range(200):
            mine.set(f"p-{i}", i, ttl_s=600)
        assert [os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in pids] == [0, 0]
        for who in ("a", "b"):
            assert all(mine.get(f"{who}-{i}") == {"i": i, "who": who} for i in range(200))
        assert all(mine.get(f"p-{i}") == i for i in range(200))


def test_unusable_cache_directory_degrades_to_no_cache(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory", encoding="utf-8")
    cache = WebCache(blocker / "cache")  # a path under a regular file cannot exist
    cache.set("k", {"v": 1}, ttl_s=60)
    assert cache.get("k") is None
    cache.close()
