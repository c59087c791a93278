"""The first LLM request waits on nothing it does not need (issue 21).

A fresh `deepsearch "question"` process, seen at its first outside connection:
that connection is the LLM's, and by then the process has imported none of what
only later steps use (agent/later.py's modules: the action handlers, team mode, the
re-check; nor the page extractor). That process is the golden path's of
tests/cli/test_end_to_end.py (test_answer_with_verified_citations), which reports
these facts and checks them with `check_first_request` below: one interpreter
started for both. In-process, through the injectable clients: the
later imports start only once the first request is on its way.

No wall time is measured: what a test can check is which modules exist when the
request leaves, and the order of events.
"""

from __future__ import annotations

import importlib.util
from typing import Any

import pytest

from deepsearch.agent import later
from deepsearch.agent.deps import RunOptions
from deepsearch.agent.loop import ResearchRun
from tests.agent.helpers import make_deps, options, router
from tests.fakes.steps import forever


def check_first_request(facts: dict[str, Any], *, llm_url: str) -> None:
    """The facts a fresh console-script process reported at its first outside
    connection (tests/cli/test_end_to_end.py's REPORTING_SCRIPT: "address", "modules",
    "threads"): that connection is the LLM's (at `llm_url`), and nothing that only
    later steps use was imported by then."""
    host, port = llm_url.removeprefix("http://").split(":")
    assert facts["address"] == [host, int(port)], "the first outside call is the LLM's"
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
