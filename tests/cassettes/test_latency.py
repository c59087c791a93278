"""Recorded at real-world latency (slow pages, a slow model, background prefetch that
is cancelled half-way), replayed at none: the same result."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cassettes.conftest import World, cli, record, without_times
from tests.cli.test_end_to_end import (
    ANSWER_STEP,
    FIXTURE,
    SEARCH,
    SECRET,
    VISIT,
    page_html,
    router,
    slug,
)
from tests.fakes.openai_server import FakeOpenAIServer, Reply
from tests.fakes.search_servers import FakeSearchServers
from tests.fakes.web_server import LoopbackServer, Route, _Handler

PAGE_DELAYS_S = [0.01, 0.15, 0.05, 0.25]  # some still in flight when the model decides


def slow_page(body: bytes, delay_s: float) -> Route:
    def route(handler: _Handler) -> None:
        time.sleep(delay_s)
        handler.send_body(200, body, "text/html; charset=utf-8")

    return route


@pytest.fixture
def slow_world(monkeypatch: pytest.MonkeyPatch) -> Iterator[World]:
    titles = list(FIXTURE["paragraphs"])
    routes = {
        f"/wiki/{slug(t)}": slow_page(page_html(t, FIXTURE["paragraphs"][t]), d)
        for t, d in zip(titles, PAGE_DELAYS_S * 3, strict=False)
    }
    route = router([SEARCH, VISIT, ANSWER_STEP])

    def slow_model(body: dict[str, Any]) -> Reply:
        reply = route(body)
        text = reply if isinstance(reply, str) else json.dumps(reply)
        return Reply(content=text, delay_s=0.04)

    with LoopbackServer(routes=routes) as web, FakeSearchServers() as search:
        results = [
            {"title": t, "url": web.url(f"/wiki/{slug(t)}"), "content": p.split(". ")[0] + "."}
            for t, p in FIXTURE["paragraphs"].items()
        ]
        search.always("searxng", 200, {"results": results})
        with FakeOpenAIServer(slow_model) as llm:
            monkeypatch.setenv("OPENAI_API_KEY", SECRET)
            monkeypatch.setenv("OPENAI_BASE_URL", llm.base_url)
            yield World(llm=llm, search=search, web=web)


def test_a_run_recorded_at_latency_replays_at_none(
    slow_world: World,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    request: pytest.FixtureRequest,
) -> None:
    cassette = tmp_path / "cassette"
    recorded = record(capsys, slow_world, cassette)
    assert recorded["status"] == "answered" and recorded["references"]
    before = slow_world.outside_requests()

    request.getfixturevalue("no_network")
    code, replayed = cli(capsys, *slow_world.args(), "--replay", str(cassette))
    assert code == 0, replayed.get("error")
    assert without_times(replayed) == without_times(recorded)
    # Replay waits for nothing: none of the slow servers is asked (counted, not timed).
    assert slow_world.outside_requests() == before
