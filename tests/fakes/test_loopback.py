"""The fakes' own mechanics: a server stops at once, whatever its poll interval."""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler

from tests.fakes.loopback import QuietHTTPServer
from tests.fakes.web_server import LoopbackServer


def test_shutdown_does_not_wait_out_the_poll_interval() -> None:
    server = QuietHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    serving = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 10})
    serving.start()
    started = time.monotonic()
    server.shutdown()
    assert time.monotonic() - started < 5, "shutdown waited for the poll interval"
    serving.join(timeout=5)
    assert not serving.is_alive()
    server.server_close()


def test_the_wake_up_connection_is_not_a_recorded_request() -> None:
    for _ in range(20):  # pokes land before and after the loop sees the request
        with LoopbackServer(routes={}) as server:
            pass
        assert server.requests == []
