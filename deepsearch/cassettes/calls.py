"""What each kind of call looks like in a cassette: the canonical request (only what
decides the answer), the stored outcome, and errors stored and raised again."""

from __future__ import annotations

import builtins
import importlib
from typing import Any

from deepsearch.errors import DeepsearchError, ProviderError
from deepsearch.llm.base import CompletionRequest
from deepsearch.web.types import SearchQuery

# Attributes of a deliberate error that callers branch on (kept so replay branches alike).
ERROR_ATTRS = ("provider", "model", "raw", "configuration", "fatal")


def llm_request(request: CompletionRequest) -> dict[str, Any]:
    """The parts of an LLM call that decide its reply. Not `max_tokens`: the output cap
    comes from the budget left, which concurrent calls reach in any order (and a
    reply within the cap does not depend on it)."""
    return {
        "tool": request.tool,
        "model": request.settings.model,
        "temperature": request.settings.temperature,
        "system": request.system,
        "messages": [m.model_dump(mode="json") for m in request.messages],
        "json_schema": request.json_schema,
        "schema_name": request.schema_name,
    }


def embed_request(model: str, texts: list[str]) -> dict[str, Any]:
    return {"model": model, "texts": texts}


def search_request(query: SearchQuery) -> dict[str, Any]:
    return {"query": query.model_dump(mode="json")}


def read_request(url: str) -> dict[str, Any]:
    return {"url": url}


def sandbox_request(code: str, data: dict[str, Any]) -> dict[str, Any]:
    return {"call": "run", "code": code, "data": data}


AVAILABILITY = {"call": "availability"}


def dump_error(exc: BaseException) -> dict[str, Any]:
    cls = type(exc)
    out: dict[str, Any] = {"type": cls.__name__, "module": cls.__module__, "message": str(exc)}
    for attr in ERROR_ATTRS:
        value = getattr(exc, attr, None)
        if isinstance(value, str | bool | int | float):
            out[attr] = value
    return out


def load_error(stored: dict[str, Any]) -> BaseException:
    """The recorded error, of its recorded class where that is a deepsearch error (built
    without its constructor, whose arguments differ per class), else a builtin one."""
    message = str(stored.get("message", ""))
    cls = _error_class(str(stored.get("module", "")), str(stored.get("type", "")))
    if cls is None:
        return RuntimeError(message)
    exc = cls.__new__(cls)
    Exception.__init__(exc, message)
    if issubclass(cls, DeepsearchError):
        for attr in ERROR_ATTRS:
            if attr in stored:
                setattr(exc, attr, stored[attr])
        if isinstance(exc, ProviderError):
            exc.provider = str(stored.get("provider", ""))
            exc.model = str(stored.get("model", ""))
        if hasattr(cls, "failures") or cls.__name__ in ("AllProvidersFailed", "SearchUnavailable"):
            exc.failures = []  # type: ignore[attr-defined]
    return exc


def _error_class(module: str, name: str) -> type[BaseException] | None:
    if module == "builtins":
        found = getattr(builtins, name, None)
    elif module.startswith("deepsearch."):
        try:
            found = getattr(importlib.import_module(module), name, None)
        except ImportError:
            found = None
    else:
        found = None
    return found if isinstance(found, type) and issubclass(found, BaseException) else None
