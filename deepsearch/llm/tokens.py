"""Offline token counting, with the vocabulary kept off the start-up critical path.

tiktoken downloads its BPE files on first use and fails at once with no network.
We ship the two vocabularies (gzipped, sha256-checked against tiktoken's own
expected hashes) and build `tiktoken.Encoding` directly from them: no network,
no environment variable, no cache writes.

Building an Encoding costs ~0.3-0.7 s: ~0.15 s decoding the ranks (a dict of
200k byte strings, whatever the file format: a length-prefixed binary format was
measured no faster in a fresh process) and the rest in tiktoken's Rust
constructor, which holds the GIL. So `preload()` builds it in a background thread
and `is_loaded()` lets the client send its first request without waiting for it
(see LLMClient._plan).
"""

from __future__ import annotations

import gzip
import hashlib
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

from deepsearch.memo import text_bytes, weighed_cache

if TYPE_CHECKING:
    import tiktoken

_DATA = Path(__file__).resolve().parent / "data"
_VOCABS = {
    "cl100k_base": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    "o200k_base": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
}
_PATCH_LOCK = threading.Lock()  # guards the brief swap of tiktoken's loader
_BUILD_LOCKS = {name: threading.Lock() for name in _VOCABS}
_ENCODINGS: dict[str, tiktoken.Encoding] = {}


def _load_ranks(name: str) -> dict[bytes, int]:
    import binascii

    raw = gzip.decompress((_DATA / f"{name}.tiktoken.gz").read_bytes())
    digest = hashlib.sha256(raw).hexdigest()
    if digest != _VOCABS[name]:
        raise RuntimeError(f"bundled {name} vocabulary is corrupt (sha256 {digest})")
    # "token rank" lines, checked above: decoded by C functions over the split fields,
    # half the time of a Python loop over 200k lines (each process that counts pays it).
    # Both files rank their tokens 0, 1, 2, ... in line order (their content is pinned
    # by the sha256), so a rank is its line's number: no int() of 200k fields a build.
    fields = raw.split()
    return dict(zip(map(binascii.a2b_base64, fields[0::2]), range(len(fields) // 2), strict=True))


def _build(name: str) -> tiktoken.Encoding:
    import tiktoken
    from tiktoken_ext import openai_public

    ranks = _load_ranks(name)
    # Borrow tiktoken's own pattern and special tokens, swapping only the loader
    # that would otherwise download the vocabulary (restored right after).
    with _PATCH_LOCK:
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


def get_encoding(name: str = "o200k_base") -> tiktoken.Encoding:
    """A real tiktoken Encoding built from the bundled vocabulary (built once; a
    caller arriving while `preload` builds it waits for that build)."""
    encoding = _ENCODINGS.get(name)
    if encoding is not None:
        return encoding
    if name not in _VOCABS:
        raise ValueError(f"no bundled vocabulary {name!r}; choose from {sorted(_VOCABS)}")
    with _BUILD_LOCKS[name]:
        if name not in _ENCODINGS:
            _ENCODINGS[name] = _build(name)
    return _ENCODINGS[name]


def is_loaded(name: str) -> bool:
    return name in _ENCODINGS


def preload(name: str, *, delay_s: float = 0.0) -> threading.Thread | None:
    """Build `name` in a daemon thread after `delay_s` (None if already built).

    The delay exists because tiktoken's Rust constructor holds the GIL for ~0.3 s:
    started at once, it would stall the request the caller is about to send.
    """
    if name in _ENCODINGS or name not in _BUILD_LOCKS:
        return None

    def build() -> None:
        if delay_s > 0:
            time.sleep(delay_s)
        try:
            get_encoding(name)
        except Exception:  # noqa: S110 - the caller's own get_encoding reports it
            pass

    thread = threading.Thread(target=build, name=f"vocab-{name}", daemon=True)
    thread.start()
    return thread


def encoding_for_model(model: str) -> str:
    lowered = model.lower()
    if lowered.startswith(("gpt-3.5", "gpt-4-", "text-embedding")) or lowered == "gpt-4":
        return "cl100k_base"
    return "o200k_base"


def upper_bound_tokens(text: str) -> int:
    """A number `count_tokens(text)` never exceeds: every token is at least one
    byte of the UTF-8 text (+1 for the seam `count_tokens` adds to a long text)."""
    return len(text.encode("utf-8")) + 1


@weighed_cache(32 * 2**20, text_bytes)  # a paragraph's count: bounded in bytes, not entries
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
