"""The session's edges (deepsearch/session.py): a rejected key before the run is the
user's to fix (exit 2), a bug says "internal error:", the --trace file is closed however
the run ends, earlier turns' knowledge is numbered in the new run without touching the
caller's items. No server: the parts are built and the run is stopped by hand."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from deepsearch import runtime
from deepsearch.agent.loop import ResearchRun
from deepsearch.agent.types import KnowledgeItem
from deepsearch.errors import ProviderAuthError, SearchError
from deepsearch.session import ResearchSession
from deepsearch.tracing import TraceWriter
from tests.test_session import settings as _settings


def settings() -> Any:
    """Parts that build without a server (nothing is called before the run)."""
    return _settings(**{"search.searxng_url": "http://127.0.0.1:9"})


def _raise(exc: BaseException) -> Any:
    def adapt(_: object) -> None:
        raise exc

    return adapt


@pytest.fixture
def traces(monkeypatch: pytest.MonkeyPatch) -> list[TraceWriter]:
    """Every --trace writer a session opens."""
    opened: list[TraceWriter] = []
    real = runtime.build_trace

    def build(*args: Any, **kwargs: Any) -> TraceWriter | None:
        trace = real(*args, **kwargs)
        if trace is not None:
            opened.append(trace)
        return trace

    monkeypatch.setattr(runtime, "build_trace", build)
    return opened


async def test_a_rejected_key_before_the_run_is_exit_2() -> None:
    rejected = ProviderAuthError("openai rejected the key: set OPENAI_API_KEY")
    result = await ResearchSession("Q?", settings(), adapt=_raise(rejected)).execute()
    assert result.status == "failed" and result.error_kind == "configuration"
    assert result.exit_code == 2
    assert result.error == "openai rejected the key: set OPENAI_API_KEY"


async def test_a_run_error_before_the_run_is_fatal_exit_1() -> None:
    result = await ResearchSession("Q?", settings(), adapt=_raise(SearchError("down"))).execute()
    assert (result.status, result.error_kind, result.exit_code) == ("failed", "fatal", 1)
    assert result.error == "down"  # a deliberate error keeps its own message


async def test_a_bug_is_reported_as_an_internal_error_and_the_trace_is_closed(
    tmp_path: Path, traces: list[TraceWriter]
) -> None:
    trace = tmp_path / "trace.jsonl"
    session = ResearchSession("Q?", settings(), trace_path=trace, adapt=_raise(KeyError("k")))
    result = await session.execute()
    assert result.error == "internal error: KeyError: 'k'"
    assert result.error_kind == "fatal" and result.exit_code == 1
    assert len(traces) == 1 and traces[0]._file.closed
    assert '"run_start"' in trace.read_text("utf-8")


async def test_the_trace_is_closed_after_a_run_and_knowledge_is_renumbered_on_copies(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, traces: list[TraceWriter]
) -> None:
    async def stop(run: ResearchRun) -> Any:
        assert traces and not traces[0]._file.closed  # open while the run runs
        return run.snapshot("not_found")

    monkeypatch.setattr(ResearchRun, "run", stop)
    earlier = [
        KnowledgeItem(question="a?", answer="A", type="qa", id=7, step=3),
        KnowledgeItem(question="b?", answer="B", type="qa", id=9, step=4),
    ]
    session = ResearchSession("Q?", settings(), trace_path=tmp_path / "t.jsonl", knowledge=earlier)
    result = await session.execute()
    assert result.status == "not_found"
    assert traces[0]._file.closed
    assert session.run is not None
    assert [k.id for k in session.run.state.knowledge] == [1, 2]
    assert [k.answer for k in session.run.state.knowledge] == ["A", "B"]
    assert [(k.id, k.step) for k in earlier] == [(7, 3), (9, 4)]  # the caller's untouched


async def test_a_bug_inside_a_started_run_keeps_the_prefix(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def crash(run: ResearchRun) -> Any:
        raise ZeroDivisionError("division by zero")

    monkeypatch.setattr(ResearchRun, "run", crash)
    result = await ResearchSession("Q?", settings()).execute()
    assert result.status == "failed"
    assert result.error == "internal error: ZeroDivisionError: division by zero"
