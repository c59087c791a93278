"""Closed standard streams (issue 36, item 6). Python starts a process whose fd 1 or 2
is closed (`>&-`, `2>&-`) with sys.stdout / sys.stderr set to None: the in-process
runs set them so; one real process checks the console script itself."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

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
from tests.fakes.openai_server import FakeOpenAIServer
from tests.fakes.search_servers import FakeSearchServers
from tests.fakes.web_server import LoopbackServer

web, search = e2e.web, e2e.search  # the end-to-end tests' fixtures


def _run_with(name: str, *argv: str, env: dict[str, str] | None = None):  # noqa: ANN202
    """The command with `sys.<name>` None once the runner has swapped the streams in."""
    import deepsearch.cli as cli

    real_run = cli.run

    def run(args: list[str]) -> int:
        setattr(sys, name, None)
        return real_run(args)

    cli_run, cli.run = cli.run, run
    try:
        return run_cli_in_process(*argv, env=env)
    finally:
        cli.run = cli_run


@pytest.mark.parametrize("argv", [["--version"], ["--help"], ["what is it?"]])
def test_a_closed_stdout_is_one_line_and_exit_141_before_anything_runs(argv: list[str]) -> None:
    done = _run_with("stdout", *argv, env={"OPENAI_API_KEY": "", "OPENAI_BASE_URL": ""})
    assert done.returncode == 141
    assert (
        done.stderr.strip()
        == "error: stdout is closed: nothing could be printed, so nothing was run"
    )
    assert "Traceback" not in done.stderr


@pytest.mark.timeout(60)
def test_a_closed_stderr_only_silences_the_view_the_answer_still_comes(
    web: LoopbackServer, search: FakeSearchServers, tmp_path: Path
) -> None:
    with FakeOpenAIServer(router([SEARCH, VISIT, ANSWER_STEP])) as llm:
        done = _run_with("stderr", QUESTION, *cli_args(search), env=cli_env(llm, tmp_path))
    assert done.returncode == 0
    assert json.loads(done.stdout)["status"] == "answered"


def test_the_console_script_with_stdout_closed_prints_no_traceback() -> None:
    script = Path(sys.executable).parent / "deepsearch"
    done = subprocess.run(
        f"'{script}' --version >&-", shell=True, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 141 and "Traceback" not in done.stderr
    assert "stdout is closed" in done.stderr
