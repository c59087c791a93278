"""Building a run's parts (deepsearch/runtime.py): the sandbox probe, which starts an
interpreter, is not run while they are built (issue 21: it sat on the way to the
first LLM request); the run asks it beside that request (tests/test_first_request.py)."""

from __future__ import annotations

import threading
from contextlib import AsyncExitStack
from typing import Any

import pytest

from deepsearch import runtime
from deepsearch.config import load_config
from deepsearch.sandbox.isolation import IsolationPlan

WAIT_S = 10  # a bound on a wait that fails the test, never a timing


def settings() -> Any:
    base = {
        "llm.provider": "openai",
        "search.providers": ["searxng"],
        "search.searxng_url": "http://127.0.0.1:9",
        "cache.enabled": False,
    }
    environ = {
        "OPENAI_API_KEY": "sk-runtime-0123456789",
        "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
    }
    return load_config(overrides=base, environ=environ).settings


class Probe:
    """A probe that says it started, then waits to be let go."""

    def __init__(self) -> None:
        self.started, self.release, self.done = threading.Event(), threading.Event(), False

    def __call__(self, isolation: str) -> IsolationPlan:
        self.started.set()
        self.release.wait(WAIT_S)
        self.done = True
        return IsolationPlan(usable=False, reason="probed by the test")


@pytest.fixture
def probe(monkeypatch: pytest.MonkeyPatch) -> Probe:
    fake = Probe()
    monkeypatch.setattr("deepsearch.sandbox.runner.probe_isolation", fake)
    return fake


async def test_building_the_parts_leaves_the_sandbox_probe_to_the_run(probe: Probe) -> None:
    """The probe starts an interpreter; the run asks it beside its first LLM request
    (agent/gating.py), so building the parts never waits on it."""
    async with AsyncExitStack() as stack:
        deps = await runtime.build_deps(settings(), stack=stack, emit=lambda _: None, trace=None)
    assert deps.sandbox is not None
    assert not probe.started.is_set()
