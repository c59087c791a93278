"""What the screen says (issue 36, item 10): the spinner names the call in flight (the
question's classification is not "evaluating the answer"); a visit names pages by title
or host and short path; an answer opening with "35." is no list; the spinner leaves
room for the terminal's ^C; "before its first step". (One number style for budgets:
tests/agent/test_budget_and_diary.py, "85% of the 1k-token budget".)"""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from deepsearch.agent.actions.visit import short_address
from deepsearch.agent.events import StepStarted
from deepsearch.commands.render import not_a_list
from deepsearch.frontend.live import LiveView, _Ticker
from deepsearch.llm.tracker import TokenTracker
from deepsearch.runtime import llm_tap
from tests.fakes.clock import FakeClock


def _view(width: int = 100) -> tuple[LiveView, io.StringIO]:
    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=True, width=width, color_system=None)
    view = LiveView(console=console, clock=FakeClock())
    view._spin = lambda: None  # type: ignore[method-assign]  # no spinner thread in tests
    return view, buffer


def test_the_classifier_beside_step_one_is_named_as_such() -> None:
    view, _ = _view()
    tap = llm_tap(view, TokenTracker(100_000), None)
    view(StepStarted(step=1, question="q", allowed=["search", "answer"]))
    tap("llm_request", {"tool": "evaluator", "schema_name": "QuestionEval"})
    tap("llm_request", {"tool": "agent", "schema_name": "AgentStep"})
    assert view.doing() == "choosing the next step"
    tap("llm_response", {"tool": "agent"})
    assert view.doing() == "classifying the question"  # was "evaluating the answer"
    tap("llm_request", {"tool": "evaluator", "schema_name": "CheckReply"})
    tap("llm_response", {"tool": "evaluator"})  # the classification, sent first, ends
    assert view.doing() == "evaluating the answer"


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("https://en.wikipedia.org/wiki/Eiffel_Tower", "en.wikipedia.org/…/Eiffel_Tower"),
        ("https://www.example.org/", "example.org"),
        ("https://history.example.org/eiffel?x=1", "history.example.org/eiffel"),
        ("https://a.org/p/" + "long-slug-" * 6, "a.org/…/" + ("long-slug-" * 6)[:39] + "…"),
        ("file:///home/me/my%20notes/tower.md", "tower.md"),
    ],
)
def test_a_page_without_a_title_is_its_host_and_short_path(url: str, shown: str) -> None:
    assert short_address(url) == shown


@pytest.mark.parametrize(
    ("answer", "shown"),
    [
        ("35. That is how many there are.", "35\\. That is how many there are."),
        ("1986.\n\nThe film came out then.", "1986\\.\n\nThe film came out then."),
        ("1. first\n2. second", "1. first\n2. second"),  # a real list stays one
        ("No number first.", "No number first."),
    ],
)
def test_an_answer_opening_with_a_number_is_no_list(answer: str, shown: str) -> None:
    assert not_a_list(answer) == shown


def test_the_rendered_answer_keeps_its_number() -> None:
    from deepsearch.agent.result import UsageReport, result_so_far
    from deepsearch.commands.render import _print_rendered

    usage = UsageReport(prompt_tokens=1, completion_tokens=1, total_tokens=2, budget=10**5)
    answer = "35. That is how many there are."
    result = result_so_far("How many?", "answered", usage, answer=answer)
    buffer = io.StringIO()
    out = Console(file=buffer, force_terminal=True, width=60, color_system=None)
    _print_rendered(out, result, answer)
    assert buffer.getvalue().strip().startswith("35. That is how many")


@pytest.mark.parametrize("width", [40, 60, 100])
@pytest.mark.parametrize("label", ["step 3", "indexing the corpus " * 8])
def test_the_spinner_line_leaves_room_for_the_ctrl_c_echo(width: int, label: str) -> None:
    """Drawn as rich's Status draws it (a Spinner in a LiveRender): the line ends two
    columns short of the width, so the terminal's `^C` does not wrap (a wrapped line
    is one the spinner does not erase: its last frame stayed on the screen)."""
    from rich.live_render import LiveRender
    from rich.spinner import Spinner

    view, _ = _view(width)
    view.start(label)
    view._tokens, view._budget = 123_456, 500_000
    buffer = io.StringIO()
    console = Console(file=buffer, width=width, force_terminal=True, color_system=None)
    console.print(LiveRender(Spinner("dots", text=_Ticker(view))), end="")
    [line] = buffer.getvalue().splitlines()
    assert len(line) <= width - 2
    assert "0:00" in line or line.endswith("…")


def test_research_that_ends_before_its_first_step_says_so() -> None:
    view, _ = _view()
    assert view.research_ended("time limit reached") == (
        "research ended before its first step: time limit reached — Beast Mode answers"
    )


def test_a_slow_call_says_how_long_it_has_waited() -> None:
    """A call of a provider that does not stream (no phase told): `no reply yet`. What a
    streamed call says in each phase: tests/cli/test_call_phases_view.py."""
    from deepsearch.agent.events import Activity

    clock = FakeClock()
    view = LiveView(console=Console(file=io.StringIO(), width=120), clock=clock)
    view._spin = lambda: None  # type: ignore[method-assign]
    view(StepStarted(step=3, question="q", allowed=["search"]))
    view(Activity(what="llm", delta=1, tool="agent"))
    clock.advance(10)
    assert view.doing() == "choosing the next step"  # not slow yet: nothing more
    clock.advance(30)
    assert view.doing() == "choosing the next step — no reply yet after 40 s"
    view(Activity(what="llm", delta=-1, tool="agent"))
    view(Activity(what="llm", delta=1, tool="agent"))
    assert view.doing() == "choosing the next step"  # a new call starts its own clock


def test_a_budget_that_runs_out_reads_in_the_views_numbers() -> None:
    """`token budget of 60k`, as the spinner writes budgets (was `60000` beside `60k`)."""
    from deepsearch.errors import BudgetExceeded

    tracker = TokenTracker(60_000)
    with pytest.raises(BudgetExceeded) as caught:
        tracker.reserve(prompt_estimate=70_000, wanted_output=1000)
    assert str(caught.value).startswith("token budget of 60k would be exceeded (used 0, ")
