"""Persistent cache for search results and pages (diskcache: SQLite, safe across processes)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any


def default_cache_dir() -> Path:
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("deepsearch"))


def cache_key(namespace: str, *parts: Any) -> str:
    blob = json.dumps([namespace, *parts], sort_keys=True, default=str)
    return f"{namespace}:{hashlib.sha256(blob.encode()).hexdigest()}"


class WebCache:
    """JSON values with a TTL. Disabled caches store nothing and always miss."""

    def __init__(self, directory: Path | str | None = None, *, enabled: bool = True) -> None:
        self.enabled = enabled
        self._cache: Any = None
        if enabled:
            import diskcache

            path = Path(directory) if directory else default_cache_dir()
            path.mkdir(parents=True, exist_ok=True)
            self._cache = diskcache.Cache(str(path))

    def get(self, key: str) -> Any | None:
        if self._cache is None:
            return None
        return self._cache.get(key)

    def set(self, key: str, value: Any, *, ttl_s: float) -> None:
        if self._cache is None or ttl_s <= 0:
            return
        self._cache.set(key, value, expire=ttl_s)

    def close(self) -> None:
        if self._cache is not None:
            self._cache.close()
