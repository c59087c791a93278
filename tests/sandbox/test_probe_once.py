"""A wrapper's check passes once per process: every later Sandbox (a `serve` request, a
library call) reuses the answer instead of starting the wrapper chain again; a wrapper
that failed is checked again (the failure may have been the machine's load)."""

from __future__ import annotations

import pytest

import deepsearch.sandbox.runner as runner
from deepsearch.sandbox.isolation import IsolationPlan
from deepsearch.sandbox.runner import Sandbox

GOOD = IsolationPlan(usable=True, reason="good", prefix=["good"])
FLAKY = IsolationPlan(usable=True, reason="flaky", prefix=["flaky"])


@pytest.fixture
def checked(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The plans checked, in order; "flaky" fails, any other passes."""
    seen: list[str] = []

    def check(plan: IsolationPlan) -> str | None:
        seen.append(plan.reason)
        return "exit 1: busy" if plan.reason == "flaky" else None

    monkeypatch.setattr(runner, "_PASSED", set())
    monkeypatch.setattr(runner, "check_plan", check)
    return seen


def test_a_wrapper_that_passed_is_not_checked_again_by_a_later_sandbox(
    monkeypatch: pytest.MonkeyPatch, checked: list[str]
) -> None:
    monkeypatch.setattr(runner, "unshare_candidates", lambda: [GOOD])
    for _ in range(3):
        usable, reason = Sandbox().availability()
        assert (usable, reason) == (True, "good, seccomp: net/pid/mount namespaces")
    assert checked == ["good"]
    # Another wrapper (here: another command line) is a plan of its own, checked once.
    other = GOOD.model_copy(update={"prefix": ["good", "--other"]})
    monkeypatch.setattr(runner, "unshare_candidates", lambda: [other])
    assert Sandbox().availability()[0] and Sandbox().availability()[0]
    assert checked == ["good", "good"]


def test_a_wrapper_that_failed_is_checked_again_each_time(
    monkeypatch: pytest.MonkeyPatch, checked: list[str]
) -> None:
    monkeypatch.setattr(runner, "unshare_candidates", lambda: [FLAKY, GOOD])
    for _ in range(2):
        usable, reason = Sandbox().availability()
        assert usable and reason.startswith("good")
    assert checked == ["flaky", "good", "flaky"]
    monkeypatch.setattr(runner, "unshare_candidates", lambda: [FLAKY])
    assert Sandbox().availability() == (
        False,
        f"flaky: exit 1: busy (to enable: {runner.ENABLE_HINT})",
    )
    assert checked == ["flaky", "good", "flaky", "flaky"]
