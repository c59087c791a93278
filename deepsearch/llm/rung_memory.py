"""Which structured-output rung each server and model accepted, kept across runs.

One small JSON file next to the cache (`<cache dir>/output-modes.json`), keyed by
the server's base URL (its password masked) and the model: the next run starts on the
rung that worked and does not meet the same refusal again. Each entry also says why
the rung was chosen ("refuses response_format json_schema (HTTP 500)"), which
`doctor` prints. Like the cache, it must never be the reason a run fails: an
unreadable or unwritable file is an empty memory.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, ValidationError

from deepsearch.config import redact_userinfo
from deepsearch.files import write_atomic

if TYPE_CHECKING:
    from deepsearch.config import Settings
    from deepsearch.llm.base import OutputMode

FILE_NAME = "output-modes.json"


class Rung(BaseModel):
    mode: str
    why: str = ""


class RungMemory:
    """`get`/`put` of the rung one (server, model) accepted, written through to disk."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._entries: dict[str, Rung] | None = None

    @classmethod
    def for_settings(cls, settings: Settings) -> RungMemory:
        from deepsearch.web.cache import default_cache_dir

        base = Path(settings.cache.dir).expanduser() if settings.cache.dir else default_cache_dir()
        return cls(base / FILE_NAME)

    def get(self, server: str, model: str) -> Rung | None:
        return self._load().get(_key(server, model))

    def put(self, server: str, model: str, mode: OutputMode, why: str) -> None:
        entries = self._load()
        key, rung = _key(server, model), Rung(mode=mode, why=why)
        if entries.get(key) == rung:
            return
        with self._lock:
            entries[key] = rung
            self._write(entries)

    def _load(self) -> dict[str, Rung]:
        if self._entries is None:
            self._entries = self._read()
        return self._entries

    def _read(self) -> dict[str, Rung]:
        if self.path is None:
            return {}
        try:
            raw = json.loads(self.path.read_text(encoding="utf-8"))
            return {str(k): Rung.model_validate(v) for k, v in dict(raw).items()}
        except (OSError, ValueError, TypeError, ValidationError):
            return {}

    def _write(self, entries: dict[str, Rung]) -> None:
        if self.path is None:
            return
        data = {k: v.model_dump() for k, v in sorted(entries.items())}
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # Write-then-rename: two runs finishing together never leave half a file,
            # and a failed write leaves no temporary file behind.
            write_atomic(self.path, json.dumps(data, indent=1))
        except OSError:
            return


def _key(server: str, model: str) -> str:
    return f"{redact_userinfo(server.rstrip('/'))} {model}"
