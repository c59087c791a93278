"""What only a fresh interpreter shows, from one child process (each start of an
interpreter that imports the package costs ~0.5 s of CPU, so the facts share it):

- start-up: the command modules import no SDK, no HTTP stack, no tokenizer;
- the limits table: schemas are classes built from agent/limits.py when their module is
  imported, so a patched table changes the schema's bounds and descriptions and the
  prompt together;
- models a run rarely validates (LoadedConfig, the rarer check replies, ...) are not built
  by importing their modules (defer_build), even once a step schema is;
- token counting needs no network and no tiktoken cache (every connect is refused,
  TIKTOKEN_CACHE_DIR is an empty folder): the smaller cl100k vocabulary is built here
  (~0.1 s of CPU), o200k, by the same code, in process (tests/llm/test_tokens_offline.py:
  ~0.25 s of CPU less here);
- the command line loads no server stack (starlette, uvicorn, deepsearch.server.app)
  until `serve` runs: not with serve's command module and every command registered,
  nor with anything else the facts above imported;
- the console entry's exit flushes stdout and does not wait for a running thread.

The facts are taken in that order: the import check first (nothing else loaded yet),
the limits patched before any schema module is imported.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.agent.test_prompts import PATCHED

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("openai", "google.genai", "httpx", "httpx2", "tiktoken")

_CHILD = r"""
import json, socket, sys, threading, time
def refuse(self, address):
    raise ConnectionRefusedError(f"offline test: refused {address!r}")
socket.socket.connect = refuse
socket.socket.connect_ex = refuse
facts = {}

import deepsearch.cli, deepsearch.commands, deepsearch.commands.doctor_cmd
import deepsearch.commands.config_cmd, deepsearch.llm.factory, deepsearch.llm.client
facts["heavy"] = [m for m in json.loads(sys.argv[1]) if m in sys.modules]

from deepsearch.agent import limits
for name, value in json.loads(sys.argv[2]).items():
    setattr(limits, name, value)  # before the schemas are built
from deepsearch.agent.context import render_actions
from deepsearch.agent.retrieval.rewrite import RewriteReply
from deepsearch.agent.schema import ACTION_ORDER, AllowFlags, step_schema
from deepsearch.agent.state import AgentState
schema = step_schema(ACTION_ORDER).model_json_schema()["$defs"]
facts["prompt"] = render_actions(AgentState.start("Q?"), AllowFlags(), language="English", beast=False)
facts["fields"] = {
    "queries": schema["SearchPayload"]["properties"]["queries"],
    "url_indices": schema["VisitPayload"]["properties"]["url_indices"],
    "questions": schema["ReflectPayload"]["properties"]["questions"],
    "rewrites": RewriteReply.model_json_schema()["properties"]["queries"],
}
from deepsearch.agent.judging.evaluator import ErrorAnalysis, FreshnessEval
from deepsearch.agent.schema import StepBase
from deepsearch.config.models import LoadedConfig
from deepsearch.web.types import ReadFailure
facts["built"] = [m.__name__ for m in (LoadedConfig, ErrorAnalysis, FreshnessEval, StepBase,
    ReadFailure) if m.__pydantic_complete__]

from deepsearch.llm.tokens import get_encoding, count_tokens
facts["cl100k"] = get_encoding("cl100k_base").encode("hello world")
facts["count"] = count_tokens("The quick brown fox jumps over the lazy dog.", model="gpt-4")

import deepsearch.commands.serve_cmd, typer
from deepsearch.commands import register
register(typer.Typer())
facts["server"] = [m for m in ("starlette", "uvicorn", "deepsearch.server.app") if m in sys.modules]

from deepsearch.entry import exit_now
print(json.dumps(facts))
# A non-daemon thread that would keep a normal interpreter exit waiting for 60 s.
threading.Thread(target=time.sleep, args=(60,)).start()
sys.stdout.write("the answer")  # no newline: still buffered when exit_now is called
sys.stderr.write("a summary")
exit_now(3)
"""


def _facts(tmp_path: Path) -> tuple[subprocess.CompletedProcess[str], Path]:
    cache = tmp_path / "tiktoken-cache"
    cache.mkdir()
    env = {  # no PYTHONUNBUFFERED: stdout is buffered, as usual
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "TIKTOKEN_CACHE_DIR": str(cache),
        "DATA_GYM_CACHE_DIR": str(cache),
        "HTTPS_PROXY": "http://127.0.0.1:9",
        "HTTP_PROXY": "http://127.0.0.1:9",
    }
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, json.dumps(HEAVY), json.dumps(PATCHED)],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=30,  # the thread sleeps 60 s: an exit that waits for it times out
        check=False,
    )
    return done, cache


def test_a_fresh_interpreter_s_imports_limits_token_counting_and_exit(tmp_path: Path) -> None:
    done, cache = _facts(tmp_path)
    facts_line, _, tail = done.stdout.partition("\n")
    assert (done.returncode, tail, done.stderr) == (3, "the answer", "a summary"), done.stderr
    facts: dict[str, Any] = json.loads(facts_line)

    assert facts["heavy"] == [], "start-up imported an SDK, the HTTP stack or the tokenizer"

    fields = facts["fields"]
    expected = {
        "queries": PATCHED["MAX_QUERIES"],
        "url_indices": PATCHED["MAX_VISITS"],
        "questions": PATCHED["MAX_SUBQUESTIONS"],
        "rewrites": PATCHED["MAX_REWRITES"],
    }
    for field, value in expected.items():
        assert fields[field]["maxItems"] == value, field
    for field in ("queries", "url_indices", "questions"):
        assert f"up to {expected[field]} " in fields[field]["description"], field
    prompt = facts["prompt"]
    assert "up to 7 web queries" in prompt and "up to 8 indices" in prompt
    assert "up to 3 sub-questions" in prompt

    # Models a run rarely validates are built at first use, not at import (issue 21).
    assert facts["built"] == []

    # ids as produced by tiktoken with its downloaded files
    assert facts["cl100k"] == [15339, 1917]
    assert facts["count"] == 10
    assert list(cache.iterdir()) == [], "nothing written to the tiktoken cache"

    assert facts["server"] == [], "the server stack loaded before `serve` ran"
