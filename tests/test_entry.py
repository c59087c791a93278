"""The console entry flushes and exits without the interpreter's teardown: a thread
still running (a vocabulary build, a pool worker) never holds the exit back."""

from __future__ import annotations

import os
import subprocess
import sys

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
