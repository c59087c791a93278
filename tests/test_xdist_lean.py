"""A worker of the suite's quiet run (tests/xdist_lean.py) keeps back only the messages
the controller reads and does nothing with: every failure, skip, captured output, call
report, progress count and end of protocol still reaches it."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from tests import xdist_lean


def _data(config: pytest.Config, when: str, outcome: str, **extra: Any) -> dict[str, Any]:
    """A report as a worker serializes it (pytest's own hook)."""
    report = pytest.TestReport(
        nodeid="tests/t.py::test_x",
        location=("tests/t.py", 1, "test_x"),
        keywords={"test_x": 1},
        outcome=outcome,  # type: ignore[arg-type]
        longrepr=extra.pop("longrepr", None),
        when=when,  # type: ignore[arg-type]
        **extra,
    )
    data = config.hook.pytest_report_to_serializable(config=config, report=report)
    assert isinstance(data, dict)
    return data


def test_passed_setup_and_teardown_that_captured_nothing_are_kept_back(
    pytestconfig: pytest.Config,
) -> None:
    for when in ("setup", "teardown"):
        assert xdist_lean.is_unread("testreport", {"data": _data(pytestconfig, when, "passed")})
    assert xdist_lean.is_unread("logstart", {"nodeid": "tests/t.py::test_x", "location": ()})


@pytest.mark.parametrize("when", ["setup", "call", "teardown"])
@pytest.mark.parametrize(
    ("outcome", "extra"),
    [
        ("failed", {"longrepr": "AssertionError: boom"}),
        ("failed", {}),
        ("skipped", {"longrepr": ("tests/t.py", 3, "Skipped: not here")}),
        ("passed", {"sections": [("Captured stdout setup", "hello")]}),
        ("passed", {"sections": [("Captured log teardown", "WARNING a warning")]}),
    ],
)
def test_every_failure_skip_and_captured_output_is_sent(
    pytestconfig: pytest.Config, when: str, outcome: str, extra: dict[str, Any]
) -> None:
    data = _data(pytestconfig, when, outcome, **extra)
    assert not xdist_lean.is_unread("testreport", {"data": data})


def test_every_call_report_and_the_messages_the_controller_counts_are_sent(
    pytestconfig: pytest.Config,
) -> None:
    assert not xdist_lean.is_unread("testreport", {"data": _data(pytestconfig, "call", "passed")})
    for name in ("logfinish", "runtest_protocol_complete", "collectionfinish", "workerready"):
        assert not xdist_lean.is_unread(name, {"data": {}})


class WorkerInteractor:
    """Stands in for xdist's (found by its class name in the worker)."""

    def __init__(self) -> None:
        self.sent: list[str] = []

    def sendevent(self, name: str, **kwargs: Any) -> None:
        self.sent.append(name)


def _worker_config(*, verbose: int = -1, **options: Any) -> tuple[Any, WorkerInteractor]:
    interactor = WorkerInteractor()
    plugins = [object(), interactor]
    config = SimpleNamespace(
        workerinput={"workerid": "gw0"},
        pluginmanager=SimpleNamespace(get_plugins=lambda: set(plugins)),
        get_verbosity=lambda: verbose,
        getoption=lambda name, default=None: options.get(name, default),
    )
    return config, interactor


def _play(config: Any, interactor: WorkerInteractor, pytestconfig: pytest.Config) -> list[str]:
    """One passing test's six messages, as the worker sends them."""
    interactor.sendevent("logstart", nodeid="tests/t.py::test_x", location=())
    for when in ("setup", "call", "teardown"):
        interactor.sendevent("testreport", data=_data(pytestconfig, when, "passed"))
    interactor.sendevent("logfinish", nodeid="tests/t.py::test_x", location=())
    interactor.sendevent("runtest_protocol_complete", item_index=0, duration=0.1)
    return interactor.sent


def test_a_quiet_worker_sends_three_messages_a_passing_test(pytestconfig: pytest.Config) -> None:
    config, interactor = _worker_config()
    assert xdist_lean.send_only_what_is_read(config) is True
    sent = _play(config, interactor, pytestconfig)
    assert sent == ["testreport", "logfinish", "runtest_protocol_complete"]


@pytest.mark.parametrize(
    "options",
    [{"verbose": 1}, {"durations": 0}, {"xmlpath": "junit.xml"}, {"report_log": "log.jsonl"}],
)
def test_a_run_whose_output_reads_every_phase_gets_every_message(
    pytestconfig: pytest.Config, options: dict[str, Any]
) -> None:
    config, interactor = _worker_config(**options)
    assert xdist_lean.send_only_what_is_read(config) is False
    assert len(_play(config, interactor, pytestconfig)) == 6


def test_the_controller_and_a_plain_run_are_left_alone(pytestconfig: pytest.Config) -> None:
    config, interactor = _worker_config()
    del config.workerinput
    assert xdist_lean.send_only_what_is_read(config) is False
    assert len(_play(config, interactor, pytestconfig)) == 6


def test_this_worker_of_the_suite_sends_only_what_is_read(pytestconfig: pytest.Config) -> None:
    """The suite's own run (`make test`: -q, three workers) has it installed: if xdist
    renames what it finds, the suite says so rather than silently paying again."""
    if not hasattr(pytestconfig, "workerinput") or xdist_lean.reads_every_message(pytestconfig):
        pytest.skip("runs in an xdist worker of a quiet run (make test)")
    interactor = xdist_lean.worker_interactor(pytestconfig)
    assert interactor is not None
    assert interactor.sendevent.__qualname__ == "_filtered.<locals>.sendevent"
