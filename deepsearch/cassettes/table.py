"""Answering a call from the recorded lines of its kind: strict (by key) or lenient
(by key when it matches, else the next unused recording of the same tool, in order)."""

from __future__ import annotations

import threading
from collections import defaultdict
from difflib import SequenceMatcher
from typing import Any

from deepsearch.cassettes.store import (
    REPEATABLE,
    CassetteMiss,
    canonical,
    differences,
    request_key,
)

WHAT = {
    "llm": "llm call",
    "embed": "embedding call",
    "search": "search",
    "read": "read",
    "sandbox": "sandbox run",
}


def group_of(kind: str, request: dict[str, Any]) -> str:
    """LLM calls are matched per tool; every other kind is one group."""
    return str(request.get("tool", "")) if kind == "llm" else ""


def describe(kind: str, request: dict[str, Any]) -> str:
    """`llm call for tool 'agent'`, `read of 'https://…'`, `search for 'q'`."""
    if kind == "llm":
        return f"llm call for tool {request.get('tool', '')!r}"
    if kind == "read":
        return f"read of {request.get('url', '')!r}"
    if kind == "search":
        return f"search for {(request.get('query') or {}).get('q', '')!r}"
    return WHAT.get(kind, kind)


def nearest_differences(peers: list[dict[str, Any]], request: dict[str, Any]) -> list[str]:
    """The differing paths against the nearest peer: fewest differing parts, then the
    most similar text (a cheap character-count similarity, fine for long prompts)."""
    asked = canonical(request)

    def distance(peer: dict[str, Any]) -> tuple[int, float]:
        diffs = differences(peer, request)
        return len(diffs), -SequenceMatcher(None, canonical(peer), asked).quick_ratio()

    return differences(min(peers, key=distance), request)


class Table:
    """The recorded calls of one kind, consumed as the replayed run makes them."""

    def __init__(self, kind: str, lines: list[dict[str, Any]], *, lenient: bool) -> None:
        self.kind = kind
        self.lenient = lenient
        self._lines = lines
        self._by_key: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for line in lines:
            self._by_key[str(line.get("key", ""))].append(line)
        for same in self._by_key.values():
            same.sort(key=lambda line: int(line.get("n", 0)))
        self._asked: dict[str, int] = defaultdict(int)
        self._used: set[int] = set()  # id() of lines already answered
        self._lock = threading.Lock()

    def answer(self, request: dict[str, Any]) -> dict[str, Any]:
        """The recorded line answering `request`, or CassetteMiss naming what differed."""
        key = request_key(self.kind, request)
        with self._lock:
            n = self._asked[key]
            self._asked[key] += 1
            same = self._by_key.get(key, [])
            if n < len(same):
                return self._take(same[n])
            if same and self.kind in REPEATABLE:
                return same[-1]
            if self.lenient and self.kind != "read":  # another URL's page would be a lie
                line = self._next_in_order(group_of(self.kind, request))
                if line is not None:
                    return self._take(line)
            raise CassetteMiss(self._miss_message(request, made=n + 1, recorded=len(same)))

    def _take(self, line: dict[str, Any]) -> dict[str, Any]:
        self._used.add(id(line))
        return line

    def _next_in_order(self, group: str) -> dict[str, Any] | None:
        for line in self._lines:
            if id(line) in self._used:
                continue
            if group_of(self.kind, line.get("request") or {}) == group:
                return line
        return None

    def _miss_message(self, request: dict[str, Any], *, made: int, recorded: int) -> str:
        what = describe(self.kind, request)
        mode = "lenient replay ran out of recordings" if self.lenient else "not in cassette"
        if recorded:
            return f"{what} {mode}: made {made} times, recorded {recorded} times"
        group = group_of(self.kind, request)
        peers = [
            line.get("request") or {}
            for line in self._lines
            if group_of(self.kind, line.get("request") or {}) == group
        ]
        if not peers:
            return f"{what} {mode}: no such call was recorded"
        diffs = nearest_differences(peers, request)
        more = f" (and {len(diffs) - 1} more parts)" if len(diffs) > 1 else ""
        return f"{what} {mode}: {diffs[0]} differs from the nearest recorded request{more}"
