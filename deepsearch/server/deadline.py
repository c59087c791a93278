"""Slow clients are cut: a connection has `seconds` to send a whole request, headers
and body, from when it opens or its last response ends. uvicorn has no such limit
(a client sending a byte now and then held a connection, and a slot of the event
loop's attention, for as long as it liked), so its h11 protocol is subclassed: one
timer per read phase; when it fires while the request is still incomplete, a 408 goes
out (if no response started) and the connection is closed. A request read whole in
time is never cut, however long its research runs.

Passed to uvicorn as `http=read_deadline_protocol(...)` by serve and mcp alike (the
class also pins h11: httptools, where installed, would bypass the timer).
"""

from __future__ import annotations

import asyncio
from typing import Any

READ_DEADLINE_S = 15.0
_TIMEOUT_BODY = b'{"error": {"message": "the request was not sent in time", "code": "408"}}'
_TIMEOUT_REPLY = (
    b"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\n"
    b"connection: close\r\ncontent-length: %d\r\n\r\n" % len(_TIMEOUT_BODY)
) + _TIMEOUT_BODY


def read_deadline_protocol(seconds: float = READ_DEADLINE_S) -> type[asyncio.Protocol]:
    """uvicorn's h11 protocol with the read deadline (`seconds`)."""
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class ReadDeadlineProtocol(H11Protocol):
        _deadline: asyncio.TimerHandle | None = None

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._arm()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing():
                self._arm()  # a kept-alive connection's next request: a new phase

        def _arm(self) -> None:
            self._disarm()
            self._deadline = self.loop.call_later(seconds, self._overdue)

        def _disarm(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None

        def _overdue(self) -> None:
            self._deadline = None
            if self.transport.is_closing() or self.conn.their_state not in (
                h11.IDLE,
                h11.SEND_BODY,
            ):
                return  # the request is in: its run may take as long as it takes
            if self.cycle is None or not self.cycle.response_started:
                self.transport.write(_TIMEOUT_REPLY)  # the app's late reply is dropped
            self.transport.close()

    return ReadDeadlineProtocol
