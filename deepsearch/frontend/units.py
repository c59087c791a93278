"""Large numbers with units, for people: 212k tokens, 4.2 MB, 5m; and back: what the
view prints (`500k`, `1.5M`, `5m`, `1m30s`) is what a flag accepts."""

from __future__ import annotations

import re

from deepsearch.text import short_count

_TOKEN_UNITS = {"": 1, "k": 1_000, "m": 1_000_000}
_TOKENS = re.compile(r"(\d+(?:\.\d+)?)\s*([km]?)", flags=re.I)
_SECOND_UNITS = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0}
_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)\s*([smh]?)", flags=re.I)


def tokens(n: int) -> str:
    """12 -> "12", 12_345 -> "12.3k", 1_000_000 -> "1M" (text.short_count)."""
    return short_count(n)


def dollars(spent: float | None, limit: float | None = None) -> str:
    """ "$0.0012", or "$0.0012/$0.0015" under a cost limit; "" when unknown (None)."""
    from deepsearch.llm.tracker import usd

    if spent is None:
        return ""
    return usd(spent) + (f"/{usd(limit)}" if limit is not None else "")


def size(n_bytes: int) -> str:
    """Bytes as B, kB or MB (decimal, as file managers show them): the one
    definition, shared with the corpus summary (`web/search/local_progress.py`)."""
    from deepsearch.web.search.local_progress import human_size

    return human_size(n_bytes)


def parse_tokens(text: str) -> int:
    """A token count as people write it: 200000, 200,000, 200_000, 200k, 1.5M."""
    cleaned = text.strip().replace(",", "").replace("_", "")
    match = _TOKENS.fullmatch(cleaned)
    if match is None:
        raise ValueError(f"{text!r} is not a number of tokens (e.g. 200000, 200k, 1.5M)")
    value = float(match.group(1)) * _TOKEN_UNITS[match.group(2).lower()]
    if value != int(value):
        raise ValueError(f"{text!r} is not a whole number of tokens")
    return int(value)


def parse_seconds(text: str) -> float:
    """A duration in seconds as people write it: 90, 90s, 2.5, 5m, 1h, 1m30s."""
    cleaned = text.strip().replace(" ", "")
    parts = list(_DURATION_PART.finditer(cleaned))
    units = [m.group(2).lower() for m in parts]
    whole = "".join(m.group(0) for m in parts) == cleaned and bool(parts)
    if not whole or (len(parts) > 1 and ("" in units or len(set(units)) < len(units))):
        raise ValueError(f"{text!r} is not a duration (e.g. 90, 90s, 5m, 1h, 1m30s)")
    return sum(float(m.group(1)) * _SECOND_UNITS[m.group(2).lower()] for m in parts)
