"""A trace that cannot be written never alters the run (issue 36, item 21): a full
disk (/dev/full answers every write with ENOSPC) is said once, naming the file, and
the traced search stays a search; a file torn mid-line gets a line break first."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from deepsearch.tracing import TracedSearch, TraceWriter
from deepsearch.web.types import SearchQuery, SearchResult
from tests.cli import test_end_to_end as e2e
from tests.cli.inprocess import run_cli_in_process
from tests.cli.test_end_to_end import (
    ANSWER_STEP,
    QUESTION,
    SEARCH,
    VISIT,
    cli_args,
    cli_env,
    router,
)
from tests.fakes.memory_web import FakeSearch
from tests.fakes.openai_server import FakeOpenAIServer
from tests.fakes.search_servers import FakeSearchServers
from tests.fakes.web_server import LoopbackServer

web, search = e2e.web, e2e.search  # the end-to-end tests' fixtures
FULL = Path("/dev/full")
needs_dev_full = pytest.mark.skipif(not FULL.exists(), reason="no /dev/full here")


@needs_dev_full
async def test_a_full_disk_is_said_once_and_the_search_still_answers() -> None:
    said: list[str] = []
    trace = TraceWriter(FULL)
    trace.on_failure = said.append
    hit = SearchResult(title="t", url="https://a.org/", snippet="s", provider="f")
    traced = TracedSearch(FakeSearch(lambda q: [hit]), trace)
    assert await traced.search(SearchQuery(q="one")) == [hit]
    assert await traced.search(SearchQuery(q="two")) == [hit]
    trace.close()
    assert said == [
        "--trace stopped: cannot write /dev/full: No space left on device; "
        "the run goes on without it"
    ]


@needs_dev_full
@pytest.mark.timeout(60)
def test_a_run_traced_to_a_full_disk_answers_as_without_trace(
    web: LoopbackServer, search: FakeSearchServers, tmp_path: Path
) -> None:
    with FakeOpenAIServer(router([SEARCH, VISIT, ANSWER_STEP])) as llm:
        args = [a for a in cli_args(search) if a != "--json"]
        done = run_cli_in_process(QUESTION, *args, "--trace", str(FULL), env=cli_env(llm, tmp_path))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("The film was Maximum Overdrive")
    assert done.stderr.count("--trace stopped: cannot write /dev/full") == 1


def test_a_trace_torn_mid_line_is_continued_on_a_new_line(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    path.write_text('{"kind": "run_start"}\n{"kind": "llm", "cut', "utf-8")
    trace = TraceWriter(path)
    trace("search", {"q": "x"})
    trace.close()
    lines = path.read_text("utf-8").splitlines()
    assert lines[1] == '{"kind": "llm", "cut'
    assert json.loads(lines[2])["kind"] == "search"
    assert os.listdir(tmp_path) == ["trace.jsonl"]
