"""Which structured-output rung each server and model accepted, kept across runs.

One small JSON file next to the cache (`<cache dir>/output-modes.json`), keyed by
the server's base URL (its password masked) and the model: the next run starts on the
rung that worked and does not meet the same refusal again. Each entry also says why
the rung was chosen ("refuses response_format json_schema (HTTP 500)"), which
`doctor` prints. Like the cache, it must never be the reason a run fails: an
unreadable or unwritable file is an empty memory.

A rung below the ladder's top (a demotion: the server refused a better one) is kept
for `DEMOTION_TTL_S` (a day), then re-checked: the next run climbs from the top again,
so one transient 500 that named `response_format` does not demote a server for good.
A re-check that meets the same refusal stores the rung afresh (one request a day).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, ValidationError

from deepsearch.config import redact_userinfo
from deepsearch.files import write_atomic

if TYPE_CHECKING:
    from deepsearch.config import Settings
    from deepsearch.llm.base import OutputMode

FILE_NAME = "output-modes.json"
DEMOTION_TTL_S = 24 * 3600.0


class Rung(BaseModel):
    mode: str
    why: str = ""
    demoted: bool = False  # below the ladder's top: re-checked once DEMOTION_TTL_S old
    at: float = 0.0  # when it was stored (seconds since the epoch)


class RungMemory:
    """`get`/`put` of the rung one (server, model) accepted, written through to disk.
    `now`: the wall clock in seconds (a test passes its own)."""

    def __init__(self, path: Path | None, *, now: Callable[[], float] = time.time) -> None:
        self.path = path
        self._now = now
        self._lock = threading.Lock()
        self._entries: dict[str, Rung] | None = None

    @classmethod
    def for_settings(cls, settings: Settings) -> RungMemory:
        from deepsearch.web.cache import default_cache_dir

        base = Path(settings.cache.dir).expanduser() if settings.cache.dir else default_cache_dir()
        return cls(base / FILE_NAME)

    def get(self, server: str, model: str) -> Rung | None:
        """The stored rung; None when there is none or it is a demotion due for a
        re-check (module doc)."""
        rung = self._load().get(_key(server, model))
        return rung if rung is not None and self._fresh(rung) else None

    def _fresh(self, rung: Rung) -> bool:
        return not rung.demoted or self._now() - rung.at <= DEMOTION_TTL_S

    def put(
        self, server: str, model: str, mode: OutputMode, why: str, *, demoted: bool = False
    ) -> None:
        entries = self._load()
        key = _key(server, model)
        rung = Rung(mode=mode, why=why, demoted=demoted, at=self._now())
        kept = entries.get(key)
        same = kept is not None and (kept.mode, kept.why, kept.demoted) == (mode, why, demoted)
        if same and kept is not None and self._fresh(kept):
            return  # unchanged: its date stays that of the refusal it records
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
