"""What an xdist worker tells the controller: the messages the controller's report uses.

For each test a worker sends six messages: "logstart", a report for each of setup,
call and teardown, "logfinish" and "runtest_protocol_complete". Each is serialized by
execnet in the worker, read by a thread of the controller, handed to its event loop
and through pytest's hooks, at ~2,600 tests x 3 workers. With the suite's `-q`
nothing is printed for "logstart" (xdist turns the test's path off; only `-v` prints
a line there), and a setup or teardown that passed and captured nothing is counted
and dropped by the terminal report (no letter, no word): xdist itself keeps passed
collection reports back for the same reason (xdist#330). Those two are not sent.

Everything else is: any report that failed, was skipped or captured output, the call
report of every test, "logfinish" (the progress count) and the protocol's end (the
scheduler's). A run whose output reads every phase gets every message: `-v`,
`--durations` (setup and teardown times), `--junitxml` and `--report-log`.

Measured with 2,600 empty tests on three workers (median CPU of 5 runs, the controller
and workers together): 5.97 s sent in full, 5.58 s without "logstart", 5.25 s
without the passed setup and teardown reports too.

tests/conftest.py installs it in each worker (pytest_configure).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

# Options whose output reads every phase's report, or the start of each test.
_READ_EVERY_PHASE = ("durations", "xmlpath", "report_log")


def reads_every_message(config: pytest.Config) -> bool:
    """Whether this run's output needs all six messages of each test."""
    if config.get_verbosity() > 0:
        return True
    return any(config.getoption(name, None) is not None for name in _READ_EVERY_PHASE)


def is_unread(name: str, kwargs: dict[str, Any]) -> bool:
    """A message the controller of a quiet run would read and do nothing with."""
    if name == "logstart":
        return True
    if name != "testreport":
        return False
    data = kwargs["data"]
    return (
        data["when"] in ("setup", "teardown")
        and data["outcome"] == "passed"
        and not data["sections"]
        and data["longrepr"] is None
    )


def send_only_what_is_read(config: pytest.Config) -> bool:
    """In an xdist worker of a quiet run, stop sending the messages nobody reads.
    False (nothing changed) outside a worker or where the output reads them all."""
    if not hasattr(config, "workerinput") or reads_every_message(config):
        return False
    interactor = worker_interactor(config)
    if interactor is None:
        return False
    interactor.sendevent = _filtered(interactor.sendevent)
    return True


def worker_interactor(config: pytest.Config) -> Any | None:
    """The xdist worker's link to the controller, or None. The worker runs xdist's
    remote module as execnet's `__channelexec__`, not as `xdist.remote`: its class is
    found by name."""
    interactors = [
        plugin
        for plugin in config.pluginmanager.get_plugins()
        if type(plugin).__name__ == "WorkerInteractor"
    ]
    return interactors[0] if len(interactors) == 1 else None


def _filtered(send: Callable[..., None]) -> Callable[..., None]:
    def sendevent(name: str, **kwargs: Any) -> None:
        if not is_unread(name, kwargs):
            send(name, **kwargs)

    return sendevent
