"""The live view's spinner shows the dollars next to the tokens (issue 34)."""

from __future__ import annotations

from deepsearch.agent.events import Activity, Notice
from tests.cli.test_live_view import SEARCH_DONE, view_at


def test_the_spinner_shows_dollars_and_the_limit() -> None:
    view, _ = view_at(120)
    view(SEARCH_DONE.model_copy(update={"cost_usd": 0.00123}))
    assert view.status_text().endswith("12.3k/500k tok  $0.0012")
    view(Activity(what="llm", delta=1, tool="agent", tokens_used=13_000, cost_usd=0.0013,
                  max_cost=0.0015))  # fmt: skip
    assert view.status_text().endswith("13k/500k tok  $0.0013/$0.0015")
    view(Activity(what="llm", delta=-1, tool="agent", tokens_used=14_000, cost_usd=None))
    assert view.status_text().endswith("14k/500k tok"), "unknown: no dollars shown"


def test_the_unpriced_notice_is_shown_once() -> None:
    view, buffer = view_at(200)
    notice = Notice(text="cost unknown: no price for model 'acme'", once="unpriced_model")
    view(notice)
    view(notice)
    assert buffer.getvalue().count("cost unknown") == 1
