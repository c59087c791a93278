"""On a pipe or a file, the live view's lines and the answer are written without rich
(issue 21: rich's import cost ~0.1 s of CPU before a run's first request), and they
are the text rich wrote there: the same events through both give the same bytes."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from deepsearch.agent.events import AgentEvent, Notice, PhaseChanged, StepFinished
from deepsearch.agent.result import ResearchResult, UsageReport
from deepsearch.commands.render import print_answer
from deepsearch.frontend import live
from deepsearch.frontend.live import LiveView
from tests.fakes.clock import FakeClock

EVENTS: list[AgentEvent] = [
    StepFinished(
        step=1, action="search", think="Which films were shot in Leland? " * 9,
        detail="10 results: Leland [North] Carolina films | :smile: [bold]x[/] " * 12,
        tokens_used=12_345, budget=500_000, elapsed_s=4.2,
    ),
    StepFinished(
        step=2, action="visit", think="", detail="read 2 pages\twith a tab",
        tokens_used=20_000, budget=500_000, elapsed_s=9.9, agent="2",
    ),
    Notice(text="the evidence no longer fits [the context]", once="k"),
    Notice(text="shown once only", once="k"),
    PhaseChanged(phase="beast", reason="budget at 85%", agent="2"),
    PhaseChanged(phase="beast", reason="budget at 85% [^1]"),
    PhaseChanged(phase="finalizing"),
]  # fmt: skip
SUMMARY = "answered in 3 steps, 12.1s, 20k/500k tokens, confidence 0.80"


class Pipe(io.StringIO):
    def isatty(self) -> bool:
        return False


def drawn(view: LiveView) -> None:
    for event in EVENTS:
        view(event)
    view.summary(SUMMARY)


@pytest.fixture
def no_rich_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.usefixtures("no_rich_variables")
def test_a_piped_view_writes_what_rich_wrote_there(monkeypatch: pytest.MonkeyPatch) -> None:
    pipe = Pipe()
    monkeypatch.setattr("sys.stderr", pipe)  # in the test's body: the capture set its own
    # What the view drew before: rich's console on stderr, as the view makes it.
    drawn(
        LiveView(console=Console(stderr=True, highlight=False, soft_wrap=True), clock=FakeClock())
    )
    by_rich = pipe.getvalue()
    pipe.seek(0)
    pipe.truncate()
    plain = LiveView(clock=FakeClock())
    plain.start("starting")  # no spinner on a pipe
    drawn(plain)
    assert plain._console is None  # no rich console was made
    assert pipe.getvalue() == by_rich
    assert "⚡ research ended after step 1" in by_rich and "12.3k tok 4s" in by_rich


@pytest.mark.usefixtures("no_rich_variables")
def test_a_terminal_or_a_variable_that_makes_rich_see_one_keeps_rich(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pipe = Pipe()
    monkeypatch.setattr("sys.stderr", pipe)
    assert live.plain_stderr()
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert not live.plain_stderr()
    monkeypatch.delenv("FORCE_COLOR")
    monkeypatch.setattr(Pipe, "isatty", lambda self: True)
    assert not live.plain_stderr()


@pytest.mark.usefixtures("no_rich_variables")
def test_a_piped_answer_is_written_without_rich(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_console(*args: object, **kwargs: object) -> None:
        raise AssertionError("a rich console was made for a pipe")

    monkeypatch.setattr("rich.console.Console", no_console)
    pipe = Pipe()
    monkeypatch.setattr("sys.stdout", pipe)
    usage = UsageReport(prompt_tokens=1, completion_tokens=1, total_tokens=2, budget=1000)
    answer = "The answer, from [my notes](file:///my%20notes/a.md) [^1]\n\n[^1]: q"
    result = ResearchResult(
        question="q", answer=answer, usage=usage, status="answered", elapsed_s=1
    )
    print_answer(result, as_json=False)
    assert pipe.getvalue() == ("The answer, from [my notes](</my notes/a.md>) [^1]\n\n[^1]: q\n")
