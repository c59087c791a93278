"""Lexical text features behind `LexicalSimilarity` and the word rules of `dedup`.

Folding, tokenization (Han and kana one character per word), sublinear TF blocks
(word 1-2-grams, character n-grams), per-call IDF, sparse dot products, and the
"same content words" / word-set Jaccard rules. Split out of `similarity.py` to keep
both modules short; `similarity` builds its backends on the public names here.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from collections.abc import Sequence
from functools import cache, lru_cache

from deepsearch.memo import weighed_cache
from deepsearch.text import CJK_RANGES, is_cjk

_WORD = re.compile(r"\w+", re.UNICODE)
# Han and kana (`deepsearch.text`): written without spaces, one character per word.
_CJK = re.compile(f"[{CJK_RANGES}]")  # the same pattern as deepsearch.text's: compiled once


@cache
def _cjk_split() -> re.Pattern[str]:
    """Each Han or kana character, and the runs between them: compiled at the first token
    that has one. Its two classes span 28k code points, which the compiler walks in
    Python (~3.5 ms of CPU); most runs never see a CJK word (issue 21)."""
    return re.compile(f"[{CJK_RANGES}]|[^{CJK_RANGES}]+")


# --------------------------------------------------------------------- features


def fold(text: str) -> str:
    """Case- and accent-insensitive form used for matching (not for display)."""
    if text.isascii():
        return text.lower()
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    # Kana voicing marks (U+3099/U+309A) carry meaning; other combining marks are accents.
    kept = "".join(ch for ch in decomposed if not unicodedata.combining(ch) or ch in "\u3099\u309a")
    return unicodedata.normalize("NFC", kept)


# Caches bounded in bytes (deepsearch.memo), from sizes measured with tracemalloc: a
# text's word tuple ~9 bytes a character, its TF blocks ~140-280 (the char n-grams).
# Bounded in entries, they held up to 1.6 GB in a long-lived `serve` (issue 36, item 23).
WORDS_CACHE_BYTES = 32 * 2**20
TF_CACHE_BYTES = 96 * 2**20


@weighed_cache(WORDS_CACHE_BYTES, lambda text: 64 + 12 * len(text))
def words(text: str) -> tuple[str, ...]:
    """Folded word tokens; Han and kana (written without spaces) one character each."""
    out: list[str] = []
    for tok in _WORD.findall(fold(text)):
        if _CJK.search(tok):
            out.extend(_cjk_split().findall(tok))
        else:
            out.append(tok)
    return tuple(out)


@lru_cache(maxsize=65536)
def _char_grams(tok: str) -> tuple[str, ...]:
    padded = f" {tok} "
    return tuple(padded[i : i + n] for n in (3, 4, 5) for i in range(len(padded) - n + 1))


@weighed_cache(TF_CACHE_BYTES, lambda text: 512 + 200 * len(text))
def tf_features(text: str) -> tuple[dict[str, float], dict[str, float]]:
    """(word block, char block) of sublinear term frequencies; cached because the
    same snippets are re-scored on every step.

    Han/kana characters are "words" (so word bigrams are character bigrams); their
    runs contribute character 2- and 3-grams to the character block instead of
    space-padded n-grams.
    """
    toks = words(text)
    word_counts: Counter[str] = Counter(toks)
    word_counts.update(f"{a} {b}" for a, b in zip(toks, toks[1:], strict=False))
    char_counts: Counter[str] = Counter()
    run: list[str] = []
    for tok in [*toks, ""]:
        if is_cjk(tok):
            run.append(tok)
            continue
        if run:
            joined = "".join(run)
            char_counts.update(
                joined[i : i + n] for n in (2, 3) for i in range(len(joined) - n + 1)
            )
            run = []
        if tok:
            char_counts.update(_char_grams(tok))
    return (
        {k: 1.0 + math.log(v) for k, v in word_counts.items()},
        {k: 1.0 + math.log(v) for k, v in char_counts.items()},
    )


def idf_weights(blocks: Sequence[dict[str, float]]) -> dict[str, float]:
    df: Counter[str] = Counter()
    for block in blocks:
        df.update(block.keys())
    n = len(blocks)
    return {term: math.log((1 + n) / (1 + count)) + 1.0 for term, count in df.items()}


def unit_weighted(block: dict[str, float], idf: dict[str, float]) -> dict[str, float]:
    vec = {term: tf * idf[term] for term, tf in block.items()}
    norm = math.sqrt(sum(v * v for v in vec.values()))
    return {term: v / norm for term, v in vec.items()} if norm else {}


def sparse_dot(a: dict[str, float], b: dict[str, float]) -> float:
    if len(a) > len(b):
        a, b = b, a
    return sum(v * b.get(term, 0.0) for term, v in a.items())


PURE_PYTHON_PAIRS = 400


def block_products(left: list[dict[str, float]], right: list[dict[str, float]]):  # noqa: ANN202
    """Dot products of unit vectors as a numpy array (len(left) x len(right)).

    Only features present on the left can contribute, so the dense matrices have
    one column per left feature: many pairs (answer sentences x candidate quotes)
    cost one matrix product instead of a Python loop per pair.
    """
    import numpy as np

    columns: dict[str, int] = {}
    for vec in left:
        for term in vec:
            columns.setdefault(term, len(columns))
    lmat = np.zeros((len(left), max(1, len(columns))), dtype=np.float32)
    for i, vec in enumerate(left):
        lmat[i, [columns[t] for t in vec]] = list(vec.values())
    out = np.zeros((len(left), len(right)), dtype=np.float64)
    step = 256  # rows of the right side per block: bounded memory
    for start in range(0, len(right), step):
        block = right[start : start + step]
        rmat = np.zeros((len(block), lmat.shape[1]), dtype=np.float32)
        for j, vec in enumerate(block):
            hits = [(columns[t], v) for t, v in vec.items() if t in columns]
            if hits:
                cols, values = zip(*hits, strict=True)
                rmat[j, list(cols)] = values
        out[:, start : start + len(block)] = lmat @ rmat.T
    return out


# --------------------------------------------------------------------- word rules


# Function words ignored by the "same words" rule (en/de/fr/es/it/pt/nl; words of
# one or two letters are ignored anyway). Numbers are never ignored: 2023 != 2024.
_STOPWORDS = frozenset(
    """the and for with from what when where which who whom whose why how does did was were
    are is has have had that this these those about into than then there their they its
    can could should would will shall may might must not also any all more most some such
    der die das und mit von für den dem des ein eine einer wie was wer wann ist sind zum zur
    les des une pour avec dans sur par est qui que quoi quand comment
    los las del por para con una como que cual cuando donde est
    gli della delle per con una che chi come quando
    dos das para com uma que quem como quando onde
    het een van voor met wat wie wanneer hoe""".split()
)


def content_words(text: str) -> list[str]:
    return [
        w for w in words(text) if (len(w) > 2 or w.isdigit() or is_cjk(w)) and w not in _STOPWORDS
    ]


def same_word(a: str, b: str) -> bool:
    """The same word up to inflection (founded/founders, reef/reefs); numbers exactly."""
    if a == b:
        return True
    if a.isdigit() or b.isdigit():
        return False
    prefix = len(_common_prefix(a, b))
    # Inflection: founded/founders, reef/reefs, runtime/runtimes.
    return prefix >= 4 and prefix >= max(len(a), len(b)) - 3


def word_coverage(sentence: str, quote: str) -> float:
    """Share of the sentence's distinct content words found in the quote (inflections
    allowed): the citation check's support rule and the URL list's relevance."""
    wanted = set(content_words(sentence))
    if not wanted:
        return 1.0
    have = set(content_words(quote))
    found = sum(1 for w in wanted if w in have or any(same_word(w, h) for h in have))
    return found / len(wanted)


def _common_prefix(a: str, b: str) -> str:
    i = 0
    while i < min(len(a), len(b)) and a[i] == b[i]:
        i += 1
    return a[:i]


def same_content_words(a: str, b: str) -> bool:
    """Every content word of each side has an (inflection-tolerant) match on the other.

    Catches reordered/reinflected duplicates ("France capital" / "capital of France")
    while one differing content word ("Tokyo" vs "Osaka") keeps two queries apart.
    """
    left, right = content_words(a), content_words(b)
    if not left or not right:
        return False
    return all(any(same_word(x, y) for y in right) for x in left) and all(
        any(same_word(y, x) for x in left) for y in right
    )


def word_jaccard(a: str, b: str) -> float:
    """Jaccard of the folded word sets; 1.0 for two empty texts."""
    left, right = set(words(a)), set(words(b))
    if not left and not right:
        return 1.0
    return len(left & right) / len(left | right)
