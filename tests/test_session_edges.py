"""The session's edges (deepsearch/session.py): a rejected key before the run is the
user's to fix (exit 2), a bug says "internal error:", the --trace file is closed however
the run ends, earlier turns' knowledge is numbered in the new run without touching the
caller's items. No server: the parts are built and the run is stopped by hand."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from deepsearch import runtime
from deepsearch.agent.loop import ResearchRun
from deepsearch.agent.types import KnowledgeItem
from deepsearch.commands.research_cmd import cassette_spec
from deepsearch.errors import ConfigError, ProviderAuthError, SearchError
from deepsearch.session import ResearchSession
from deepsearch.tracing import TracedSearch, TraceWriter
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


@pytest.fixture
def stopped(monkeypatch: pytest.MonkeyPatch) -> list[ResearchRun]:
    """A run that stops at once, not found, keeping what it was given."""
    runs: list[ResearchRun] = []

    async def stop(run: ResearchRun) -> Any:
        runs.append(run)
        return run.snapshot("not_found")

    monkeypatch.setattr(ResearchRun, "run", stop)
    return runs


async def test_the_trace_header_has_the_question_and_the_tags_and_the_parts_trace(
    tmp_path: Path, stopped: list[ResearchRun]
) -> None:
    seen: list[object] = []
    trace = tmp_path / "t.jsonl"
    session = ResearchSession(
        "Who wrote it?",
        settings(),
        trace_path=trace,
        trace_tags={"request": "r-1"},
        adapt=seen.append,
    )
    await session.execute()
    first = json.loads(trace.read_text("utf-8").splitlines()[0])
    assert (first["kind"], first["question"], first["request"]) == (
        "run_start",
        "Who wrote it?",
        "r-1",
    )
    assert seen == [stopped[0].deps]  # `adapt` is given the run's parts
    search = stopped[0].deps.search
    assert isinstance(getattr(search, "inner", search), TracedSearch)  # the parts trace


async def test_a_recording_gets_the_question_and_the_result(
    tmp_path: Path, stopped: list[ResearchRun]
) -> None:
    folder = tmp_path / "cassette"
    spec = cassette_spec(record=folder, replay=None, replay_lenient=None)
    result = await ResearchSession("Who wrote it?", settings(), cassette=spec).execute()
    assert json.loads((folder / "result.json").read_text("utf-8"))["status"] == result.status
    assert json.loads((folder / "run.json").read_text("utf-8"))["question"] == "Who wrote it?"


async def test_cut_short_and_refused_report_through_the_session(
    tmp_path: Path, stopped: list[ResearchRun]
) -> None:
    before = ResearchSession("Q?", settings())
    cut = before.cut_short("interrupted", "stopped by the client")
    assert (cut.status, cut.error, cut.error_kind) == (
        "interrupted",
        "stopped by the client",
        "fatal",  # nothing had started
    )
    refused = before.refused(ConfigError("no usable search provider"))
    assert (refused.status, refused.error, refused.exit_code) == (
        "failed",
        "no usable search provider",
        2,
    )
    folder = tmp_path / "cassette"
    spec = cassette_spec(record=folder, replay=None, replay_lenient=None)
    started = ResearchSession("Q?", settings(), cassette=spec)
    await started.execute()
    (folder / "result.json").unlink()
    again = started.cut_short("interrupted")
    assert again.status == "interrupted" and again.error is None
    assert (folder / "result.json").is_file()  # through the cassette


async def test_the_exception_that_ended_a_started_run_decides_its_kind(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A run that had met a rejected key and then crashed reports the crash's kind."""

    def ending(exc: BaseException) -> Any:
        async def run(self: ResearchRun) -> Any:
            self.fatal = ProviderAuthError("rejected")
            raise exc

        return run

    for exc in (KeyError("k"), PermissionError(13, "Permission denied", "/out/x")):
        monkeypatch.setattr(ResearchRun, "run", ending(exc))
        result = await ResearchSession("Q?", settings()).execute()
        assert result.error_kind == "runtime" and result.exit_code == 1, exc

    async def refuse(self: ResearchRun) -> Any:
        raise ConfigError("corpus gone")  # no fatal error before: the kind is this one's

    monkeypatch.setattr(ResearchRun, "run", refuse)
    session = ResearchSession("Q?", settings())
    with pytest.raises(ConfigError) as caught:
        await session.execute()
    assert session.refused(caught.value).error_kind == "configuration"


@pytest.mark.parametrize(
    ("exc", "trace", "message"),
    [
        (PermissionError(13, "Permission denied", "/out/t"), None, "/out/t: Permission denied"),
        (PermissionError(13, "Permission denied"), "t.jsonl", "--trace t.jsonl: Permission denied"),
        (PermissionError(13, "Permission denied"), None, "a file: Permission denied"),
        (OSError("disk full"), None, "a file: disk full"),
    ],
)
def test_a_file_error_names_the_file(exc: OSError, trace: str | None, message: str) -> None:
    session = ResearchSession("Q?", settings(), trace_path=Path(trace) if trace else None)
    assert session._file_error(exc) == message
