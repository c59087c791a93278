"""Words that are not questions never start a paid run; questions come quoted,
unquoted or on stdin (issue 10, item 2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from deepsearch import __version__
from deepsearch.cli import route
from deepsearch.commands.question import edit_distance, near_command
from tests.cli.inprocess import Outcome, run_cli_in_process
from tests.cli.test_end_to_end import ANSWER_STEP, SECRET, router
from tests.fakes.openai_server import FakeOpenAIServer


def run_routed(*args: str, stdin: str | None = None, tty: bool = True, **env: str) -> Outcome:
    """main() in process: route() as the console script does, then the Typer app."""
    from typer.testing import CliRunner

    from deepsearch.cli import make_app

    routed = route(list(args), stdin_is_tty=tty)
    result = CliRunner().invoke(
        make_app(), routed, input=stdin, env={"COLUMNS": "200", **env}, prog_name="deepsearch"
    )
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return Outcome(result.exit_code, result.stdout, result.stderr)


@pytest.mark.parametrize(
    ("args", "tty", "expected"),
    [
        (["help"], True, ["--help"]),
        (["version"], True, ["--version"]),
        (["-V"], True, ["-V"]),
        (["doctor", "--json"], True, ["doctor", "--json"]),
        (
            ["who", "wrote", "config", "files"],
            True,
            ["research", "who", "wrote", "config", "files"],
        ),
        (["--json", "q?"], True, ["research", "--json", "q?"]),
        (["-"], True, ["research", "-"]),
        ([], True, []),
        ([], False, ["research"]),
        (["help", "me"], True, ["research", "help", "me"]),
    ],
)
def test_route(args: list[str], tty: bool, expected: list[str]) -> None:
    assert route(args, stdin_is_tty=tty) == expected


def test_help_and_version_words_act_as_the_flags() -> None:
    helped = run_routed("help")
    assert helped.returncode == 0 and "Usage" in helped.stdout
    for flag in ("version", "-V", "--version"):
        shown = run_routed(flag)
        assert shown.returncode == 0 and shown.stdout.strip() == f"deepsearch {__version__}"


@pytest.mark.parametrize(
    ("word", "meant"),
    [("confg", "config"), ("doctr", "doctor"), ("hepl", "--help"), ("verison", "--version")],
)
def test_a_mistyped_command_is_not_researched(word: str, meant: str) -> None:
    done = run_routed(word, "--llm-provider", "openai", OPENAI_API_KEY=SECRET)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and f"did you mean `deepsearch {meant}`" in lines[0]


@pytest.mark.parametrize("question", ["hello", "python", "Paris", "config?", "config files"])
def test_real_questions_are_not_taken_for_commands(question: str) -> None:
    assert near_command(question) is None


def test_edit_distance() -> None:
    assert edit_distance("confg", "config") == 1
    assert edit_distance("hepl", "help") == 1  # a swap is one edit
    assert edit_distance("kitten", "sitting") == 3
    assert edit_distance("", "abc") == 3


def test_stdin_is_read_for_dash_and_checked_like_an_argument() -> None:
    done = run_routed("-", stdin="confg\n", tty=False)
    assert done.returncode == 2 and "did you mean `deepsearch config`" in done.stderr
    empty = run_routed(stdin="   \n", tty=False)
    assert empty.returncode == 2 and "the question is empty" in empty.stderr


def test_no_question_on_a_terminal_says_how() -> None:
    from deepsearch.commands.question import question_text

    class Tty:
        def isatty(self) -> bool:
            return True

    import sys

    saved, sys.stdin = sys.stdin, Tty()  # type: ignore[assignment]
    try:
        with pytest.raises(Exception) as info:
            question_text([])
    finally:
        sys.stdin = saved
    assert getattr(info.value, "exit_code", None) == 2


def test_dash_among_other_words_is_a_usage_error() -> None:
    done = run_routed("what", "-", "is", "this")
    assert done.returncode == 2 and "only word" in done.stderr


def test_a_piped_question_and_unquoted_words_reach_the_run(tmp_path: Path) -> None:
    """Through `cli.run` as the console script calls it: no argument and the question
    piped on stdin, then the question as unquoted words with stdin closed."""
    with FakeOpenAIServer(router([ANSWER_STEP])) as llm:
        env = {
            "OPENAI_API_KEY": SECRET,
            "OPENAI_BASE_URL": llm.base_url,
            "DEEPSEARCH_CACHE_DIR": str(tmp_path / "cache"),
        }
        flags = ["--json", "--llm-provider", "openai", "--no-cache", "--quiet"]
        piped = run_cli_in_process(*flags, stdin="Which film was shot\nin Leland?\n", env=env)
        words = run_cli_in_process(
            "Which", "film", "was", "shot", "in", "Leland?", *flags, stdin="", env=env
        )
    for done in (piped, words):
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["question"] == "Which film was shot in Leland?"
