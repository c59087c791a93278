"""Persistent cache for search results and pages (diskcache: SQLite, safe across processes).

Values are stored in an envelope `{"v": value, "exp": deadline}` and the deadline (a
wall-clock timestamp: rows outlive the process) is checked against the injected
`Clock`, so expiry is testable without sleeping;
diskcache's own `expire` is set too, so expired rows are also culled on disk.

A cache must never be the reason a run fails, nor what it waits for: a locked,
corrupt or unwritable cache turns into a miss (get) or a no-op (set), with one warning
naming the folder and the cause, and from the first failure on the run goes truly
without it (no later call waits on the lock again). A damaged database file is moved
aside (`cache.db.corrupt`) and a fresh cache started: it heals in one run. Another process holding the lock
(a run suspended with Ctrl-Z) costs at most `lock_timeout_s` (1 s) once: diskcache's
own opening retries a locked database for 60 s, which `_BoundedCache` cuts to the same
limit.
"""

from __future__ import annotations

import hashlib
import json
import logging
import sqlite3
import time
from pathlib import Path
from typing import Any

from deepsearch.clock import Clock, SystemClock

log = logging.getLogger(__name__)
LOCK_TIMEOUT_S = 1.0  # the most a run waits on another process's cache lock
DB_FILE = "cache.db"  # diskcache's database in the cache folder


def default_cache_dir() -> Path:
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("deepsearch"))


def cache_key(namespace: str, *parts: Any) -> str:
    blob = json.dumps([namespace, *parts], sort_keys=True, default=str)
    return f"{namespace}:{hashlib.sha256(blob.encode()).hexdigest()}"


# Part of the page cache key: a page cached while Page.text was markdown (before
# "plain-1") must not be served as if it were plain text.
PAGE_TEXT_FORMAT = "plain-1"


def page_cache_key(url: str) -> str:
    """Pages are cached under their normalized URL when it has one (and the text format)."""
    try:
        from deepsearch.web.urls import normalize_url

        normalized = normalize_url(url)
    except Exception:  # normalization is a nicety for the key, never a blocker
        normalized = None
    return cache_key("page", PAGE_TEXT_FORMAT, normalized or url)


class WebCache:
    """JSON values with a TTL. Disabled caches store nothing and always miss."""

    def __init__(
        self,
        directory: Path | str | None = None,
        *,
        enabled: bool = True,
        clock: Clock | None = None,
        lock_timeout_s: float = LOCK_TIMEOUT_S,
    ) -> None:
        self.enabled = enabled
        self.directory: Path | None = None
        self._clock = clock or SystemClock()
        self._cache: Any = None
        self._warned = False
        self.hits = 0
        self.misses = 0
        self._where = Path(directory) if directory else None
        if enabled:
            path = Path(directory) if directory else default_cache_dir()
            self._where = path
            try:
                path.mkdir(parents=True, exist_ok=True)
                # SQLite in WAL mode; `timeout` bounds how long a writer waits for another
                # process's lock before giving up (we then treat it as a miss/no-op).
                self._cache = self._open(path, lock_timeout_s)
                self.directory = path
            except Exception as exc:  # unwritable or not a directory: run without a cache
                self._warn("open", exc)
                self._cache = None

    def _open(self, path: Path, lock_timeout_s: float) -> Any:
        """The cache; a damaged database file (not a lock) is moved aside, said once
        naming both files, and a fresh one started: it heals instead of warning on
        every run."""
        try:
            return _bounded_cache(str(path), lock_timeout_s)
        except sqlite3.DatabaseError as exc:
            if isinstance(exc, sqlite3.OperationalError):
                raise  # locked, read-only, no space: not the file's fault
            aside = _move_aside(path / DB_FILE)
            log.warning(
                "cache at %s: %s was damaged (%s); moved aside to %s, starting a fresh cache",
                path, DB_FILE, exc, aside.name,
            )  # fmt: skip
            return _bounded_cache(str(path), lock_timeout_s)

    def _now(self) -> float:
        return self._clock.now().timestamp()

    def _warn(self, action: str, exc: Exception) -> None:
        """Say it once, naming the folder and the cause; then go on truly without the
        cache (a lock held elsewhere would cost every later call its timeout again)."""
        if not self._warned:
            cause = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
            log.warning(
                "cache at %s: %s failed (%s: %s); continuing without it",
                self._where or "(default folder)", action, type(exc).__name__, cause,
            )  # fmt: skip
            self._warned = True
        self._drop()

    def _drop(self) -> None:
        cache, self._cache = self._cache, None
        if cache is not None:
            try:
                cache.close()
            except Exception:  # closing a broken cache: nothing more to do
                pass

    def get(self, key: str) -> Any | None:
        if self._cache is None:
            return None
        try:
            envelope = self._cache.get(key)
        except Exception as exc:  # sqlite3.OperationalError, diskcache.Timeout, corrupt row
            self._warn("read", exc)
            return None
        if not isinstance(envelope, dict) or "exp" not in envelope:
            self.misses += 1
            return None
        if envelope["exp"] <= self._now():
            self.misses += 1
            return None
        self.hits += 1
        return envelope.get("v")

    def set(self, key: str, value: Any, *, ttl_s: float) -> None:
        if self._cache is None or ttl_s <= 0:
            return
        envelope = {"v": value, "exp": self._now() + ttl_s}
        try:
            self._cache.set(key, envelope, expire=ttl_s)
        except Exception as exc:
            self._warn("write", exc)

    def close(self) -> None:
        if self._cache is not None:
            self._cache.close()

    def __enter__(self) -> WebCache:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _move_aside(db: Path) -> Path:
    """Rename a damaged database to `<name>.corrupt` (replacing an older one); its
    write-ahead files go with it. The path it now has."""
    aside = db.with_name(db.name + ".corrupt")
    db.replace(aside)
    for suffix in ("-wal", "-shm"):
        db.with_name(db.name + suffix).unlink(missing_ok=True)
    return aside


def _bounded_cache(directory: str, lock_timeout_s: float) -> Any:
    """A diskcache.Cache whose opening gives up on a locked database after
    `lock_timeout_s`, as its later calls do (module doc)."""
    import diskcache

    class _BoundedCache(diskcache.Cache):
        @property
        def _sql_retry(self) -> Any:
            sql = self._sql

            def execute(statement: str, *args: Any, **kwargs: Any) -> Any:
                start = time.monotonic()
                while True:
                    try:
                        return sql(statement, *args, **kwargs)
                    except sqlite3.OperationalError as exc:
                        locked = str(exc) == "database is locked"
                        if not locked or time.monotonic() - start > lock_timeout_s:
                            raise
                        time.sleep(0.005)

            return execute

    return _BoundedCache(directory, timeout=lock_timeout_s)
