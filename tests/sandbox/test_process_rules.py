"""The parent's side of a run, with tiny shell processes in place of the sandbox: the
request is fed, the output drained and capped, the run waited for under its wall-clock
limit, and the whole process group killed however the run ends (also on cancel)."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path

import pytest

from deepsearch.sandbox import process
from deepsearch.sandbox.process import Ended, drain, kill_group, read_pipe, start, supervise

ENV = {"PATH": "/usr/bin:/bin", "MARK": "from-env"}


async def sh(script: str, cwd: str, *, pass_fds: tuple[int, ...] = (), preexec=None):  # type: ignore[no-untyped-def]
    return await start(
        ["/bin/sh", "-c", script], cwd=cwd, env=ENV, preexec=preexec, pass_fds=pass_fds
    )


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    # A zombie still answers: read its state.
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] == "Z"
    except OSError:
        return True


def gone_soon(pid: int, within_s: float = 5.0) -> bool:
    """gone(), once the kernel has finished a killed process's exit: its pipes close (the
    end of output the run waits for) before it turns into a zombie, and on a loaded
    machine it may wait for a CPU in between (seen once: still running at the check)."""
    deadline = time.monotonic() + within_s
    while not gone(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def test_a_run_is_fed_its_request_and_its_output_and_envelope_collected(tmp_path: Path) -> None:
    async def go() -> tuple[Ended, int | None, int]:
        read_end, write_end = os.pipe()
        script = f"cat; echo err >&2; printf envelope > /dev/fd/{write_end}; exit 3"
        child = await sh(script, str(tmp_path), pass_fds=(write_end,))
        os.close(write_end)
        ended = await supervise(child, read_end, b"request", 1000, 5.0)
        return ended, child.returncode, await child.wait()

    ended, returncode, status = asyncio.run(go())
    assert ended == Ended(b"request", 7, b"err\n", 4, b"envelope", False)
    assert returncode == status == 3


def test_output_is_kept_up_to_the_cap_and_counted_in_full(tmp_path: Path) -> None:
    async def go() -> Ended:
        read_end, write_end = os.pipe()
        child = await sh("head -c 200000 /dev/zero; head -c 5 /dev/zero >&2", str(tmp_path))
        os.close(write_end)
        return await supervise(child, read_end, b"", 100, 5.0)

    ended = asyncio.run(go())
    assert (ended.out, ended.out_total) == (b"\0" * 100, 200000)
    assert (ended.err, ended.err_total) == (b"\0" * 5, 5)
    assert ended.envelope == b"" and not ended.timed_out


def test_a_run_past_its_wall_clock_is_killed_with_its_whole_group(tmp_path: Path) -> None:
    async def go(wall_s: float) -> tuple[Ended, list[int], float]:
        read_end, write_end = os.pipe()
        # A grandchild in the same group, and the shell itself, both sleeping.
        child = await sh("sleep 30 & echo $! ; sleep 30", str(tmp_path))
        os.close(write_end)
        began = time.monotonic()
        ended = await supervise(child, read_end, b"", 100, wall_s)
        return ended, [child.pid, *map(int, ended.out.split())], time.monotonic() - began

    # A short limit first; a loaded machine may not start the grandchild within it (no
    # pid printed), and then the run is repeated under a longer one.
    for wall_s in (0.05, 0.2, 1.0):
        ended, pids, took = asyncio.run(go(wall_s))
        assert ended.timed_out and took < 5
        assert all(gone_soon(pid) for pid in pids)
        if len(pids) == 2:
            break
    assert len(pids) == 2, "no grandchild pid read: it never started, or the kill missed it"


def test_a_cancelled_run_is_killed_with_its_group(tmp_path: Path) -> None:
    async def go() -> int:
        read_end, write_end = os.pipe()
        child = await sh("sleep 30", str(tmp_path))
        os.close(write_end)
        task = asyncio.ensure_future(supervise(child, read_end, b"", 100, 30.0))
        for _ in range(5):  # it runs up to its wait for the child
            await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return child.pid

    assert gone(asyncio.run(go()))


def test_a_descendant_that_holds_the_output_open_does_not_hold_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(process, "_DRAIN_AFTER_KILL_S", 0.02)  # the pipes never close
    pid_file = tmp_path / "escaped"

    async def go() -> tuple[Ended, float]:
        read_end, write_end = os.pipe()
        # It leaves the group (its own session) and keeps stdout, stderr and the envelope;
        # the shell ends once it has left (its pid written), not before.
        script = (
            f"setsid sh -c 'echo $$ > {pid_file}.new; mv {pid_file}.new {pid_file}; "
            f"exec sleep 30' & while [ ! -e {pid_file} ]; do sleep 0.005; done; exit 0"
        )
        child = await sh(script, str(tmp_path), pass_fds=(write_end,))
        os.close(write_end)
        began = time.monotonic()
        ended = await supervise(child, read_end, b"", 100, 5.0)
        return ended, time.monotonic() - began

    try:
        ended, took = asyncio.run(go())
    finally:
        if pid_file.exists():
            os.kill(int(pid_file.read_text()), signal.SIGKILL)
    assert took < 2 and not ended.timed_out
    # What was not read by then is given up: nothing kept, nothing counted.
    assert ended == Ended(b"", 0, b"", 0, b"", False)


def test_the_run_starts_in_a_session_of_its_own_where_and_as_asked(tmp_path: Path) -> None:
    async def go() -> tuple[bytes, int]:
        read_end, write_end = os.pipe()
        script = "echo $MARK; pwd; umask; ps -o sid= -p $$ 2>/dev/null || cat /proc/$$/stat"
        child = await sh(script, str(tmp_path), preexec=lambda: os.umask(0o027) and None)
        os.close(write_end)
        ended = await supervise(child, read_end, b"", 10_000, 5.0)
        return ended.out, child.pid

    out, pid = asyncio.run(go())
    lines = out.decode().split("\n")
    assert lines[:3] == ["from-env", str(tmp_path), "0027"]
    assert str(pid) in lines[3]  # its session id is its own pid


def test_a_request_the_child_never_reads_is_dropped_quietly(tmp_path: Path) -> None:
    async def go() -> Ended:
        read_end, write_end = os.pipe()
        child = await sh("exec 0<&-; exit 0", str(tmp_path))
        os.close(write_end)
        return await supervise(child, read_end, b"x" * 1_000_000, 100, 5.0)

    assert asyncio.run(go()) == Ended(b"", 0, b"", 0, b"", False)


def test_a_program_that_cannot_start_is_an_os_error(tmp_path: Path) -> None:
    async def go() -> None:
        await start(["/nonexistent/run"], cwd=str(tmp_path), env=ENV, preexec=None, pass_fds=())

    with pytest.raises(FileNotFoundError):
        asyncio.run(go())


def test_drain_and_read_pipe_keep_the_first_bytes(tmp_path: Path) -> None:
    async def go() -> tuple[tuple[bytes, int], tuple[bytes, int], bytes]:
        reader = asyncio.StreamReader()
        reader.feed_data(b"abcdef" * 20000)
        reader.feed_eof()
        read_end, write_end = os.pipe()
        os.write(write_end, b"0123456789")
        os.close(write_end)
        return await drain(None, 10), await drain(reader, 4), await read_pipe(read_end, 3)

    nothing, kept, piped = asyncio.run(go())
    assert nothing == (b"", 0) and kept == (b"abcd", 120000) and piped == b"012"


def test_output_read_in_pieces_is_kept_up_to_the_cap() -> None:
    async def go() -> tuple[bytes, int]:
        reader = asyncio.StreamReader()
        draining = asyncio.ensure_future(drain(reader, 10))
        for piece in (b"abc", b"defghijklmnop"):
            reader.feed_data(piece)
            for _ in range(3):
                await asyncio.sleep(0)  # the drain reads this piece alone
        reader.feed_eof()
        return await draining

    assert asyncio.run(go()) == (b"abcdefghij", 16)


def test_an_envelope_is_read_up_to_four_mebibytes(tmp_path: Path) -> None:
    async def go() -> Ended:
        read_end, write_end = os.pipe()
        script = f"head -c {4 * 1024 * 1024 + 1} /dev/zero > /dev/fd/{write_end}"
        child = await sh(script, str(tmp_path), pass_fds=(write_end,))
        os.close(write_end)
        return await supervise(child, read_end, b"", 100, 5.0)

    assert len(asyncio.run(go()).envelope) == 4 * 1024 * 1024


def test_killing_a_group_that_is_gone_or_not_ours_is_quiet(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    kill_group(2**22 + 12345)  # no such group

    def refuse(pgid: int, signum: int) -> None:
        assert signum == signal.SIGKILL
        raise PermissionError

    monkeypatch.setattr(os, "killpg", refuse)
    kill_group(12345)


def test_killing_a_group_uses_sigkill(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sent: list[tuple[int, int]] = []
    monkeypatch.setattr(os, "killpg", lambda pgid, signum: sent.append((pgid, signum)))
    kill_group(4321)
    assert sent == [(4321, signal.SIGKILL)]


def test_the_exit_is_waited_for_once_however_many_ask(tmp_path: Path) -> None:
    async def go() -> list[int]:
        child = await sh("exit 5", str(tmp_path))
        statuses = await asyncio.gather(child.wait(), child.wait(), child.wait())
        child.close()
        return [*statuses, await child.wait()]

    assert asyncio.run(go()) == [5, 5, 5, 5]
