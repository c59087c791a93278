"""A loopback host that counts requests in flight and refuses those over its capacity.

Like a real overloaded server: above `capacity` concurrent requests it answers
429 (or 503) at once, with a Retry-After header when told to send one.
"""

from __future__ import annotations

import threading
import time

from tests.fakes.web_server import _Handler

ARTICLE = (
    "<html><head><title>Page</title></head><body><article><h1>Page</h1><p>"
    + "Text of a page on a busy host, long enough to be kept as the article. " * 8
    + "</p></article></body></html>"
).encode()


GATHER_WAIT_S = 10.0


class CountingHost:
    """Counts requests in flight; above `capacity` it answers `status` at once."""

    def __init__(
        self,
        capacity: int,
        status: int = 429,
        retry_after: str | None = "0",
        *,
        gather: int = 0,
        hold_until_refused: int = 0,
        serve_ms: int = 250,
    ) -> None:
        self.capacity = capacity
        # Hold each request until `gather` are in flight (at most GATHER_WAIT_S): on a
        # loaded machine a fixed delay does not make requests overlap, a barrier does.
        self.gather = gather
        # Hold each served request until this many were refused: the overload a test
        # needs, made by a barrier and not by how long a request takes (`serve_ms`).
        self.hold_until_refused = hold_until_refused
        self.serve_ms = serve_ms
        self.status = status
        self.retry_after = retry_after
        self.active = 0
        self.peak = 0
        self.refused = 0
        self.served = 0
        self._lock = threading.Lock()
        self._arrived = threading.Condition(self._lock)

    def route(self, handler: _Handler) -> None:
        with self._lock:
            over = self.active >= self.capacity
            if over:
                self.refused += 1
                self._arrived.notify_all()
            else:
                self.active += 1
                self.peak = max(self.peak, self.active)
                self._arrived.notify_all()
                # peak, not active: a request served meanwhile must not re-close the barrier
                self._arrived.wait_for(lambda: self.peak >= self.gather, GATHER_WAIT_S)
                refusals = self.hold_until_refused
                self._arrived.wait_for(lambda: self.refused >= refusals, GATHER_WAIT_S)
        if over:
            headers = {"Retry-After": self.retry_after} if self.retry_after is not None else {}
            handler.send_body(self.status, b"slow down", "text/plain", headers)
            return
        try:
            time.sleep(int(handler.query.get("ms", self.serve_ms)) / 1000)
        finally:
            # Counted before the answer goes out: a client that has it may ask again at
            # once, and must find this request done (not still active, not yet served).
            with self._lock:
                self.active -= 1
                self.served += 1
        handler.send_body(200, ARTICLE, "text/html; charset=utf-8")
