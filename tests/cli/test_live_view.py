"""The live view shows the work (issue 10, item 5): the step line leads with what was
done and stays useful at 60 columns; the spinner names what is in flight with a
ticking clock and the tokens; a notice meant once is shown once."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from deepsearch.agent.events import Activity, Notice, PhaseChanged, StepFinished, StepStarted
from deepsearch.frontend.live import LiveView
from deepsearch.frontend.units import size, tokens
from deepsearch.runtime import ActivityReader, ActivitySearch, llm_tap
from deepsearch.web.types import SearchQuery
from tests.fakes.clock import FakeClock

THINK = "I need to find which films were shot in Leland and then who directed them " * 2
SEARCH_DONE = StepFinished(
    step=3, action="search", think=THINK,
    detail="10 results: Leland North Carolina films | Maximum Overdrive director",
    tokens_used=12_345, budget=500_000, elapsed_s=4.2,
)  # fmt: skip


def view_at(width: int, *, terminal: bool = True) -> tuple[LiveView, io.StringIO]:
    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=terminal, width=width, color_system=None)
    view = LiveView(console=console, clock=FakeClock())
    view._spin = lambda: None  # type: ignore[method-assign]  # no spinner thread in tests
    return view, buffer


@pytest.mark.parametrize("width", [60, 120])
def test_the_step_line_leads_with_what_was_done(width: int) -> None:
    view, buffer = view_at(width)
    view(SEARCH_DONE)
    first, second = buffer.getvalue().splitlines()
    assert first.startswith("  3 search  10 results: Leland North")
    assert len(first) <= width and len(second) <= width
    assert second.strip().startswith("I need to find")  # the think, on its own line


def test_a_wide_terminal_also_gets_the_cost_and_a_log_gets_everything() -> None:
    view, buffer = view_at(160)
    view(SEARCH_DONE)
    assert "12.3k tok 4s" in buffer.getvalue().splitlines()[0]
    log, piped = view_at(80, terminal=False)
    log(SEARCH_DONE)
    text = piped.getvalue()
    assert "10 results: Leland North Carolina films | Maximum Overdrive director" in text
    assert THINK.strip() in text


def test_the_spinner_names_the_work_in_flight() -> None:
    view, _ = view_at(100)
    view.start("starting")
    view(Activity(what="llm", delta=1, tool="classifier"))
    assert view.doing() == "classifying the question"
    view(StepStarted(step=2, question="q", allowed=["search"]))
    view(Activity(what="llm", delta=1, tool="agent"))
    assert view.doing() == "choosing the next step"
    view(Activity(what="llm", delta=-1, tool="agent"))
    for _ in range(3):
        view(Activity(what="search", delta=1))
    assert view.doing() == "searching 3 queries"
    for _ in range(3):
        view(Activity(what="search", delta=-1))
    for _ in range(5):
        view(Activity(what="read", delta=1))
    assert view.doing() == "reading 5 pages"
    view(Activity(what="index", delta=1, detail="17 files, 4.2 MB"))
    assert view.doing() == "indexing the corpus: 17 files, 4.2 MB"
    view(Activity(what="index", delta=-1))
    assert view.doing() == "reading 5 pages"
    for _ in range(5):
        view(Activity(what="read", delta=-1))
    view(Activity(what="llm", delta=1, tool="evaluator"))
    assert view.doing() == "evaluating the answer"


def test_the_status_has_a_ticking_clock_and_the_tokens() -> None:
    view, _ = view_at(100)
    clock = view._clock
    assert isinstance(clock, FakeClock)
    view(SEARCH_DONE)
    clock.advance(5)
    assert view.status_text().endswith("0:05  12.3k/500k tok")
    clock.advance(60)
    assert "1:05" in view.status_text()
    view(Activity(what="llm", delta=1, tool="agent_beast", tokens_used=480_000))
    view(PhaseChanged(phase="beast", reason="step limit"))
    assert view.status_text().startswith("Beast Mode: forcing the best answer  ")  # once (issue 22)
    assert "480k/500k tok" in view.status_text()


def test_an_llm_call_that_never_answered_is_forgotten_at_the_next_step() -> None:
    view, _ = view_at(100)
    view(Activity(what="llm", delta=1, tool="evaluator"))  # its provider raised
    view(StepStarted(step=4, question="q", allowed=["search"]))
    assert view.doing() == "working"


def test_a_notice_meant_once_is_shown_once() -> None:
    view, buffer = view_at(100)
    for _ in range(3):
        view(Notice(text="evidence left out", once="omitted"))
    view(Notice(text="other"))
    view(Notice(text="other"))
    lines = buffer.getvalue().splitlines()
    assert lines.count("  · evidence left out") == 1 and lines.count("  · other") == 2


def test_quiet_prints_nothing() -> None:
    view, buffer = view_at(100)
    view.quiet = True
    view(SEARCH_DONE)
    view(Notice(text="x"))
    assert buffer.getvalue() == ""


def test_units() -> None:
    assert [tokens(n) for n in (999, 12_345, 210_919, 1_000_000, 1_250_000)] == [
        "999", "12.3k", "210.9k", "1M", "1.25M",
    ]  # fmt: skip
    assert [size(n) for n in (12, 4_200, 4_200_000)] == ["12 B", "4.2 kB", "4.2 MB"]


async def test_the_runtime_wrappers_report_activity_even_on_failure() -> None:
    events: list[Activity] = []

    class Failing:
        name = "x"

        async def search(self, query: SearchQuery) -> list[object]:
            raise RuntimeError("down")

        async def read(self, url: str) -> object:
            raise RuntimeError("down")

    search = ActivitySearch(Failing(), events.append)  # type: ignore[arg-type]
    reader = ActivityReader(Failing(), events.append)  # type: ignore[arg-type]
    with pytest.raises(RuntimeError):
        await search.search(SearchQuery(q="q"))
    with pytest.raises(RuntimeError):
        await reader.read("https://a.org")
    assert [(e.what, e.delta) for e in events] == [
        ("search", 1), ("search", -1), ("read", 1), ("read", -1),
    ]  # fmt: skip


def test_the_llm_tap_feeds_the_trace_and_the_view() -> None:
    from deepsearch.llm.tracker import TokenTracker

    traced: list[str] = []
    events: list[Activity] = []

    class Trace:
        def __call__(self, kind: str, payload: dict[str, object]) -> None:
            traced.append(kind)

    tap = llm_tap(events.append, TokenTracker(1000), Trace())  # type: ignore[arg-type]
    tap("llm_request", {"tool": "evaluator"})
    tap("llm_response", {"tool": "evaluator"})
    tap("search", {})
    assert traced == ["llm_request", "llm_response", "search"]
    assert [(e.tool, e.delta) for e in events] == [("evaluator", 1), ("evaluator", -1)]


def test_the_view_says_when_and_why_the_research_phase_ended() -> None:
    view, buffer = view_at(120)
    view(SEARCH_DONE)  # step 3
    view(PhaseChanged(phase="beast", reason="no new evidence in 4 steps"))
    last = buffer.getvalue().splitlines()[-1]
    assert "research ended after step 3: no new evidence in 4 steps" in last
    assert "Beast Mode" in last
