"""The cassette directory on disk: canonical request keys, the JSON Lines writer,
the loaded tables and the strict / lenient matching rules.

One file per call kind (`llm.jsonl`, `search.jsonl`, ...), one line per call:
`{"key", "n", "request", "response" | "error"}`. `key` is a hash of the canonical
request (sorted-key JSON of exactly the parts that decide the answer); `n` numbers
identical requests in the order they were made, so duplicates replay in order
even when the calls ran concurrently and finished in another order.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from deepsearch.errors import RunError
from deepsearch.tracing import REDACTED

KINDS = ("llm", "embed", "search", "read", "sandbox")
RUN_FILE = "run.json"
RESULT_FILE = "result.json"
# A kind whose call can be made again with the same answer: past the recorded count,
# the last recording answers (a page read twice, the same search after a re-rank).
REPEATABLE = {"search", "read", "sandbox"}


class CassetteMiss(RunError):
    """A call the cassette cannot answer: the replayed run has left the recorded one."""

    fatal = True


def canonical(obj: Any) -> str:
    """Stable JSON: sorted keys, no whitespace, unicode kept (readable, hashable)."""
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)


def request_key(kind: str, request: dict[str, Any]) -> str:
    return hashlib.sha256(f"{kind}\n{canonical(request)}".encode()).hexdigest()[:20]


class Redactor:
    """The --trace rule (tracing.TraceWriter): every secret value of 4+ characters
    becomes [REDACTED], longest first, wherever it appears."""

    def __init__(self, secrets: Iterable[str]) -> None:
        self._secrets = sorted({s for s in secrets if s and len(s) >= 4}, key=len, reverse=True)

    def text(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, REDACTED)
        return text

    def obj(self, value: Any) -> Any:
        if not self._secrets:
            return value
        return json.loads(self.text(json.dumps(value, ensure_ascii=False, default=str)))


class CassetteWriter:
    """Appends one line per finished call; safe from threads and concurrent tasks."""

    def __init__(self, directory: Path, redactor: Redactor) -> None:
        self.directory = directory
        self.redactor = redactor
        directory.mkdir(parents=True, exist_ok=True)
        for name in [f"{kind}.jsonl" for kind in KINDS] + [RUN_FILE, RESULT_FILE]:
            (directory / name).unlink(missing_ok=True)  # a new recording replaces the old
        self._lock = threading.Lock()
        self._started: dict[str, int] = defaultdict(int)

    def start(self, kind: str, request: dict[str, Any]) -> tuple[dict[str, Any], str, int]:
        """(redacted request, key, n): call when the call is made, so `n` is issue order."""
        clean = self.redactor.obj(request)
        key = request_key(kind, clean)
        with self._lock:
            n = self._started[key]
            self._started[key] += 1
        return clean, key, n

    def finish(self, kind: str, started: tuple[dict[str, Any], str, int], **outcome: Any) -> None:
        request, key, n = started
        line = {"key": key, "n": n, "request": request, **self.redactor.obj(outcome)}
        text = json.dumps(line, ensure_ascii=False, default=str)
        with self._lock, (self.directory / f"{kind}.jsonl").open("a", encoding="utf-8") as f:
            f.write(text + "\n")

    def write_json(self, name: str, value: Any) -> None:
        text = json.dumps(self.redactor.obj(value), ensure_ascii=False, indent=2, default=str)
        (self.directory / name).write_text(text + "\n", encoding="utf-8")


def read_lines(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    lines = []
    for number, raw in enumerate(path.read_text("utf-8").splitlines(), 1):
        if not raw.strip():
            continue
        try:
            lines.append(json.loads(raw))
        except json.JSONDecodeError as exc:
            raise CassetteMiss(f"{path}: line {number} is not JSON ({exc.msg})") from None
    return lines


def load_run(directory: Path) -> dict[str, Any]:
    """run.json of a cassette; a missing or broken one is a one-line error."""
    path = directory / RUN_FILE
    try:
        value = json.loads(path.read_text("utf-8"))
    except FileNotFoundError:
        raise CassetteMiss(f"{directory}: not a cassette (no {RUN_FILE})") from None
    except (OSError, json.JSONDecodeError) as exc:
        raise CassetteMiss(f"{path}: unreadable ({exc})") from None
    if not isinstance(value, dict):
        raise CassetteMiss(f"{path}: not a JSON object")
    return value


def load_result(directory: Path) -> dict[str, Any] | None:
    """The recorded run's result (its --json object), or None when it has none."""
    path = directory / RESULT_FILE
    if not path.is_file():
        return None
    value = json.loads(path.read_text("utf-8"))
    return value if isinstance(value, dict) else None


def differences(recorded: Any, asked: Any, path: str = "") -> list[str]:
    """Paths (`messages[0].content`) where two JSON values differ, first first."""
    if isinstance(recorded, dict) and isinstance(asked, dict):
        out: list[str] = []
        for key in sorted(set(recorded) | set(asked)):
            sub = f"{path}.{key}" if path else str(key)
            if key not in recorded or key not in asked:
                out.append(sub)
            else:
                out += differences(recorded[key], asked[key], sub)
        return out
    if isinstance(recorded, list) and isinstance(asked, list):
        out = []
        for i in range(max(len(recorded), len(asked))):
            sub = f"{path}[{i}]"
            if i >= len(recorded) or i >= len(asked):
                out.append(sub)
            else:
                out += differences(recorded[i], asked[i], sub)
        return out
    return [] if recorded == asked else [path or "(the request)"]
