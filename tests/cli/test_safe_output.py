"""Output that cannot hurt (issue 10, item 4): no escape sequence from a source reaches
the terminal, write errors on stdout are one line (or quiet for a closed pipe), and an
unknown model is a configuration error."""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

import pytest

from deepsearch.agent.result import ResearchResult, UsageReport
from deepsearch.agent.types import Reference
from deepsearch.frontend.live import LiveView
from deepsearch.frontend.output import clean_block, clean_line, safe_result
from tests.cli.inprocess import run_cli_in_process
from tests.cli.test_config_and_doctor import run_in_process
from tests.cli.test_end_to_end import SECRET
from tests.fakes.openai_server import FakeOpenAIServer, Reply

TITLE_ATTACK = "Notes\x1b]0;pwned\x07\x1b[2J\x9b31m"


def test_control_characters_are_removed() -> None:
    assert clean_line(TITLE_ATTACK) == "Notes]0;pwned[2J31m"
    assert clean_line("a\tb\nc") == "a b c"
    assert clean_block("line 1\nline\x1b[2J 2\r\n") == "line 1\nline[2J 2\n"
    assert clean_block("tab\tkept") == "tab\tkept"


def _attacked() -> ResearchResult:
    usage = UsageReport(prompt_tokens=1, completion_tokens=1, total_tokens=2, budget=1000)
    ref = Reference(url="file:///n/a\x1b[2J.md", title=TITLE_ATTACK, quote="q\x1b[2J")
    return ResearchResult(
        question="q",
        answer='The answer.\x1b]0;x\x07 [^1]\n\n[^1]: "q"',
        references=[ref],
        status="answered",
        usage=usage,
        elapsed_s=1,
        read_urls=["file:///n/a\x1b[2J.md"],
    )


def test_every_printed_string_of_a_result_is_cleaned() -> None:
    dumped = json.dumps(safe_result(_attacked()).model_dump(), ensure_ascii=False)
    assert "\x1b" not in dumped and "\x07" not in dumped and "\x9b" not in dumped
    assert "\\u001b" not in json.dumps(safe_result(_attacked()).model_dump())


def test_the_live_view_strips_escapes() -> None:
    import io

    from rich.console import Console

    from deepsearch.agent.events import Notice, StepFinished

    buffer = io.StringIO()
    view = LiveView(console=Console(file=buffer, force_terminal=False, width=200))
    view(StepFinished(step=1, action="visit", think="t\x1b[2J", detail=TITLE_ATTACK,
                      tokens_used=1, budget=10, elapsed_s=1))  # fmt: skip
    view(Notice(text="x\x1b]0;y\x07"))
    assert "\x1b" not in buffer.getvalue() and "\x07" not in buffer.getvalue()


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize("args", [["config", "--json"], ["config"], ["--help"]])
def test_a_full_disk_is_one_line_not_a_traceback(args: list[str]) -> None:
    with open("/dev/full", "w") as sink:  # noqa: PTH123 - a device, not a path to build
        done = run_cli_in_process(*args, stdout=sink)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        "error: cannot write the output to stdout: No space left on device"
    ]


def test_a_closed_pipe_ends_quietly() -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)  # `| head -0`: nobody will ever read, every write fails
    with os.fdopen(write_end, "w") as sink:
        done = run_cli_in_process("config", stdout=sink)
        with contextlib.suppress(OSError):  # already pointed at /dev/null, or broken
            sink.close()
    assert done.stderr == ""
    assert done.returncode == 141  # 128 + SIGPIPE, as a shell reports a closed pipe


def test_an_unknown_model_is_a_configuration_error_exit_2(tmp_path: Path) -> None:
    def route(body: dict[str, object]) -> Reply:
        return Reply.error(404, "The model `gpt-nope` does not exist", code="model_not_found")

    with FakeOpenAIServer(route) as llm:
        done = run_in_process(
            "research", "Who directed Maximum Overdrive?", "--json", "--llm-provider",
            "openai", "--model", "gpt-nope", "--no-cache",
            OPENAI_API_KEY=SECRET, OPENAI_BASE_URL=llm.base_url,
            DEEPSEARCH_CACHE_DIR=str(tmp_path / "c"),
        )  # fmt: skip
    assert done.returncode == 2, done.stderr
    out = json.loads(done.stdout)
    assert out["error_kind"] == "configuration" and "gpt-nope" in out["error"]


class FullDisk:
    """A stdout whose writes fail as on a full disk (or a closed pipe)."""

    def __init__(self, error: OSError) -> None:
        self.error = error

    def write(self, text: str) -> int:
        raise self.error

    def flush(self) -> None:
        raise self.error

    def isatty(self) -> bool:
        return False


@pytest.mark.parametrize(
    ("error", "code", "message"),
    [
        (OSError(28, "No space left on device"), 1, "No space left on device"),
        (BrokenPipeError(32, "Broken pipe"), 141, ""),
    ],
)
def test_the_research_answer_meets_a_write_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], error: OSError,
    code: int, message: str,
) -> None:  # fmt: skip
    import sys

    import typer

    from deepsearch.cli import error_boundary
    from deepsearch.commands.run_research import _report

    capsys.readouterr()
    monkeypatch.setattr(sys, "stdout", FullDisk(error))
    with pytest.raises(typer.Exit) as info, error_boundary():  # the CLI's line and code
        _report(_attacked(), LiveView(quiet=True), as_json=True, quiet=True)
    assert info.value.exit_code == code
    err = capsys.readouterr().err
    assert (message in err) if message else err == ""
    assert "Traceback" not in err


@pytest.mark.parametrize("as_json", [True, False], ids=["json", "markdown"])
def test_the_printed_answer_holds_no_escape(
    capsys: pytest.CaptureFixture[str], as_json: bool
) -> None:
    from deepsearch.commands.run_research import _report

    capsys.readouterr()
    _report(_attacked(), LiveView(quiet=True), as_json=as_json, quiet=True)
    out = capsys.readouterr().out
    assert "The answer." in out
    assert "\x1b" not in out and "\x07" not in out and "\\u001b" not in out


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_a_trace_file_that_cannot_be_written_is_named() -> None:
    """Named once; the run ends as it would without --trace (here: no provider, exit
    2), the trace never altering it (issue 36, item 21)."""
    done = run_in_process("research", "who wrote Hamlet?", "--trace", "/dev/full")
    without = run_in_process("research", "who wrote Hamlet?")
    assert done.returncode == without.returncode == 2
    assert done.stderr.count("--trace stopped: cannot write /dev/full: No space left") == 1


def test_a_warning_about_the_answer_is_shown_under_the_summary() -> None:
    """Issue 31: an answer cited only to pages that instruct the model says so on the
    terminal too (the result's `warnings`); the escape in it is removed like any other."""
    import io

    from rich.console import Console

    from deepsearch.commands.run_research import _report

    buffer = io.StringIO()
    result = _attacked()
    result.warnings = ["the answer rests only on pages that carry instructions\x1b[2J"]
    _report(result, LiveView(console=Console(file=buffer)), as_json=True, quiet=False)
    lines = buffer.getvalue().splitlines()
    assert lines[-1] == "warning: the answer rests only on pages that carry instructions[2J"
    silent = io.StringIO()
    _report(result, LiveView(console=Console(file=silent)), as_json=True, quiet=True)
    assert "warning" not in silent.getvalue()
