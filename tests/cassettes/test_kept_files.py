"""A cassette is written whole or its failure is named (issue 36, item 20): the final
rewrite in call order never truncates the appended file, a full disk while recording
leaves the run unaltered and says which file, a cut-off recording says so on a miss,
and a binary or wrong-shape cassette file is one line naming it."""

from __future__ import annotations

import asyncio
import errno
import os
import re
from pathlib import Path

import pytest

from deepsearch import files
from deepsearch.agent.result import ResearchResult, UsageReport
from deepsearch.cassettes import CassetteMiss, Player, Recorder
from deepsearch.cassettes.record import RecordingProvider
from deepsearch.runtime import finish_cassette
from tests.cassettes.test_matching import ScriptedProvider, ask, record_llm, replay


def _result() -> ResearchResult:
    usage = UsageReport(prompt_tokens=0, completion_tokens=0, total_tokens=0, budget=1)
    return ResearchResult(question="q", answer="a", status="answered", usage=usage, elapsed_s=0)


def _two_calls(recorder: Recorder) -> None:
    provider = RecordingProvider(ScriptedProvider(), recorder.writer)

    async def go() -> None:
        await asyncio.gather(
            provider.complete(ask("agent", "slow")), provider.complete(ask("agent", "b"))
        )

    asyncio.run(go())


def test_a_full_disk_at_the_final_rewrite_keeps_every_recorded_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    recorder = Recorder(tmp_path / "c")
    _two_calls(recorder)
    llm = recorder.directory / "llm.jsonl"
    before = llm.read_text("utf-8")

    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(files.os, "fsync", full)
    result = finish_cassette(recorder, _result())
    assert llm.read_text("utf-8") == before and len(before.splitlines()) == 2
    assert result.status == "answered", "the run itself is not altered"
    assert result.error == (
        f"the recording in {recorder.directory} is incomplete: cannot write "
        f"{llm}: No space left on device"
    )
    assert sorted(os.listdir(recorder.directory)) == ["llm.jsonl"], "no temporary file left"


def test_a_write_failing_while_recording_is_named_and_the_calls_go_on(tmp_path: Path) -> None:
    recorder = Recorder(tmp_path / "c")
    (recorder.directory / "llm.jsonl").mkdir()  # every append to it now fails
    _two_calls(recorder)  # no exception reaches the run
    result = finish_cassette(recorder, _result())
    assert result.status == "answered"
    assert f"cannot write {recorder.directory / 'llm.jsonl'}: Is a directory" in str(result.error)


def test_a_miss_in_a_cut_off_recording_says_the_recording_is_incomplete(tmp_path: Path) -> None:
    directory = record_llm(tmp_path, ask("agent", "one"))  # no result.json: cut short
    player = Player(directory)
    with pytest.raises(CassetteMiss):
        player.answer("llm", {"tool": "agent", "x": 1})
    message = player.first_miss()
    assert message is not None and "the recording is incomplete (no result.json" in message


@pytest.mark.parametrize(
    ("content", "said"),
    [(b"\xff\xfe\x00binary", "not a cassette file (not UTF-8 text)"),
     (b"[1, 2]\n", "line 1 is not a recorded call"),
     (b'{"key": "k"}\n', "line 1 is not a recorded call")],
    ids=["binary", "a-list", "no-request"],
)  # fmt: skip
def test_a_broken_cassette_file_is_one_line_naming_it(
    tmp_path: Path, content: bytes, said: str
) -> None:
    directory = record_llm(tmp_path, ask("agent", "one"))
    (directory / "search.jsonl").write_bytes(content)
    with pytest.raises(CassetteMiss, match=re.escape("search.jsonl: " + said)):
        replay(directory, ask("agent", "one"))
