"""Large numbers with units, for people: 212k tokens, 4.2 MB."""

from __future__ import annotations


def tokens(n: int) -> str:
    """12 -> "12", 12_345 -> "12.3k", 1_000_000 -> "1M"."""
    if n < 1000:
        return str(n)
    if n < 1_000_000:
        return f"{n / 1000:.1f}".rstrip("0").rstrip(".") + "k"
    return f"{n / 1_000_000:.2f}".rstrip("0").rstrip(".") + "M"


def size(n_bytes: int) -> str:
    """Bytes as B, kB or MB (decimal, as file managers show them): the one
    definition, shared with the corpus summary (`web/search/local_progress.py`)."""
    from deepsearch.web.search.local_progress import human_size

    return human_size(n_bytes)
