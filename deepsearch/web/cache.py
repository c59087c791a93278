"""Persistent cache for search results and pages (diskcache: SQLite, safe across processes).

Values are stored in an envelope `{"v": value, "exp": deadline}` and the deadline (a
wall-clock timestamp: rows outlive the process) is checked against the injected
`Clock`, so expiry is testable without sleeping;
diskcache's own `expire` is set too, so expired rows are also culled on disk.

A cache must never be the reason a run fails: a locked, corrupt or unwritable cache
turns into a miss (get) or a no-op (set), with a warning logged once.
"""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path
from typing import Any

from deepsearch.clock import Clock, SystemClock

log = logging.getLogger(__name__)


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
        lock_timeout_s: float = 10.0,
    ) -> None:
        self.enabled = enabled
        self.directory: Path | None = None
        self._clock = clock or SystemClock()
        self._cache: Any = None
        self._warned = False
        self.hits = 0
        self.misses = 0
        if enabled:
            import diskcache

            path = Path(directory) if directory else default_cache_dir()
            try:
                path.mkdir(parents=True, exist_ok=True)
                # SQLite in WAL mode; `timeout` bounds how long a writer waits for another
                # process's lock before giving up (we then treat it as a miss/no-op).
                self._cache = diskcache.Cache(str(path), timeout=lock_timeout_s)
                self.directory = path
            except Exception as exc:  # unwritable or not a directory: run without a cache
                self._warn("open", exc)
                self._cache = None

    def _now(self) -> float:
        return self._clock.now().timestamp()

    def _warn(self, action: str, exc: Exception) -> None:
        if not self._warned:
            log.warning("cache %s failed (%s); continuing without it", action, type(exc).__name__)
            self._warned = True

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
