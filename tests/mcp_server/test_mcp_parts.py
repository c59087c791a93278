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


SECRET_IN_ANSWER = "sk-mcp-secret-0123456789"


async def test_a_secret_in_the_answer_or_error_is_masked_in_text_and_structured_content(
    monkeypatch: object,
) -> None:
    """Issue 31: the text was masked, the structured content came back in clear."""
    import json

    import pytest

    from deepsearch.agent.result import UsageReport, result_so_far
    from deepsearch.agent.types import Reference
    from deepsearch.mcp_server.app import McpConfig, Progress, call_research

    assert isinstance(monkeypatch, pytest.MonkeyPatch)
    usage = UsageReport(prompt_tokens=1, completion_tokens=1, total_tokens=2, budget=10_000)
    result = result_so_far(
        "q?", "forced", usage, error=f"upstream said: key {SECRET_IN_ANSWER} refused",
        kind="runtime", answer=f"The key is {SECRET_IN_ANSWER}.",
    )  # fmt: skip
    result.references = [Reference(url="https://a.example/x", title=SECRET_IN_ANSWER, quote="q")]

    class StubSession:
        warnings: list[str] = []  # what the history could not keep (none here)

        def __init__(self, *args: object, **kwargs: object) -> None:
            pass

        async def execute(self) -> object:
            return result

    monkeypatch.setattr("deepsearch.session.ResearchSession", StubSession)
    config = McpConfig(options={}, max_budget=100_000, secrets=[SECRET_IN_ANSWER])
    done = await call_research(config, {"question": "q?"}, Progress(None))
    text = " ".join(getattr(part, "text", "") for part in done.content)
    structured = json.dumps(done.structuredContent)
    assert "****" in text and "****" in structured
    assert SECRET_IN_ANSWER not in text and SECRET_IN_ANSWER not in structured
    assert done.structuredContent is not None and done.structuredContent["status"] == "forced"
