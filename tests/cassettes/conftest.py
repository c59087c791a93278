"""A small loopback world (fake OpenAI server, SearXNG, web pages) and the real CLI
run in-process (`deepsearch.cli.run`), for recording and replaying cassettes."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.cli.test_end_to_end import (
    ANSWER_STEP,
    FIXTURE,
    QUESTION,
    SEARCH,
    SECRET,
    VISIT,
    Router,
    page_html,
    router,
    slug,
)
from tests.fakes.openai_server import FakeOpenAIServer
from tests.fakes.search_servers import FakeSearchServers
from tests.fakes.web_server import LoopbackServer, _text


@dataclass
class World:
    llm: FakeOpenAIServer
    search: FakeSearchServers
    web: LoopbackServer

    def args(self) -> list[str]:
        return [
            "--json",
            "--quiet",
            "--llm-provider",
            "openai",
            "--search-provider",
            "searxng",
            "--searxng-url",
            self.search.base_url("searxng"),
            "--allow-private-urls",
            "--no-cache",
            "--budget",
            "200000",
        ]

    def script(self, *steps: Any) -> None:
        """The agent's steps for the run, instead of the whole SEARCH, VISIT, ANSWER (a
        strict script, checked at teardown): called before the run asks anything."""
        self.llm.handler = router(list(steps))

    def outside_requests(self) -> int:
        return len(self.llm.requests) + len(self.search.requests) + len(self.web.requests)


@pytest.fixture
def world(monkeypatch: pytest.MonkeyPatch) -> Iterator[World]:
    """The fakes, and the key in the environment (only recording uses them)."""
    yield from _world(monkeypatch, snippet_tail="")


@pytest.fixture
def leaky_world(monkeypatch: pytest.MonkeyPatch) -> Iterator[World]:
    """Search snippets that quote the key: a recording must still never hold it."""
    yield from _world(monkeypatch, snippet_tail=f" token={SECRET}")


def _world(monkeypatch: pytest.MonkeyPatch, *, snippet_tail: str) -> Iterator[World]:
    routes = {
        f"/wiki/{slug(t)}": _text(page_html(t, p), "text/html; charset=utf-8")
        for t, p in FIXTURE["paragraphs"].items()
    }
    with LoopbackServer(routes=routes) as web, FakeSearchServers() as search:
        results = [
            {
                "title": t,
                "url": web.url(f"/wiki/{slug(t)}"),
                "content": p.split(". ")[0] + "." + snippet_tail,
            }
            for t, p in FIXTURE["paragraphs"].items()
        ]
        results.sort(key=lambda r: r["title"] not in FIXTURE["gold"])
        search.always("searxng", 200, {"results": results})
        with FakeOpenAIServer(_one_run(SEARCH, VISIT, ANSWER_STEP)) as llm:
            monkeypatch.setenv("OPENAI_API_KEY", SECRET)
            monkeypatch.setenv("OPENAI_BASE_URL", llm.base_url)
            yield World(llm=llm, search=search, web=web)


def _one_run(*steps: Any) -> Router:
    """The strict script of the one run a test records, built when the fake is first
    asked: a test that speaks Gemini instead asks it nothing and has no script; a
    replay that reached it would ask for steps beyond it."""
    built: list[Router] = []
    lock = threading.Lock()

    def route(body: dict[str, Any]) -> Any:
        with lock:
            if not built:
                built.append(router(list(steps)))
        return built[0](body)

    return route


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any]]:
    """The real command line in-process: (exit code, the --json object on stdout)."""
    from deepsearch.cli import run

    capsys.readouterr()
    code = run([QUESTION, *argv])
    out = capsys.readouterr().out
    return code, json.loads(out)


# What differs between two runs of the same calls: the time taken, and the run's own id
# in the history (a replay is a run of its own; a cassette's result.json has none).
PER_RUN_KEYS = ("elapsed_s", "run_id")


def without_times(result: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in result.items() if k not in PER_RUN_KEYS}


class NetworkBlocked(AssertionError):
    pass


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every socket connection and name lookup raises (loopback included), and no key."""

    def refuse(*args: object, **kwargs: object) -> None:
        raise NetworkBlocked(f"network is off: {args[1:] or kwargs}")

    for name in ("connect", "connect_ex", "sendto"):
        monkeypatch.setattr(socket.socket, name, refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "GEMINI_API_KEY"):
        monkeypatch.delenv(var, raising=False)


def record(
    capsys: pytest.CaptureFixture[str], world: World, directory: Path, *extra: str
) -> dict[str, Any]:
    code, out = cli(capsys, *world.args(), *extra, "--record", str(directory))
    assert code == 0, out
    return out
