"""The console entry flushes and exits without the interpreter's teardown: a thread
still running (a vocabulary build, a pool worker) never holds the exit back."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import NoReturn

import pytest

# A non-daemon thread that would keep a normal interpreter exit waiting for 60 s.
CHILD = """
import sys, threading, time
from deepsearch.entry import exit_now
threading.Thread(target=time.sleep, args=(60,)).start()
sys.stdout.write("the answer")  # no newline: still buffered when exit_now is called
sys.stderr.write("a summary")
exit_now(3)
"""


def test_the_exit_flushes_and_does_not_wait_for_a_background_thread() -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}  # buffered, as usual
    done = subprocess.run(
        [sys.executable, "-c", CHILD],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
        env=env,
    )
    assert (done.returncode, done.stdout, done.stderr) == (3, "the answer", "a summary")


def test_python_dash_m_goes_through_the_same_entry() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "deepsearch", "--version"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0 and done.stdout.strip()


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
