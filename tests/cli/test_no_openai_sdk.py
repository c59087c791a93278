"""What a research run imports (issue 21), on the golden path's command line through the
console script's entry point, in a fresh interpreter that reports what it loaded:

- no `openai` module against an OpenAI-compatible server: its chat completions go over
  httpx (`llm/openai_wire.py`), and the SDK's import alone cost about a second of CPU;
- with `--json` and stderr a pipe, no rich (nor its markdown-it and pygments, nor
  click): nothing is drawn, the live view's lines are written as they are
  (commands/live.py), and those cost ~0.3 s of CPU before the first LLM request.
  httpx's command-line tool, which imports them, is marked absent
  (`entry.skip_httpx_cli`)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.test_end_to_end import (
    ANSWER_STEP,
    QUESTION,
    SEARCH,
    VISIT,
    cli_args,
    cli_env,
    router,
    search,
    web,
)
from tests.fakes.openai_server import FakeOpenAIServer
from tests.fakes.search_servers import FakeSearchServers
from tests.fakes.web_server import LoopbackServer

__all__ = ["search", "web"]  # the fixtures

# The console script's `main`, its exit swapped for one that first names the loaded
# modules of each package a run must not import.
SCRIPT = """
import os, sys
from deepsearch import entry
def report(code):
    for package in ("openai", "rich", "markdown_it", "pygments", "click"):
        loaded = sorted(m for m in sys.modules if m.split(".")[0] == package)
        print(package.upper() + "_MODULES=" + ",".join(loaded), file=sys.stderr)
    sys.stdout.flush(); sys.stderr.flush()
    os._exit(code)
entry.exit_now = report
entry.main()
"""


# Variables that make rich see a terminal in a pipe (the view then draws with rich).
RICH_TERMINAL = {"FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"}


def loaded(stderr: str, package: str) -> str:
    (line,) = [x for x in stderr.splitlines() if x.startswith(f"{package.upper()}_MODULES=")]
    return line.partition("=")[2]


@pytest.mark.timeout(120)
def test_a_json_run_imports_neither_the_openai_sdk_nor_rich(
    web: LoopbackServer, search: FakeSearchServers, tmp_path: Path
) -> None:
    with FakeOpenAIServer(router([SEARCH, VISIT, ANSWER_STEP])) as llm:
        done = subprocess.run(
            [sys.executable, "-c", SCRIPT, QUESTION, *cli_args(search)],
            env={k: v for k, v in cli_env(llm, tmp_path).items() if k not in RICH_TERMINAL},
            capture_output=True,
            text=True,
            timeout=90,
            check=False,
        )
        assert llm.chat_requests, "the run spoke to the fake OpenAI server"
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["status"] == "answered"
    assert loaded(done.stderr, "openai") == "", "a run imported the SDK"
    for package in ("rich", "markdown_it", "pygments", "click"):
        assert loaded(done.stderr, package) == "", f"a --json run imported {package}"
    assert "answered in" in done.stderr  # the live view and the summary were written
