"""The server under test: the real Starlette app on uvicorn, in a background thread on a
free loopback port, in front of the usual fakes (the OpenAI-compatible LLM, SearXNG and
the loopback pages of tests/cli/test_end_to_end.py, read with --allow-private-urls).
Clients are the real `openai` SDK (no retries: a 429 or 500 must reach the test).

Nothing heavy is imported at module level: every xdist worker collects this file, and
the openai SDK alone costs ~1 s of CPU to import (~860 pydantic models); uvicorn and
the Starlette app load when a server starts. These tests run on the worker that
holds the "openai-sdk" group (tests/conftest.py), so one worker pays those imports."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from deepsearch.config import load_config
from deepsearch.server.state import ServerConfig  # plain data: no Starlette
from tests.cli.test_end_to_end import SECRET
from tests.cli.test_end_to_end import search as search  # noqa: F401 - pytest fixtures
from tests.cli.test_end_to_end import web as web  # noqa: F401
from tests.fakes.openai_server import FakeOpenAIServer
from tests.fakes.search_servers import FakeSearchServers

if TYPE_CHECKING:
    import openai
    import uvicorn


@dataclass
class RunningServer:
    server: uvicorn.Server
    thread: threading.Thread
    log: list[str] = field(default_factory=list)

    @property
    def port(self) -> int:
        return int(self.server.servers[0].sockets[0].getsockname()[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def client(self, api_key: str = "unused", **kwargs: Any) -> openai.OpenAI:
        import openai

        kwargs.setdefault("timeout", 20)
        return openai.OpenAI(base_url=self.base_url, api_key=api_key, max_retries=0, **kwargs)

    def wait_log(self, needle: str, timeout: float = 10.0) -> str:
        """The newest log line holding `needle`, waited for: a run's line is written
        after its response is sent, so a client can see the response first."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = [line for line in self.log if needle in line]
            if found:
                return found[-1]
            time.sleep(0.002)  # a run's line comes within ms of its response
        raise AssertionError(f"no log line with {needle!r}: {self.log}")


def settings_for(llm: FakeOpenAIServer, search: FakeSearchServers, **agent: Any) -> Any:
    """The settings `deepsearch serve --llm-provider openai --search-provider searxng
    --allow-private-urls --no-cache --budget 200000` would start with."""
    overrides = {
        "llm.provider": "openai",
        "search.providers": ["searxng"],
        "search.searxng_url": search.base_url("searxng"),
        "reader.allow_private_urls": True,
        "cache.enabled": False,
        "agent.budget": 200_000,
        **{f"agent.{k}": v for k, v in agent.items()},
    }
    environ = {"OPENAI_API_KEY": SECRET, "OPENAI_BASE_URL": llm.base_url}
    return load_config(overrides=overrides, environ=environ).settings


def start_server(config: ServerConfig) -> RunningServer:
    import uvicorn

    from deepsearch.server.app import create_app
    from deepsearch.server.deadline import read_deadline_protocol

    log: list[str] = []
    config.log = log.append
    server = uvicorn.Server(
        uvicorn.Config(
            create_app(config),
            http=read_deadline_protocol(config.read_deadline_s),  # as serve_cmd's
            host="127.0.0.1",
            port=0,
            log_level="warning",
            access_log=False,
            lifespan="off",
        )
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.002)  # it starts in tens of ms: a finer poll waits less past it
    return RunningServer(server=server, thread=thread, log=log)


Serve = Callable[..., RunningServer]


@pytest.fixture
def serve(
    search: FakeSearchServers,  # noqa: F811
) -> Iterator[Callable[..., RunningServer]]:
    """serve(llm, max_budget=..., api_key=..., max_concurrent=..., trace=..., **agent)."""
    running: list[RunningServer] = []

    def start(
        llm: FakeOpenAIServer,
        *,
        max_budget: int = 200_000,
        api_key: str | None = None,
        max_concurrent: int = 4,
        trace: Path | None = None,
        **agent: Any,
    ) -> RunningServer:
        config = ServerConfig(
            settings=settings_for(llm, search, **agent),
            max_budget=max_budget,
            api_key=api_key,
            max_concurrent=max_concurrent,
            trace=trace,
        )
        server = start_server(config)
        running.append(server)
        return server

    yield start
    for server in running:  # asked to stop; the reaper below waits for them
        server.server.should_exit = True
    _STOPPING.extend(running)


# uvicorn needs ~0.25 s to stop (a 0.1 s tick to notice, a fixed 0.1 s pause in its
# shutdown): waited for in each test's teardown, that was 7 s of the suite doing
# nothing. The servers stop in their own threads while the next tests run; each is
# still required to have stopped, once, at the end of the session.
_STOPPING: list[RunningServer] = []


@pytest.fixture(scope="session", autouse=True)
def servers_reaped() -> Iterator[None]:
    yield
    for server in _STOPPING:
        server.thread.join(timeout=10)
    alive = [s.base_url for s in _STOPPING if s.thread.is_alive()]
    assert not alive, f"servers that did not stop: {alive}"
