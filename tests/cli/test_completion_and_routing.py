"""Shell completion, command words routed as commands, one help style (issue 36,
item 12): `deepsearch completion bash` was researched as a question; `help help`
suggested itself; `--quiet help` was "not a question"; the root help was plain Click
while the commands had Rich panels."""

from __future__ import annotations

import pytest

from deepsearch.cli import route
from tests.cli.inprocess import run_cli_in_process


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["completion", "bash"], ["completion", "bash"]),
        (["help", "completion"], ["completion", "--help"]),
        (["help", "help"], ["--help"]),
        (["help", "version"], ["--help"]),
        (["--quiet", "help"], ["--help"]),
        (["--json", "version"], ["--version"]),
        (["--json", "help", "serve"], ["serve", "--help"]),
        (
            ["--quiet", "help", "me", "find", "it"],
            ["research", "--quiet", "help", "me", "find", "it"],
        ),
        (["--budget", "200k", "completion"], ["completion", "--budget", "200k"]),
    ],
)
def test_command_words_are_routed_as_commands(args: list[str], expected: list[str]) -> None:
    assert route(args, stdin_is_tty=True) == expected


@pytest.mark.parametrize(
    ("shell", "line"),
    [
        ("bash", "complete -o default -F _deepsearch_completion deepsearch"),
        ("zsh", "#compdef deepsearch"),
        ("fish", "complete --command deepsearch"),
    ],
)
def test_completion_prints_the_script_of_each_shell(shell: str, line: str) -> None:
    done = run_cli_in_process("completion", shell)
    assert done.returncode == 0, done.stderr
    assert line in done.stdout and "_DEEPSEARCH_COMPLETE=complete_" in done.stdout


def test_completion_for_another_shell_is_one_usage_line() -> None:
    done = run_cli_in_process("completion", "tcsh")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip() == "error: 'tcsh': completion is for bash, zsh, fish"


def test_a_tab_completes_the_command_names_and_researches_nothing() -> None:
    env = {
        "_DEEPSEARCH_COMPLETE": "complete_bash",
        "COMP_WORDS": "deepsearch co",
        "COMP_CWORD": "1",
    }
    done = run_cli_in_process(env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["completion", "config", "cost"]
    options = run_cli_in_process(
        env={**env, "COMP_WORDS": "deepsearch research --bud", "COMP_CWORD": "2"}
    )
    assert options.stdout.split() == ["--budget"]


def test_the_root_help_has_the_commands_panels_wrapped_to_the_width() -> None:
    done = run_cli_in_process("--help", env={"COLUMNS": "60"})
    assert done.returncode == 0
    assert "╭─ Commands" in done.stdout and "╭─ Options" in done.stdout
    assert "<bool>" not in done.stdout
    assert max(len(line) for line in done.stdout.splitlines()) <= 60
    research = run_cli_in_process("research", "--help", env={"COLUMNS": "60"}).stdout
    assert "╭─ Options" in research  # the same style as the root's
