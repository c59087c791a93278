"""A loopback port that refuses every connection, held by this process.

A port found free by binding a socket and closing it is free for anyone: under
`make test`'s three workers another worker's server could be given it by the kernel
before the test connects, and the "dead" endpoint then answered (issue 37: the flaky
`test_a_dead_llm_endpoint_fails_fast_without_beast_mode`). Here the socket stays bound,
never listening, for the life of the process: a connection to it is refused at once
(RST), and no other socket can bind the port meanwhile.
"""

from __future__ import annotations

import socket

_HELD: list[socket.socket] = []


def refused_port() -> int:
    """The port (one per process, bound and never listening)."""
    if not _HELD:
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        _HELD.append(sock)
    return int(_HELD[0].getsockname()[1])


def refused_url() -> str:
    return f"http://127.0.0.1:{refused_port()}"
