"""One sandboxed process, from the parent's side: started off the event loop, fed its
request, drained, waited for under the wall-clock limit, and killed with its group.

Why not ``asyncio.create_subprocess_exec``: it calls ``subprocess.Popen`` on the event
loop's thread, and ``Popen`` returns only once the child has exec'd (it reads the
error pipe until the exec closes it). On a busy machine the child may wait for a CPU
before it gets there, and the whole loop waits with it: eight sandboxes started at
once under load held a parent's heartbeat 0.13-0.27 s (``tests/sandbox/test_redteam.py``).
Here ``Popen`` runs in a worker thread; the pipes are then read by the loop, and the
wait for the exit is a thread too (as asyncio's own child watcher does on 3.11).
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
from collections.abc import Callable, Sequence
from typing import IO, NamedTuple

_READ_CHUNK = 65536
_DRAIN_AFTER_KILL_S = 2.0


class Child:
    """A started process: its output as stream readers, its request fed by a thread."""

    def __init__(
        self,
        popen: subprocess.Popen[bytes],
        readers: list[asyncio.StreamReader],
        transports: Sequence[asyncio.BaseTransport],
    ) -> None:
        self.popen, (self.stdout, self.stderr) = popen, readers
        self._transports = transports
        self._exited: asyncio.Future[int] | None = None

    def close(self) -> None:
        """Close the output pipes (a reader given up on after the kill left them open)."""
        for transport in self._transports:
            transport.close()

    @property
    def pid(self) -> int:
        return self.popen.pid

    @property
    def returncode(self) -> int | None:
        return self.popen.returncode

    async def wait(self) -> int:
        """The exit status, waited for in a thread (once, however many callers)."""
        if self._exited is None:
            self._exited = asyncio.ensure_future(asyncio.to_thread(self.popen.wait))
        return await asyncio.shield(self._exited)

    async def feed(self, request: bytes) -> None:
        """Write the request to stdin and close it (a thread: a blocking pipe write)."""
        stdin = self.popen.stdin
        if stdin is not None:
            await asyncio.to_thread(_write_and_close, stdin, request)


def _write_and_close(stdin: IO[bytes], request: bytes) -> None:
    try:
        stdin.write(request)
        stdin.close()
    except (BrokenPipeError, ConnectionResetError, ValueError):
        pass  # the child died before reading everything; its exit status says why


async def start(
    argv: Sequence[str],
    *,
    cwd: str,
    env: dict[str, str],
    preexec: Callable[[], None] | None,
    pass_fds: tuple[int, ...],
) -> Child:
    """Start ``argv`` in a session of its own, from a worker thread.

    Raises:
        OSError: the program could not be started.
    """
    popen = await asyncio.to_thread(
        subprocess.Popen,
        list(argv),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=cwd,
        env=env,
        start_new_session=True,
        preexec_fn=preexec,
        pass_fds=pass_fds,
    )
    loop = asyncio.get_running_loop()
    readers: list[asyncio.StreamReader] = []
    transports: list[asyncio.BaseTransport] = []
    for pipe in (popen.stdout, popen.stderr):
        reader = asyncio.StreamReader(limit=_READ_CHUNK)
        transport, _ = await loop.connect_read_pipe(_protocol_for(reader), pipe)
        readers.append(reader)
        transports.append(transport)
    return Child(popen, readers, transports)


def _protocol_for(reader: asyncio.StreamReader) -> Callable[[], asyncio.StreamReaderProtocol]:
    return lambda: asyncio.StreamReaderProtocol(reader)


async def drain(stream: asyncio.StreamReader | None, cap: int) -> tuple[bytes, int]:
    """Read a stream to its end, keeping the first ``cap`` bytes; return them and the total."""
    kept, total = bytearray(), 0
    if stream is None:
        return b"", 0
    while chunk := await stream.read(_READ_CHUNK):
        total += len(chunk)
        if len(kept) < cap:
            kept += chunk[: cap - len(kept)]
    return bytes(kept), total


async def read_pipe(fd: int, cap: int) -> bytes:
    """Read our end of the envelope pipe without a thread (threads are a scarce pool)."""
    reader = asyncio.StreamReader()
    transport, _ = await asyncio.get_running_loop().connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(fd, "rb", buffering=0)
    )
    try:
        return (await drain(reader, cap))[0]
    finally:
        transport.close()


def kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass  # the group is already gone


class Ended(NamedTuple):
    """What a finished (or killed) child left: its capped output and its envelope."""

    out: bytes
    out_total: int
    err: bytes
    err_total: int
    envelope: bytes
    timed_out: bool


async def supervise(child: Child, read_end: int, request: bytes, cap: int, wall_s: float) -> Ended:
    """Feed the request, wait up to the wall-clock limit, kill the group, collect."""
    envelope_task = asyncio.ensure_future(read_pipe(read_end, 1 << 22))
    readers = [
        asyncio.ensure_future(drain(child.stdout, cap)),
        asyncio.ensure_future(drain(child.stderr, cap)),
    ]
    feeder = asyncio.ensure_future(child.feed(request))
    try:
        timed_out = not await _ended_within(child, wall_s)
    finally:
        # Always, and also when the caller cancels us: nothing of the run outlives it.
        # The pid namespace's init dies with the group, taking any escaped session along.
        kill_group(child.pid)
        await asyncio.shield(child.wait())
    done, pending = await asyncio.wait(
        [*readers, envelope_task, feeder], timeout=_DRAIN_AFTER_KILL_S
    )
    for task in pending:
        task.cancel()
    child.close()
    (out, out_total), (err, err_total) = (r.result() if r in done else (b"", 0) for r in readers)
    envelope = envelope_task.result() if envelope_task in done else b""
    return Ended(out, out_total, err, err_total, envelope, timed_out)


async def _ended_within(child: Child, wall_s: float) -> bool:
    """True when the process ended within the wall-clock limit."""
    try:
        await asyncio.wait_for(child.wait(), timeout=wall_s)
    except TimeoutError:
        return False
    return True
