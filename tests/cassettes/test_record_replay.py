"""`--record` / `--replay` / `--replay-lenient` through the real CLI, in-process."""

from __future__ import annotations

import json
import socket
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.cassettes.conftest import World, cli, record, without_times
from tests.cli.test_end_to_end import SECRET


def test_replay_with_every_socket_blocked_prints_the_same_json(
    world: World,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    request: pytest.FixtureRequest,
) -> None:
    cassette = tmp_path / "cassette"
    recorded = record(capsys, world, cassette)
    assert recorded["status"] == "answered" and "Stephen King" in recorded["answer"]
    assert recorded["references"], "the recorded run cites its sources"
    before = world.outside_requests()

    request.getfixturevalue("no_network")
    with pytest.raises(AssertionError, match="network is off"):  # the guard is real
        socket.create_connection(("127.0.0.1", 9))
    code, replayed = cli(capsys, *world.args(), "--replay", str(cassette))

    assert code == 0, replayed.get("error")
    assert without_times(replayed) == without_times(recorded)
    assert world.outside_requests() == before, "replay reached a fake server"
    on_disk = json.loads((cassette / "result.json").read_text("utf-8"))
    assert without_times(on_disk) == without_times(recorded)


def test_cassette_files_are_per_kind_and_never_hold_the_key(
    leaky_world: World, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cassette = tmp_path / "cassette"
    record(capsys, leaky_world, cassette)
    names = {p.name for p in cassette.iterdir()}
    assert {"run.json", "result.json", "llm.jsonl", "search.jsonl", "read.jsonl"} <= names
    text = "".join(p.read_text("utf-8") for p in cassette.iterdir())
    assert SECRET not in text
    assert "token=[REDACTED]" in text, "the snippet quoting the key was kept, redacted"
    llm = [json.loads(line) for line in (cassette / "llm.jsonl").read_text().splitlines()]
    assert {"agent", "evaluator"} <= {line["request"]["tool"] for line in llm}
    assert all(set(line) >= {"key", "n", "request", "response"} for line in llm)
    assert str(tmp_path) not in text, "no temporary path in a committable cassette"


def test_a_prompt_change_fails_strict_replay_and_passes_lenient(
    world: World, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cassette = tmp_path / "cassette"
    recorded = record(capsys, world, cassette)
    changed = [*world.args(), "--language", "German"]

    code, strict = cli(capsys, *changed, "--replay", str(cassette))
    assert code == 1
    assert strict["status"] == "failed"
    assert strict["error"].startswith("llm call for tool 'agent' not in cassette: system differs")
    assert "from the nearest recorded request" in strict["error"]

    code, lenient = cli(capsys, *changed, "--replay-lenient", str(cassette))
    assert code == 0, lenient
    assert (lenient["status"], lenient["answer"]) == (recorded["status"], recorded["answer"])


def test_the_prompt_clock_is_the_recorded_start(
    world: World,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Replayed years later, the prompts still say the recorded date; a cassette whose
    start is changed no longer matches (the date/time line is in the prompt)."""
    cassette = tmp_path / "cassette"
    recorded = record(capsys, world, cassette)

    later = datetime(2031, 6, 1, 12, 0, tzinfo=UTC)
    monkeypatch.setattr("deepsearch.clock.SystemClock.now", lambda self: later)
    code, replayed = cli(capsys, *world.args(), "--replay", str(cassette))
    assert code == 0, replayed
    assert without_times(replayed) == without_times(recorded)

    run = json.loads((cassette / "run.json").read_text("utf-8"))
    run["started_at"] = "2020-01-01T00:00:00+00:00"
    (cassette / "run.json").write_text(json.dumps(run), "utf-8")
    code, moved = cli(capsys, *world.args(), "--replay", str(cassette))
    assert code == 1 and "not in cassette" in moved["error"]


def test_a_page_the_run_reads_that_is_missing_fails_the_replay(
    world: World, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cassette = tmp_path / "cassette"
    record(capsys, world, cassette)
    reads = (cassette / "read.jsonl").read_text("utf-8").splitlines()
    dropped = json.loads(reads[0])["request"]["url"]
    (cassette / "read.jsonl").write_text("\n".join(reads[1:]) + "\n", "utf-8")

    code, out = cli(capsys, *world.args(), "--replay", str(cassette))
    assert code == 1
    assert out["status"] == "failed"
    assert f"read of {dropped!r} not in cassette" in out["error"]


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--record", "A", "--replay", "B"], "--record and --replay cannot be used together"),
        (["--replay", "nowhere"], "--replay needs a cassette folder"),
    ],
)
def test_cassette_flag_misuse_is_a_usage_error(
    flags: list[str],
    message: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from deepsearch.cli import run

    monkeypatch.chdir(tmp_path)
    code = run(["what is it?", *flags])
    err = capsys.readouterr().err
    assert code == 2
    assert message in err and "Traceback" not in err
