"""A research run against an OpenAI-compatible server imports no `openai` module (issue
21): its chat completions go over httpx (`llm/openai_wire.py`), and the SDK's import
alone cost about a second of CPU a run. The golden path's command line, in a fresh
interpreter that reports what it loaded."""

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

# `deepsearch.cli.run` as the console script runs it, then the loaded openai modules.
SCRIPT = """
import os, sys
from deepsearch.cli import run
code = run(sys.argv[1:])
loaded = sorted(m for m in sys.modules if m == "openai" or m.startswith("openai."))
print("OPENAI_MODULES=" + ",".join(loaded), file=sys.stderr)
sys.stdout.flush(); sys.stderr.flush()
os._exit(code)
"""


@pytest.mark.timeout(120)
def test_a_research_run_imports_no_openai_module(
    web: LoopbackServer, search: FakeSearchServers, tmp_path: Path
) -> None:
    with FakeOpenAIServer(router([SEARCH, VISIT, ANSWER_STEP])) as llm:
        done = subprocess.run(
            [sys.executable, "-c", SCRIPT, QUESTION, *cli_args(search)],
            env=cli_env(llm, tmp_path),
            capture_output=True,
            text=True,
            timeout=90,
            check=False,
        )
        assert llm.chat_requests, "the run spoke to the fake OpenAI server"
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["status"] == "answered"
    (line,) = [x for x in done.stderr.splitlines() if x.startswith("OPENAI_MODULES=")]
    assert line == "OPENAI_MODULES=", f"a run imported the SDK: {line[:200]}"
