"""`--record` / `--replay` / `--replay-lenient` through the real CLI, in-process."""

from __future__ import annotations

import json
import shutil
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from deepsearch.cli import run
from tests.cassettes.conftest import QUESTION, World, _world, cli, record, without_times
from tests.cli.inprocess import run_cli_in_process
from tests.cli.test_end_to_end import SEARCH, SECRET, VISIT

# One worker runs this module (`make test` is --dist loadgroup): the recording below is
# module-scoped and would otherwise be made once per worker.
pytestmark = pytest.mark.xdist_group("record_replay")


@dataclass
class Recorded:
    """One recording of the standard world, shared by the tests that only replay it."""

    world: World
    pristine: Path
    result: dict[str, Any]

    def cassette(self, tmp_path: Path) -> Path:
        """A copy of the recording that the test may change."""
        return Path(shutil.copytree(self.pristine, tmp_path / "cassette"))


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Recorded]:
    """A recording costs a whole research run, a replay a fraction of one: the tests that
    replay (and change the copy they replay) share the one recording."""
    pristine = tmp_path_factory.mktemp("recorded") / "cassette"
    with pytest.MonkeyPatch.context() as monkeypatch:
        with contextmanager(_world)(monkeypatch, snippet_tail="") as world:
            done = run_cli_in_process(QUESTION, *world.args(), "--record", str(pristine))
            assert done.returncode == 0, done.stderr
            yield Recorded(world, pristine, json.loads(done.stdout))


def test_replay_with_every_socket_blocked_prints_the_same_json(
    recorded: Recorded,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    request: pytest.FixtureRequest,
) -> None:
    world, cassette = recorded.world, recorded.cassette(tmp_path)
    recorded_out = recorded.result
    assert recorded_out["status"] == "answered" and "Stephen King" in recorded_out["answer"]
    assert recorded_out["references"], "the recorded run cites its sources"
    before = world.outside_requests()

    request.getfixturevalue("no_network")
    with pytest.raises(AssertionError, match="network is off"):  # the guard is real
        socket.create_connection(("127.0.0.1", 9))
    code, replayed = cli(capsys, *world.args(), "--replay", str(cassette))

    assert code == 0, replayed.get("error")
    assert without_times(replayed) == without_times(recorded_out)
    assert world.outside_requests() == before, "replay reached a fake server"
    on_disk = json.loads((cassette / "result.json").read_text("utf-8"))
    assert without_times(on_disk) == without_times(recorded_out)


def test_cassette_files_are_per_kind_and_never_hold_the_key(
    leaky_world: World, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cassette = tmp_path / "cassette"
    record(capsys, leaky_world, cassette)
    names = {p.name for p in cassette.iterdir()}
    assert {"run.json", "result.json", "llm.jsonl", "search.jsonl", "read.jsonl"} <= names
    text = "".join(p.read_text("utf-8") for p in cassette.iterdir())
    assert SECRET not in text
    assert "token=****" in text, "the snippet quoting the key was kept, redacted"
    assert "[REDACTED]" not in text, "one mask: the one error messages use"
    llm = [json.loads(line) for line in (cassette / "llm.jsonl").read_text().splitlines()]
    assert {"agent", "evaluator"} <= {line["request"]["tool"] for line in llm}
    assert all(set(line) >= {"key", "n", "request", "response"} for line in llm)
    assert str(tmp_path) not in text, "no temporary path in a committable cassette"


def test_a_key_that_holds_another_key_is_redacted_whole(
    leaky_world: World,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A second configured key that is the start of the first: replacing it first would
    # leave "****" followed by the rest of the longer key in the cassette.
    monkeypatch.setenv("SERPER_API_KEY", SECRET[:12])
    cassette = tmp_path / "cassette"
    record(capsys, leaky_world, cassette)
    text = "".join(p.read_text("utf-8") for p in cassette.iterdir())
    assert "token=****" in text
    assert SECRET[12:] not in text, "a tail of the longer key was left in the cassette"


def test_a_prompt_change_fails_strict_replay_and_passes_lenient(
    recorded: Recorded, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cassette = recorded.cassette(tmp_path)
    changed = [*recorded.world.args(), "--language", "German"]

    code, strict = cli(capsys, *changed, "--replay", str(cassette))
    assert code == 1
    assert strict["status"] == "failed"
    assert strict["error"].startswith("llm call for tool 'agent' not in cassette: system differs")
    assert "from the nearest recorded request" in strict["error"]
    # and which research option the replay changed
    assert strict["error"].endswith("; recorded with agent.language=None (now 'German')")

    code, lenient = cli(capsys, *changed, "--replay-lenient", str(cassette))
    assert code == 0, lenient
    want = recorded.result
    assert (lenient["status"], lenient["answer"]) == (want["status"], want["answer"])


def test_the_prompt_clock_is_the_recorded_start(
    recorded: Recorded,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Replayed years later, the prompts still say the recorded date; a cassette whose
    start is changed no longer matches (the date/time line is in the prompt)."""
    world, cassette = recorded.world, recorded.cassette(tmp_path)

    later = datetime(2031, 6, 1, 12, 0, tzinfo=UTC)
    monkeypatch.setattr("deepsearch.clock.SystemClock.now", lambda self: later)
    code, replayed = cli(capsys, *world.args(), "--replay", str(cassette))
    assert code == 0, replayed
    assert without_times(replayed) == without_times(recorded.result)

    run = json.loads((cassette / "run.json").read_text("utf-8"))
    run["started_at"] = "2020-01-01T00:00:00+00:00"
    (cassette / "run.json").write_text(json.dumps(run), "utf-8")
    code, moved = cli(capsys, *world.args(), "--replay", str(cassette))
    assert code == 1 and "not in cassette" in moved["error"]


def test_a_page_the_run_reads_that_is_missing_fails_the_replay(
    recorded: Recorded, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    world, cassette = recorded.world, recorded.cassette(tmp_path)
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


def test_a_corpus_run_replays_without_the_folder_being_read(
    world: World, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "leland.md").write_text(
        "# Leland\n\nMaximum Overdrive was shot in and around Leland, North Carolina.\n", "utf-8"
    )
    cassette = tmp_path / "cassette"
    args = [a for a in world.args() if a not in ("searxng",)]
    args = [*args[: args.index("--search-provider")], *args[args.index("--search-provider") + 2 :]]
    code, recorded = cli(capsys, *args, "--corpus", str(notes), "--record", str(cassette))
    assert code == 0, recorded.get("error")
    assert any(u.startswith("file://") for u in recorded["read_urls"]), recorded["read_urls"]
    text = "".join(p.read_text("utf-8") for p in cassette.iterdir())
    assert str(notes) not in text and "file:///$CORPUS/leland.md" in text

    # Replayed elsewhere: the folder moved and its file changed; nothing is read.
    moved = notes.rename(tmp_path / "moved")
    (moved / "leland.md").write_text("changed after the recording\n", "utf-8")
    code, replayed = cli(capsys, *args, "--corpus", str(moved), "--replay", str(cassette))
    assert code == 0, replayed.get("error")
    expected = json.loads(json.dumps(recorded).replace(str(notes), str(moved)))
    assert without_times(replayed) == without_times(expected)


def test_a_recording_sees_the_wall_clock_frozen_at_its_start(
    world: World, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every prompt of a recording carries its start time (an hour-long run included),
    and a replay, years later, is fed the same instant."""
    from deepsearch.cassettes import CassetteSpec
    from deepsearch.commands.flags import research_flags
    from deepsearch.commands.run_research import run_research
    from deepsearch.config import load_config

    flags = [a for a in world.args() if a not in ("--json", "--quiet")]
    settings = load_config(overrides=research_flags(flags, "research")[0]).settings
    start = datetime(2020, 2, 29, 23, 59, tzinfo=UTC)
    spec = CassetteSpec(mode="record", directory=tmp_path / "c", started_at=start)
    code = run_research(
        "Who directed it?", settings, as_json=True, quiet=True, trace_path=None, cassette=spec
    )
    assert code == 0
    agent = [
        json.loads(line)["request"]
        for line in (tmp_path / "c" / "llm.jsonl").read_text("utf-8").splitlines()
        if '"tool": "agent"' in line
    ]
    assert agent and all(
        "Current date and time (UTC): 2020-02-29 23:59" in r["system"] for r in agent
    )
    capsys.readouterr()
    code = run(["Who directed it?", *world.args(), "--replay", str(tmp_path / "c")])
    assert code == 0, capsys.readouterr().out


def test_an_interrupted_recording_keeps_its_calls_and_result(
    world: World, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import os
    import signal

    world.script(SEARCH, VISIT)  # Ctrl-C on the visit: no answer step
    route = world.llm.handler
    asked: list[str] = []

    def interrupt_on_the_visit(body: dict) -> object:
        reply = route(body)  # type: ignore[misc]
        if isinstance(reply, dict) and "visit" in (reply.get("action") or {}):
            asked.append("visit")
            os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C while the model's reply is on the way
        return reply

    world.llm.handler = interrupt_on_the_visit
    cassette = tmp_path / "cassette"
    code, out = cli(capsys, *world.args(), "--record", str(cassette))
    assert (code, out["status"], asked) == (130, "interrupted", ["visit"])
    saved = json.loads((cassette / "result.json").read_text("utf-8"))
    assert saved["status"] == "interrupted" and saved["steps"] == out["steps"]
    assert (cassette / "search.jsonl").read_text("utf-8"), "the finished calls are kept"


def test_a_replay_of_another_question_names_the_question(
    recorded: Recorded, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The miss blamed the budget (issue 22, item 7): with another question and another
    budget, the question is what the message names first."""
    cassette = recorded.cassette(tmp_path)
    args = list(recorded.world.args())
    budget = args.index("--budget") + 1 if "--budget" in args else None
    if budget is not None:
        args[budget] = str(int(args[budget]) + 1000)
    else:
        args += ["--budget", "123000"]
    capsys.readouterr()
    code = run(["Who directed Maximum Overdrive?", *args, "--replay", str(cassette)])
    error = json.loads(capsys.readouterr().out)["error"]
    assert code == 1
    assert "; recorded for another question: " in error, error
    assert repr(QUESTION) in error and "(now 'Who directed Maximum Overdrive?')" in error
    assert error.index("another question") < error.index("recorded with agent.budget")
