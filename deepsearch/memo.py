"""Memoization bounded by the memory its entries hold, not by their number.

`functools.lru_cache(maxsize=N)` bounds entries; the text-feature caches hold entries
of very different sizes (a three-word query, a 4,000-character snippet's character
n-grams), so N entries could hold 0.35-1.6 GB in a long-lived `serve` process whose
memory then grew without levelling off. `weighed_cache(max_bytes, weigh)` keeps the
least recently used entries whose estimated sizes (`weigh(*args)`, in bytes) sum to
at most `max_bytes`; an entry heavier than the whole budget is returned, not kept.
Thread-safe (the corpus search runs in worker threads); the wrapped function keeps
`cache_clear()` and gains `cache_info()` -> (hits, misses, entries, bytes).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, Generic, NamedTuple, ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")


class CacheInfo(NamedTuple):
    hits: int
    misses: int
    entries: int
    bytes: int


class WeighedCache(Generic[P, R]):
    def __init__(self, fn: Callable[P, R], max_bytes: int, weigh: Callable[..., int]) -> None:
        self.__wrapped__ = fn
        self.__doc__, self.__name__ = fn.__doc__, getattr(fn, "__name__", "cached")
        self.max_bytes = max_bytes
        self._weigh = weigh
        self._entries: OrderedDict[Hashable, tuple[R, int]] = OrderedDict()
        self._bytes = self._hits = self._misses = 0
        self._lock = threading.Lock()

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        key: Hashable = (args, tuple(sorted(kwargs.items()))) if kwargs else args
        with self._lock:
            found = self._entries.get(key)
            if found is not None:
                self._entries.move_to_end(key)
                self._hits += 1
                return found[0]
            self._misses += 1
        value = self.__wrapped__(*args, **kwargs)
        size = max(1, int(self._weigh(*args, **kwargs)))
        if size > self.max_bytes:
            return value
        with self._lock:
            if key not in self._entries:
                self._entries[key] = (value, size)
                self._bytes += size
                while self._bytes > self.max_bytes:
                    _, (_, dropped) = self._entries.popitem(last=False)
                    self._bytes -= dropped
        return value

    def cache_clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._bytes = self._hits = self._misses = 0

    def cache_info(self) -> CacheInfo:
        with self._lock:
            return CacheInfo(self._hits, self._misses, len(self._entries), self._bytes)


def weighed_cache(
    max_bytes: int, weigh: Callable[..., int]
) -> Callable[[Callable[P, R]], WeighedCache[P, R]]:
    """Decorator: memoize within `max_bytes` of estimated entry sizes (module doc)."""

    def wrap(fn: Callable[P, R]) -> WeighedCache[P, R]:
        return WeighedCache(fn, max_bytes, weigh)

    return wrap


def text_bytes(text: str, *_: Any, **__: Any) -> int:
    """A str argument's own size, as an estimate of an entry keyed by it."""
    return 64 + len(text) * (1 if text.isascii() else 4)
