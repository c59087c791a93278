"""The first LLM request waits on nothing it does not need (issue 21).

A fresh `deepsearch "question"` process, stopped at its first outside connection:
that connection is the LLM's, and by then the process has imported none of what
only later steps use (agent/later.py's modules: the action handlers, team mode, the
re-check; nor the page extractor). In-process, through the injectable clients: the
later imports start only once the first request is on its way.

No wall time is measured: what a test can check is which modules exist when the
request leaves, and the order of events.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from deepsearch.agent import later
from deepsearch.agent.deps import RunOptions
from deepsearch.agent.loop import ResearchRun
from tests.agent.helpers import make_deps, options, router
from tests.fakes.steps import forever

ROOT = Path(__file__).resolve().parents[1]
LLM_PORT = 9  # never connected to: the child stops when it is about to

# The console entry, with an audit hook that records the process at its first
# outside connection and ends it there (the run need not go on).
_CHILD = r"""
import json, os, sys, threading
out = sys.argv[1]
def first_connect(event, args):
    if event == "socket.connect" and isinstance(args[1], tuple):
        facts = {
            "address": list(args[1][:2]),
            "modules": sorted(m for m, v in sys.modules.items() if v is not None),
            "threads": [t.name for t in threading.enumerate()],
        }
        with open(out, "w", encoding="utf-8") as f:
            json.dump(facts, f)
        os._exit(0)
sys.addaudithook(first_connect)
sys.argv = ["deepsearch", *json.loads(sys.argv[2])]
from deepsearch.entry import main
main()
"""


def _first_connect(tmp_path: Path) -> dict[str, Any]:
    out = tmp_path / "facts.json"
    args = [
        "What is the capital of Australia?",
        "--json",
        "--quiet",
        "--llm-provider",
        "openai",
        "--search-provider",
        "searxng",
        "--searxng-url",
        "http://127.0.0.1:7/",
        "--allow-private-urls",
        "--no-cache",
    ]
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "DEEPSEARCH_CACHE_DIR": str(tmp_path / "cache"),
        "OPENAI_API_KEY": "sk-test-placeholder",
        "OPENAI_BASE_URL": f"http://127.0.0.1:{LLM_PORT}/v1",
        "NO_COLOR": "1",
    }
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(out), json.dumps(args)],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0 and out.exists(), done.stderr[-2000:]
    facts: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    return facts


def test_the_first_request_leaves_before_what_later_steps_need_is_imported(
    tmp_path: Path,
) -> None:
    facts = _first_connect(tmp_path)
    assert facts["address"] == ["127.0.0.1", LLM_PORT], "the first outside call is the LLM's"
    imported = set(facts["modules"])
    assert "deepsearch.agent.loop" in imported  # the run had started
    everything = later.modules_for(RunOptions(team_size=2, recheck=True, reflect=True))
    early = sorted(imported.intersection(everything))
    assert early == [], f"imported before the first LLM request: {early}"
    handlers = sorted(m for m in imported if m.startswith("deepsearch.agent.actions."))
    assert handlers == [], handlers
    assert not {"trafilatura", "lxml", "deepsearch.web.extract"} & imported
    assert "later-imports" not in facts["threads"]


async def test_the_later_imports_start_once_the_first_request_is_sent(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    log: list[str] = []
    monkeypatch.setattr(later, "start", lambda opts: log.append("later imports"))
    answer = {"think": "", "action": {"answer": {"answer": "It was completed in 1889."}}}
    route = router([forever(answer)])

    def reply(request: Any) -> Any:
        if request.tool == "agent":
            log.append("agent request")
        return route(request)

    deps, _ = make_deps(reply)
    run = ResearchRun("When was the Eiffel Tower completed?", deps, options(max_steps=2))
    await run.run()
    assert log[:2] == ["agent request", "later imports"], log


async def test_the_sandbox_is_probed_beside_the_first_request_and_step_2_waits(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Coding is never offered on step 1: the probe (an interpreter started) runs in a
    thread once step 1's request is sent, and step 2's choices wait for its verdict."""
    import threading

    from deepsearch.agent.schema import allowed_actions
    from deepsearch.sandbox.isolation import IsolationPlan
    from deepsearch.sandbox.runner import Sandbox
    from deepsearch.web.types import SearchResult
    from tests.fakes.memory_web import FakeSearch

    log: list[str] = []
    release = threading.Event()
    monkeypatch.setattr(later, "start", lambda opts: None)

    def probe() -> IsolationPlan:
        log.append("probe started")
        release.wait(10)  # a bound on a wait that fails the test, never a timing
        log.append("probe done")
        return IsolationPlan(usable=False, reason="no namespaces here")

    def results(query: Any) -> list[SearchResult]:
        release.set()  # the probe ends once step 1's search runs, not before
        url = "https://en.wikipedia.org/wiki/Eiffel_Tower"
        return [SearchResult(title="Eiffel Tower", url=url, snippet="1889", provider="f")]

    steps = [
        {"think": "", "action": {"search": {"queries": ["eiffel tower completed"]}}},
        forever({"think": "", "action": {"answer": {"answer": "It was completed in 1889."}}}),
    ]
    route = router(steps)

    def reply(request: Any) -> Any:
        if request.tool == "agent":
            log.append("agent request")
        return route(request)

    deps, provider = make_deps(reply, search=FakeSearch(results), sandbox=Sandbox(probe=probe))
    run = ResearchRun("When was the Eiffel Tower completed?", deps, options(max_steps=2))
    await run.run()
    assert log[:4] == ["agent request", "probe started", "probe done", "agent request"], log
    step_2 = allowed_actions(provider.calls_for("agent")[1].json_schema or {})
    assert "coding" not in step_2 and run.gate.withdrawn["coding"] == "no namespaces here"


def test_what_a_run_imports_later_depends_on_its_options() -> None:
    plain = later.modules_for(RunOptions(team_size=1, recheck=False, reflect=False))
    assert set(later.STEPS) <= set(plain)
    assert not set(later.TEAM + later.RECHECK + later.REFLECT) & set(plain)
    full = later.modules_for(RunOptions(team_size=2, recheck=True, reflect=True))
    assert set(later.TEAM + later.RECHECK + later.REFLECT) <= set(full)


def test_every_later_module_exists() -> None:
    # A misspelt name would import nothing, silently (import_all skips failures).
    for name in later.STEPS + later.REFLECT + later.TEAM + later.RECHECK:
        assert importlib.util.find_spec(name) is not None, name
