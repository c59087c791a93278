"""Telling a refused structured-output mode from an outage, for OpenAI-compatible servers.

A server that cannot honour the requested output mode says so in the error body
(`response_format`, `json_schema`, `schema`, `strict`, "not supported" ...), with a
4xx -- or, like llama-cpp-python, whose request validation fails as a server error,
a 500. The openai SDK retries any 5xx itself; `NoRetryForRefusals`, the transport
under the provider's SDK client, marks such a 500 not retryable with the SDK's own
`x-should-retry: false` header, so each refused rung costs one request. Imported only
when a client is built. `httpx2` is the HTTP library openai 3.x is built on.
"""

from __future__ import annotations

import httpx2 as httpx

_REJECTION_HINTS = (
    "response_format",
    "json_schema",
    "json_object",
    "structured output",
    "schema",
    "strict",
    "not supported",
    "unsupported",
)


# A server error (5xx) must name the request's own field: "schema" or "strict" alone
# is in many a crash's traceback, and a refused rung is remembered across runs.
_SERVER_ERROR_HINTS = ("response_format", "json_schema", "json_object")


def names_structured_output(text: str, *, status: int | None = None) -> bool:
    """Whether an error body names the structured-output part of the request (for a
    5xx, by the request's own field names only)."""
    lowered = text.lower()
    hints = _SERVER_ERROR_HINTS if status is not None and status >= 500 else _REJECTION_HINTS
    return any(hint in lowered for hint in hints)


class NoRetryForRefusals(httpx.AsyncBaseTransport):
    """httpx's transport, plus `x-should-retry: false` on a 5xx whose body names the
    structured-output request: a refused mode, not an outage (see module doc)."""

    def __init__(self) -> None:
        self._inner = httpx.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self._inner.handle_async_request(request)
        if response.status_code < 500 or b"response_format" not in request.content:
            return response
        body = await response.aread()
        if not names_structured_output(
            body.decode("utf-8", "replace"), status=response.status_code
        ):
            return response
        headers = {**response.headers, "x-should-retry": "false"}
        headers.pop("content-length", None)
        headers.pop("content-encoding", None)  # aread() has decoded it
        return httpx.Response(response.status_code, headers=headers, content=body)

    async def aclose(self) -> None:
        await self._inner.aclose()
