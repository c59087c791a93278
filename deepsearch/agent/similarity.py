"""The similarity seam: one interface, a lexical default and an embedding backend.

Every consumer (query/question dedup, URL rerank, passage selection, reference
anchoring) calls `scores` or `matrix` and compares the result against the
backend's own thresholds, because lexical and embedding cosines live on
different scales.

Backends and thresholds
-----------------------
``LexicalSimilarity`` (offline default, no model download)
    TF-IDF cosine over two feature blocks, each L2-normalised and mixed 50/50:
    word unigrams + bigrams (exact terms, word order) and character 3-5-grams
    inside word boundaries (inflection, compounds). Han and kana, written without
    spaces, count one character per "word" (so word bigrams are character bigrams)
    and add character 2-3-grams of each run. IDF is computed over the texts of each
    call (smoothed, so two-text calls work).

    Thresholds were tuned on the hand-made pairs in tests/agent/test_similarity.py
    (``DUP_PAIRS``, ``DISTINCT_PAIRS``, ``CITE_TRIPLES``; the tests re-check them).
    Reworded duplicate queries score 0.36-1.00 and distinct queries on the same
    topic 0.08-0.51: lexical cosine alone cannot separate short queries that
    differ in one decisive word ("population of Tokyo 2023" / "... Osaka 2023").
    So ``dedup`` first applies a word rule (same content words up to inflection,
    or word-set Jaccard >= 0.8), which catches 15 of the 16 duplicates and none of
    the 14 distinct pairs, and only then the cosine at ``dedup_threshold = 0.58``,
    above every distinct pair (max 0.51) and below the one duplicate the word rule
    misses (0.62). A pair that differs in a number ("GDP of France 2023" / "2024",
    cosine 0.63) is never a duplicate. Dropping a distinct query costs more than
    searching twice, so the threshold errs high. An answer sentence scores
    0.23-0.35 against the source sentence it restates and <= 0.10 against an
    unrelated sentence of the same page (a purely numeric paraphrase scores 0.03
    and is, correctly, not citable lexically): ``cite_threshold = 0.20``.
``EmbeddingSimilarity`` (the configured provider's embeddings)
    Cosine of embeddings. ``dedup_threshold = 0.86`` and ``cite_threshold = 0.80``
    are the reference system's values for jina-embeddings-v3 (not measured here:
    no embedding provider offline). Cosine scales differ between models (OpenAI
    text-embedding-3 puts related sentences lower than Jina does), so both can be
    overridden per instance. When the provider has no embeddings (``embed``
    returns None) or fails, the instance falls back to the lexical backend for the
    rest of the run and its thresholds switch with it: read
    ``dedup_threshold``/``cite_threshold`` *after* awaiting a call.

``word_jaccard`` is the cheap near-duplicate check (dependencies.md §7 measured
word-set Jaccard as the best duplicate/same-topic separator); ``dedup`` applies it
before the backend.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from functools import lru_cache
from typing import Protocol, runtime_checkable

from deepsearch.errors import DeepsearchError

EmbedFn = Callable[[list[str]], Awaitable[list[list[float]] | None]]

LEXICAL_DEDUP_THRESHOLD = 0.58
LEXICAL_CITE_THRESHOLD = 0.20
EMBEDDING_DEDUP_THRESHOLD = 0.86
EMBEDDING_CITE_THRESHOLD = 0.80
JACCARD_DUP_THRESHOLD = 0.8

_WORD = re.compile(r"\w+", re.UNICODE)
# Han and kana: written without spaces between words (Hangul uses spaces).
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_CJK_SPLIT = re.compile(
    r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]|[^\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+"
)


@runtime_checkable
class Similarity(Protocol):
    """Scores in [0, 1] (higher = more similar) plus the thresholds to read them by."""

    name: str
    dedup_threshold: float
    cite_threshold: float

    async def scores(self, query: str, texts: Sequence[str]) -> list[float]: ...

    async def matrix(self, a: Sequence[str], b: Sequence[str]) -> list[list[float]]: ...


# --------------------------------------------------------------------- features


def fold(text: str) -> str:
    """Case- and accent-insensitive form used for matching (not for display)."""
    if text.isascii():
        return text.lower()
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    # Kana voicing marks (U+3099/U+309A) carry meaning; other combining marks are accents.
    kept = "".join(ch for ch in decomposed if not unicodedata.combining(ch) or ch in "\u3099\u309a")
    return unicodedata.normalize("NFC", kept)


@lru_cache(maxsize=16384)
def words(text: str) -> tuple[str, ...]:
    """Folded word tokens; Han and kana (written without spaces) one character each."""
    out: list[str] = []
    for tok in _WORD.findall(fold(text)):
        if _CJK.search(tok):
            out.extend(_CJK_SPLIT.findall(tok))
        else:
            out.append(tok)
    return tuple(out)


def is_cjk(token: str) -> bool:
    return len(token) == 1 and bool(_CJK.match(token))


@lru_cache(maxsize=65536)
def _char_grams(tok: str) -> tuple[str, ...]:
    padded = f" {tok} "
    return tuple(padded[i : i + n] for n in (3, 4, 5) for i in range(len(padded) - n + 1))


@lru_cache(maxsize=8192)
def _features(text: str) -> tuple[dict[str, float], dict[str, float]]:
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


def _idf(blocks: Sequence[dict[str, float]]) -> dict[str, float]:
    df: Counter[str] = Counter()
    for block in blocks:
        df.update(block.keys())
    n = len(blocks)
    return {term: math.log((1 + n) / (1 + count)) + 1.0 for term, count in df.items()}


def _weighted(block: dict[str, float], idf: dict[str, float]) -> dict[str, float]:
    vec = {term: tf * idf[term] for term, tf in block.items()}
    norm = math.sqrt(sum(v * v for v in vec.values()))
    return {term: v / norm for term, v in vec.items()} if norm else {}


def _dot(a: dict[str, float], b: dict[str, float]) -> float:
    if len(a) > len(b):
        a, b = b, a
    return sum(v * b.get(term, 0.0) for term, v in a.items())


_PURE_PYTHON_PAIRS = 400


def _block_products(left: list[dict[str, float]], right: list[dict[str, float]]):  # noqa: ANN202
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


class _DedupMethod:
    """`sim.dedup(new, existing)`: the module-level `dedup` bound to this backend."""

    async def dedup(self, new: Sequence[str], existing: Sequence[str]) -> list[str]:
        # Inside a method, the name resolves to the module-level function below.
        return await dedup(new, existing, self)  # type: ignore[arg-type]


class LexicalSimilarity(_DedupMethod):
    """TF-IDF cosine over word 1-2-grams and character 3-5-grams (see module doc)."""

    name = "lexical"
    dedup_threshold = LEXICAL_DEDUP_THRESHOLD
    cite_threshold = LEXICAL_CITE_THRESHOLD

    def __init__(self, word_weight: float = 0.5) -> None:
        self.word_weight = word_weight

    def _vectors(self, texts: Sequence[str]) -> list[tuple[dict[str, float], dict[str, float]]]:
        feats = [_features(t) for t in texts]
        word_idf = _idf([f[0] for f in feats])
        char_idf = _idf([f[1] for f in feats])
        return [(_weighted(w, word_idf), _weighted(c, char_idf)) for w, c in feats]

    def _cos(self, x: tuple[dict, dict], y: tuple[dict, dict]) -> float:
        # Blocks are unit vectors, so the mix is a convex combination of two cosines.
        score = self.word_weight * _dot(x[0], y[0]) + (1 - self.word_weight) * _dot(x[1], y[1])
        return min(1.0, max(0.0, score))

    def score_sync(self, query: str, texts: Sequence[str]) -> list[float]:
        if not texts:
            return []
        vecs = self._vectors([query, *texts])
        return [self._cos(vecs[0], v) for v in vecs[1:]]

    def matrix_sync(self, a: Sequence[str], b: Sequence[str]) -> list[list[float]]:
        if not a or not b:
            return [[] for _ in a]
        vecs = self._vectors([*a, *b])
        left, right = vecs[: len(a)], vecs[len(a) :]
        if len(a) * len(b) <= _PURE_PYTHON_PAIRS:
            return [[self._cos(x, y) for y in right] for x in left]
        words_part = _block_products([x[0] for x in left], [y[0] for y in right])
        chars_part = _block_products([x[1] for x in left], [y[1] for y in right])
        grid = self.word_weight * words_part + (1 - self.word_weight) * chars_part
        return grid.clip(0.0, 1.0).tolist()

    async def scores(self, query: str, texts: Sequence[str]) -> list[float]:
        return self.score_sync(query, texts)

    async def matrix(self, a: Sequence[str], b: Sequence[str]) -> list[list[float]]:
        return self.matrix_sync(a, b)


# --------------------------------------------------------------------- embeddings


def _cosine_matrix(a: list[list[float]], b: list[list[float]]) -> list[list[float]]:
    import numpy as np

    left = np.asarray(a, dtype=float)
    right = np.asarray(b, dtype=float)
    left /= np.maximum(np.linalg.norm(left, axis=1, keepdims=True), 1e-12)
    right /= np.maximum(np.linalg.norm(right, axis=1, keepdims=True), 1e-12)
    return np.clip(left @ right.T, 0.0, 1.0).tolist()


class EmbeddingSimilarity(_DedupMethod):
    """Cosine of provider embeddings; sticky fallback to lexical when unavailable."""

    def __init__(
        self,
        embed: EmbedFn,
        fallback: LexicalSimilarity | None = None,
        *,
        dedup_threshold: float = EMBEDDING_DEDUP_THRESHOLD,
        cite_threshold: float = EMBEDDING_CITE_THRESHOLD,
    ) -> None:
        self._embed = embed
        self._fallback = fallback or LexicalSimilarity()
        self._dedup = dedup_threshold
        self._cite = cite_threshold
        self.available = True

    @property
    def name(self) -> str:
        return "embedding" if self.available else "lexical (embeddings unavailable)"

    @property
    def dedup_threshold(self) -> float:
        return self._dedup if self.available else self._fallback.dedup_threshold

    @property
    def cite_threshold(self) -> float:
        return self._cite if self.available else self._fallback.cite_threshold

    async def _vectors(self, texts: list[str]) -> list[list[float]] | None:
        if not self.available:
            return None
        try:
            vecs = await self._embed(texts)
        except DeepsearchError:
            vecs = None
        if vecs is None or len(vecs) != len(texts) or any(not v for v in vecs):
            # Unavailable once means unavailable for the run: don't pay for retries.
            self.available = False
            return None
        return vecs

    async def scores(self, query: str, texts: Sequence[str]) -> list[float]:
        if not texts:
            return []
        rows = await self.matrix([query], texts)
        return rows[0]

    async def matrix(self, a: Sequence[str], b: Sequence[str]) -> list[list[float]]:
        if not a or not b:
            return [[] for _ in a]
        vecs = await self._vectors([*a, *b])
        if vecs is None:
            return self._fallback.matrix_sync(a, b)
        return _cosine_matrix(vecs[: len(a)], vecs[len(a) :])


def make_similarity(embed: EmbedFn | None = None) -> Similarity:
    """The embedding backend when an embed function is given (e.g. ``LLMClient.embed``,
    which returns None without an embedding provider), else the lexical one."""
    return EmbeddingSimilarity(embed) if embed is not None else LexicalSimilarity()


# --------------------------------------------------------------------- dedup


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


def _same_word(a: str, b: str) -> bool:
    if a == b:
        return True
    if a.isdigit() or b.isdigit():
        return False
    prefix = len(_common_prefix(a, b))
    # Inflection: founded/founders, reef/reefs, runtime/runtimes.
    return prefix >= 4 and prefix >= max(len(a), len(b)) - 3


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
    return all(any(_same_word(x, y) for y in right) for x in left) and all(
        any(_same_word(y, x) for x in left) for y in right
    )


def word_jaccard(a: str, b: str) -> float:
    """Jaccard of the folded word sets; 1.0 for two empty texts."""
    left, right = set(words(a)), set(words(b))
    if not left and not right:
        return 1.0
    return len(left & right) / len(left | right)


def _numbers(text: str) -> frozenset[str]:
    return frozenset(w for w in words(text) if any(ch.isdigit() for ch in w))


def _at(pool: Sequence[str], candidates: Sequence[str], j: int) -> str:
    return pool[j] if j < len(pool) else candidates[j - len(pool)]


async def dedup(
    new: Sequence[str],
    existing: Sequence[str],
    sim: Similarity,
    *,
    threshold: float | None = None,
    jaccard_threshold: float = JACCARD_DUP_THRESHOLD,
) -> list[str]:
    """Keep the items of `new` not too similar to `existing` nor to an earlier kept item.

    Order is preserved. Blank items and exact (folded) repeats are dropped first,
    then word-set Jaccard near-duplicates, then anything whose similarity reaches
    the backend's dedup threshold (or `threshold`) unless the two mention different
    numbers ("GDP 2023" / "GDP 2024" are two requests).
    """
    candidates: list[str] = []
    seen = {" ".join(words(e)) for e in existing}
    for item in new:
        key = " ".join(words(item))
        if item.strip() and key not in seen:
            seen.add(key)
            candidates.append(item)
    if not candidates:
        return []
    pool = list(existing)
    grid = await sim.matrix(candidates, [*pool, *candidates])
    limit = sim.dedup_threshold if threshold is None else threshold
    kept: list[int] = []
    for i, item in enumerate(candidates):
        against = list(range(len(pool))) + [len(pool) + k for k in kept]
        refs = [*pool, *(candidates[k] for k in kept)]
        numbers = _numbers(item)
        # Different numbers (years, versions, quarters) make a different request.
        too_close = any(
            grid[i][j] >= limit and _numbers(_at(pool, candidates, j)) == numbers for j in against
        ) or any(
            word_jaccard(item, r) >= jaccard_threshold or same_content_words(item, r) for r in refs
        )
        if not too_close:
            kept.append(i)
    return [candidates[i] for i in kept]
