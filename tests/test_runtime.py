"""Building a run's parts (deepsearch/runtime.py): the sandbox probe, which starts an
interpreter, runs in a thread while the clients are built, not after them (issue 21:
it sat on the way to the first LLM request)."""

from __future__ import annotations

import threading
from contextlib import AsyncExitStack
from typing import Any

import pytest

from deepsearch import runtime
from deepsearch.config import load_config
from deepsearch.errors import ConfigError
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


def build_llm_client_seeing(probe: Probe, *, fail: bool) -> Any:
    from deepsearch.llm import factory

    real = factory.build_llm_client

    def build(*args: Any, **kwargs: Any) -> Any:
        probe_running = probe.started.wait(WAIT_S)
        probe.release.set()
        assert probe_running, "the sandbox probe had not started when the clients were built"
        if fail:
            raise ConfigError("no model for the test")
        return real(*args, **kwargs)

    return build


async def test_the_sandbox_probe_runs_while_the_clients_are_built(
    probe: Probe, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        "deepsearch.llm.factory.build_llm_client", build_llm_client_seeing(probe, fail=False)
    )
    async with AsyncExitStack() as stack:
        deps = await runtime.build_deps(settings(), stack=stack, emit=lambda _: None, trace=None)
        assert probe.done  # awaited before the parts are handed over
        assert deps.sandbox.availability() == (False, "probed by the test")


async def test_a_failed_build_does_not_wait_for_the_probe(
    probe: Probe, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        "deepsearch.llm.factory.build_llm_client", build_llm_client_seeing(probe, fail=True)
    )
    probe.release.clear()
    real_set = probe.release.set
    monkeypatch.setattr(probe.release, "set", lambda: None)  # the probe stays blocked
    async with AsyncExitStack() as stack:
        with pytest.raises(ConfigError, match="no model"):
            await runtime.build_deps(settings(), stack=stack, emit=lambda _: None, trace=None)
    assert not probe.done
    real_set()
