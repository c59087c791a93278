"""One CLI error boundary (issue 9, item 5): commands raise the project's error tree,
cli.error_boundary alone prints the one line and exits with the code the error
carries, whoever runs the app (the console script's `run`, or a CliRunner)."""

from __future__ import annotations

from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from deepsearch import cli
from deepsearch.commands import config_cmd
from deepsearch.errors import CommandFailed, ConfigError, DeepsearchError, RunError, UsageError


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (UsageError("the question is empty"), 2),
        (ConfigError("config.json: agent.budget: too small"), 2),
        (CommandFailed("2 of 7 checks failed"), 1),
        (CommandFailed("interrupted; run the same command again", 130), 130),
        (RunError("search failed"), 1),
    ],
)
def test_the_boundary_prints_one_line_and_exits_with_the_errors_code(
    error: DeepsearchError, code: int, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(typer.Exit) as done, cli.error_boundary():
        raise error
    assert done.value.exit_code == code
    assert capsys.readouterr().err == f"error: {error}\n"


def test_a_message_over_several_lines_is_printed_as_one(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(typer.Exit), cli.error_boundary():
        raise ConfigError("config.json:\n  agent.budget: [x] too small")
    assert capsys.readouterr().err == "error: config.json: agent.budget: [x] too small\n"


def test_a_password_in_a_url_is_masked(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(typer.Exit), cli.error_boundary():
        raise ConfigError("http://me:hunter2@searx.lan/?api_key=k1: no answer")
    err = capsys.readouterr().err
    assert "hunter2" not in err and "k1" not in err
    assert "http://me:****@searx.lan/?api_key=****" in err


def test_other_exceptions_pass_through_the_boundary() -> None:
    with pytest.raises(KeyError), cli.error_boundary():
        raise KeyError("a bug is not a deepsearch error")


def _raise_from_config(monkeypatch: pytest.MonkeyPatch, error: DeepsearchError) -> None:
    def broken(**_: object) -> None:
        raise error

    monkeypatch.setattr(config_cmd, "load_config", broken)


def test_a_command_error_reaches_the_console_scripts_exit_code(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _raise_from_config(monkeypatch, CommandFailed("the disk is on fire", 7))
    assert cli.run(["config"]) == 7
    captured = capsys.readouterr()
    assert captured.err == "error: the disk is on fire\n" and captured.out == ""


def test_a_command_error_is_handled_inside_the_app_for_a_cli_runner(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _raise_from_config(monkeypatch, UsageError("no such thing"))
    result = CliRunner().invoke(cli.make_app(), ["config"], prog_name="deepsearch")
    assert result.exit_code == 2
    assert result.stderr == "error: no such thing\n"
    assert not isinstance(result.exception, DeepsearchError)  # it never left the app


def test_help_to_a_full_disk_is_one_line_and_exit_1(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """guarded_stdout's own error, raised outside any command, meets the boundary too."""
    import sys

    class FullDisk:
        def write(self, text: str) -> int:
            raise OSError(28, "No space left on device")

        def flush(self) -> None:
            raise OSError(28, "No space left on device")

        def isatty(self) -> bool:
            return False

    monkeypatch.setattr(sys, "stdout", FullDisk())
    assert cli.run(["--help"]) == 1
    assert capsys.readouterr().err == (
        "error: cannot write the output to stdout: No space left on device\n"
    )


def test_the_cli_is_the_only_place_that_turns_errors_into_exits() -> None:
    """Commands raise; no command prints its own error line or picks its own code."""
    root = Path(cli.__file__).parent
    for path in sorted((root / "commands").glob("*.py")):
        text = path.read_text("utf-8")
        assert "def fail(" not in text and "EXIT_USAGE" not in text, path.name
    assert Path(cli.__file__).read_text("utf-8").count("except DeepsearchError") == 1


def test_an_interrupted_eval_says_how_to_resume_and_exits_130(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from deepsearch.evaluation.runner import EvalRunner

    async def interrupted(self: EvalRunner, items: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(EvalRunner, "run", interrupted)
    questions = tmp_path / "q.jsonl"
    questions.write_text('{"id": "1", "question": "Q?", "answer": "A"}\n', encoding="utf-8")
    out = tmp_path / "out"
    code = cli.run(["eval", str(questions), "--out", str(out), "--grader", "exact", "--quiet"])
    assert code == 130
    err = capsys.readouterr().err
    assert err == f"error: interrupted; run the same command again to resume ({out})\n"
