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
        # issue 22, item 1: `help <command>` is that command's help, as `git help commit`
        (["help", "serve"], True, ["serve", "--help"]),
        (["help", "research"], True, ["research", "--help"]),
        # item 2: options typed before the command go after it
        (["--config", "my.json", "config"], True, ["config", "--config", "my.json"]),
        (["--json", "doctor"], True, ["doctor", "--json"]),
        (
            ["--json", "--config", "m.json", "doctor"],
            True,
            ["doctor", "--json", "--config", "m.json"],
        ),
        (["--budget", "9000", "eval", "q.jsonl"], True, ["eval", "--budget", "9000", "q.jsonl"]),
        (["--json", "is", "eval", "hard"], True, ["research", "--json", "is", "eval", "hard"]),
        (["--model", "config"], True, ["research", "--model", "config"]),  # a flag's value
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
    with FakeOpenAIServer(router([ANSWER_STEP, ANSWER_STEP])) as llm:  # one per run
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


def test_help_for_a_command_prints_its_help_and_makes_no_llm_call(tmp_path: Path) -> None:
    """`deepsearch help serve` was researched as a question (issue 22, item 1)."""
    with FakeOpenAIServer(router([])) as llm:  # help makes no LLM call
        env = {"OPENAI_API_KEY": SECRET, "OPENAI_BASE_URL": llm.base_url, "HOME": str(tmp_path)}
        for command, usage in (("serve", "deepsearch serve"), ("eval", "deepsearch eval"),
                               ("research", 'deepsearch [OPTIONS] "QUESTION"')):  # fmt: skip
            done = run_cli_in_process("help", command, env=env)
            assert done.returncode == 0, done.stderr
            assert usage in done.stdout, done.stdout
    assert not llm.chat_requests


def test_help_for_a_word_that_is_no_command_is_one_line_not_a_run(tmp_path: Path) -> None:
    """`deepsearch help researh` was researched as "help researh" (found in review)."""
    with FakeOpenAIServer(router([ANSWER_STEP])) as llm:
        env = {"OPENAI_API_KEY": SECRET, "OPENAI_BASE_URL": llm.base_url, "HOME": str(tmp_path)}
        typo = run_cli_in_process("help", "researh", env=env)
        unknown = run_cli_in_process("help", "nosuch", env=env)
        asked = run_cli_in_process("help me?", "--json", env=env)  # a real question
    assert typo.returncode == unknown.returncode == 2
    assert "did you mean `deepsearch help research`?" in typo.stderr
    assert "'nosuch' is not a command" in unknown.stderr and "did you mean" not in unknown.stderr
    assert len(typo.stderr.strip().splitlines()) == 1
    assert asked.returncode == 0 and len(llm.chat_requests) > 0  # only the real question ran


def test_options_before_a_command_apply_to_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`deepsearch --config F config` said "'config' is not a question" (item 2)."""
    config = tmp_path / "my.json"
    config.write_text(json.dumps({"agent": {"max_steps": 7}}), "utf-8")
    env = {"HOME": str(tmp_path), "OPENAI_API_KEY": SECRET}
    done = run_cli_in_process("--config", str(config), "--json", "config", env=env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["run"]["max_steps"]["value"] == 7
    from tests.cli.test_config_and_doctor import closed_port_url, sdk_retries_at_once

    sdk_retries_at_once(monkeypatch)
    offline = {**env, "OPENAI_BASE_URL": closed_port_url()}
    doctor = run_cli_in_process(
        "--json",
        "doctor",
        "--llm-provider",
        "openai",
        "--search-provider",
        "searxng",
        "--searxng-url",
        closed_port_url(),
        env=offline,
    )
    assert doctor.stdout.lstrip().startswith("{"), doctor.stderr
    served = run_cli_in_process("--json", "serve", env=env)
    assert served.returncode == 2 and "deepsearch serve answers over HTTP" in served.stderr
