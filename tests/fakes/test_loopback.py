"""The fakes' own mechanics: a server stops at once, whatever its poll interval."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler

from tests.fakes.loopback import QuietHTTPServer
from tests.fakes.web_server import LoopbackServer


def test_shutdown_does_not_wait_out_the_poll_interval() -> None:
    server = QuietHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    # An hour's poll interval: a shutdown that waited it out would outlast the suite's timeout.
    serving = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 3600})
    serving.start()
    server.shutdown()
    serving.join(timeout=60)
    assert not serving.is_alive()
    server.server_close()


def test_the_wake_up_connection_is_not_a_recorded_request() -> None:
    for _ in range(20):  # pokes land before and after the loop sees the request
        with LoopbackServer(routes={}) as server:
            pass
        assert server.requests == []
