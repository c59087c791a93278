"""The console entry: `python -m deepsearch` goes through it, and Ctrl-C while the modules
load exits 130 (its exit, which flushes and never waits for a running thread, is seen in a
fresh process: tests/test_fresh_process.py)."""

from __future__ import annotations

import runpy
import sys
from typing import NoReturn

import pytest

# The exit itself (flushes, does not wait for a running thread) needs a real process:
# tests/test_fresh_process.py.


def test_python_dash_m_goes_through_the_same_entry(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`python -m deepsearch` runs `deepsearch/__main__.py` as `__main__`: run here the
    way the interpreter runs it, it must reach entry.main and its exit."""
    from deepsearch import __version__, entry

    codes: list[int] = []

    def record(code: int) -> NoReturn:
        codes.append(code)
        raise SystemExit(code)

    monkeypatch.setattr(entry, "exit_now", record)
    # main's own first step, which would mark httpx's CLI absent for this whole process
    monkeypatch.setattr(entry, "skip_httpx_cli", lambda: codes.append(-1))
    monkeypatch.setattr(sys, "argv", ["deepsearch", "--version"])
    with pytest.raises(SystemExit):
        runpy.run_module("deepsearch", run_name="__main__", alter_sys=True)
    assert codes == [-1, 0]
    assert __version__ in capsys.readouterr().out


def test_ctrl_c_while_the_modules_load_exits_130_without_a_traceback(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Ctrl-C in the first half second, before the run installs its own handler (the
    command's modules are still importing): exit 130, nothing on stderr."""
    import deepsearch.cli
    from deepsearch import entry

    def interrupted(argv: list[str]) -> int:
        raise KeyboardInterrupt

    codes: list[int] = []

    def record(code: int) -> NoReturn:
        codes.append(code)
        raise SystemExit(code)

    monkeypatch.setattr(deepsearch.cli, "run", interrupted)
    monkeypatch.setattr(entry, "exit_now", record)
    monkeypatch.setattr(sys, "argv", ["deepsearch", "a question"])
    try:
        with pytest.raises(SystemExit):
            entry.main()
    except KeyboardInterrupt:  # escaped main: the user would have seen a traceback
        pytest.fail("Ctrl-C during start-up escaped the entry point")
    assert codes == [130]
    assert capsys.readouterr().err == ""
