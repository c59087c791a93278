"""tests/conftest.py's per-test rules, each checked by calling its hook as pytest does:
a test's changes to the environment and to signal handlers end with it, and outside
tests/sandbox the sandbox probe is asked once a session."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tests import conftest


def test_what_a_test_did_to_the_environment_ends_with_it() -> None:
    hermetic = conftest._HERMETIC
    session_home = os.fsdecode(hermetic.baseline_data[b"HOME"])
    test_home = os.environ["HOME"]
    assert test_home != session_home  # start_test gave this test a HOME of its own
    os.environ["DEEPSEARCH_INPROC41_SET"] = "1"
    del os.environ["NO_COLOR"]
    os.environ["SSL_CERT_FILE"] = "/elsewhere.pem"
    try:
        hermetic.end_test()
        assert "DEEPSEARCH_INPROC41_SET" not in os.environ
        assert os.environ["NO_COLOR"] == "1"
        assert os.environ["SSL_CERT_FILE"] != "/elsewhere.pem"
        assert os.environ["HOME"] == session_home
        assert "DEEPSEARCH_DATA_DIR" not in os.environ
        assert {k.encode(): v.encode() for k, v in os.environ.items()} == hermetic.baseline_data
    finally:
        hermetic.start_test()  # this test's own HOME again, as its teardown expects
    assert os.environ["HOME"] not in (session_home, test_home)  # a new one: never shared
    assert os.environ["DEEPSEARCH_CACHE_DIR"] == os.environ["HOME"] + "/.cache/deepsearch"


def test_a_handler_a_test_left_installed_fails_it_and_is_removed() -> None:
    state = conftest._TestState()
    before = signal.getsignal(signal.SIGTERM)
    signal.signal(signal.SIGTERM, lambda *_: None)
    with pytest.raises(AssertionError, match=r"left signal handlers installed: \['SIGTERM'\]"):
        conftest._check_state(state)
    assert signal.getsignal(signal.SIGTERM) is before


def test_outside_tests_sandbox_the_probe_is_asked_once(monkeypatch: pytest.MonkeyPatch) -> None:
    from deepsearch.sandbox import runner

    asked: list[Any] = []
    plan = runner.IsolationPlan.model_construct()

    def probe(isolation: Any) -> runner.IsolationPlan:
        asked.append(isolation)
        return plan

    monkeypatch.setattr(conftest, "_REAL_PROBE", [probe])
    monkeypatch.setattr(conftest, "_PROBED", {})
    monkeypatch.setattr(runner, "probe_isolation", runner.probe_isolation)
    elsewhere = SimpleNamespace(path=Path("tests/cli/test_x.py"))
    conftest._probe_for(elsewhere)  # type: ignore[arg-type]
    first, second = runner.probe_isolation("auto"), runner.probe_isolation("auto")
    assert asked == ["auto"]
    assert first == plan and first is not plan and second is not first  # copies
    conftest._probe_for(SimpleNamespace(path=Path("tests/sandbox/test_x.py")))  # type: ignore[arg-type]
    assert runner.probe_isolation is probe


def test_tmp_path_is_on_the_ram_disk_unless_a_root_was_chosen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shm = conftest._ram_disk()
    if shm is None:
        pytest.skip("no writable /dev/shm here")
    root = Path(os.environ["PYTEST_DEBUG_TEMPROOT"]).resolve()
    assert tmp_path.resolve().is_relative_to(root)
    if root == shm.resolve():  # not a root the caller chose
        assert tmp_path.resolve().is_relative_to(shm.resolve())
    monkeypatch.setenv("PYTEST_DEBUG_TEMPROOT", "/chosen/by/the/caller")
    conftest._tmp_path_in_ram()
    assert os.environ["PYTEST_DEBUG_TEMPROOT"] == "/chosen/by/the/caller"


def test_a_pytest_process_exits_with_its_heap_frozen(monkeypatch: pytest.MonkeyPatch) -> None:
    import atexit
    import gc

    registered: list[Any] = []
    monkeypatch.setattr(atexit, "register", registered.append)
    monkeypatch.setattr(
        atexit, "unregister", lambda f: registered.remove(f) if f in registered else None
    )
    monkeypatch.setattr(conftest._HERMETIC, "root", None)  # this session's: not removed here
    monkeypatch.setattr(conftest._HERMETIC, "data_root", None)
    conftest.pytest_unconfigure(SimpleNamespace())  # type: ignore[arg-type]
    conftest.pytest_unconfigure(SimpleNamespace())  # type: ignore[arg-type]  # mutmut: twice
    assert registered == [conftest._exit_without_a_last_collection]
    left = [[] for _ in range(3)]  # tracked by the collector, not yet frozen
    before = gc.get_freeze_count()
    registered[0]()
    assert gc.get_freeze_count() >= before + len(left)
