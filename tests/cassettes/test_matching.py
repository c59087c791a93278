"""Matching rules of a cassette, on the recording and replay clients directly."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from deepsearch.cassettes import CassetteMiss, Player, Recorder
from deepsearch.cassettes.record import RecordingProvider, RecordingReader, RecordingSearch
from deepsearch.cassettes.replay import ReplayProvider, ReplayReader, ReplaySearch
from deepsearch.config import ModelSettings
from deepsearch.errors import ProviderAuthError, StructuredOutputError
from deepsearch.llm.base import Completion, CompletionRequest, Message
from deepsearch.web.types import Page, ReadFailure, SearchQuery, SearchResult


def ask(tool: str, content: str, *, max_tokens: int = 1000) -> CompletionRequest:
    return CompletionRequest(
        tool=tool,
        settings=ModelSettings(model="m1"),
        system="sys",
        messages=[Message(role="user", content=content)],
        max_tokens=max_tokens,
    )


class ScriptedProvider:
    """Replies 'reply-<n>' to the n-th call; 'slow' waits (turns of the event loop, not
    seconds) so a later call finishes first."""

    name = "scripted"

    def __init__(self) -> None:
        self.calls = 0

    async def complete(self, request: CompletionRequest) -> Completion:
        self.calls += 1
        n = self.calls
        content = request.messages[0].content
        if content == "slow" or (content == "slow-first" and n == 1):
            for _ in range(50):
                await asyncio.sleep(0)
        if request.messages[0].content == "auth":
            raise ProviderAuthError("key rejected: export OPENAI_API_KEY", provider="openai")
        return Completion(text=f"reply-{n}")

    async def ping(self) -> None: ...
    async def aclose(self) -> None: ...


def record_llm(tmp_path: Path, *requests: CompletionRequest) -> Path:
    recorder = Recorder(tmp_path / "c")
    provider = RecordingProvider(ScriptedProvider(), recorder.writer)

    async def go() -> None:
        await asyncio.gather(*(provider.complete(r) for r in requests), return_exceptions=True)

    asyncio.run(go())
    recorder.write_run(provider="openai")
    return recorder.directory


def replay(directory: Path, *requests: CompletionRequest, lenient: bool = False) -> list[str]:
    provider = ReplayProvider(Player(directory, lenient=lenient), "openai")
    return [asyncio.run(provider.complete(r)).text for r in requests]


def test_identical_requests_replay_in_the_order_they_were_made(tmp_path: Path) -> None:
    """The first 'slow' call finishes last, yet the first identical request made in
    replay gets the first one's reply."""
    directory = record_llm(tmp_path, ask("agent", "slow"), ask("agent", "fast"))
    assert replay(directory, ask("agent", "fast"), ask("agent", "slow")) == ["reply-2", "reply-1"]

    # identical requests, the first of which finishes last
    twins = record_llm(tmp_path / "twins", ask("agent", "slow-first"), ask("agent", "slow-first"))
    lines = (twins / "llm.jsonl").read_text("utf-8").splitlines()
    assert [json.loads(line)["response"]["text"] for line in lines] == ["reply-2", "reply-1"]
    assert replay(twins, *[ask("agent", "slow-first")] * 2) == ["reply-1", "reply-2"]

    same = record_llm(tmp_path / "dup", ask("agent", "q"), ask("agent", "q"), ask("agent", "q"))
    assert replay(same, *[ask("agent", "q")] * 3) == ["reply-1", "reply-2", "reply-3"]
    with pytest.raises(CassetteMiss, match="made 4 times, recorded 3 times"):
        replay(same, *[ask("agent", "q")] * 4)


def test_the_files_end_in_the_order_the_calls_were_made(tmp_path: Path) -> None:
    """Written as calls finish (a killed run keeps them), sorted by issue at the end,
    so re-recording the same run gives the same files."""
    recorder = Recorder(tmp_path / "c")
    provider = RecordingProvider(ScriptedProvider(), recorder.writer)

    async def go() -> None:
        await asyncio.gather(
            provider.complete(ask("agent", "slow")), provider.complete(ask("agent", "b"))
        )

    asyncio.run(go())
    path = recorder.directory / "llm.jsonl"
    finished = [json.loads(line)["request"]["messages"][0]["content"] for line in path.open()]
    assert finished == ["b", "slow"]
    recorder.write_result({"answer": "x"})
    issued = [json.loads(line)["request"]["messages"][0]["content"] for line in path.open()]
    assert issued == ["slow", "b"]


def test_the_output_cap_is_not_part_of_the_key(tmp_path: Path) -> None:
    directory = record_llm(tmp_path, ask("agent", "q", max_tokens=900))
    assert replay(directory, ask("agent", "q", max_tokens=4000)) == ["reply-1"]


def test_a_miss_names_the_tool_and_the_part_that_differs(tmp_path: Path) -> None:
    directory = record_llm(tmp_path, ask("agent", "question one"), ask("evaluator", "x"))
    with pytest.raises(CassetteMiss) as caught:
        replay(directory, ask("agent", "question two"))
    assert str(caught.value) == (
        "llm call for tool 'agent' not in cassette: messages[0].content differs "
        "from the nearest recorded request"
    )
    with pytest.raises(CassetteMiss, match="tool 'coder' not in cassette: no such call"):
        replay(directory, ask("coder", "x"))
    assert CassetteMiss("x").fatal, "a miss ends the run (exit 1)"


def test_lenient_replay_answers_per_tool_in_recorded_order(tmp_path: Path) -> None:
    directory = record_llm(tmp_path, ask("agent", "a1"), ask("evaluator", "e1"), ask("agent", "a2"))
    got = replay(
        directory, ask("evaluator", "changed"), ask("agent", "a2"), ask("agent", "x"), lenient=True
    )
    # a2 matches by key; the changed calls take the next unused one of their own tool
    assert got == ["reply-2", "reply-3", "reply-1"]
    with pytest.raises(CassetteMiss, match="lenient replay ran out"):
        replay(directory, *[ask("agent", "z")] * 3, lenient=True)


def test_a_recorded_provider_error_replays_as_the_same_error(tmp_path: Path) -> None:
    directory = record_llm(tmp_path, ask("agent", "auth"))
    with pytest.raises(ProviderAuthError, match="key rejected") as caught:
        replay(directory, ask("agent", "auth"))
    assert caught.value.configuration and caught.value.fatal
    assert caught.value.provider == "openai"
    assert not isinstance(caught.value, StructuredOutputError)


class Web:
    name = "web"

    async def search(self, query: SearchQuery) -> list[SearchResult]:
        return [SearchResult(title=query.q, url=f"https://e.example/{query.q}", provider="web")]

    async def read(self, url: str) -> Page | ReadFailure:
        if url.endswith("dead"):
            return ReadFailure(url=url, kind="http_status", status=404)
        return Page(url=url, final_url=url, text=f"text of {url}", fetched_at="2026-01-01")


def test_searches_and_reads_replay_by_key_and_repeat(tmp_path: Path) -> None:
    recorder = Recorder(tmp_path / "c")
    search, reader = (
        RecordingSearch(Web(), recorder.writer),
        RecordingReader(Web(), recorder.writer),
    )

    async def go() -> None:
        await search.search(SearchQuery(q="alpha"))
        await search.search(SearchQuery(q="beta", time_filter="y"))
        await reader.read("https://e.example/a")
        await reader.read("https://e.example/dead")

    asyncio.run(go())
    recorder.write_run()
    player = Player(recorder.directory)
    replay_search, replay_reader = ReplaySearch(player, "web"), ReplayReader(player)

    async def check() -> None:
        beta = await replay_search.search(SearchQuery(q="beta", time_filter="y"))
        assert [r.title for r in beta] == ["beta"]
        for _ in range(2):  # a page read twice is the same page
            page = await replay_reader.read("https://e.example/a")
            assert isinstance(page, Page) and page.text == "text of https://e.example/a"
        dead = await replay_reader.read("https://e.example/dead")
        assert isinstance(dead, ReadFailure) and dead.status == 404
        with pytest.raises(CassetteMiss, match="query.time_filter differs"):
            await replay_search.search(SearchQuery(q="beta", time_filter="m"))
        missing = await replay_reader.read("https://e.example/never")
        assert isinstance(missing, ReadFailure) and "not in cassette" in missing.detail

    asyncio.run(check())
    lenient = ReplayReader(Player(recorder.directory, lenient=True))
    other = asyncio.run(lenient.read("https://e.example/other"))
    assert isinstance(other, ReadFailure), "lenient replay never serves another URL's page"
    # The search miss counts; the unread page only once the run visited it.
    assert player.first_miss([]) is not None and "search for 'beta'" in player.first_miss([])


def test_only_reads_the_run_used_count_as_misses(tmp_path: Path) -> None:
    recorder = Recorder(tmp_path / "c")
    recorder.write_run()
    player = Player(recorder.directory)
    asyncio.run(ReplayReader(player).read("https://e.example/prefetched"))
    assert player.first_miss(["https://e.example/other"]) is None
    assert "not in cassette" in (player.first_miss(["https://e.example/prefetched"]) or "")
    lenient = Player(recorder.directory, lenient=True)
    asyncio.run(ReplayReader(lenient).read("https://e.example/prefetched"))
    assert lenient.first_miss(["https://e.example/prefetched"]) is None


def test_a_cassette_with_the_old_mask_replays_by_key(tmp_path: Path) -> None:
    """Cassettes written before `****` was the one mask say `[REDACTED]` where a secret
    was, and their keys hash that: they still replay strictly, the request redacted now."""
    from deepsearch.cassettes.store import LEGACY_MASK, rewrite

    secret = "sk-a-secret-of-some-length"
    recorder = Recorder(tmp_path / "c", secrets=[secret])
    provider = RecordingProvider(ScriptedProvider(), recorder.writer)
    asyncio.run(provider.complete(ask("agent", f"the key is {secret}")))
    recorder.write_run(provider="openai")
    rewrite(recorder.directory, {"****": LEGACY_MASK})  # as it was written then
    text = (recorder.directory / "llm.jsonl").read_text("utf-8")
    assert f"the key is {LEGACY_MASK}" in text and "****" not in text

    player = Player(recorder.directory, secrets=[secret])
    reply = asyncio.run(
        ReplayProvider(player, "openai").complete(ask("agent", f"the key is {secret}"))
    )
    assert reply.text == "reply-1"
