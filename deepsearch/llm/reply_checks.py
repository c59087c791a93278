"""Checks on a structured reply before it is accepted: complete JSON, finite numbers,
length limits trimmed rather than rejected, and a validation error in one line for
the corrective retry. Plain functions over parsed data; the client (`client.py`) runs
them in order."""

from __future__ import annotations

import json
import math
from copy import deepcopy
from typing import Any

from pydantic import ValidationError

from deepsearch.llm.parse import extract_json_text
from deepsearch.text import cut_at_word


def trim_to_limits(value: Any, error: ValidationError) -> Any:
    """Cut over-long strings and lists the validator complained about (length limits only)."""
    fixed = deepcopy(value)
    changed = False
    for err in error.errors():
        if err["type"] not in ("string_too_long", "too_long"):
            continue
        limit = (err.get("ctx") or {}).get("max_length")
        if limit is None:
            continue
        located = data_path(fixed, err["loc"])
        if not located:  # the whole value (a root string): nothing inside to cut
            continue
        *path, last = located
        node = fixed
        try:
            for part in path:
                node = node[part]
            long = node[last]
            node[last] = cut_at_word(long, limit) if isinstance(long, str) else long[:limit]
            changed = True
        except (KeyError, IndexError, TypeError):
            continue
    return fixed if changed else value


def data_path(value: Any, loc: tuple[int | str, ...]) -> list[int | str]:
    """The error's location in the data: a union's tag (the agent step's
    `action.search.search.queries.0`) names a branch, not a key, and is skipped."""
    path: list[int | str] = []
    node = value
    for part in loc:
        if isinstance(node, dict) and isinstance(part, str) and part not in node:
            continue  # a union member's tag
        path.append(part)
        try:
            node = node[part]
        except (KeyError, IndexError, TypeError):
            node = None
    return path


def has_non_finite(value: Any) -> bool:
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, dict):
        return any(has_non_finite(v) for v in value.values())
    if isinstance(value, list):
        return any(has_non_finite(v) for v in value)
    return False


def is_complete_json(text: str) -> bool:
    try:
        json.loads(extract_json_text(text))
    except (ValueError, RecursionError):
        return False
    return True


def summarize(exc: ValidationError, limit: int = 5) -> str:
    parts = []
    for err in exc.errors()[:limit]:
        loc = ".".join(str(p) for p in err["loc"]) or "(root)"
        parts.append(f"{loc}: {err['msg']}")
    return "; ".join(parts)
