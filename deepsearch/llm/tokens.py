"""Offline token counting.

tiktoken downloads its BPE files on first use and fails at once with no network.
We ship the two vocabularies (gzipped, sha256-checked against tiktoken's own
expected hashes) and build `tiktoken.Encoding` directly from them: no network,
no environment variable, no cache writes.
"""

from __future__ import annotations

import gzip
import hashlib
import threading
from functools import cache, lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import tiktoken

_DATA = Path(__file__).resolve().parent / "data"
_VOCABS = {
    "cl100k_base": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    "o200k_base": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
}
_LOCK = threading.Lock()


def _load_ranks(name: str) -> dict[bytes, int]:
    import base64

    raw = gzip.decompress((_DATA / f"{name}.tiktoken.gz").read_bytes())
    digest = hashlib.sha256(raw).hexdigest()
    if digest != _VOCABS[name]:
        raise RuntimeError(f"bundled {name} vocabulary is corrupt (sha256 {digest})")
    ranks: dict[bytes, int] = {}
    for line in raw.splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return ranks


@cache
def get_encoding(name: str = "o200k_base") -> tiktoken.Encoding:
    """A real tiktoken Encoding built from the bundled vocabulary."""
    if name not in _VOCABS:
        raise ValueError(f"no bundled vocabulary {name!r}; choose from {sorted(_VOCABS)}")
    import tiktoken
    from tiktoken_ext import openai_public

    ranks = _load_ranks(name)
    # Borrow tiktoken's own pattern and special tokens, swapping only the loader
    # that would otherwise download the vocabulary (restored right after).
    with _LOCK:
        original = openai_public.load_tiktoken_bpe
        openai_public.load_tiktoken_bpe = lambda *_a, **_k: ranks
        try:
            spec = getattr(openai_public, name)()
        finally:
            openai_public.load_tiktoken_bpe = original
    return tiktoken.Encoding(
        name=spec["name"],
        pat_str=spec["pat_str"],
        mergeable_ranks=spec["mergeable_ranks"],
        special_tokens=spec["special_tokens"],
    )


def encoding_for_model(model: str) -> str:
    lowered = model.lower()
    if lowered.startswith(("gpt-3.5", "gpt-4-", "text-embedding")) or lowered == "gpt-4":
        return "cl100k_base"
    return "o200k_base"


@lru_cache(maxsize=8192)
def _count_block(text: str, encoding: str) -> int:
    return len(get_encoding(encoding).encode(text, disallowed_special=()))


def count_tokens(text: str, *, model: str = "") -> int:
    """Token count of `text`; never raises, never NaN (falls back to ~4 chars/token).

    Prompts are re-rendered every step but are mostly the same blocks (knowledge
    items, diary lines). Counting paragraph by paragraph with a cache makes a step's
    count cost only its new text. Splitting at blank lines can only add tokens at the
    seams (one per seam is added), so the sum never undercounts the budget.
    """
    if not text:
        return 0
    try:
        encoding = encoding_for_model(model)
        if len(text) < 2000:
            return _count_block(text, encoding)
        blocks = text.split("\n\n")
        return sum(_count_block(block, encoding) for block in blocks if block) + len(blocks)
    except Exception:  # a corrupt install must not stop a run; estimate instead
        return max(1, len(text) // 4)
