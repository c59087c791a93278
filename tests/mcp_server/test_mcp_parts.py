"""Parts of the MCP server that need no client: what its HTTP transport logs."""


def test_a_session_closed_by_its_client_logs_no_traceback() -> None:
    """Found in review: every normal end of an HTTP session printed the SDK's 11-line
    "Error in standalone SSE writer ... ClosedResourceError" on stderr."""
    import logging
    import sys

    import anyio

    from deepsearch.mcp_server.app import closed_stream_noise

    def record(error: BaseException | None) -> logging.LogRecord:
        info = (type(error), error, None) if error is not None else None
        return logging.LogRecord("mcp", logging.ERROR, "f", 1, "m", (), info)

    assert not closed_stream_noise(record(anyio.ClosedResourceError()))
    assert closed_stream_noise(record(RuntimeError("a real failure")))
    assert closed_stream_noise(record(None))
    assert sys.exc_info() == (None, None, None)
