"""`--trace FILE`: JSON Lines of every LLM request/response and web call, secrets redacted.

The trace watches the run; it never changes it. A record that cannot be written (a
full disk, a file system gone read-only) stops the trace: `on_failure` hears of it
once (the live view's notice, naming the file and the cause) and the run goes on
exactly as without `--trace`. A file that ends mid-line (an earlier run killed while
writing) gets a line break first, so the first record of this run stands on its own.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from deepsearch.clock import Clock, SystemClock
from deepsearch.config.redaction import maskable, redact_secrets
from deepsearch.web.types import (
    Page,
    Reader,
    ReadFailure,
    SearchProvider,
    SearchQuery,
    SearchResult,
)


class TraceWriter:
    def __init__(
        self,
        path: Path | str,
        *,
        secrets: Iterable[str] = (),
        clock: Clock | None = None,
        tags: Mapping[str, Any] | None = None,
    ) -> None:
        self.path = Path(path)
        # Keys every record carries (serve: the request id; concurrent runs share a file).
        self.tags = dict(tags or {})
        self.clock = clock or SystemClock()  # record times and call durations
        self._secrets = maskable(secrets)
        self._lock = threading.Lock()
        self.failed: str | None = None  # why the trace stopped, once it has
        self._on_failure: Callable[[str], None] | None = None
        torn = _ends_mid_line(self.path)
        self._file = self.path.open("a", encoding="utf-8")
        if torn:
            self._write("\n")

    @property
    def on_failure(self) -> Callable[[str], None] | None:
        return self._on_failure

    @on_failure.setter
    def on_failure(self, hook: Callable[[str], None] | None) -> None:
        """Told once why the trace stopped (at once, when it already has)."""
        self._on_failure = hook
        if hook is not None and self.failed is not None:
            hook(self.failed)

    def _write(self, text: str) -> None:
        """Write and flush, under the lock; a failure stops the trace (module doc)."""
        if self.failed is not None:
            return
        try:
            self._file.write(text)
            self._file.flush()
        except (OSError, ValueError) as exc:
            from deepsearch.files import describe

            self.failed = f"--trace stopped: {describe(exc, self.path)}; the run goes on without it"
            if self._on_failure is not None:
                self._on_failure(self.failed)

    def redact(self, text: str) -> str:
        return redact_secrets(text, self._secrets)

    def __call__(self, kind: str, payload: dict[str, Any]) -> None:
        line = json.dumps(
            {"ts": round(self.clock.now().timestamp(), 3), "kind": kind, **self.tags, **payload},
            default=str,
            ensure_ascii=False,
        )
        with self._lock:
            self._write(self.redact(line) + "\n")

    def header(self, question: str, settings: dict[str, Any]) -> None:
        """The first record of a run: which program, which question, when, with what
        settings (secrets already masked by the caller, and redacted here again)."""
        from deepsearch.version import __version__

        self(
            "run_start",
            {
                "version": __version__,
                "question": question,
                "started_at": self.clock.now().isoformat(timespec="seconds"),
                "settings": settings,
            },
        )

    def close(self) -> None:
        with self._lock:
            try:
                self._file.close()
            except OSError:  # the last flush of a full disk: already said, if anything
                pass


def _ends_mid_line(path: Path) -> bool:
    """A regular file whose last byte is not a line break."""
    try:
        if not path.is_file() or path.stat().st_size == 0:
            return False
        with path.open("rb") as handle:
            handle.seek(-1, 2)
            return handle.read(1) != b"\n"
    except OSError:
        return False


class TracedSearch:
    """Wraps a search provider, recording each query and its outcome."""

    def __init__(self, inner: SearchProvider, trace: TraceWriter) -> None:
        self.inner = inner
        self.name = inner.name
        self._trace = trace

    async def search(self, query: SearchQuery) -> list[SearchResult]:
        started = self._trace.clock.monotonic()
        try:
            results = await self.inner.search(query)
        except Exception as exc:
            self._trace("search_error", {"query": query.model_dump(), "error": str(exc)})
            raise
        self._trace(
            "search",
            {
                "query": query.model_dump(),
                "results": [r.model_dump() for r in results],
                "seconds": round(self._trace.clock.monotonic() - started, 3),
            },
        )
        return results


class TracedReader:
    def __init__(self, inner: Reader, trace: TraceWriter) -> None:
        self.inner = inner
        self._trace = trace

    async def read(self, url: str) -> Page | ReadFailure:
        started = self._trace.clock.monotonic()
        outcome = await self.inner.read(url)
        payload: dict[str, Any] = {
            "url": url,
            "seconds": round(self._trace.clock.monotonic() - started, 3),
        }
        if isinstance(outcome, ReadFailure):
            payload["failure"] = outcome.model_dump()
        else:
            payload.update(
                final_url=outcome.final_url, title=outcome.title, chars=len(outcome.text)
            )
        self._trace("read", payload)
        return outcome

    def warm(self) -> None:  # the agent's "a visit is likely" (prefetch.warm_reader)
        warm = getattr(self.inner, "warm", None)
        if warm is not None:
            warm()

    async def aclose(self) -> None:
        closer = getattr(self.inner, "aclose", None)
        if closer is not None:
            await closer()
