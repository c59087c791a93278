"""The cassette directory on disk: canonical request keys, the JSON Lines writer,
the loaded tables and the strict / lenient matching rules.

Every line is appended as its call finishes (a killed run keeps what it recorded);
the final rewrite in call order, run.json and result.json are written whole or not at
all (`files.write_atomic`): a kill or a full disk then leaves the appended file, never
an empty one. A write that fails stops the recording (the run goes on unaltered) and
is reported by `write_result` naming the file and the cause.

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
from typing import Any, NamedTuple

from deepsearch.config.redaction import SECRET_MASK, maskable, redact_secrets
from deepsearch.errors import RunError
from deepsearch.files import FileWriteError, write_atomic

KINDS = ("llm", "embed", "search", "read", "sandbox")
RUN_FILE = "run.json"
RESULT_FILE = "result.json"
# A kind whose call can be made again with the same answer: past the recorded count,
# the last recording answers (a page read twice, the same search after a re-rank).
REPEATABLE = {"search", "read", "sandbox"}
# What cassettes (and traces) wrote for a secret before SECRET_MASK was the one mask:
# read as SECRET_MASK, so a cassette recorded then still matches a run redacted now.
LEGACY_MASK = "[REDACTED]"


class CassetteMiss(RunError):
    """A call the cassette cannot answer: the replayed run has left the recorded one."""

    fatal = True


def canonical(obj: Any) -> str:
    """Stable JSON: sorted keys, no whitespace, unicode kept (readable, hashable)."""
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)


def request_key(kind: str, request: dict[str, Any]) -> str:
    return hashlib.sha256(f"{kind}\n{canonical(request)}".encode()).hexdigest()[:20]


class Redactor:
    """The --trace rule (tracing.TraceWriter, config.redact_secrets): every secret
    value long enough to be one becomes `****`, longest first, wherever it appears.
    `aliases` then replace
    machine-specific text (the --corpus folder) by a placeholder; `expand` undoes them."""

    def __init__(self, secrets: Iterable[str], aliases: dict[str, str] | None = None) -> None:
        self._secrets = maskable(secrets)
        self._aliases = sorted((aliases or {}).items(), key=lambda kv: len(kv[0]), reverse=True)

    def text(self, text: str) -> str:
        text = redact_secrets(text, self._secrets)
        for real, placeholder in self._aliases:
            text = text.replace(real, placeholder)
        return text

    def obj(self, value: Any) -> Any:
        if not self._secrets and not self._aliases:
            return value
        return json.loads(self.text(json.dumps(value, ensure_ascii=False, default=str)))

    def expand(self, value: Any) -> Any:
        """A recorded value with this machine's text back in place of the placeholders."""
        if not self._aliases:
            return value
        text = json.dumps(value, ensure_ascii=False)
        for real, placeholder in self._aliases:
            text = text.replace(placeholder, real)
        return json.loads(text)


CORPUS_PLACEHOLDER = "$CORPUS"


def corpus_aliases(corpus_dir: str | None) -> dict[str, str]:
    """The --corpus folder, as file:// URL and as path, by a placeholder: a cassette
    holds no absolute path of the recording machine and replays on another."""
    if not corpus_dir:
        return {}
    folder = Path(corpus_dir).resolve()
    return {
        folder.as_uri() + "/": f"file:///{CORPUS_PLACEHOLDER}/",
        str(folder) + "/": f"{CORPUS_PLACEHOLDER}/",
    }


class Started(NamedTuple):
    request: dict[str, Any]
    key: str
    n: int  # how many identical requests were made before this one
    seq: int  # issue order among all calls


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
        self._seq = 0
        self._written: dict[str, list[tuple[int, str]]] = defaultdict(list)
        self.failed: FileWriteError | None = None  # the first write that failed

    def start(self, kind: str, request: dict[str, Any]) -> Started:
        """Call when the call is made: `n` and the file order are the order of issue."""
        clean = self.redactor.obj(request)
        key = request_key(kind, clean)
        with self._lock:
            n = self._started[key]
            self._started[key] += 1
            self._seq += 1
            return Started(clean, key, n, self._seq)

    def finish(self, kind: str, started: Started, **outcome: Any) -> None:
        """Appended at once (a killed run keeps what it recorded), in finishing order."""
        line = {"key": started.key, "n": started.n, "request": started.request}
        text = json.dumps({**line, **self.redactor.obj(outcome)}, ensure_ascii=False, default=str)
        path = self.directory / f"{kind}.jsonl"
        with self._lock:
            if self.failed is not None:
                return  # the recording is already incomplete: the run goes on
            try:
                with path.open("a", encoding="utf-8") as f:
                    f.write(text + "\n")
            except OSError as exc:  # a full disk: said once, by write_result
                self.failed = FileWriteError(path, exc)
                return
            self._written[kind].append((started.seq, text))

    def sort(self) -> None:
        """Rewrite each file in the order the calls were made (concurrent calls finish in
        any order): a re-recording then differs only where behaviour did. Written
        aside and renamed: a failure leaves the appended file whole."""
        with self._lock:
            if self.failed is not None:
                raise self.failed
            for kind, lines in self._written.items():
                ordered = "".join(f"{text}\n" for _, text in sorted(lines))
                write_atomic(self.directory / f"{kind}.jsonl", ordered)

    def write_json(self, name: str, value: Any) -> None:
        text = json.dumps(self.redactor.obj(value), ensure_ascii=False, indent=2, default=str)
        write_atomic(self.directory / name, text + "\n")


def read_lines(path: Path) -> list[dict[str, Any]]:
    """A kind's recorded lines; the legacy mask read as today's (key recomputed)."""
    if not path.is_file():
        return []
    lines = []
    kind = path.stem
    for number, raw in enumerate(_text_of(path).splitlines(), 1):
        if not raw.strip():
            continue
        try:
            line = json.loads(_current_mask(raw))
        except json.JSONDecodeError as exc:
            raise CassetteMiss(f"{path}: line {number} is not JSON ({exc.msg})") from None
        if not isinstance(line, dict) or not isinstance(line.get("request"), dict):
            raise CassetteMiss(f"{path}: line {number} is not a recorded call")
        if LEGACY_MASK in raw:
            line["key"] = request_key(kind, line.get("request") or {})
        lines.append(line)
    return lines


def _text_of(path: Path) -> str:
    """A cassette file's text; a binary or unreadable one is a one-line error naming it."""
    try:
        return path.read_text("utf-8")
    except UnicodeDecodeError:
        raise CassetteMiss(f"{path}: not a cassette file (not UTF-8 text)") from None
    except OSError as exc:
        raise CassetteMiss(f"{path}: unreadable ({exc.strerror or exc})") from None


def _current_mask(text: str) -> str:
    return text.replace(LEGACY_MASK, SECRET_MASK)


def load_run(directory: Path) -> dict[str, Any]:
    """run.json of a cassette; a missing or broken one is a one-line error."""
    path = directory / RUN_FILE
    if not path.is_file():
        raise CassetteMiss(f"{directory}: not a cassette (no {RUN_FILE})")
    try:
        value = json.loads(_current_mask(_text_of(path)))
    except json.JSONDecodeError as exc:
        raise CassetteMiss(f"{path}: unreadable ({exc})") from None
    if not isinstance(value, dict):
        raise CassetteMiss(f"{path}: not a JSON object")
    return value


def load_result(directory: Path) -> dict[str, Any] | None:
    """The recorded run's result (its --json object), or None when it has none."""
    path = directory / RESULT_FILE
    if not path.is_file():
        return None
    try:
        value = json.loads(_text_of(path))
    except json.JSONDecodeError as exc:
        raise CassetteMiss(f"{path}: unreadable ({exc})") from None
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


def rewrite(
    directory: Path, replacements: dict[str, str], *, fetched_at: str | None = None
) -> None:
    """Replace text everywhere in a cassette (e.g. a loopback port by a fixed one) and
    recompute the keys, which hash the rewritten requests; `fetched_at` sets every
    page's fetch time (the readers keep the real clock)."""

    def swap(text: str) -> str:
        for old, new in replacements.items():
            text = text.replace(old, new)
        return text

    for kind in KINDS:
        path = directory / f"{kind}.jsonl"
        if not path.is_file():
            continue
        out = []
        for line in read_lines(path):
            line = json.loads(swap(json.dumps(line, ensure_ascii=False)))
            page = (line.get("response") or {}).get("page")
            if fetched_at is not None and isinstance(page, dict):
                page["fetched_at"] = fetched_at
            line["key"] = request_key(kind, line.get("request") or {})
            out.append(json.dumps(line, ensure_ascii=False))
        write_atomic(path, "".join(f"{text}\n" for text in out))
    for name in (RUN_FILE, RESULT_FILE):
        path = directory / name
        if path.is_file():
            write_atomic(path, swap(path.read_text("utf-8")))
