"""The fakes' own mechanics: a server stops at once, whatever its poll interval, and
takes every connection of a burst even while its serving thread is busy."""

from __future__ import annotations

import socket
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


def test_a_burst_of_connections_is_queued_not_dropped() -> None:
    """Thirty connections while nothing accepts them (a serving thread that has not
    had the CPU yet): each completes its handshake at once. With socketserver's backlog
    of 5 the kernel dropped the rest, and their clients tried again only after 1 s."""
    for server in (
        QuietHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler),
        LoopbackServer(routes={}),
    ):
        clients = []
        try:
            for _ in range(30):
                client = socket.socket()
                client.settimeout(0.5)
                client.connect(server.server_address[:2])
                clients.append(client)
        finally:
            for client in clients:
                client.close()
            server.server_close()
        assert len(clients) == 30
