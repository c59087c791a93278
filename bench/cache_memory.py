"""Memory of a long-lived process under a stream of new texts (issue 36, item 23).

`serve` ran 384 requests and grew 212 -> 344 MB without levelling off: the word-feature
caches (`agent/retrieval/lexical.py`: `words`, `tf_features`; `llm/tokens.py`: the
paragraph counts) were bounded in entries, and their entries range from a three-word
query to a 4,000-character snippet's character n-grams (measured ceiling 0.35-1.6 GB).
They are now bounded in bytes (`deepsearch.memo.weighed_cache`).

This soak feeds those caches what a stream of research requests does -- every request
new snippets (random words, 300-4,000 characters), each ranked several times, and its
prompt paragraphs counted -- and reads the process's resident memory (RSS, from
/proc/self/statm) after every block of 'requests'. Bounded caches level off once they
are full; entry-bounded ones keep growing until their (much larger) entry ceilings.

Reproduce: `.venv/bin/python -m bench cache_memory`
"""

from __future__ import annotations

import gc
import os
import random

from deepsearch.agent.retrieval import lexical
from deepsearch.llm import tokens

REQUESTS = 400
SNIPPETS_PER_REQUEST = 60
BLOCK = 50


def rss_mb() -> float:
    """Resident memory now (Linux); 0 where /proc is not there."""
    try:
        with open("/proc/self/statm") as statm:
            pages = int(statm.read().split()[1])
    except (OSError, ValueError, IndexError):
        return 0.0
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def _texts(rng: random.Random, vocab: list[str], count: int) -> list[str]:
    out = []
    for _ in range(count):
        size = rng.randint(300, 4000)
        words: list[str] = []
        length = 0
        while length < size:
            word = rng.choice(vocab)
            words.append(word)
            length += len(word) + 1
        out.append(" ".join(words))
    return out


def soak(requests: int = REQUESTS) -> list[tuple[int, float, int]]:
    """(requests done, RSS MB, bytes the bounded caches hold) after every block."""
    rng = random.Random(36)
    letters = "abcdefghijklmnopqrstuvwxyz"
    vocab = ["".join(rng.choice(letters) for _ in range(rng.randint(3, 11))) for _ in range(20000)]
    rows = []
    for done in range(1, requests + 1):
        snippets = _texts(rng, vocab, SNIPPETS_PER_REQUEST)
        for _ in range(3):  # re-ranked on later steps
            for text in snippets:
                lexical.tf_features(text)
        for text in snippets[:10]:  # prompt paragraphs counted
            tokens.count_tokens(text)
        if done % BLOCK == 0:
            gc.collect()
            held = sum(
                f.cache_info().bytes
                for f in (lexical.words, lexical.tf_features, tokens._count_block)
            )
            rows.append((done, rss_mb(), held))
    return rows


def run() -> str:
    rows = soak()
    lines = [
        "## Memory under a stream of new texts (cache_memory)",
        "",
        __doc__.split("Reproduce:")[1].strip() if __doc__ else "",
        "",
        f"{REQUESTS} 'requests' of {SNIPPETS_PER_REQUEST} new snippets each (300-4,000 "
        "characters), each ranked three times and ten counted in tokens:",
        "",
        "| requests | RSS (MB) | bounded caches hold (MB) |",
        "|---:|---:|---:|",
    ]
    lines += [f"| {done} | {rss:.0f} | {held / 2**20:.0f} |" for done, rss, held in rows]
    first, last = rows[len(rows) // 2][1], rows[-1][1]
    lines += [
        "",
        f"From the middle of the run to its end RSS moved {last - first:+.0f} MB "
        f"(caps: words {lexical.WORDS_CACHE_BYTES // 2**20} MB, TF blocks "
        f"{lexical.TF_CACHE_BYTES // 2**20} MB, token counts 32 MB, estimated sizes).",
    ]
    return "\n".join(lines)
