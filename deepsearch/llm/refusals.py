"""Telling a refused structured-output mode from an outage, for OpenAI-compatible servers.

A server that cannot honour the requested output mode says so in the error body
(`response_format`, `json_schema`, `schema`, `strict`, "not supported" ...), with a
4xx -- or, like llama-cpp-python, whose request validation fails as a server error,
a 500. Any other 5xx is retried (`openai_wire`); such a 500 is not, so each refused
rung costs one request, and the provider tries the next rung at once.
"""

from __future__ import annotations

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
