"""`--trace` records carry the injected clock's times: when a record was written and
how long each search and read took, so a trace of a scripted run is deterministic."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from deepsearch.tracing import TracedReader, TracedSearch, TraceWriter
from deepsearch.web.types import SearchQuery, SearchResult
from tests.fakes.clock import FakeClock
from tests.fakes.memory_web import FakeReader, FakeSearch

START = datetime(2030, 5, 6, 7, 8, 9, tzinfo=UTC)


class SlowSearch(FakeSearch):
    def __init__(self, clock: FakeClock) -> None:
        super().__init__(
            lambda q: [SearchResult(title="t", url="https://a.example/", snippet="s", provider="f")]
        )
        self.clock = clock

    async def search(self, query: SearchQuery) -> list[SearchResult]:
        self.clock.advance(1.5)  # the provider takes 1.5 s on the injected clock
        return await super().search(query)


async def test_trace_times_come_from_the_injected_clock(tmp_path: Path) -> None:
    clock = FakeClock(START)
    path = tmp_path / "trace.jsonl"
    trace = TraceWriter(path, secrets=["sk-secret-0000"], clock=clock)
    trace.header("q?", {"llm.api_key": "sk-secret-0000"})
    await TracedSearch(SlowSearch(clock), trace).search(SearchQuery(q="x"))
    await TracedReader(FakeReader({"https://a.example/": "text"}), trace).read("https://a.example/")
    trace.close()
    records = [json.loads(line) for line in path.read_text("utf-8").splitlines()]
    assert [r["kind"] for r in records] == ["run_start", "search", "read"]
    assert records[0]["started_at"] == START.isoformat(timespec="seconds")
    assert records[0]["ts"] == round(START.timestamp(), 3)
    assert records[1]["seconds"] == 1.5 and records[2]["seconds"] == 0.0
    assert records[2]["ts"] == round(START.timestamp() + 1.5, 3)
    assert "sk-secret-0000" not in path.read_text("utf-8")
